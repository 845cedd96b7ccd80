"""Admission of the other APIs' kinds the engine stores (`inferplane.api.stored`): Kubernetes' core
Namespace, Secret and ConfigMap against their published definitions, and the providers' provider
configs against their published CRDs, both vendored under `inferplane/data/`.

The API server's own checks and conversions are cited from kubernetes/kubernetes v1.37.0:
`pkg/apis/core/validation/validation.go` (ValidateSecret, ValidateConfigMap, ValidateNamespace),
`pkg/apis/core/v1/conversion.go` (a Secret's stringData merged into data), `pkg/apis/core/v1/defaults.go`
(a Secret's type defaults to Opaque) and `pkg/registry/core/namespace/strategy.go` (a new Namespace
gets the `kubernetes` finalizer). A Secret's values never appear in a message.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from pathlib import Path
from typing import Any, Iterable

from inferplane.admission.object_meta import CORE_V1, definition_schema
from inferplane.admission.openapi import CRDSchemas
from inferplane.api.stored import CORE_KINDS, PROVIDER_CONFIG_KINDS, StoredObject
from inferplane import DATA, vendored_yaml

CRDS = DATA / "crds"
_ENVELOPE = ("apiVersion", "kind", "metadata")
# Both Secret and ConfigMap: core.MaxSecretSize, 1 MiB of values in all.
MAX_DATA_BYTES = 1024 * 1024
# validation.IsConfigMapKey (k8s.io/apimachinery/pkg/util/validation): the keys of data and binaryData.
_DATA_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
# ValidateSecret: the keys a Secret of a well-known type must carry.
_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}
_JSON_KEYS = {"kubernetes.io/dockercfg": ".dockercfg", "kubernetes.io/dockerconfigjson": ".dockerconfigjson"}
SERVICE_ACCOUNT_ANNOTATION = "kubernetes.io/service-account.name"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
HIDDEN = "***"


def provider_config_crd(kind: type[StoredObject]) -> Path:
    """The vendored CRD of a provider config kind (`crds/README.md`)."""
    folder = "crossplane" if kind.GROUP.endswith(".crossplane.io") else "providers"
    return CRDS / folder / f"{kind.GROUP}_{kind.PLURAL}.yaml"


def provider_config_crds() -> list[Path]:
    return [provider_config_crd(kind) for kind in PROVIDER_CONFIG_KINDS]


@functools.cache
def _provider_schemas() -> CRDSchemas:
    return CRDSchemas(provider_config_crds())


@functools.cache
def printer_columns(kind: type[StoredObject]) -> tuple[tuple[str, str, int], ...]:
    """A provider config CRD's `additionalPrinterColumns`: (name, JSONPath, priority), as kubectl prints them."""
    crd = vendored_yaml.load(provider_config_crd(kind).read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == kind.VERSION)
    return tuple((c["name"], c["jsonPath"], c.get("priority", 0)) for c in version.get("additionalPrinterColumns", []))


@functools.cache
def content_schema(kind: type[StoredObject]) -> dict[str, Any]:
    """The published schema of what a stored kind's object holds beside apiVersion, kind and metadata."""
    if kind in CORE_KINDS:
        schema = definition_schema(CORE_V1 + kind.KIND)
    else:
        schema = _provider_schemas().schema(kind.api_version_string(), kind.KIND)
    properties = {k: v for k, v in schema.get("properties", {}).items() if k not in _ENVELOPE}
    return {"type": "object", "properties": properties}


