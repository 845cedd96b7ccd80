"""Cloud modules: one per source, each whole (settings, machines, node labels, provider packages,
foundation, storage, sample fleet) behind the CloudModule protocol; CLOUD_MODULES is the one list of clouds."""

from __future__ import annotations

from inferplane.clouds.aks import AKS
from inferplane.clouds.base import CLUSTER_KEY, CloudModule, pool_key
from inferplane.clouds.civo import Civo
from inferplane.clouds.eks import EKS
from inferplane.clouds.existing import Existing
from inferplane.clouds.gke import GKE
from inferplane.clouds.nebius import Nebius
from inferplane.clouds.offerings import provider_refusal
from inferplane.clouds.vultr import Vultr

# The registry: every cloud, by its source name, in the order the API lists its blocks.
CLOUD_MODULES: dict[str, CloudModule] = {m.source: m for m in (EKS(), GKE(), AKS(), Nebius(), Vultr(), Civo(),
                                                                Existing())}


def refusal(resource: dict) -> str | None:
    """Why the cloud's API refuses to create a composed cluster or pool resource (a region, zone, machine
    or accelerator type its table of offerings lacks), in the provider's words; None for any other."""
    for module in CLOUD_MODULES.values():
        if module.api_version is not None and module.api_version == resource.get("apiVersion"):
            return provider_refusal(module, module.offered_names(resource))
    return None


__all__ = ["CLOUD_MODULES", "CLUSTER_KEY", "CloudModule", "pool_key", "refusal"]
