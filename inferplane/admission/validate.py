"""Admission: a manifest checked the way the API server checks a custom resource.

In order: kind and apiVersion, metadata, structural defaulting, the OpenAPI schema (unknown fields
refused), list-map keys, then the `x-kubernetes-validations` CEL rules with `self` bound to each
node. Every error is reported at once, with its field path, the object and what to do.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

import jsonschema_rs

from inferplane import cel
from inferplane.admission.manifests import Manifest
from inferplane.admission.openapi import SchemaViolation, openapi_validator, to_jsonschema, violations
from inferplane.api import KINDS, KINDS_BY_NAME
from inferplane.api.common import DNS_LABEL, DNS_SUBDOMAIN, KUBERNETES_VERSION, QUALIFIED_NAME, QUANTITY, SEMVER, \
    Resource
from inferplane.api.xrd import openapi_schema


@dataclass(frozen=True)
class AdmissionError:
    source: str
    kind: str
    name: str
    path: str
    message: str  # says what is wrong and what to do

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.source}: {self.kind}/{self.name}: {where}{self.message}"


# What a pattern means, for messages a person can act on.
_PATTERNS = {
    QUANTITY: "a Kubernetes quantity such as 80Gi, 500m or 4",
    DNS_LABEL: "a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending alphanumeric)",
    DNS_SUBDOMAIN: "a lowercase DNS subdomain such as gpu.nvidia.com",
    QUALIFIED_NAME: "a name such as numaNode or a qualified name such as resource.kubernetes.io/numaNode",
    KUBERNETES_VERSION: "a Kubernetes minor version such as \"1.36\"",
    SEMVER: "a semantic version such as 1.2.3",
}
_TYPES = {"integer": "an integer", "string": "a string", "boolean": "true or false", "object": "a mapping",
          "array": "a list", "number": "a number"}


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-like data, without deepcopy's memo bookkeeping (twice as fast)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def _describe_schema_violation(v: SchemaViolation, schema: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, message with the fix) for one violation; unknown fields give one entry each."""
    path, detail = v.path, v.detail
    if v.validator == "additionalProperties":
        known = sorted(schema_at(schema, path).get("properties", {}))
        out = []
        for name in detail or []:
            hint = difflib.get_close_matches(name, known, n=1)
            fix = f"did you mean {hint[0]}?" if hint else f"remove it (known fields: {', '.join(known)})"
            out.append((_join(path, name), f"unknown field \"{name}\": {fix}"))
        return out
    if v.validator == "required":
        missing = re.search(r"'([^']+)' is a required property", v.message)
        name = missing.group(1) if missing else "?"
        return [(_join(path, name), "required field is missing: add it")]
    node = schema_at(schema, path)
    got = v.message.split(" ", 1)[0]
    if v.validator == "type":
        expected = node.get("type")
        return [(path, f"must be {_TYPES.get(expected, expected)}, got {got}")]
    if v.validator == "enum":
        return [(path, f"{got} is not allowed: use one of {', '.join(map(str, node.get('enum', [])))}")]
    if v.validator == "pattern":
        meaning = _PATTERNS.get(node.get("pattern", ""), f"match {node.get('pattern')}")
        return [(path, f"must be {meaning}, got {got}")]
    if v.validator in ("minimum", "maximum"):
        bound = node.get(v.validator)
        word = "at least" if v.validator == "minimum" else "at most"
        return [(path, f"must be {word} {bound}, got {got}: set it to {bound} or {'more' if word == 'at least' else 'less'}")]
    if v.validator in ("minItems", "maxItems"):
        bound = node.get(v.validator)
        word = "at least" if v.validator == "minItems" else "at most"
        return [(path, f"must have {word} {bound} item{'s' if bound != 1 else ''}")]
    if v.validator in ("minLength", "maxLength"):
        bound = node.get(v.validator)
        return [(path, f"must be {'at least' if v.validator == 'minLength' else 'at most'} {bound} characters long")]
    return [(path, v.message)]


def first_line(error: Exception) -> str:
    """The CEL library's diagnosis without its multi-line source excerpt."""
    lines = str(error).splitlines() or [str(error)]
    diagnosis = next((l for l in lines if "ERROR: " in l), lines[0])
    return diagnosis.split("ERROR: ", 1)[-1].replace("<input>:", "at ")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


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


