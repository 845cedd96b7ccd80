"""Conventions of every Crossplane managed resource inferplane composes (cloud resources, Helm
releases, Kubernetes objects)."""

# The composites are cluster-scoped but the providers' `.m.` kinds are namespaced: composed managed
# resources live in inferplane's own namespace on the control plane.
MANAGED_NAMESPACE = "inferplane-system"
# A cluster-scoped provider config can be referenced from any namespace, so credentials need no
# per-namespace copy.
PROVIDER_CONFIG_KIND = "ClusterProviderConfig"
# Crossplane names the external object (cloud resource, Helm release) after this annotation,
# defaulting to metadata.name.
EXTERNAL_NAME_ANNOTATION = "crossplane.io/external-name"
