"""The six cloud cluster kinds (EKSCluster, GKECluster, ...): a cluster on one cloud with role-tagged pools.

They are composed by InferenceCluster and composed in turn into the cloud provider's resources by the
cloud's module. Their shape is the same on every cloud but for the cluster settings and the machine
block, so one factory builds all six.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, create_model

from inferplane import API_VERSION, INFRA_GROUP
from inferplane.api.cloud import MACHINE_BLOCKS, PROVIDERS, SETTINGS_BLOCKS, CapacityBlock, Fabric
from inferplane.api.common import ApiModel, Condition, PoolSize, Resource, Taint, list_map



class PoolRole(StrEnum):
    """What a pool is for: the System pool runs the stack's own components, GPU and CPU pools serve models."""

    SYSTEM = "System"
    GPU = "GPU"
    CPU = "CPU"


class CloudNodePoolBase(PoolSize):
    role: PoolRole = Field(description="System: the stack's own components. GPU / CPU: inference pools.")
    zones: list[str] = Field(default_factory=list)
    capacity_block: CapacityBlock | None = None
    fabric: Fabric | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)


class CacheStatus(ApiModel):
    storage_class_name: str | None = Field(
        None, max_length=253, description="The ReadWriteMany StorageClass ModelCache volumes use on this cluster.")


class CloudClusterStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))
    endpoint: str | None = None
    cache: CacheStatus | None = None


def _cloud_cluster_kind(provider: str) -> type[Resource]:
    machine = MACHINE_BLOCKS[provider]
    settings = SETTINGS_BLOCKS[provider]
    pool = create_model(f"{provider}NodePool", __base__=CloudNodePoolBase, machine=(machine, ...))
    spec = create_model(
        f"{provider}ClusterSpec", __base__=settings,
        node_pools=(list[pool], Field(min_length=1, max_length=9, json_schema_extra=list_map("name"))))
    kind = create_model(
        f"{provider}Cluster", __base__=Resource,
        spec=(spec, ...), status=(CloudClusterStatus | None, None))
    kind.GROUP = INFRA_GROUP
    kind.VERSION = API_VERSION
    kind.KIND = f"{provider}Cluster"
    kind.PLURAL = f"{provider.lower()}clusters"
    kind.SCOPE = "Cluster"
    kind.DESCRIPTION = f"A Kubernetes cluster on {provider} with System, GPU and CPU node pools."
    kind.COLUMNS = (("VERSION", ".spec.kubernetesVersion", "string"),)
    return kind


CLOUD_CLUSTER_KINDS: dict[str, type[Resource]] = {p: _cloud_cluster_kind(p) for p in PROVIDERS}