def stored_problems(kind: type[StoredObject], body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """What the API server checks beyond a core kind's schema, converting `body` as it does."""
    if kind.KIND == "Secret" and kind in CORE_KINDS:
        yield from _secret_problems(body)
    elif kind.KIND == "ConfigMap" and kind in CORE_KINDS:
        yield from _config_map_problems(body)
    elif kind.KIND == "Namespace" and kind in CORE_KINDS:
        _default_namespace(body)


def _secret_problems(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    data = {k: v or "" for k, v in (body.get("data") or {}).items()}
    for key, value in data.items():
        decoded = _decoded(value)
        if decoded is None:
            yield f"data[{key}]", ("is not base64 (the value is not shown): data holds base64-encoded bytes: "
                                  "encode it (`base64 -w0`), or move it to stringData, which takes plain text")
        else:
            data[key] = decoded
    for key, value in (body.pop("stringData", None) or {}).items():
        data[key] = (value or "").encode()  # stringData wins over data, as the conversion merges it
    yield from _key_problems("data", data)
    secret_type = body.get("type") or "Opaque"
    body["type"] = secret_type
    yield from _typed_secret_problems(body, secret_type, data)
    yield from _size_problem(data.values())
    body["data"] = {key: base64.b64encode(value).decode() for key, value in data.items()
                    if isinstance(value, bytes)}
    if not body["data"]:
        del body["data"]


def _typed_secret_problems(body: dict[str, Any], secret_type: str,
                           data: dict[str, Any]) -> Iterable[tuple[str, str]]:
    for key in _REQUIRED_KEYS.get(secret_type, ()):
        if key not in data:
            yield f"data[{key}]", f"required for type {secret_type}: add the key {key}"
    json_key = _JSON_KEYS.get(secret_type)
    if json_key in data and isinstance(data[json_key], bytes):
        try:
            json.loads(data[json_key])
        except ValueError:
            yield f"data[{json_key}]", f"must be JSON for type {secret_type} (the value is not shown): fix it"
    if secret_type == "kubernetes.io/basic-auth" and not ({"username", "password"} & data.keys()):
        yield "data[username]", "type kubernetes.io/basic-auth needs username or password: add one"
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    if secret_type == "kubernetes.io/service-account-token" and not annotations.get(SERVICE_ACCOUNT_ANNOTATION):
        yield f"metadata.annotations[{SERVICE_ACCOUNT_ANNOTATION}]", (
            "required for type kubernetes.io/service-account-token: name the ServiceAccount")


def _config_map_problems(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    data = {k: v or "" for k, v in (body.get("data") or {}).items()}
    binary = {}
    for key, value in (body.get("binaryData") or {}).items():
        decoded = _decoded(value or "")
        if decoded is None:
            yield f"binaryData[{key}]", ("is not base64: binaryData holds base64-encoded bytes: encode it "
                                        "(`base64 -w0`), or move it to data, which takes text")
        else:
            binary[key] = decoded
    yield from _key_problems("data", data)
    yield from _key_problems("binaryData", binary)
    for key in sorted(data.keys() & binary.keys()):
        yield f"data[{key}]", f"the key {key} is also in binaryData: a key is in one of them only: remove one"
    yield from _size_problem([v.encode() for v in data.values()] + list(binary.values()))
    if "data" in body:
        body["data"] = data
    if "binaryData" in body:
        body["binaryData"] = {key: base64.b64encode(value).decode() for key, value in binary.items()}


def _default_namespace(body: dict[str, Any]) -> None:
    """What the API server sets on a new Namespace: the `kubernetes` finalizer and the name label."""
    spec = body.setdefault("spec", {})
    finalizers = spec.get("finalizers") or []
    spec["finalizers"] = finalizers if "kubernetes" in finalizers else [*finalizers, "kubernetes"]
    labels = body["metadata"].setdefault("labels", {})
    labels[NAMESPACE_NAME_LABEL] = body["metadata"]["name"]


def _decoded(value: str) -> bytes | None:
    """The bytes of a base64 value as Go's JSON decoder reads []byte (standard alphabet, padded, line
    breaks skipped); None when it is not base64."""
    try:
        return base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return None


def _key_problems(field: str, entries: dict[str, Any]) -> Iterable[tuple[str, str]]:
    for key in entries:
        if len(key) > 253 or not _DATA_KEY.match(key):
            yield f"{field}[{key}]", ("a key must be at most 253 characters of alphanumerics, '-', '_' or '.', e.g. "
                                      "HF_TOKEN or credentials.json: rename it")
        elif key in (".", "..") or key.startswith(".."):
            yield f"{field}[{key}]", "a key must not be '.' or '..' or start with '..': rename it"


def _size_problem(values: Iterable[bytes]) -> Iterable[tuple[str, str]]:
    total = sum(len(v) for v in values)
    if total > MAX_DATA_BYTES:
        yield "data", (f"its values hold {total:,} bytes, over the API server's {MAX_DATA_BYTES:,} "
                       "(core.MaxSecretSize): split it into several objects")


def update_problem(current: dict[str, Any], updated: dict[str, Any]) -> str | None:
    """Why the API server refuses this update of a stored object (ValidateSecretUpdate,
    ValidateConfigMapUpdate): an immutable Secret's or ConfigMap's data and immutability stay as they are."""
    if current.get("apiVersion") != "v1" or current.get("kind") not in ("Secret", "ConfigMap") \
            or current.get("immutable") is not True:
        return None
    fields = ("data", "binaryData", "immutable", "type")
    if all(current.get(f) == updated.get(f) for f in fields):
        return None
    return (f"{current['kind']} {current['metadata']['name']} is immutable: its data and type cannot change and "
            "immutable cannot be unset: delete it and apply it again (nothing was written)")


def without_secret_values(raw: Any, message: str) -> str:
    """A message about a Secret with every value of its data and stringData hidden."""
    if not isinstance(raw, dict):
        return message
    for field in ("data", "stringData"):
        values = raw.get(field)
        for value in (values.values() if isinstance(values, dict) else ()):
            # In a fixed order, repr first (a quoted value is hidden whole): a set's order follows the
            # string hash, which differs between runs (PYTHONHASHSEED), and so did the message.
            for text in dict.fromkeys((repr(value), str(value))):
                if len(text) >= 3:
                    message = message.replace(text, HIDDEN)
    return message


def is_secret(body: Any) -> bool:
    return isinstance(body, dict) and body.get("apiVersion") == "v1" and body.get("kind") == "Secret"
