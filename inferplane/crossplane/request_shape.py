"""The shape every resource of a RunFunctionRequest has when Crossplane sends it, checked before any
of it reaches a composition function.

Crossplane sends each resource as the API server stores it: a Kubernetes object, with a string
apiVersion and kind, an ObjectMeta (a name; labels and annotations mapping strings to strings), a
spec and a status that are objects, and conditions that are objects. The API server refuses anything
else, so a request that breaks one of these is not from Crossplane, or a Crossplane bug: it is
refused as a whole, naming the resource, the field and what was expected, and the functions may
read these fields without checking their types again.
"""

from __future__ import annotations

from typing import Any, Iterator

from inferplane.cel.quantity import INT64_MAX, INT64_MIN

_STRING = {"type": "string"}
_STRINGS = {"type": "object", "additionalProperties": _STRING}
# metav1.Condition, and Crossplane's xpv1.Condition.
_CONDITIONS = {"type": "array", "items": {"type": "object", "properties": {
    field: _STRING for field in ("type", "status", "reason", "message", "lastTransitionTime")}}}

# Every object: apiVersion, kind, ObjectMeta (k8s.io/apimachinery's types), a spec and a status that
# are objects, conditions, and a Crossplane managed resource's status.atProvider.
ENVELOPE = {"type": "object", "properties": {
    "apiVersion": _STRING, "kind": _STRING,
    "metadata": {"type": "object", "properties": {
        **{field: _STRING for field in ("name", "generateName", "namespace", "uid", "resourceVersion",
                                        "creationTimestamp", "deletionTimestamp")},
        "generation": {"type": "integer"}, "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": _STRINGS, "annotations": _STRINGS,
        "finalizers": {"type": "array", "items": _STRING},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
        "managedFields": {"type": "array", "items": {"type": "object"}}}},
    "spec": {"type": "object"},
    "status": {"type": "object", "properties": {"conditions": _CONDITIONS, "atProvider": {"type": "object"}}}}}

# The API server refuses longer: a name is a DNS subdomain, a namespace a DNS label (and the
# functions derive the names of what they compose from them).
NAME_LENGTHS = {"name": 253, "namespace": 63}

# The fields of other projects' kinds the functions read, by the types those kinds' CRDs give them.
# Gateway API's GatewayStatusAddress.
_ADDRESSES = {"type": "array", "items": {"type": "object", "properties": {"type": _STRING, "value": _STRING}}}
_MANIFEST = {"type": "object", "properties": {  # the Kubernetes object a provider-kubernetes Object observes
    "data": _STRINGS, "status": {"type": "object", "properties": {"conditions": _CONDITIONS, "addresses": _ADDRESSES}}}}


def _at_provider(fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"status": {"type": "object", "properties": {"atProvider": {
        "type": "object", "properties": fields}}}}}


READ_FIELDS = {
    ("kubernetes.m.crossplane.io", "Object"): _at_provider({"manifest": _MANIFEST}),
    ("gateway.networking.k8s.io", "Gateway"): {"type": "object", "properties": {"status": {
        "type": "object", "properties": {"addresses": _ADDRESSES}}}},
    ("eks.aws.m.upbound.io", "Cluster"): _at_provider({"vpcConfig": {
        "type": "object", "properties": {"clusterSecurityGroupId": _STRING}}}),
}


def _described(value: Any) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def _wrong(path: str, expected: str, value: Any) -> str:
    return f"{path}: expected {expected}, got {_described(value)}"


_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "an integer",
          float: "a number", type(None): "null"}


def object_problems(resource: Any, schema: dict[str, Any] | None = None) -> Iterator[str]:
    """Each way `resource` as a whole is not shaped as the API server stores an object (an object with
    an apiVersion, a kind and a named metadata; names within their lengths; `schema`'s required
    fields), as `field.path: what was expected`. Each field's own type: field_problems."""
    if not isinstance(resource, dict):
        yield _wrong("the resource", "an object", resource)
        return
    for field in ("apiVersion", "kind"):
        if not resource.get(field) and resource.get(field) is None:
            yield f"{field}: missing"
        elif resource.get(field) == "":
            yield _wrong(field, "a non-empty string", "")
    metadata = resource.get("metadata")
    if metadata is None:
        yield "metadata: missing"
    elif isinstance(metadata, dict) and metadata.get("name") is None:
        yield "metadata.name: missing"
    elif isinstance(metadata, dict) and metadata.get("name") == "":
        yield _wrong("metadata.name", "a non-empty string", "")
    elif isinstance(metadata, dict):
        for field, most in NAME_LENGTHS.items():
            value = metadata.get(field)
            if isinstance(value, str) and len(value) > most:
                yield f"metadata.{field}: expected at most {most} characters, got {len(value):,}"
    for field in (schema or {}).get("required", ()):
        if resource.get(field) is None:
            yield f"{field}: missing"


