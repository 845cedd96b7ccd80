"""The RunFunction wire format: protobuf Structs to the core's JSON data and back.

A Struct carries every number as a double; a resource is read with its kind's schema, so that a field the
schema says is an integer is one. Each resource, and each top-level field of one, is decoded once from the
bytes a deterministic writer gives it and kept (in the runner's cache, inferplane/kept.py), with the first
way it is misshapen (request_shape.py); each part of a response is serialised once per content.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import orjson
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

from inferplane.api import KINDS
from inferplane.api.xrd import openapi_schema
from inferplane.crossplane.request_shape import field_problems, first_problem, object_problems
from inferplane.kept import Kept, size_of

Resource = dict[str, Any]


class MalformedRequest(ValueError):
    """A request this function cannot answer: the message says what is wrong and what to do."""


# ---- protobuf Struct <-> JSON data. Struct carries every number as a double: a whole number comes
# back as an int where the kind's schema says integer (an int-or-string quantity included). The SDK's
# helpers go through json_format, which checks every field against its descriptor: these read and
# write the oneof directly, 3-5x faster, and the conversion is most of a call's cost
# (bench/function_bench.py).

def _says_integer(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "integer" or any(b.get("type") == "integer" for b in schema.get("anyOf", ()))


def _fields(struct: struct_pb2.Struct, schema: dict[str, Any] | None) -> dict[str, Any]:
    fields = struct.fields
    if schema is None:
        return {k: _from_value(fields[k], None) for k in fields}
    properties = schema.get("properties") or {}
    others = schema.get("additionalProperties") if isinstance(schema.get("additionalProperties"), dict) else None
    return {k: _from_value(fields[k], properties.get(k, others)) for k in fields}


def _from_value(value: struct_pb2.Value, schema: dict[str, Any] | None) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return _fields(value.struct_value, schema)
    if kind == "number_value":
        number = value.number_value
        return int(number) if schema is not None and number.is_integer() and _says_integer(schema) else number
    if kind == "list_value":
        items = schema.get("items") if schema is not None and isinstance(schema.get("items"), dict) else None
        return [_from_value(v, items) for v in value.list_value.values]
    if kind is None or kind == "null_value":
        return None
    return getattr(value, kind)  # string_value, bool_value


def _to_value(data: Any, value: struct_pb2.Value) -> None:
    if isinstance(data, str):
        value.string_value = data
    elif isinstance(data, dict):
        if not data:
            value.struct_value.SetInParent()
        fields = value.struct_value.fields
        for k, v in data.items():
            _to_value(v, fields[k])
    elif isinstance(data, bool):
        value.bool_value = data
    elif isinstance(data, (int, float)):
        value.number_value = data
    elif isinstance(data, list):
        if not data:
            value.list_value.SetInParent()
        values = value.list_value.values
        for v in data:
            _to_value(v, values.add())
    elif data is None:
        value.null_value = struct_pb2.NULL_VALUE
    else:
        raise TypeError(f"{type(data).__name__} is not JSON data")


def struct_to_dict(struct: struct_pb2.Struct, schema: dict[str, Any] | None = None) -> Resource:
    """JSON data of a Struct; with `schema`, whole numbers where it says integer are ints."""
    return _fields(struct, schema)


def dict_to_struct(obj: Resource) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    fields = struct.fields
    for k, v in obj.items():
        _to_value(v, fields[k])
    return struct


# ObjectMeta's integer fields: metadata is not in an XRD's schema, Kubernetes defines it.
_METADATA_SCHEMA = {"type": "object", "properties": {
    "generation": {"type": "integer"}, "deletionGracePeriodSeconds": {"type": "integer"}}}


def _kind_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The schema of one of inferplane's kinds, None for any other (looked up, not kept: the names
    come from the request)."""
    model = KINDS.get((api_version, kind))
    return None if model is None else _model_schema(model)


@functools.cache  # one per kind inferplane defines
def _model_schema(model: type) -> dict[str, Any]:
    schema = openapi_schema(model)
    return {**schema, "properties": {**schema["properties"], "metadata": _METADATA_SCHEMA}}


def _unparsed_messages() -> tuple[type, type]:
    """RunFunctionRequest with every resource left as its bytes, and a Struct with each field's value
    left as its bytes: the same messages on the wire (protobuf: bytes and an embedded message are
    compatible), from which a request written deterministically yields each resource's bytes, and
    each field's, without writing them again one by one."""
    pool = descriptor_pool.DescriptorPool()
    file = descriptor_pb2.FileDescriptorProto()
    fnv1.DESCRIPTOR.CopyToProto(file)
    for dependency in fnv1.DESCRIPTOR.dependencies:
        proto = descriptor_pb2.FileDescriptorProto()
        dependency.CopyToProto(proto)
        pool.Add(proto)
    file.ClearField("service")
    resource = next(m for m in file.message_type if m.name == "Resource")
    field = next(f for f in resource.field if f.name == "resource")
    field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    field.ClearField("type_name")
    fields = file.message_type.add(name="UnparsedStruct")
    entry = fields.nested_type.add(name="FieldsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    fields.field.add(name="fields", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                     label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
                     type_name=f".{file.package}.UnparsedStruct.FieldsEntry")
    pool.Add(file)
    return tuple(message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.{name}"))
                 for name in ("RunFunctionRequest", "UnparsedStruct"))