@dataclass
class _Plan:
    """Where a kind's schema asks for work beyond validation: defaults, rules, list keys."""

    defaults: dict[str, Any] = field(default_factory=dict)
    rules: list[dict[str, str]] = field(default_factory=list)
    properties: dict[str, "_Plan"] = field(default_factory=dict)
    items: "_Plan | None" = None
    values: "_Plan | None" = None
    map_keys: list[str] | None = None

    def empty(self) -> bool:
        return not (self.defaults or self.rules or self.properties or self.items or self.values or self.map_keys)


def _plan(schema: dict[str, Any]) -> _Plan:
    plan = _Plan(rules=list(schema.get("x-kubernetes-validations", [])))
    if schema.get("x-kubernetes-list-type") == "map":
        plan.map_keys = schema.get("x-kubernetes-list-map-keys")
    for name, sub in schema.get("properties", {}).items():
        if "default" in sub:
            plan.defaults[name] = sub["default"]
        child = _plan(sub)
        if not child.empty():
            plan.properties[name] = child
    if isinstance(schema.get("items"), dict):
        child = _plan(schema["items"])
        plan.items = None if child.empty() else child
    if isinstance(schema.get("additionalProperties"), dict):
        child = _plan(schema["additionalProperties"])
        plan.values = None if child.empty() else child
    return plan


def _apply_defaults(plan: _Plan, value: Any) -> None:
    """Structural defaulting, as the API server does before validation."""
    if isinstance(value, dict):
        for name, default in plan.defaults.items():
            if name not in value:
                value[name] = json_copy(default)
        for name, child in plan.properties.items():
            if name in value:
                _apply_defaults(child, value[name])
        if plan.values:
            for item in value.values():
                _apply_defaults(plan.values, item)
    elif isinstance(value, list) and plan.items:
        for item in value:
            _apply_defaults(plan.items, item)


def _parent(path: str) -> str:
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""


def _check_rules(plan: _Plan, value: Any, path: str, out: list[tuple[str, str]], failed: set[str],
                 document: cel.Document, steps: tuple[str | int, ...] = ()) -> None:
    """List-map uniqueness and CEL rules, at every node that is present.

    `failed` holds the nodes whose own fields broke the schema: their rules would only repeat the
    schema's error in vaguer words (a wrong type, a misspelt field), so they are skipped.
    """
    if value is None:
        return
    if plan.map_keys and isinstance(value, list):
        seen: dict[tuple, int] = {}
        for index, item in enumerate(value):
            if isinstance(item, dict):
                key = tuple(item.get(k) for k in plan.map_keys)
                if key in seen:
                    label = ", ".join(f"{k}={v}" for k, v in zip(plan.map_keys, key))
                    out.append((f"{path}[{index}]", f"duplicate entry {label} (also at [{seen[key]}]): "
                                                    f"{'/'.join(plan.map_keys)} must be unique"))
                seen.setdefault(key, index)
    for entry in plan.rules if path not in failed else ():
        try:
            ok = document.check(entry["rule"], steps)
        except cel.CelError as exc:
            if not failed:
                out.append((path, f"rule evaluation error ({first_line(exc)}) in: {entry['rule']}"))
            continue
        if not ok:
            where = path + entry.get("fieldPath", "") if entry.get("fieldPath") else path
            out.append((where.lstrip("."), _rule_message(entry, document, steps)))
    if isinstance(value, dict):
        for name, child in plan.properties.items():
            if name in value:
                _check_rules(child, value[name], _join(path, name), out, failed, document, steps + (name,))
        if plan.values:
            for key, item in value.items():
                _check_rules(plan.values, item, _join(path, key), out, failed, document, steps + (key,))
    elif isinstance(value, list) and plan.items:
        for index, item in enumerate(value):
            _check_rules(plan.items, item, f"{path}[{index}]", out, failed, document, steps + (index,))


def _rule_message(entry: dict[str, str], document: cel.Document, steps: tuple[str | int, ...]) -> str:
    """messageExpression when it evaluates to a string, else the static message (as Kubernetes does)."""
    if "messageExpression" in entry:
        try:
            message = document.evaluate(entry["messageExpression"], steps)
            if isinstance(message, str) and message:
                return message
        except cel.CelError:
            pass
    return entry.get("message") or f"failed rule: {entry['rule']}"