def field_problems(api_version: Any, kind: Any, name: str, value: Any,
                   schema: dict[str, Any] | None = None) -> Iterator[str]:
    """Each part of the top-level field `name` of an object of `api_version` and `kind` whose type is
    not the one the API server stores: by ENVELOPE, READ_FIELDS and `schema` (its kind's, when the
    kind is inferplane's own)."""
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else None
    for whole in (ENVELOPE, READ_FIELDS.get((group, kind)), schema):
        inner = ((whole or {}).get("properties") or {}).get(name)
        if inner is not None:
            yield from schema_problems(value, inner, name)


def first_problem(resource: Any, schema: dict[str, Any] | None = None) -> str | None:
    """The first way `resource` is misshapen, as a whole or in a field, or None."""
    found = next(object_problems(resource, schema), None)
    if found is None and isinstance(resource, dict):
        api_version, kind = resource.get("apiVersion"), resource.get("kind")
        found = next((p for name, value in resource.items()
                      for p in field_problems(api_version, kind, name, value, schema)), None)
    return found


# ---- the types a schema gives: inferplane's kinds' (their XRDs'), and the ones above.

_SCHEMA_TYPES = {"object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "number": (int, float),
                 "boolean": (bool,)}
_SCHEMA_NAMES = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer",
                 "number": "a number", "boolean": "true or false"}


# The API server keeps an integer field as an int64: apimachinery's JSON decoding (util/json's
# convertNumber) makes a whole number an int64 only when it fits one, and leaves a larger one a float64,
# which an `integer` field's schema refuses. Protobuf's Struct carries every number as a double, so
# 1e308 is a whole number here: its range is checked beside its type, before a function reads it.


def _has_type(value: Any, type_: str) -> bool:
    if isinstance(value, bool):
        return type_ == "boolean"
    if type_ == "integer" and isinstance(value, float):
        return value.is_integer()  # protobuf's Struct carries every number as a double
    return isinstance(value, _SCHEMA_TYPES[type_])


def _alternatives(schema: dict[str, Any]) -> list[str]:
    """The JSON types a schema accepts (none listed: any)."""
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    if "type" in schema:
        return [schema["type"]]
    return [t for branch in schema.get("anyOf", ()) for t in _alternatives(branch)]


def schema_problems(value: Any, schema: dict[str, Any], path: str) -> Iterator[str]:
    """Each field of `value` (at `path`) whose JSON type is not the one `schema` gives it, and each
    required one that is missing. Not refused: what else the API server checks (formats, ranges,
    rules: the functions report those as conditions) and unknown fields (the API server prunes them;
    Crossplane adds its own). A null is what the API server prunes too."""
    if value is None or schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    types = _alternatives(schema)
    if types and not any(_has_type(value, t) for t in types):
        yield _wrong(path, " or ".join(_SCHEMA_NAMES[t] for t in types), value)
        return
    if "integer" in types and _has_type(value, "integer") and not INT64_MIN <= value <= INT64_MAX:
        yield f"{path}: expected an integer of 64 bits ({INT64_MIN} to {INT64_MAX}), got {value:g}"
        return
    if isinstance(value, dict):
        for name in schema.get("required", ()):
            if value.get(name) is None:
                yield f"{path}.{name}: missing" if path else f"{name}: missing"
        properties = schema.get("properties") or {}
        others = schema.get("additionalProperties")
        for key, item in value.items():
            inner = properties.get(key, others if isinstance(others, dict) else None)
            if inner is not None:
                shown = key if len(key) <= 253 else key[:250] + "..."  # a request's, of any length
                yield from schema_problems(item, inner, f"{path}.{shown}" if path else shown)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from schema_problems(item, schema["items"], f"{path}[{index}]")
