"""ModelDeployment: replicas of an inference engine, each member asking for devices by CEL selectors."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import ApiModel, Condition, LabelSelector, Name, Resource, list_map, rule


class DeviceRequest(ApiModel):
    name: Name = Field(description="Names the request in the member's ResourceClaimTemplate.")
    count: int = Field(1, ge=1, le=64)
    selectors: list[str] = Field(
        default_factory=list, max_length=32,
        description="CEL expressions over `device`, as in a DRA ResourceClaim; all must match.")


class MemberNodeSelector(ApiModel):
    devices: list[DeviceRequest] = Field(default_factory=list, max_length=8, json_schema_extra=list_map("name"))


class EngineMember(ApiModel):
    name: Name
    size: int = Field(1, ge=1, le=64, description="Pods of this member per replica (multi-node engines).")
    node_selector: MemberNodeSelector = Field(default_factory=MemberNodeSelector)
    template: dict[str, Any] = Field(
        default_factory=dict, description="A Kubernetes PodTemplateSpec for the member's pods.",
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})


class Engine(ApiModel):
    name: Name
    type: Literal["vLLM", "SGLang", "Custom"] = "vLLM"
    members: list[EngineMember] = Field(min_length=1, max_length=4, json_schema_extra=list_map("name"))


class ModelDeploymentSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("self.engines.size() == 1 || self.engines.all(e, e.type == self.engines[0].type)",
             "all engines of a deployment must be of one type: split them into separate ModelDeployments",
             field_path=".engines", reason="FieldValueInvalid")]})

    model: str = Field(description="The model served, e.g. Qwen/Qwen2.5-0.5B-Instruct.")
    replicas: int = Field(1, ge=0, le=1000)
    cluster_selector: LabelSelector = Field(default_factory=LabelSelector)
    engines: list[Engine] = Field(min_length=1, max_length=4, json_schema_extra=list_map("name"))


class ModelDeploymentStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))
    ready_replicas: int = 0
    placements: list[dict[str, Any]] = Field(
        default_factory=list,
        json_schema_extra={"items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}})


class ModelDeployment(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ModelDeployment"
    PLURAL: ClassVar[str] = "modeldeployments"
    SCOPE: ClassVar[str] = "Namespaced"
    DESCRIPTION: ClassVar[str] = "Replicas of an inference engine placed onto pools whose devices match."
    SHORT_NAMES: ClassVar = ("md",)
    COLUMNS: ClassVar = (("MODEL", ".spec.model", "string"), ("REPLICAS", ".spec.replicas", "integer"))

    spec: ModelDeploymentSpec
    status: ModelDeploymentStatus | None = None
