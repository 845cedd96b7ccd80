"""What Modelplane's getting-started docs apply to install Crossplane's side of a control plane
(`inferplane/data/modelplane-v0.3.1/manifests/getting-started/prerequisites.yaml`, `configuration.yaml`):
packages, their runtime settings and RBAC. The embedded engine needs none of them: it serves
inferplane's kinds and runs their composition functions itself, in one process with no API server to
authorise against. They are accepted, named in a note, and not stored.
"""

from __future__ import annotations

from typing import Any

from inferplane.admission.manifests import Manifest

# Why the embedded engine does without each group's kinds.
_PACKAGES = ("installs or configures a Crossplane package; the embedded engine serves inferplane's kinds and runs "
             "their composition functions itself (`inferplane package build` writes the Configuration for a "
             "Crossplane control plane)")
_RBAC = ("grants Kubernetes API permissions to Crossplane or a provider; the embedded engine runs in one process "
         "with no API server to authorise against")
# (apiVersion, kind) -> why it is not needed. Versions as Crossplane v2 serves them (its CRDs under
# inferplane/data/crds/crossplane/ for Configuration and Function; crossplane/crossplane's
# cluster/crds/ for Provider v1, DeploymentRuntimeConfig v1beta1 and ImageConfig v1beta1) and
# Kubernetes' rbac.authorization.k8s.io/v1 and core/v1.
INSTALL_OBJECTS: dict[tuple[str, str], str] = {
    ("pkg.crossplane.io/v1", "Configuration"): _PACKAGES,
    ("pkg.crossplane.io/v1", "Provider"): _PACKAGES,
    ("pkg.crossplane.io/v1", "Function"): _PACKAGES,
    ("pkg.crossplane.io/v1beta1", "Function"): _PACKAGES,
    ("pkg.crossplane.io/v1beta1", "DeploymentRuntimeConfig"): _PACKAGES,
    ("pkg.crossplane.io/v1beta1", "ImageConfig"): _PACKAGES,
    **{("rbac.authorization.k8s.io/v1", kind): _RBAC
       for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")},
    ("v1", "ServiceAccount"): _RBAC,
}


def install_object_note(body: dict[str, Any]) -> str | None:
    """Why the object is not stored, when it is a Crossplane install object; None otherwise."""
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    return INSTALL_OBJECTS.get((api_version, kind))


def install_object_name(manifest: Manifest) -> str | None:
    """Its name, when it has one; None when metadata.name is missing or not a string."""
    metadata = manifest.body.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None
