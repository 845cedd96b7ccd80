"""Cloud modules: one per source, each whole (settings, machines, node labels, provider packages,
foundation, storage, sample fleet) behind the CloudModule protocol; CLOUD_MODULES is the one list of clouds."""

from __future__ import annotations

from typing import Any, Mapping

from inferplane.api.cloud import SETTINGS_BLOCKS, block_name
from inferplane.api.inference_class import InferenceClass
from inferplane.clouds.aks import AKS
from inferplane.clouds.base import CLUSTER_KEY, CloudModule, pool_key
from inferplane.clouds.civo import Civo
from inferplane.clouds.eks import EKS
from inferplane.clouds.existing import Existing
from inferplane.clouds.gke import GKE
from inferplane.clouds.nebius import Nebius
from inferplane.clouds.offerings import MachineGpu, gpu_of, provider_refusal
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


def machine_gpu(provider: str, machine_block: Mapping[str, Any]) -> MachineGpu | None:
    """The GPU a class's machine block (`spec.provisioning`'s block as written, e.g. {"instanceType":
    "g6.xlarge"}) carries per node on a provider, from its table of offerings; None when it carries none the
    table knows, or the provider has no table."""
    module = CLOUD_MODULES.get(provider)
    return gpu_of(module, machine_block) if module is not None else None


def provisioned_gpu(provisioning: Mapping[str, Any] | None) -> MachineGpu | None:
    """The GPU on each node of the machine a class's `spec.provisioning` (as stored) provisions; None without one."""
    if not provisioning:
        return None
    provider = str(provisioning.get("provider", ""))
    return machine_gpu(provider, provisioning.get(block_name(provider)) or {}) if provider in SETTINGS_BLOCKS else None


def class_gpu(klass: InferenceClass) -> MachineGpu | None:
    """The GPU on each node of the machine a class provisions, from the cloud's table: what its devices are,
    whatever they state (issue 44); None for a class that provisions none, or a machine the table lacks."""
    provisioning = klass.spec.provisioning
    return None if provisioning is None else provisioned_gpu(provisioning.model_dump(by_alias=True, exclude_none=True))


__all__ = ["CLOUD_MODULES", "CLUSTER_KEY", "CloudModule", "MachineGpu", "class_gpu", "machine_gpu", "pool_key",
           "provisioned_gpu", "refusal"]
