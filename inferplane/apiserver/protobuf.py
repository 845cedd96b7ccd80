"""Kubernetes' protobuf, as kubectl sends the core kinds it makes itself (`kubectl create secret`,
`create configmap`, `create namespace`): the 4-byte magic `k8s\\0`, then a runtime.Unknown wrapping the
object's own message (k8s.io/apimachinery pkg/runtime/serializer/protobuf/protobuf.go and
pkg/runtime/generated.proto, v0.37.0).

The messages are declared here as protobuf descriptors and parsed by the `protobuf` library, for the
three kinds and the fields of them kubectl writes (k8s.io/api core/v1/generated.proto and
k8s.io/apimachinery pkg/apis/meta/v1/generated.proto, v0.37.0; checked against kubectl 1.37.1's own
bytes in tests/apiserver/test_kubectl.py). Another kind sent as protobuf is answered 415, and its
client falls back to JSON or says so."""

from __future__ import annotations

import base64
import functools
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_PACKAGE = "inferplane.k8s"
_STRING, _BYTES, _BOOL, _INT64, _MESSAGE = (descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                                           descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                                           descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
                                           descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                                           descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE)
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED

# message -> (field name, number, type, repeated, message type or map value type)
_MESSAGES: dict[str, list[tuple[str, int, int, bool, str | int | None]]] = {
    "TypeMeta": [("apiVersion", 1, _STRING, False, None), ("kind", 2, _STRING, False, None)],
    "Unknown": [("typeMeta", 1, _MESSAGE, False, "TypeMeta"), ("raw", 2, _BYTES, False, None),
                ("contentEncoding", 3, _STRING, False, None), ("contentType", 4, _STRING, False, None)],
    "ObjectMeta": [("name", 1, _STRING, False, None), ("generateName", 2, _STRING, False, None),
                   ("namespace", 3, _STRING, False, None), ("generation", 7, _INT64, False, None),
                   ("labels", 11, _MESSAGE, True, _STRING), ("annotations", 12, _MESSAGE, True, _STRING),
                   ("finalizers", 14, _STRING, True, None)],
    "Secret": [("metadata", 1, _MESSAGE, False, "ObjectMeta"), ("data", 2, _MESSAGE, True, _BYTES),
               ("type", 3, _STRING, False, None), ("stringData", 4, _MESSAGE, True, _STRING),
               ("immutable", 5, _BOOL, False, None)],
    "ConfigMap": [("metadata", 1, _MESSAGE, False, "ObjectMeta"), ("data", 2, _MESSAGE, True, _STRING),
                  ("binaryData", 3, _MESSAGE, True, _BYTES), ("immutable", 4, _BOOL, False, None)],
    "NamespaceSpec": [("finalizers", 1, _STRING, True, None)],
    "Namespace": [("metadata", 1, _MESSAGE, False, "ObjectMeta"), ("spec", 2, _MESSAGE, False, "NamespaceSpec")],
}
KINDS = ("Secret", "ConfigMap", "Namespace")


class NotDecodable(ValueError):
    """A body that is not a Kubernetes protobuf of a kind this server reads."""


def _entry_name(field: str) -> str:
    return field[0].upper() + field[1:] + "Entry"


@functools.cache
def _classes() -> dict[str, Any]:
    """The message classes, built once from the declarations above."""
    file = descriptor_pb2.FileDescriptorProto(name="inferplane_k8s.proto", package=_PACKAGE, syntax="proto2")
    for name, fields in _MESSAGES.items():
        message = file.message_type.add(name=name)
        for field, number, kind, repeated, other in fields:
            declared = message.field.add(name=field, number=number, type=kind,
                                         label=_REPEATED if repeated else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
            if kind == _MESSAGE and isinstance(other, int):  # a map<string, other>
                entry = message.nested_type.add(name=_entry_name(field))
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=_STRING)
                entry.field.add(name="value", number=2, type=other)
                declared.type_name = f".{_PACKAGE}.{name}.{_entry_name(field)}"
            elif kind == _MESSAGE:
                declared.type_name = f".{_PACKAGE}.{other}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
            for name in _MESSAGES}


def _as_json(message: Any, name: str) -> dict[str, Any]:
    """A parsed message as the API's JSON names it: bytes base64, empty fields left out."""
    out: dict[str, Any] = {}
    for field, _, kind, repeated, other in _MESSAGES[name]:
        value = getattr(message, field)
        if kind == _MESSAGE and isinstance(other, int):
            if value:
                out[field] = {k: base64.b64encode(v).decode() if other == _BYTES else v for k, v in value.items()}
        elif kind == _MESSAGE:
            if message.HasField(field):
                out[field] = _as_json(value, other)
        elif repeated:
            if value:
                out[field] = list(value)
        elif message.HasField(field) and (value or kind == _BOOL):
            out[field] = base64.b64encode(value).decode() if kind == _BYTES else value
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The object a Kubernetes protobuf body holds, as JSON."""
    if not body.startswith(MAGIC):
        raise NotDecodable("the body does not start with Kubernetes' protobuf magic (k8s\\0)")
    classes = _classes()
    try:
        unknown = classes["Unknown"].FromString(body[len(MAGIC):])
        kind, version = unknown.typeMeta.kind, unknown.typeMeta.apiVersion
        if (version, kind) not in {("v1", k) for k in KINDS}:
            raise NotDecodable(f"{kind or 'an object'} of {version or 'no version'} is not read as protobuf here: "
                               f"send JSON")
        obj = _as_json(classes[kind].FromString(unknown.raw), kind)
    except DecodeError as error:
        raise NotDecodable(f"the protobuf body cannot be read: {error}") from None
    return {"apiVersion": version, "kind": kind, **obj}
