"""What an API server with our XRDs installed publishes of their schemas: the OpenAPI v3 document of
each group version (`/openapi/v3/apis/GROUP/VERSION`; `inferplane serve` serves them, with its discovery
and the `/openapi/v3` index, in `inferplane/apiserver/`).

Built from a set of XRDs (`published()`: the committed ones under `xrds/`) the way kube-apiserver builds a CRD's
(k8s.io/apiextensions-apiserver pkg/controller/openapi/builder/builder.go, `BuildOpenAPIV3` with
no value validations stripped, as the openapiv3 controller calls it): the version's
openAPIV3Schema as it is, plus `apiVersion` and `kind` (TypeMeta's descriptions) and `metadata` (a
reference to ObjectMeta, with PartialObjectMetadata's description), tagged with
`x-kubernetes-group-version-kind` and named by the reversed group (`dev.inferplane.v1alpha1.InferenceCluster`).
`inferplane explain` renders these documents, kubectl explain reads the same ones in the tests.

What is left out, so that no reader takes it for there: the write operations (the paths are the
reads of one object, which is where kubectl explain finds a resource's kind), the List kinds, the
ObjectMeta schema itself (the reference stays unresolved: `explain KIND.metadata` has no fields),
and what Crossplane adds when it turns an XRD into a CRD (such as `spec.crossplane`, the
composition it selects).
"""

from __future__ import annotations

import functools
import json
from typing import Any


from inferplane.crossplane import XRD_DIR
from inferplane import vendored_yaml

OBJECT_META_REF = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
# k8s.io/apimachinery pkg/apis/meta/v1 TypeMeta and PartialObjectMetadata's field documentation, as
# every Kubernetes type publishes it (Kubernetes v1.37's OpenAPI).
TYPE_META = {
    "apiVersion": {
        "description": "APIVersion defines the versioned schema of this representation of an object. Servers should "
                       "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                       "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                       "api-conventions.md#resources",
        "type": "string"},
    "kind": {
        "description": "Kind is a string value representing the REST resource this object represents. Servers may "
                       "infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. "
                       "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                       "api-conventions.md#types-kinds",
        "type": "string"},
}
METADATA = {
    "allOf": [{"$ref": OBJECT_META_REF}],
    "default": {},
    "description": "Standard object's metadata. More info: "
                   "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
}


@functools.cache
def published() -> "Published":
    """What the committed XRDs publish."""
    return Published(tuple(vendored_yaml.load(path.read_text()) for path in sorted(XRD_DIR.glob("*.yaml"))))


def schema_name(group: str, version: str, kind: str) -> str:
    """The components/schemas key kube-openapi gives a CRD's kind: the group reversed."""
    return ".".join([*reversed(group.split(".")), version, kind])


class Published:
    """Discovery and OpenAPI v3 of a set of XRDs, each document built once."""

    def __init__(self, xrds: tuple[dict[str, Any], ...]):
        self.xrds = xrds
        self._documents: dict[str, bytes] = {}

    def group_versions(self) -> list[str]:
        """Every served GROUP/VERSION, in order."""
        return sorted({f"{x['spec']['group']}/{v['name']}" for x in self.xrds for v in x["spec"]["versions"]
                       if v["served"]})

    def served(self, group_version: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(XRD spec, version) of every kind served at GROUP/VERSION; a KeyError where none is."""
        served = [(x["spec"], v) for x in self.xrds for v in x["spec"]["versions"]
                  if v["served"] and f"{x['spec']['group']}/{v['name']}" == group_version]
        if not served:
            raise KeyError(f"no kind is served at {group_version}: {', '.join(self.group_versions())} are")
        return served

    def openapi_v3(self, group_version: str) -> dict[str, Any]:
        """The OpenAPI v3 document of one GROUP/VERSION, as `/openapi/v3/apis/GROUP/VERSION` serves it."""
        return json.loads(self.openapi_v3_json(group_version))

    def openapi_v3_json(self, group_version: str) -> bytes:
        """The document's bytes, as served."""
        if group_version not in self._documents:
            served = self.served(group_version)
            paths = dict(_read_path(spec, version) for spec, version in served)
            schemas = {schema_name(spec["group"], version["name"], spec["names"]["kind"]): _kind_schema(spec, version)
                       for spec, version in served}
            document = {"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
                        "paths": dict(sorted(paths.items())), "components": {"schemas": dict(sorted(schemas.items()))}}
            self._documents[group_version] = json.dumps(document, separators=(",", ":")).encode()
        return self._documents[group_version]


def _kind_schema(spec: dict[str, Any], version: dict[str, Any]) -> dict[str, Any]:
    schema = json.loads(json.dumps(version["schema"]["openAPIV3Schema"]))
    schema["properties"] = {**TYPE_META, "metadata": METADATA, **schema.get("properties", {})}
    schema["x-kubernetes-group-version-kind"] = [
        {"group": spec["group"], "kind": spec["names"]["kind"], "version": version["name"]}]
    return schema


def _read_path(spec: dict[str, Any], version: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The path and operation that read one object, as the builder names them."""
    group, kind, plural = spec["group"], spec["names"]["kind"], spec["names"]["plural"]
    namespaced = spec["scope"] == "Namespaced"
    root = f"/apis/{group}/{version['name']}" + ("/namespaces/{namespace}" if namespaced else "")
    parameters = [{"name": "name", "in": "path", "description": f"name of the {kind}", "required": True,
                   "schema": {"type": "string", "uniqueItems": True}}]
    if namespaced:
        parameters.append({"name": "namespace", "in": "path", "required": True,
                           "description": "object name and auth scope, such as for teams and projects",
                           "schema": {"type": "string", "uniqueItems": True}})
    ref = {"$ref": f"#/components/schemas/{schema_name(group, version['name'], kind)}"}
    return f"{root}/{plural}/{{name}}", {"get": {
        "tags": [f"{group.replace('.', '')}_{version['name']}"],
        "description": f"read the specified {kind}",
        "operationId": f"read{'Namespaced' if namespaced else ''}{kind}",
        "parameters": parameters,
        "responses": {"200": {"description": "OK", "content": {
            "application/json": {"schema": ref}, "application/yaml": {"schema": ref}}}},
        "x-kubernetes-action": "get",
        "x-kubernetes-group-version-kind": {"group": group, "version": version["name"], "kind": kind}}}
