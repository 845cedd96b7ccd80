"""What a schema violation says to the person who wrote the manifest: the field's path, what is wrong
with its value and how to fix it, in the words of the field's schema (its description, its pattern's
meaning, its bounds and known fields)."""

from __future__ import annotations

import difflib
import re
from typing import Any

from inferplane.admission.openapi import SchemaViolation
from inferplane.admission.structural import join_path
from inferplane.api.common import DNS_LABEL, DNS_SUBDOMAIN, GKE_VERSION, KUBERNETES_MINOR, KUBERNETES_PATCH, \
    KUBERNETES_VERSION, QUALIFIED_NAME, QUANTITY, SEMVER, VULTR_VERSION

# What a pattern means, for messages a person can act on.
PATTERN_MEANINGS = {
    QUANTITY: "a Kubernetes quantity such as 80Gi, 500m or 4",
    DNS_LABEL: "a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending alphanumeric)",
    DNS_SUBDOMAIN: "a lowercase DNS subdomain such as gpu.nvidia.com",
    QUALIFIED_NAME: "a name such as numaNode or a qualified name such as resource.kubernetes.io/numaNode",
    KUBERNETES_VERSION: "a Kubernetes version such as \"1.36\" or \"v1.36.1\"",
    KUBERNETES_MINOR: "a Kubernetes minor version such as \"1.36\" (this cloud takes the minor only)",
    KUBERNETES_PATCH: "a Kubernetes version such as \"1.36\" or \"1.36.1\"",
    GKE_VERSION: "a GKE version such as \"1.36\" or \"1.36.1-gke.1200\"",
    VULTR_VERSION: "a VKE version such as \"v1.36.1+3\" (VKE takes the exact build: `vultr-cli kubernetes "
                   "versions` lists them)",
    SEMVER: "a semantic version such as 1.2.3",
}
_TYPES = {"integer": "an integer", "string": "a string", "boolean": "true or false", "object": "a mapping",
          "array": "a list", "number": "a number"}


def describe_violation(v: SchemaViolation, schema: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, message with the fix) for one violation; unknown fields give one entry each."""
    if v.validator in ("additionalProperties", "required"):
        return _field_problems(v, schema)
    return [(v.path, _value_problem(v, schema_at(schema, v.path)))]


def _field_problems(v: SchemaViolation, schema: dict[str, Any]) -> list[tuple[str, str]]:
    """Fields the schema does not know (with the nearest it does), or a required one missing."""
    path = v.path
    if v.validator == "required":
        missing = re.search(r"'([^']+)' is a required property", v.message)
        name = missing.group(1) if missing else "?"
        return [(join_path(path, name), "required field is missing: add it")]
    known = sorted(schema_at(schema, path).get("properties", {}))
    out = []
    for name in v.detail or []:
        hint = difflib.get_close_matches(name, known, n=1)
        fix = f"did you mean {hint[0]}?" if hint else f"remove it (known fields: {', '.join(known)})"
        out.append((join_path(path, name), f"unknown field \"{name}\": {fix}"))
    return out


def _value_problem(v: SchemaViolation, node: dict[str, Any]) -> str:
    """What is wrong with a value, by the schema `node` of its field."""
    got = repr(v.instance)  # the whole value: "24 GB" is not cut at its space
    if v.validator == "type":
        expected = node.get("type")
        shape = f": {node['description']}" if expected == "object" and node.get("description") else ""
        return f"must be {_TYPES.get(expected, expected)}, got {got}{shape}"
    if v.validator == "enum":
        return f"{got} is not allowed: use one of {', '.join(map(str, node.get('enum', [])))}"
    if v.validator == "anyOf" and node.get("x-kubernetes-int-or-string"):
        meaning = PATTERN_MEANINGS.get(node.get("pattern", ""), "an integer or a string")
        hint = ": write a decimal as a string, e.g. \"1.5\"" if isinstance(v.instance, float) else ""
        return f"must be {meaning}, got {got}{hint}"
    if v.validator == "pattern":
        meaning = PATTERN_MEANINGS.get(node.get("pattern", ""))
        shape = f"be {meaning}" if meaning else f"match {node.get('pattern')}"
        why = f" ({node['description']})" if node.get("description") else ""
        return f"must {shape}, got {got}{why}"
    return _bound_problem(v, node, got)


def _bound_problem(v: SchemaViolation, node: dict[str, Any], got: str) -> str:
    """A value out of its schema's bounds: a number's, a list's or a string's length, a map's entries."""
    bound = node.get(v.validator)
    if v.validator in ("minimum", "maximum"):
        word = "at least" if v.validator == "minimum" else "at most"
        direction = "more" if word == "at least" else "less"
        return f"must be {word} {bound}, got {got}: set it to {bound} or {direction}"
    if v.validator in ("minItems", "maxItems"):
        word = "at least" if v.validator == "minItems" else "at most"
        return f"must have {word} {bound} item{'s' if bound != 1 else ''}"
    if v.validator in ("minLength", "maxLength"):
        why = f" ({node['description']})" if node.get("description") and v.validator == "maxLength" else ""
        return f"must be {'at least' if v.validator == 'minLength' else 'at most'} {bound} characters long{why}"
    if v.validator == "maxProperties":
        return f"must have at most {node.get('maxProperties')} entries"
    if v.validator == "minProperties":
        return f"must set at least one of: {', '.join(sorted(node.get('properties', {})))}"
    return v.message


def schema_at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The sub-schema at a field path such as spec.devices[0].count (empty when none is there)."""
    node = schema
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            node = node.get("items", {})
        elif part in node.get("properties", {}):
            node = node["properties"][part]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return {}
    return node
