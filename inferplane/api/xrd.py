"""Crossplane v2 CompositeResourceDefinitions generated from the typed models.

Pydantic's JSON schema is translated into a structural OpenAPI v3 schema: references inlined,
`Optional` unwrapped, maps of anything marked to preserve unknown fields, and the models'
`x-kubernetes-*` extensions kept. The result is what the API server (and our admission) enforces.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

from inferplane.api import ALL_KINDS
from inferplane.api.common import Resource

XRD_API_VERSION = "apiextensions.crossplane.io/v2"
# Keys of pydantic's JSON schema with no meaning in a structural schema.
_DROP = {"title", "$defs", "discriminator"}


def _structural(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        target = _structural(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return {**target, **{k: v for k, v in node.items() if k not in ("$ref", "title")}}
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if b.get("type") != "null"]
        outer = {k: v for k, v in node.items() if k not in ("anyOf", "title") and not (k == "default" and v is None)}
        if len(branches) == 1:  # Optional[X]: absence is how Kubernetes says "not set"
            return {**_structural(branches[0], defs), **outer}
        if node.get("x-kubernetes-int-or-string"):  # the shape controller-gen gives resource.Quantity
            return {"anyOf": [{"type": "integer"}, {"type": "string"}], **outer}
        raise ValueError(f"unsupported union in schema: {node}")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or (key == "default" and value is None):
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out[key] = {name: _structural(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out[key] = _structural(value, defs)
        elif key == "additionalProperties":
            if value is True:  # dict[str, Any]: a free-form object
                out["x-kubernetes-preserve-unknown-fields"] = True
            elif isinstance(value, dict):
                out[key] = _structural(value, defs)
            # `false` comes from extra="forbid"; structural schemas forbid it beside properties and
            # unknown fields are refused by admission (and pruned by the API server) anyway.
        else:
            out[key] = value
    if out.get("x-kubernetes-preserve-unknown-fields") and "type" not in out:
        out["type"] = "object"
    return out


class _PlainDumper(yaml.SafeDumper):
    """Writes shared sub-schemas out in full: anchors and aliases would puzzle a reader."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@functools.cache
def openapi_schema(kind: type[Resource]) -> dict[str, Any]:
    """The structural openAPIV3Schema of a kind: its spec and status."""
    raw = kind.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    properties = {name: _structural(raw["properties"][name], defs) for name in ("spec", "status")}
    properties["status"].pop("default", None)
    return {
        "type": "object",
        "description": kind.DESCRIPTION,
        "properties": properties,
        "required": ["spec"],
    }


def xrd(kind: type[Resource]) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": kind.VERSION,
        "served": True,
        "referenceable": True,
        "schema": {"openAPIV3Schema": openapi_schema(kind)},
    }
    if kind.COLUMNS:
        version["additionalPrinterColumns"] = [
            {"name": name, "type": type_, "jsonPath": path} for name, path, type_ in kind.COLUMNS]
    if kind.SCALE:
        version["subresources"] = {"scale": dict(kind.SCALE)}
    return {
        "apiVersion": XRD_API_VERSION,
        "kind": "CompositeResourceDefinition",
        "metadata": {"name": f"{kind.PLURAL}.{kind.GROUP}"},
        "spec": {
            "group": kind.GROUP,
            "names": {"kind": kind.KIND, "plural": kind.PLURAL,
                      **({"shortNames": list(kind.SHORT_NAMES)} if kind.SHORT_NAMES else {})},
            "scope": kind.SCOPE,
            "versions": [version],
        },
    }


def xrd_files() -> dict[str, str]:
    """File name -> YAML text of every XRD, as committed under inferplane/crossplane/xrds/."""
    return {f"{kind.PLURAL}.{kind.GROUP}.yaml": yaml.dump(xrd(kind), Dumper=_PlainDumper, sort_keys=False, width=120)
            for kind in ALL_KINDS}


def structural_problems(schema: dict[str, Any], path: str = "") -> list[str]:
    """Why the API server would refuse `schema` as structural (empty when it is structural)."""
    problems = []
    here = path or "<root>"
    if "$ref" in schema:
        problems.append(f"{here}: $ref is not allowed")
    if "type" not in schema and not schema.get("x-kubernetes-int-or-string") and \
            not schema.get("x-kubernetes-preserve-unknown-fields"):
        problems.append(f"{here}: type is missing")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{here}: properties and additionalProperties are mutually exclusive")
    if schema.get("additionalProperties") is False:
        problems.append(f"{here}: additionalProperties must not be false")
    for junction in ("anyOf", "allOf", "oneOf"):
        for branch in schema.get(junction, []):
            if set(branch) & {"properties", "items", "additionalProperties", "default", "description"} or (
                    "type" in branch and not schema.get("x-kubernetes-int-or-string")):
                problems.append(f"{here}: {junction} may only carry value validations")
    for name, sub in schema.get("properties", {}).items():
        problems += structural_problems(sub, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), dict):
        problems += structural_problems(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += structural_problems(schema["additionalProperties"], f"{path}{{}}")
    return problems
