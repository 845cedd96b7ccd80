"""inferplane: a fleet-level inference control plane."""

API_GROUP = "inferplane.dev"
INFRA_GROUP = "infrastructure.inferplane.dev"
API_VERSION = "v1alpha1"
