"""OpenAPI v3 structural schemas (CRDs, XRDs) as strict JSON Schema validators.

The API server rejects unknown fields under strict field validation and treats
`x-kubernetes-int-or-string` and `x-kubernetes-preserve-unknown-fields` specially; JSON Schema knows
neither, so a structural schema is translated once and the compiled validator cached.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import yaml

from inferplane.admission.structural import Plan, apply_defaults, plan_for, rule_failures
from inferplane.api.json_data import json_copy

if TYPE_CHECKING:
    import jsonschema

# Keys that carry meaning for the API server but none for JSON Schema validation.
_DROPPED = {"description", "x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
            "x-kubernetes-map-type", "x-kubernetes-embedded-resource", "format", "example", "default"}


def to_jsonschema(schema: dict[str, Any]) -> dict[str, Any]:
    """Translate a structural OpenAPI v3 schema into a strict JSON Schema (unknown fields rejected)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {name: to_jsonschema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = to_jsonschema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [to_jsonschema(sub) for sub in value]
        elif key == "nullable":
            continue
        else:
            out[key] = value
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    preserve = schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-embedded-resource")
    # An object without properties is free-form here (the root's metadata); one with properties is closed.
    if "properties" in schema and "additionalProperties" not in schema and not preserve:
        out["additionalProperties"] = False
    if schema.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        for name in ("apiVersion", "kind"):
            props.setdefault(name, {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    return out


@dataclass(frozen=True)
class SchemaViolation:
    path: str  # dotted field path with [i] indexes, e.g. spec.devices[0].count
    message: str
    validator: str
    detail: Any = None
    instance: Any = None  # the offending value, quoted whole in the message


def field_path(parts: Any) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


def violations(validator: jsonschema.protocols.Validator, obj: Any) -> Iterator[SchemaViolation]:
    """Every violation, leaves first: anyOf/oneOf failures are expanded to their best branch."""
    import jsonschema.exceptions

    for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        leaf = jsonschema.exceptions.best_match([error]) if error.context else error
        detail: Any = None
        if leaf.validator == "additionalProperties":
            allowed = set(leaf.schema.get("properties", {}))
            detail = sorted(k for k in leaf.instance if k not in allowed)
        yield SchemaViolation(field_path(leaf.absolute_path), leaf.message, str(leaf.validator), detail, leaf.instance)


def openapi_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    # Imported here: loading jsonschema's metaschemas takes a tenth of a second, and admission needs
    # this validator only to describe a manifest that failed the fast check.
    import jsonschema

    return jsonschema.Draft7Validator(to_jsonschema(schema))


class CRDSchemas:
    """The openAPIV3Schema of every version of a set of CRD files, indexed by (apiVersion, kind)."""

    def __init__(self, paths: list[Path]):
        self._schemas: dict[tuple[str, str], dict[str, Any]] = {}
        for path in paths:
            # A release bundle (Gateway API's) holds many CRDs, one per document.
            for crd in yaml.safe_load_all(Path(path).read_text()):
                if not crd or crd.get("kind") != "CustomResourceDefinition":
                    continue
                spec = crd["spec"]
                for version in spec["versions"]:
                    key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                    self._schemas[key] = version["schema"]["openAPIV3Schema"]

    def kinds(self) -> list[tuple[str, str]]:
        return sorted(self._schemas)

    def schema(self, api_version: str, kind: str) -> dict[str, Any]:
        try:
            return self._schemas[(api_version, kind)]
        except KeyError:
            raise KeyError(f"no CRD defines {kind} in {api_version}") from None

    @functools.cache
    def validator(self, api_version: str, kind: str) -> jsonschema.protocols.Validator:
        return openapi_validator(self.schema(api_version, kind))

    @functools.cache
    def plan(self, api_version: str, kind: str) -> Plan:
        return plan_for(self.schema(api_version, kind))

    def validate(self, obj: dict[str, Any]) -> list[SchemaViolation]:
        """Every way `obj` would be refused by an API server serving these CRDs (empty when accepted):
        the schema with unknown fields refused, then, after defaulting, list-map keys and the CRD's
        `x-kubernetes-validations` rules."""
        found = list(violations(self.validator(obj["apiVersion"], obj["kind"]), obj))
        defaulted = json_copy(obj)
        plan = self.plan(obj["apiVersion"], obj["kind"])
        apply_defaults(plan, defaulted)
        schema_errors = [(v.path, v.message) for v in found]
        found += [SchemaViolation(path, message, "x-kubernetes-validations")
                  for path, message in rule_failures(plan, defaulted, schema_errors)]
        return found

    __hash__ = object.__hash__
