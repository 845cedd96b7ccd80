"""Cloud modules: one per source, each turning a cloud cluster into that cloud's provider resources."""

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

CLOUD_MODULES: dict[str, CloudModule] = {m.source: m for m in (EKS(), GKE(), AKS(), Nebius(), Vultr(), Civo(),
                                                                Existing())}


def refusal(resource: dict) -> str | None:
    """Why the cloud's API refuses to create a composed cluster or pool resource (a region, zone, machine
    or accelerator type its table of offerings lacks), in the provider's words; None for any other."""
    for module in CLOUD_MODULES.values():
        if getattr(module, "api_version", None) == resource.get("apiVersion"):
            return provider_refusal(module.source, module.offered_names(resource))
    return None


__all__ = ["CLOUD_MODULES", "CLUSTER_KEY", "CloudModule", "pool_key", "refusal"]