UnparsedRequest, UnparsedStruct = _unparsed_messages()


def decode_struct(wire: bytes, kept: Kept) -> tuple[Resource, int, str | None]:
    """A Struct written deterministically, as the core reads it (each field in name order), the bytes it
    takes (its fields', counted once when each was decoded), and the first way it is misshapen (None:
    it is not; see request_shape.py)."""
    fields = UnparsedStruct.FromString(wire).fields
    api_version = _decoded_field(kept, "", "", "apiVersion", fields["apiVersion"])[0] if "apiVersion" in fields else ""
    kind = _decoded_field(kept, "", "", "kind", fields["kind"])[0] if "kind" in fields else ""
    if not isinstance(api_version, str) or not isinstance(kind, str):
        api_version = kind = ""  # not a Kubernetes object: no schema
    resource, size, problem = {}, 0, None
    for name in sorted(fields):
        resource[name], field_size, field_problem = _decoded_field(kept, api_version, kind, name, fields[name])
        size += size_of(name) + field_size
        problem = problem or field_problem
    whole = next(object_problems(resource, _kind_schema(api_version, kind)), None)
    return resource, size + sys.getsizeof(resource), whole or problem


def _decoded_field(kept: Kept, api_version: str, kind: str, name: str, wire: bytes) -> tuple[Any, int, str | None]:
    """A top-level field's value from its bytes, the bytes the value takes, and the first way it is
    misshapen (checked once per content, as it is decoded)."""
    key = ("field", api_version, kind, name, wire)
    found = kept.get(key)
    if found is None:
        schema = _kind_schema(api_version, kind)
        value = _from_value(struct_pb2.Value.FromString(wire), None if schema is None else schema["properties"].get(name))
        problem = next(field_problems(api_version, kind, name, value, schema), None)
        found = (value, size_of(value), problem)
        kept.put(key, found, found[1] + size_of(problem))
    return found


# A response is written as its parts' serialised messages one after the other (protobuf: concatenated
# messages parse as one, merged): each desired resource and the composite's status is a response of its
# own, serialised once per content and kept, so the answer is not built up as a message and written
# again. Merged, a desired resource replaces one of the same name from an earlier step whole.

def desired_part(kept: Kept, key: str, ready: int, data: bytes) -> bytes:
    """A response desiring only the resource `key` (`data`: its JSON), serialised."""
    cache_key = ("desired", key, ready, data)
    part = kept.get(cache_key)
    if part is None:
        rsp = fnv1.RunFunctionResponse()
        entry = rsp.desired.resources[key]
        entry.resource.CopyFrom(dict_to_struct(orjson.loads(data)))
        entry.ready = ready
        part = rsp.SerializeToString(deterministic=True)
        kept.put(cache_key, part)
    return part


def status_part(kept: Kept, data: bytes) -> bytes:
    """A response setting only the composite's status (`data`: its JSON), serialised."""
    cache_key = ("status", data)
    part = kept.get(cache_key)
    if part is None:
        rsp = fnv1.RunFunctionResponse()
        rsp.desired.composite.resource.CopyFrom(dict_to_struct({"status": orjson.loads(data)}))
        part = rsp.SerializeToString(deterministic=True)
        kept.put(cache_key, part)
    return part


def from_wire(wire: bytes, kept: Kept) -> tuple[Resource, str | None]:
    """A resource as the core reads it, integers where its kind's schema says integer, from its Struct
    written deterministically, and the first way it is misshapen (None: it is not). Shared: never
    modify it."""
    key = ("resource", wire)
    found = kept.get(key)
    if found is None:
        resource, size, problem = decode_struct(wire, kept)
        found = (resource, problem)
        kept.put(key, found, size + size_of(problem))
    return found


def shape_problem(resource: Resource) -> str | None:
    """The first field of `resource` whose type is not the one the API server would have stored (see
    request_shape.py), or None: for a resource that did not come decoded from the wire."""
    api_version, kind = resource.get("apiVersion"), resource.get("kind")
    known = isinstance(api_version, str) and isinstance(kind, str)
    return first_problem(resource, _kind_schema(api_version, kind) if known else None)


def _named(role: str, resource: Any) -> str:
    """`role` with the resource's kind and name, as far as they can be read."""
    kind = resource.get("kind") if isinstance(resource, dict) else None
    metadata = resource.get("metadata") if isinstance(resource, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if isinstance(kind, str) and kind and isinstance(name, str) and name:
        return f"{role} {shown(f'{kind}/{name}')}"
    return role


def shown(text: str, most: int = 253) -> str:
    """Text from a request, of any length, cut to fit a message."""
    return text if len(text) <= most else text[:most - 3] + "..."


def refuse_misshapen(role: str, resource: Resource, problem: str | None) -> None:
    """MalformedRequest naming the resource, the field and what was expected, when `problem`."""
    if problem is not None:
        raise MalformedRequest(f"{_named(role, resource)}: {problem}: send each resource as the Kubernetes API "
                               "server stores it, as Crossplane does")
