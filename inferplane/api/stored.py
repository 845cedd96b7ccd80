"""Kinds of other APIs that users apply and the embedded engine stores as written: Kubernetes' core
Namespace, Secret and ConfigMap, and the provider configs of the Crossplane providers inferplane
composes for. No composition function reconciles them; composites read them (a ModelCache its
authSecret) and `delete` keeps what uses them.

Their schemas are published upstream (Kubernetes' OpenAPI, the providers' CRDs) and vendored under
`inferplane/data/`; admission reads them there (`inferplane/admission/stored_kinds.py`).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict

from inferplane.api.common import Resource


class StoredObject(Resource):
    """An object of another API, kept field for field as admission left it (defaults filled in)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)
    # Names the API server allows: a DNS subdomain (most kinds) or a DNS label (Namespace).
    NAME_IS_SUBDOMAIN: ClassVar[bool] = True

    @classmethod
    def api_version_string(cls) -> str:
        return f"{cls.GROUP}/{cls.VERSION}" if cls.GROUP else cls.VERSION


class Namespace(StoredObject):
    GROUP, VERSION, KIND, PLURAL, SCOPE = "", "v1", "Namespace", "namespaces", "Cluster"
    SHORT_NAMES = ("ns",)
    DESCRIPTION = "Kubernetes' Namespace: a scope for the names of namespaced objects."
    # ValidateNamespaceName is NameIsDNSLabel (k8s.io/kubernetes pkg/apis/core/validation/validation.go).
    NAME_IS_SUBDOMAIN = False


class Secret(StoredObject):
    GROUP, VERSION, KIND, PLURAL, SCOPE = "", "v1", "Secret", "secrets", "Namespaced"
    DESCRIPTION = "Kubernetes' Secret: credentials, `data` base64-encoded."


class ConfigMap(StoredObject):
    GROUP, VERSION, KIND, PLURAL, SCOPE = "", "v1", "ConfigMap", "configmaps", "Namespaced"
    SHORT_NAMES = ("cm",)
    DESCRIPTION = "Kubernetes' ConfigMap: configuration data."


CORE_KINDS: tuple[type[StoredObject], ...] = (Namespace, Secret, ConfigMap)

# The providers whose provider configs Modelplane's getting-started docs apply (clouds) and those the
# serving stacks reach clusters through (Helm, Kubernetes), each at the one version its CRD serves
# (inferplane/data/crds/: `spec.versions[].name`, served and storage).
PROVIDER_CONFIG_GROUPS = {
    "aws.m.upbound.io": "v1beta1", "gcp.m.upbound.io": "v1beta1", "azure.m.upbound.io": "v1beta1",
    "nebius.m.upbound.io": "v1beta1", "vultr.m.upbound.io": "v1beta1", "civo.m.upbound.io": "v1beta1",
    "helm.m.crossplane.io": "v1beta1", "kubernetes.m.crossplane.io": "v1alpha1",
}


def _provider_config(group: str, version: str, kind: str) -> type[StoredObject]:
    # Crossplane v2's `.m.` providers: ClusterProviderConfig is cluster-scoped, ProviderConfig namespaced.
    scope = "Cluster" if kind.startswith("Cluster") else "Namespaced"
    return type(kind, (StoredObject,), {
        "GROUP": group, "VERSION": version, "KIND": kind, "PLURAL": f"{kind.lower()}s", "SCOPE": scope,
        "DESCRIPTION": f"The {group} provider's {kind}: the credentials its managed resources use.",
        "__module__": __name__})


PROVIDER_CONFIG_KINDS: tuple[type[StoredObject], ...] = tuple(
    _provider_config(group, version, kind) for group, version in PROVIDER_CONFIG_GROUPS.items()
    for kind in ("ClusterProviderConfig", "ProviderConfig"))

STORED_KINDS: dict[tuple[str, str], type[StoredObject]] = {
    (k.api_version_string(), k.KIND): k for k in (*CORE_KINDS, *PROVIDER_CONFIG_KINDS)}
