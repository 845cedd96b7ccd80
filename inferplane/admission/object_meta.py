"""Kubernetes' published definitions as structural schemas: ObjectMeta, what the API server's strict
decoding allows in any object's `metadata`, and the core kinds users apply (Namespace, Secret,
ConfigMap) (inferplane/data/kubernetes-v1.37.0/, vendored from Kubernetes v1.37.0's definitions)."""

from __future__ import annotations

import functools
import json
from typing import Any

from inferplane import DATA, KUBERNETES_RELEASE

KUBERNETES_DATA = DATA / f"kubernetes-{KUBERNETES_RELEASE}"
DEFINITIONS = KUBERNETES_DATA / "objectmeta.json"
CORE_DEFINITIONS = KUBERNETES_DATA / "core-v1.json"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CORE_V1 = "io.k8s.api.core.v1."


@functools.cache
def object_meta_schema() -> dict[str, Any]:
    """ObjectMeta with its references inlined."""
    return definition_schema(OBJECT_META)


@functools.cache
def definition_schema(name: str) -> dict[str, Any]:
    """A definition with its references inlined, in the OpenAPI form of a CRD's schema (`nullable`, one
    type), so that the schema translation and the error messages read it like a kind's own schema."""
    definitions = {**json.loads(DEFINITIONS.read_text())["$defs"], **json.loads(CORE_DEFINITIONS.read_text())["$defs"]}

    def structural(node: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in node:
            node = definitions[node["$ref"].rsplit("/", 1)[-1]]
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "type" and isinstance(value, list):
                # Go's JSON decoder takes null for any field: the definitions say so as [type, "null"].
                out["type"] = next(t for t in value if t != "null")
                out["nullable"] = "null" in value
            elif key == "properties":
                out[key] = {name: structural(sub) for name, sub in value.items()}
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = structural(value)
            elif key != "description":
                out[key] = value
        return out

    return structural(definitions[name])
