"""Cloud modules: one per source, each turning a cloud cluster into that cloud's provider resources."""

from __future__ import annotations

from inferplane.clouds.aks import AKS
from inferplane.clouds.base import CLUSTER_KEY, CloudModule, pool_key
from inferplane.clouds.civo import Civo
from inferplane.clouds.eks import EKS
from inferplane.clouds.existing import Existing
from inferplane.clouds.gke import GKE
from inferplane.clouds.nebius import Nebius
from inferplane.clouds.vultr import Vultr

CLOUD_MODULES: dict[str, CloudModule] = {m.source: m for m in (EKS(), GKE(), AKS(), Nebius(), Vultr(), Civo(),
                                                                Existing())}

__all__ = ["CLOUD_MODULES", "CLUSTER_KEY", "CloudModule", "pool_key"]
