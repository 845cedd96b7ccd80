"""InferenceCluster: a cluster on a cloud (or an existing one) whose node pools reference classes."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field, create_model

from inferplane import API_GROUP, API_VERSION
from inferplane.api.cloud import SETTINGS_BLOCKS, SOURCES, ZONED_SOURCES, Source, block_fields, block_name, \
    one_block_rules
from inferplane.api.common import SYSTEM_POOL_NAME, ApiModel, Condition, Name, PoolSize, Resource, list_map, \
    rule


class _ClusterSettings(ApiModel):
    model_config = ConfigDict(json_schema_extra={
        "x-kubernetes-validations": one_block_rules("source", SOURCES, "cluster")})

    def settings(self) -> Any:
        """The settings block of the source."""
        return getattr(self, block_name(self.source))


# `source` and one settings block per source (eks, gke, ..., existing).
ClusterSettings = create_model("ClusterSettings", __base__=_ClusterSettings, source=(Source, ...),
                               **block_fields(SETTINGS_BLOCKS))


class NodePool(PoolSize):
    class_name: Name = Field(description="The InferenceClass whose devices this pool's nodes have.")
    zones: list[str] = Field(default_factory=list, max_length=8)


class InferenceClusterSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule(f"self.nodePools.all(p, p.name != '{SYSTEM_POOL_NAME}')",
             f"a pool named {SYSTEM_POOL_NAME} would collide with the System pool inferplane adds for the stack's "
             "own components: rename it", field_path=".nodePools", reason="FieldValueForbidden"),
        rule(f"self.cluster.source in {list(ZONED_SOURCES)} || self.nodePools.all(p, !has(p.zones) || "
             "size(p.zones) == 0)",
             f"zones are set per pool only on {' and '.join(ZONED_SOURCES)}: remove them (on EKS the node groups "
             "follow spec.cluster.eks.subnetIds)", field_path=".nodePools", reason="FieldValueForbidden"),
    ]})

    cluster: ClusterSettings
    node_pools: list[NodePool] = Field(min_length=1, max_length=8, json_schema_extra=list_map("name"))


class PoolDevice(ApiModel):
    name: str
    driver: str
    count: int
    claim: str


class SchedulablePool(ApiModel):
    name: str
    class_name: str
    role: str
    node_count: int
    devices: list[PoolDevice] = Field(default_factory=list)
    drivers: list[str] = Field(default_factory=list)


class InferenceClusterStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))
    schedulable_pools: list[SchedulablePool] = Field(default_factory=list)
    dra_drivers: list[str] = Field(default_factory=list)


class InferenceCluster(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "InferenceCluster"
    PLURAL: ClassVar[str] = "inferenceclusters"
    SCOPE: ClassVar[str] = "Cluster"
    DESCRIPTION: ClassVar[str] = "A cluster on a cloud or an existing one, with node pools that reference classes."
    SHORT_NAMES: ClassVar = ("icluster",)
    COLUMNS: ClassVar = (
        ("SOURCE", ".spec.cluster.source", "string"),
        ("READY", '.status.conditions[?(@.type=="Ready")].status', "string"),
        ("REASON", '.status.conditions[?(@.type=="Ready")].reason', "string"),
    )

    spec: InferenceClusterSpec
    status: InferenceClusterStatus | None = None
