"""AKS: an Azure KubernetesCluster holding the System pool, and one KubernetesClusterNodePool per other pool."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from inferplane.api.cloud import AKS
from inferplane.api.cloud_cluster import PoolRole
from inferplane.clouds.aks_foundation import AKSInputs, aks_foundation
from inferplane.clouds.base import ProvisionedCloud, present, provisioned_sample, scaling, scaling_fields, taint_strings, \
    upbound_provider
from inferplane.clouds.foundation import Foundation
from inferplane.clouds.storage import STORAGE_CLASS_KEY, SharedStorage, storage_class

# AKS installs the NVIDIA driver on GPU pools it is asked to; other pools leave gpuDriver unset.
GPU_DRIVER = "Install"
# ModelCache volumes: Azure Files premium NFS shares, provisioned per volume by the Azure Files CSI
# driver AKS runs built in (Microsoft Learn, "Create and use a volume with Azure Files in AKS": provisioner
# file.csi.azure.com; kubernetes-sigs/azurefile-csi-driver docs/driver-parameters.md: skuName, and
# protocol nfs, which needs a premium (Premium_LRS or Premium_ZRS) account). NFS keeps POSIX symlinks and
# permissions, which Hugging Face's cache layout uses; Modelplane v0.3.1 mounts SMB with mfsymlinks instead.
AZURE_FILES_STORAGE_CLASS = "inferplane-rwx-azurefile-nfs"
AZURE_FILES_PROVISIONER = "file.csi.azure.com"
AZURE_FILES_PARAMETERS = {"skuName": "Premium_LRS", "protocol": "nfs"}
# The cluster's own identity, managed by Azure: no service principal to hand over.
IDENTITY = {"type": "SystemAssigned"}
# AKS pool names: a lowercase letter, then lowercase letters and digits, at most 12 in all.
POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
# A pool name AKS refuses keeps a readable prefix and gets a short hash of the whole name, so that
# it is stable across reconciles and distinct from its siblings' names.
NAME_PREFIX = 8
NAME_HASH = 4


def aks_pool_name(name: str) -> str:
    """The pool's name on AKS: itself when AKS accepts it, else a legal name derived from it."""
    if POOL_NAME.match(name):
        return name
    prefix = re.sub(r"[^a-z0-9]", "", name)
    if not prefix[:1].isalpha():
        prefix = "p" + prefix
    return prefix[:NAME_PREFIX] + hashlib.sha256(name.encode()).hexdigest()[:NAME_HASH]


class AKS(ProvisionedCloud):
    source = AKS
    api_version = "containerservice.azure.m.upbound.io/v1beta1"
    cluster_kind = "KubernetesCluster"
    pool_kind = "KubernetesClusterNodePool"
    cluster_ref = "kubernetesClusterIdRef"
    inline_pool = "defaultNodePool"
    # 4 vCPU / 16 GiB, general purpose.
    system_machine = {"vmSize": "Standard_D4s_v5"}
    endpoint_field = "fqdn"
    offered_on_cluster = {"region": "location", "machine": "defaultNodePool.vmSize"}
    offered_on_pool = {"machine": "vmSize", "zone": "zones"}
    machine_field, machine_word = "vm_size", "Azure VM size"
    # vCPUs from Azure's published VM sizes (*unconfirmed* here).
    vcpus_field, vcpus = "vmSize", {"Standard_D16s_v5": 16}
    # The resource group and the family's own kinds are served by the family's base package.
    provider_packages = {"containerservice.azure.m.upbound.io": upbound_provider("provider-azure-containerservice",
                                                                                 "v2.6.0"),
                         "network.azure.m.upbound.io": upbound_provider("provider-azure-network", "v2.6.0"),
                         "azure.m.upbound.io": upbound_provider("provider-family-azure", "v2.6.0")}
    sample = provisioned_sample({"location": "westeurope", "resourceGroupName": "fleet"},
                                {"vmSize": "Standard_NC24ads_A100_v4", "accelerator": {"type": "nvidia-a100"}},
                                {"vmSize": "Standard_D8s_v5"})

    def foundation(self, name: str, spec: Any, observed: dict) -> Foundation:
        # The resource group and the nodes' subnet: composed, or the user's own.
        inputs = AKSInputs(cluster_name=name, location=spec.location,
                           pools=[p.name for p in spec.node_pools], resource_group_name=spec.resource_group_name,
                           subnet_id=spec.subnet_id)
        return aks_foundation(inputs, self.namer(name), self.provider_config(spec))

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        return {"location": spec.location, "kubernetesVersion": version, "dnsPrefix": name,
                "identity": dict(IDENTITY)}

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        size, init = scaling_fields(scaling(pool), count="nodeCount", enabled="autoScalingEnabled",
                                    minimum="minCount", maximum="maxCount", initial="nodeCount")
        fields = present(vmSize=pool.machine.vm_size, osDiskSizeGb=pool.machine.disk_size_gb, **size,
                         nodeLabels=dict(pool.labels), zones=list(pool.zones),
                         gpuDriver=GPU_DRIVER if pool.role == PoolRole.GPU else None)
        return fields, init

    def standalone_fields(self, spec: Any, pool: Any) -> dict[str, Any]:
        return present(mode="System" if pool.role == PoolRole.SYSTEM else "User",
                       nodeTaints=taint_strings(pool.taints))

    def inline_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # The default pool is a system pool by definition and has no taints field.
        fields, init = self.pool_fields(spec, pool)
        return {"name": aks_pool_name(pool.name), **fields}, init

    def external_name(self, pool: Any) -> str | None:
        return aks_pool_name(pool.name)

    def shared_storage(self, cluster: Any, observed: dict | None = None) -> SharedStorage:
        manifest = storage_class(AZURE_FILES_STORAGE_CLASS, AZURE_FILES_PROVISIONER, AZURE_FILES_PARAMETERS,
                                 reclaimPolicy="Delete", allowVolumeExpansion=True, volumeBindingMode="Immediate")
        return SharedStorage(AZURE_FILES_STORAGE_CLASS, {STORAGE_CLASS_KEY: manifest})
