"""ModelReplica: one replica of a ModelDeployment, pinned to one InferenceCluster.

Internal: the deployment's composition writes it with the scheduler's placement resolved onto each
member (the pool, and the DRA device requests taken from the pool's class). Its schema is
Modelplane v0.3.1's, so that the workload composition can trust the shape it reads, even of a
replica written by hand.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import ApiModel, Condition, Resource, list_map, rule
from inferplane.api.model_deployment import ATOMIC, ENGINE_SHAPE, CapacityRequests, SERVING_RULES, WORKER_ONLY_ON_WORKERS, Copies, \
    DeviceCount, EngineName, ModelCacheRef, Phase, PodTemplate, Role, Selectors, ServingMode, Tolerations, \
    WorkerSpec


class ResolvedDeviceRequest(ApiModel):
    """A member's device request joined with the matched pool's class device: a DRA DeviceRequest."""

    name: str = Field(min_length=1, max_length=63)
    device_class_name: str = Field(min_length=1, max_length=253)
    count: DeviceCount = 1
    selectors: Selectors | None = Field(None, max_length=8, description="The request's selectors, verbatim.")
    # inferplane's addition: the deployment's share of each device, carried to the ResourceClaimTemplate.
    capacity: CapacityRequests | None = Field(None, description="The request's capacity, verbatim.")


class ReplicaMember(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [WORKER_ONLY_ON_WORKERS]})

    role: Role = "Standalone"
    node_pool_name: str = Field(min_length=1, description="The pool of the pinned cluster the member runs on.")
    device_requests: list[ResolvedDeviceRequest] | None = Field(
        None, min_length=1, max_length=16, json_schema_extra=list_map("name"),
        description="Absent when the member claims nothing; never present and empty.")
    worker: WorkerSpec | None = None
    template: PodTemplate


class ReplicaEngine(ApiModel):
    # A gang is one Leader member and one Worker member whose worker.nodes sizes it; and some member
    # must claim a device, or the engine's pods would run without any.
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule(ENGINE_SHAPE, "an engine must be either a single Standalone member or one Leader and one Worker member"),
        rule("self.members.exists(m, has(m.deviceRequests))",
             "at least one member of an engine must carry deviceRequests"),
    ]})

    name: EngineName
    copies: Copies = 1
    phase: Phase | None = None
    members: list[ReplicaMember] = Field(min_length=1, max_length=2, json_schema_extra=ATOMIC)


class ReplicaServing(ApiModel):
    mode: ServingMode = "Unified"


class ModelReplicaSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": SERVING_RULES})

    cluster_name: str = Field(min_length=1, description="The InferenceCluster this replica is pinned to.")
    model_cache_ref: ModelCacheRef | None = None
    serving: ReplicaServing | None = None
    # Our one addition to Modelplane's replica: the deployment's tolerations, which the engine pods
    # carry beside their pool's (the deployment composes them here; the workloads cannot read it).
    tolerations: Tolerations | None = Field(None, description="The deployment's tolerations, verbatim.")
    engines: list[ReplicaEngine] = Field(min_length=1, max_length=8, json_schema_extra=list_map("name"))


class ModelReplicaStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))


class ModelReplica(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ModelReplica"
    PLURAL: ClassVar[str] = "modelreplicas"
    SCOPE: ClassVar[str] = "Namespaced"
    DESCRIPTION: ClassVar[str] = "One replica of a ModelDeployment, pinned to one InferenceCluster (internal)."
    SHORT_NAMES: ClassVar = ("mr",)
    COLUMNS: ClassVar = (("CLUSTER", ".spec.clusterName", "string"),)

    spec: ModelReplicaSpec
    status: ModelReplicaStatus | None = None
