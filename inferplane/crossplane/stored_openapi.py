"""OpenAPI v3 of the other APIs' kinds the control plane stores, as kube-apiserver publishes them: the
core kinds (`/openapi/v3/api/v1`: Namespace, Secret, ConfigMap, Event) and the providers' provider
configs (`/openapi/v3/apis/GROUP/VERSION`), so that `kubectl explain secret` and `inferplane explain`
read the same documents as for our own kinds (`openapi.py`), and `openapi_document` is the one place
both look a group version up.

The provider configs' documents are built from their vendored CRDs (`inferplane/data/crds/`) as our
XRDs' are: kube-apiserver builds every CRD's alike (k8s.io/apiextensions-apiserver
pkg/controller/openapi/builder/builder.go). The core document holds Kubernetes v1.37.0's own
definitions (`inferplane/data/kubernetes-v1.37.0/`, with ObjectMeta and what it references, as the
real `api/v1` document does), turned back from the JSON Schema form kubernetes-validate publishes them
in to the OpenAPI form kube-apiserver serves: one type, not `[type, "null"]`; references into
`#/components/schemas/`, one with a description beside it wrapped in `allOf` (kube-openapi's
OpenAPI v3 builder, as `api/openapi-spec/v3/api__v1_openapi.json` of kubernetes v1.37.0 shows); and
without the `enum` kubernetes-validate adds to `apiVersion` and `kind`, which Kubernetes does not
publish. What stays apart from the real document: the `default`s kube-openapi writes in OpenAPI v3
only (kubernetes-validate converts the v2 definitions, which have none; kubectl explain prints none),
and every operation but the read of one object."""

from __future__ import annotations

import functools
import json
from typing import Any

from inferplane import KUBERNETES_RELEASE, vendored_yaml
from inferplane.admission.object_meta import CORE_DEFINITIONS, CORE_V1, DEFINITIONS
from inferplane.admission.stored_kinds import provider_config_crds
from inferplane.crossplane.openapi import Published, published

# The core kinds this server stores and publishes: (kind, plural, namespaced).
CORE_KINDS = (("ConfigMap", "configmaps", True), ("Event", "events", True), ("Namespace", "namespaces", False),
              ("Secret", "secrets", True))
_ENVELOPE = ("apiVersion", "kind")


@functools.cache
def _provider_configs() -> Published:
    return Published(tuple(vendored_yaml.load(path.read_text()) for path in provider_config_crds()))


@functools.cache
def documented_kinds() -> frozenset[tuple[str, str]]:
    """(API version, kind) of every kind with a schema in a document: our XRDs', the provider configs',
    the core kinds'."""
    found = {("v1", kind) for kind, _, _ in CORE_KINDS}
    for source in (published(), _provider_configs()):
        for api_version in source.group_versions():
            for schema in source.openapi_v3(api_version)["components"]["schemas"].values():
                found |= {(api_version, gvk["kind"]) for gvk in schema["x-kubernetes-group-version-kind"]}
    return frozenset(found)


def openapi_document(api_version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of a group version (None: there is none), a fresh copy."""
    if api_version in published().group_versions():
        return published().openapi_v3(api_version)
    if api_version in _provider_configs().group_versions():
        return _provider_configs().openapi_v3(api_version)
    if api_version == "v1":
        return json.loads(_core_document())
    return None


@functools.cache
def _core_document() -> str:
    definitions = {**json.loads(DEFINITIONS.read_text())["$defs"], **json.loads(CORE_DEFINITIONS.read_text())["$defs"]}
    schemas = {name: _openapi(schema, top=True) for name, schema in sorted(definitions.items())}
    paths = dict(_read_path(kind, plural, namespaced) for kind, plural, namespaced in CORE_KINDS)
    return json.dumps({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": KUBERNETES_RELEASE},
                       "paths": dict(sorted(paths.items())), "components": {"schemas": schemas}})


def _openapi(node: Any, top: bool = False) -> Any:
    """A kubernetes-validate definition in kube-apiserver's OpenAPI v3 form (see the module's doc)."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            out[key] = next(t for t in value if t != "null")
        elif key == "$ref":
            out[key] = "#/components/schemas/" + value.rsplit("/", 1)[-1]
        elif key == "properties":
            added = lambda name, k: top and name in _ENVELOPE and k == "enum"  # noqa: E731
            out[key] = {name: _openapi({k: v for k, v in sub.items() if not added(name, k)}) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _openapi(value)
        else:
            out[key] = value
    if "$ref" in out and len(out) > 1:
        out = {"allOf": [{"$ref": out.pop("$ref")}], **out}
    return out


def _read_path(kind: str, plural: str, namespaced: bool) -> tuple[str, dict[str, Any]]:
    """The path and operation that read one object, where kubectl explain finds a resource's kind."""
    root = "/api/v1" + ("/namespaces/{namespace}" if namespaced else "")
    ref = {"$ref": f"#/components/schemas/{CORE_V1}{kind}"}
    return f"{root}/{plural}/{{name}}", {"get": {
        "tags": ["core_v1"], "description": f"read the specified {kind}",
        "operationId": f"readCoreV1{'Namespaced' if namespaced else ''}{kind}",
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": ref},
                                                                "application/yaml": {"schema": ref}}}},
        "x-kubernetes-action": "get", "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": kind}}}
