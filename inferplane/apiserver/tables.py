"""Table output (meta.k8s.io/v1 Table, k8s.io/apimachinery pkg/apis/meta/v1 types.go, v0.37.0): what
kubectl asks for with `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints as it gets it.
The columns are `inferplane get`'s; those only `-o wide` shows have priority 1, as a CRD's
additionalPrinterColumns with a priority."""

from __future__ import annotations

from typing import Any

from inferplane.apiserver.catalog import Catalog

TABLE_VERSION = "meta.k8s.io/v1"
# The object each row carries: metadata only unless the request says otherwise (`includeObject`).
INCLUDE = ("None", "Metadata", "Object")
NAME_COLUMN = {"name": "Name", "type": "string", "format": "name", "priority": 0,
               "description": "Name must be unique within a namespace."}


def wants_table(accept: str) -> bool:
    return any("as=Table" in part for part in accept.split(","))


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": TABLE_VERSION, "metadata": obj.get("metadata", {})}


def table(catalog: Catalog, kind: str, api_version: str, objects: list[dict[str, Any]], resource_version: str,
          include: str = "Metadata", headers: bool = True, continue_token: str | None = None) -> dict[str, Any]:
    """The objects of one kind as a Table; `headers=False` (a watch's events after its first) leaves
    the column definitions out, as the API server does."""
    normal = catalog.columns(kind, api_version, False)
    wide = catalog.columns(kind, api_version, True)
    columns = [(header, show, 0) for header, show in normal] + [(header, show, 1) for header, show in wide[len(normal):]]
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [obj["metadata"]["name"], *(show(obj) for _, show, _ in columns)]}
        carried = _row_object(obj, include)
        if carried is not None:
            row["object"] = carried
        rows.append(row)
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    out: dict[str, Any] = {"kind": "Table", "apiVersion": TABLE_VERSION, "metadata": metadata}
    if headers:
        out["columnDefinitions"] = [NAME_COLUMN] + [{"name": header, "type": "string", "format": "", "priority": p,
                                                     "description": header} for header, _, p in columns]
    out["rows"] = rows
    return out