class KindAdmission:
    """Everything needed to admit one kind, compiled once."""

    def __init__(self, kind: type[Resource]):
        self.kind = kind
        self.schema = openapi_schema(kind)
        self.validator = openapi_validator(self.schema)
        # Rust-backed, ~1 us for a typical manifest: the common case (valid) pays nothing more; only
        # a failure takes the slower path that reports every error with its field path.
        self._fast = jsonschema_rs.validator_for(to_jsonschema(self.schema))
        self.plan = _plan(self.schema)

    def check(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        """Default `body` in place and return every (field path, message) wrong with it."""
        _apply_defaults(self.plan, body)
        content = {k: v for k, v in body.items() if k in ("spec", "status")}
        errors: list[tuple[str, str]] = []
        if not self._fast.is_valid(content):
            errors = [e for v in violations(self.validator, content)
                      for e in _describe_schema_violation(v, self.schema)]
        failed = {p for path, _ in errors for p in (path, _parent(path))}
        try:
            document = cel.Document(content)
        except cel.CelError as exc:
            return errors + [("", f"cannot evaluate rules: {exc}")]
        _check_rules(self.plan, content, "", errors, failed, document)
        return errors


@functools.cache
def kind_admission(kind: type[Resource]) -> KindAdmission:
    return KindAdmission(kind)


_TOP_LEVEL = {"apiVersion", "kind", "metadata", "spec", "status"}


def admit(manifest: Manifest) -> tuple[Resource | None, list[AdmissionError]]:
    """The typed, defaulted object, or every error that keeps it out."""
    body = json_copy(manifest.body)
    kind_name = body.get("kind")
    name = str((body.get("metadata") or {}).get("name", "<unnamed>")) if isinstance(body.get("metadata"), dict) \
        else "<unnamed>"
    label = kind_name if isinstance(kind_name, str) and kind_name else "<no kind>"

    def error(path: str, message: str) -> AdmissionError:
        return AdmissionError(manifest.source, label, name, path, message)

    kind = KINDS.get((body.get("apiVersion"), kind_name))
    if kind is None:
        return None, [error("", _unknown_kind_message(body.get("apiVersion"), kind_name))]
    errors = [error(path, msg) for path, msg in _check_metadata(kind, body)]
    errors += [error(name_, f"unknown field \"{name_}\": a manifest has only {', '.join(sorted(_TOP_LEVEL))}")
               for name_ in sorted(set(body) - _TOP_LEVEL)]
    errors += [error(path, message) for path, message in kind_admission(kind).check(body)]
    errors += [error(path, message) for path, message in _semantic_checks(kind, body)] if not errors else []
    if errors:
        return None, errors
    return kind.model_validate(body), []


def _unknown_kind_message(api_version: Any, kind: Any) -> str:
    if not api_version or not kind:
        missing = " and ".join(n for n, v in (("apiVersion", api_version), ("kind", kind)) if not v)
        return f"{missing} missing: every manifest names its apiVersion and kind"
    known = KINDS_BY_NAME.get(kind)
    if known is not None:
        return f"apiVersion {api_version} does not serve {kind}: use apiVersion: {known.api_version_string()}"
    hint = difflib.get_close_matches(str(kind), list(KINDS_BY_NAME), n=1)
    suggestion = f"did you mean {hint[0]}?" if hint else f"known kinds: {', '.join(sorted(KINDS_BY_NAME))}"
    return f"unknown kind {kind} ({api_version}): {suggestion}"


def _check_metadata(kind: type[Resource], body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        yield "metadata", "required: add metadata with a name"
        return
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        yield "metadata.name", "required: every object has a name"
    elif len(name) > 63 or not re.match(DNS_LABEL, name):
        yield "metadata.name", f"must be {_PATTERNS[DNS_LABEL]} of at most 63 characters, got {name!r}"
    if kind.SCOPE == "Cluster" and metadata.get("namespace"):
        yield "metadata.namespace", f"{kind.KIND} is cluster-scoped: remove the namespace"
    if kind.SCOPE == "Namespaced":
        metadata.setdefault("namespace", "default")


def _semantic_checks(kind: type[Resource], body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """Checks the API server leaves to a webhook: device selectors must compile."""
    if kind.KIND != "ModelDeployment":
        return
    for e, engine in enumerate(body["spec"]["engines"]):
        for m, member in enumerate(engine["members"]):
            for d, device in enumerate(member.get("nodeSelector", {}).get("devices", [])):
                for s, expression in enumerate(device.get("selectors", [])):
                    try:
                        cel.selector(expression)
                    except cel.CelError as exc:
                        yield (f"spec.engines[{e}].members[{m}].nodeSelector.devices[{d}].selectors[{s}]",
                               f"not a valid CEL expression: {first_line(exc)}")
