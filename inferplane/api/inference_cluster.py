"""InferenceCluster: a cluster on a cloud (or an existing one) whose node pools reference classes."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, create_model

from inferplane import API_GROUP, API_VERSION
from inferplane.api.cloud import PROVIDERS, SETTINGS_BLOCKS, SOURCES, CapacityBlock, Fabric, Source, block_fields, block_name, \
    required_block_rules
from inferplane.api.common import DNS_LABEL, SYSTEM_POOL_NAME, ApiModel, Condition, ObjectName, PoolSize, Resource, \
    list_map, rule
from inferplane.api.cloud_cluster import CacheStatus
from inferplane.api.function import PROGRESS_REASONS
from inferplane.api.inference_class import DeviceSpec
from inferplane.api.serving_stack import GatewayStatus


class _ClusterSettings(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        *required_block_rules("source", SOURCES, "cluster"),
        # Another source's block is ignored, but this field says what runs on the cluster: on a cloud
        # inferplane installs every driver itself, so a declaration there is a mistake, not a no-op.
        {"rule": "self.source == 'Existing' || !has(self.existing) || !has(self.existing.preinstalledDrivers)",
         "messageExpression": "'preinstalledDrivers declares the drivers the owner of an Existing cluster runs, and "
                              "this cluster is on ' + self.source + ', where inferplane installs every driver: remove "
                              "existing.preinstalledDrivers, or set source: Existing'",
         "fieldPath": ".existing.preinstalledDrivers", "reason": "FieldValueForbidden"},
    ]})

    def settings(self) -> Any:
        """The settings block of the source."""
        return getattr(self, block_name(self.source))

    def preinstalled_drivers(self) -> tuple[str, ...]:
        """The drivers the cluster's owner runs (an Existing cluster's declaration; none elsewhere)."""
        if self.source in PROVIDERS or self.existing is None:  # provisioned: no owner runs drivers there
            return ()
        return tuple(sorted(self.existing.preinstalled_drivers or ()))


# `source` and one settings block per source (eks, gke, ..., existing).
ClusterSettings = create_model("ClusterSettings", __base__=_ClusterSettings, source=(Source, ...),
                               **block_fields(SETTINGS_BLOCKS))


# Modelplane's limit: a pool name is part of composed names and of GKE node pool names (at most 40).
POOL_NAME_MAX = 40


class NodePool(PoolSize):
    name: str = Field(pattern=DNS_LABEL, max_length=POOL_NAME_MAX,
                      description="A DNS label: it becomes the inferplane.dev/pool node label value and part of "
                                  "composed resource names.")
    class_name: ObjectName = Field(description="The InferenceClass whose devices this pool's nodes have.")
    zones: list[str] = Field(default_factory=list, description="Zones of the pool's nodes (EKS, GKE and AKS; "
                                                               "ignored elsewhere, with a Warning event).")
    capacity_block: CapacityBlock | None = None
    fabric: Fabric | None = None


class ClusterTaint(ApiModel):
    """A fleet-level taint: model deployments without a matching toleration avoid the cluster."""

    key: str = Field(min_length=1)
    value: str | None = None
    effect: Literal["NoSchedule", "NoExecute"]


class InferenceClusterSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule(f"!has(self.nodePools) || self.nodePools.all(p, p.name != '{SYSTEM_POOL_NAME}')",
             f"a pool named {SYSTEM_POOL_NAME} would collide with the System pool inferplane adds for the stack's "
             "own components: rename it", field_path=".nodePools", reason="FieldValueForbidden"),
        rule("self.cluster.source != 'Nebius' || !has(self.nodePools) || self.nodePools.all(p, !has(p.fabric) || "
             "p.fabric.type != 'InfiniBand' || has(p.fabric.infiniband))",
             "a Nebius pool with fabric.type InfiniBand names its fabric: set fabric.infiniband.fabric (e.g. "
             "fabric-2, the fabric your GPU capacity is on)", field_path=".nodePools", reason="FieldValueRequired"),
    ]})

    cluster: ClusterSettings
    taints: list[ClusterTaint] = Field(default_factory=list, json_schema_extra=list_map("key", "effect"))
    node_pools: list[NodePool] = Field(default_factory=list, max_length=8,
                                       json_schema_extra={**list_map("name"), "minItems": 1})


class SchedulablePool(ApiModel):
    name: str
    class_name: str
    role: str
    # The nodes the pool has: its spec's nodeCount, times its zones on GKE (which counts per zone).
    node_count: int
    # How far the cloud's cluster autoscaler may grow the pool (per zone times zones on GKE too);
    # absent where nothing autoscales it.
    max_node_count: int | None = None
    # The class's devices as the pool was last composed with them (Modelplane's gpuPools[].devices):
    # while the gate holds the cluster they stay what its nodes run, whatever the class says now.
    devices: list[DeviceSpec] = Field(default_factory=list)
    drivers: list[str] = Field(default_factory=list)


class ProviderConfigRef(ApiModel):
    name: str | None = Field(None, description="The ClusterProviderConfig that reaches the cluster (Kubernetes "
                                               "and Helm): ModelReplica and ModelCache create their objects there.")


# The gate's verdict and the cloud cluster's readiness; the stack's is STACK_READY.
CLUSTER_READY = "ClusterReady"
# Why the gate holds an Existing cluster that declares no Kubernetes version: it has not reported one yet.
WAITING_FOR_KUBERNETES_VERSION = "WaitingForKubernetesVersion"
# The reasons of an InferenceCluster's Ready while it comes up with nobody acting: none yet (not
# reconciled), its cloud cluster being created, its stack installing, its version not reported yet.
# Replicas that must move wait for such a cluster (scheduling/fleet.py), so that where they land does
# not depend on which cluster was up first. Every other reason needs a person (InvalidSpec,
# WaitingForClasses, InvalidClass, UnsupportedDevices, KubernetesVersionTooOld, InvalidPoolClass, a
# conflict, a provider's error): a cluster held so is not waited for. Hence a list of the waiting
# reasons, not of the others: a reason missing here places those replicas at once on the clusters that
# are up, while one wrongly here would leave them, their pool gone, waiting on a cluster that may never come.
COMING_UP_REASONS = (None, *PROGRESS_REASONS, WAITING_FOR_KUBERNETES_VERSION)


class InferenceClusterStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))
    schedulable_pools: list[SchedulablePool] = Field(default_factory=list)
    dra_drivers: list[str] = Field(default_factory=list)
    gateway: GatewayStatus | None = None
    provider_config_ref: ProviderConfigRef | None = None
    cache: CacheStatus | None = Field(None, description="The effective ReadWriteMany StorageClass for ModelCache "
                                                        "volumes on this cluster.")


class InferenceCluster(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "InferenceCluster"
    PLURAL: ClassVar[str] = "inferenceclusters"
    SCOPE: ClassVar[str] = "Cluster"
    DESCRIPTION: ClassVar[str] = "A cluster on a cloud or an existing one, with node pools that reference classes."
    SHORT_NAMES: ClassVar = ("icluster", "ic")
    COLUMNS: ClassVar = (
        ("SOURCE", ".spec.cluster.source", "string"),
        ("READY", '.status.conditions[?(@.type=="Ready")].status', "string"),
        ("REASON", '.status.conditions[?(@.type=="Ready")].reason', "string"),
    )

    spec: InferenceClusterSpec
    status: InferenceClusterStatus | None = None
