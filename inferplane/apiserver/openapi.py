"""OpenAPI v3 as kube-apiserver serves it: `/openapi/v3` lists a document per group version, each at a
URL carrying its hash (kube-openapi's handler3: SHA-512, upper-case hex).

The documents are those `inferplane explain` renders too (`inferplane.crossplane.stored_openapi`):
our kinds' built from the committed XRDs, the provider configs' from their vendored CRDs, and the core
kinds' (Namespace, Secret, ConfigMap, Event) from Kubernetes v1.37.0's vendored definitions. Every served group version's document
also names, for each kind, the PATCH operation with its `fieldValidation`, `dryRun` and `fieldManager`
parameters: kubectl reads from it that the server validates fields itself
(k8s.io/cli-runtime pkg/resource/query_param_verifier_v3.go, v0.37.0: `supportsQueryParamV3`), and
so sends `fieldValidation=Strict` instead of validating against OpenAPI v2, which is not served. The
composed resources' kinds publish no schemas here (their CRDs are not shipped with the package): their
group versions' documents hold only those PATCH operations (and the provider configs' schemas where
they share a group version)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from inferplane import KUBERNETES_RELEASE
from inferplane.apiserver.catalog import Catalog, Served
from inferplane.apiserver.status import APIError
from inferplane.crossplane.stored_openapi import openapi_document

# The query parameters of a PATCH that kube-apiserver documents and this server reads.
PATCH_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation", "force")


def _patch_path(served: Served) -> tuple[str, dict[str, Any]]:
    root = "/api/v1" if not served.group else f"/apis/{served.api_version}"
    where = "/namespaces/{namespace}" if served.namespaced else ""
    gvk = {"group": served.group, "version": served.version, "kind": served.kind}
    return f"{root}{where}/{served.plural}/{{name}}", {
        "description": f"partially update the specified {served.kind}",
        "operationId": f"patch{'Namespaced' if served.namespaced else ''}{served.kind}",
        "parameters": [{"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                       for name in PATCH_PARAMETERS],
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk}


class OpenAPI:
    """Each served group version's document, built once."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.documents: dict[str, bytes] = {}

    def _name(self, api_version: str) -> str:
        """The document's path under /openapi/v3/: `api/v1`, `apis/GROUP/VERSION`."""
        return "api/v1" if api_version == "v1" else f"apis/{api_version}"

    def document(self, api_version: str) -> bytes:
        if api_version not in self.documents:
            document = openapi_document(api_version) or {
                "openapi": "3.0.0", "info": {"title": "Kubernetes", "version": KUBERNETES_RELEASE}, "paths": {},
                "components": {"schemas": {}}}
            for served in self.catalog.of(api_version):
                path, operation = _patch_path(served)
                document["paths"].setdefault(path, {})["patch"] = operation
            document["paths"] = dict(sorted(document["paths"].items()))
            self.documents[api_version] = json.dumps(document, separators=(",", ":")).encode()
        return self.documents[api_version]

    def index(self) -> dict[str, Any]:
        versions = ["v1"] + self.catalog.group_versions() if self.catalog.of("v1") else self.catalog.group_versions()
        return {"paths": {self._name(v): {"serverRelativeURL": f"/openapi/v3/{self._name(v)}?hash="
                                                               f"{hashlib.sha512(self.document(v)).hexdigest().upper()}"}
                          for v in versions}}

    def served(self, path: str) -> bytes:
        """The document at /openapi/v3/PATH."""
        api_version = "v1" if path == "api/v1" else path.removeprefix("apis/")
        if (path != "api/v1" and not path.startswith("apis/")) or not self.catalog.of(api_version):
            raise APIError(404, "NotFound", f"no OpenAPI document for {path}: the index at /openapi/v3 lists them")
        return self.document(api_version)
