"""ModelDeployment: replicas of a serving topology, placed by the fleet scheduler onto pools whose
devices match; and the pieces its internal ModelReplica shares with it.

Field for field Modelplane v0.3.1's ModelDeployment (group rewritten): a manifest its users write
means the same here. The one addition is `status.clusters`, which `get md` shows. Engine names are
also refused unless they are DNS labels: they name the composed workloads, which Kubernetes would
refuse otherwise.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import ConfigDict, Field

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import DNS_LABEL, QUALIFIED_NAME, ApiModel, ClusterSelector, Condition, Quantity, \
    Resource, list_map, rule

# Label keys under our group are the ones inferplane sets on what it composes (which deployment,
# which replica): a user's value there could not be honoured.
RESERVED_LABEL_PREFIX = f"{API_GROUP}/"
# Kubernetes' qualified-name syntax (an optional DNS-subdomain prefix, a name of at most 63
# characters), and a label value's; written as CEL string literals so the rules can carry them.
_QUALIFIED_KEY = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
ATOMIC = {"x-kubernetes-list-type": "atomic"}

Labels = Annotated[dict[str, Annotated[str, Field(max_length=63)]], Field(max_length=32)]
Annotations = Annotated[dict[str, Annotated[str, Field(max_length=8192)]], Field(max_length=32)]


def metadata_rules(what: str, annotations: bool = False) -> list[dict[str, str]]:
    """Labels (and annotation keys) that Kubernetes would refuse on the composed objects are refused
    here, where the user can see which field they wrote."""
    rules = [
        rule(f"!has(self.labels) || self.labels.all(k, !k.startsWith('{RESERVED_LABEL_PREFIX}'))",
             f"{what}.labels keys must not use the reserved {RESERVED_LABEL_PREFIX} prefix"),
        rule(f"!has(self.labels) || self.labels.all(k, k.matches('{_QUALIFIED_KEY}'))",
             f"{what}.labels keys must be valid Kubernetes label keys"),
        rule("!has(self.labels) || self.labels.all(k, k.split('/')[0].size() <= 253)",
             f"{what}.labels key prefixes must be DNS subdomains of at most 253 characters"),
        rule(f"!has(self.labels) || self.labels.all(k, self.labels[k].matches('{_LABEL_VALUE}'))",
             f"{what}.labels values must be valid Kubernetes label values"),
    ]
    if annotations:
        rules += [
            rule(f"!has(self.annotations) || self.annotations.all(k, k.matches('{_QUALIFIED_KEY}'))",
                 f"{what}.annotations keys must be valid Kubernetes annotation keys"),
            rule("!has(self.annotations) || self.annotations.all(k, k.split('/')[0].size() <= 253)",
                 f"{what}.annotations key prefixes must be DNS subdomains of at most 253 characters"),
        ]
    return rules


# PrefillDecode runs exactly one Prefill and one Decode engine; under Unified no engine has a phase.
SERVING_RULES = [
    rule("!has(self.serving) || self.serving.mode != 'PrefillDecode' || size(self.engines) == 2",
         "PrefillDecode serving requires exactly two engines (one Prefill, one Decode)"),
    rule("!has(self.serving) || self.serving.mode != 'PrefillDecode' || "
         "self.engines.exists_one(e, has(e.phase) && e.phase == 'Prefill')",
         "PrefillDecode serving requires exactly one engine with phase Prefill"),
    rule("!has(self.serving) || self.serving.mode != 'PrefillDecode' || "
         "self.engines.exists_one(e, has(e.phase) && e.phase == 'Decode')",
         "PrefillDecode serving requires exactly one engine with phase Decode"),
    rule("(has(self.serving) && self.serving.mode == 'PrefillDecode') || !self.engines.exists(e, has(e.phase))",
         "engine phase may only be set when serving.mode is PrefillDecode"),
]
# The two serving units the workloads are built for: one pod (a Deployment), or a gang (a
# LeaderWorkerSet of a Leader and its Workers).
ENGINE_SHAPE = ("(self.members.size() == 1 && self.members[0].role == 'Standalone') || "
                "(self.members.exists_one(m, m.role == 'Leader') && self.members.exists(m, m.role == 'Worker') "
                "&& !self.members.exists(m, m.role == 'Standalone'))")
WORKER_ONLY_ON_WORKERS = rule("!has(self.worker) || self.role == 'Worker'", "worker may only be set on a Worker member")

Role = Literal["Standalone", "Leader", "Worker"]
Phase = Literal["Prefill", "Decode"]
ServingMode = Literal["Unified", "PrefillDecode"]
EngineName = Annotated[str, Field(min_length=1, max_length=63, pattern=DNS_LABEL)]
Copies = Annotated[int, Field(ge=1, le=64, description="Identical copies of the engine per replica.")]
DeviceCount = Annotated[int, Field(ge=1, le=64)]


class KeyRef(ApiModel):
    name: str
    key: str
    optional: bool | None = None


class FieldRef(ApiModel):
    field_path: str
    api_version: str | None = None


class EnvVarSource(ApiModel):
    secret_key_ref: KeyRef | None = None
    config_map_key_ref: KeyRef | None = None
    field_ref: FieldRef | None = Field(None, description="A pod field through the downward API, e.g. status.podIP.")


class EnvVar(ApiModel):
    name: str
    value: str | None = None
    value_from: EnvVarSource | None = None


class Container(ApiModel):
    name: str = Field(min_length=1, description="The inference engine's container is named engine.")
    image: str = Field(min_length=1)
    command: list[str] | None = None
    args: list[str] | None = Field(None, description="Passed to the engine as written: inferplane adds no flags.")
    env: list[EnvVar] | None = None


class LocalObjectReference(ApiModel):
    name: str


class PodSpec(ApiModel):
    containers: list[Container] = Field(
        min_length=1, max_length=1, description="One container, named engine.",
        json_schema_extra={"x-kubernetes-validations": [
            rule("self.exists_one(c, c.name == 'engine')", "the single container must be named 'engine'")]})
    image_pull_secrets: list[LocalObjectReference] | None = None


class PodMetadata(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": metadata_rules(
        "member template.metadata", annotations=True)})

    labels: Labels | None = None
    annotations: Annotations | None = None


class PodTemplate(ApiModel):
    """The member's engine pods: a subset of a PodTemplateSpec."""

    metadata: PodMetadata | None = None
    spec: PodSpec | None = None


class Selector(ApiModel):
    # At least one kind of selector: an empty one would match every device.
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    cel: str | None = Field(None, min_length=1, max_length=10240, description=(
        "a DRA CEL expression over one `device`, as in a ResourceClaim; at most 10 KiB, Kubernetes' "
        "CELSelectorExpressionMaxLength: split a longer one into several selectors"))


Selectors = Annotated[list[Selector], Field(json_schema_extra=ATOMIC)]


class CapacityRequests(ApiModel):
    """A share of a device: DRA's CapacityRequirements (resource.k8s.io/v1 DeviceRequest
    `exactly.capacity`, Kubernetes 1.34+, KEP-5075 consumable capacity)."""

    # In a CEL string literal a backslash escapes, so the regex's own backslashes are doubled.
    requests: dict[str, Quantity] = Field(
        min_length=1, max_length=32,
        description="The capacity each device of the request gives this pod, by the capacity's qualified name "
                    "as its driver publishes it (dra.cpu/cpu: \"4\" takes 4 of a NUMA node's CPUs). The device must "
                    "allow multiple allocations; what is asked is rounded up by the device's request policy.",
        json_schema_extra={"x-kubernetes-validations": [rule(
            "self.all(k, k.matches('" + QUALIFIED_NAME.replace("\\", "\\\\") + "'))",
            "keys must be capacity names, qualified by the driver's domain (dra.cpu/cpu) or bare (cpu)",
            reason="FieldValueInvalid")]})


class DeviceRequest(ApiModel):
    name: str = Field(min_length=1, max_length=63, description="Names the request in the member's claim.")
    count: DeviceCount = Field(1, description="Devices each pod needs from its node.")
    selectors: Selectors = Field(min_length=1, max_length=8, description="All must hold for a device.")
    # inferplane's addition to Modelplane's request (a Modelplane manifest never sets it).
    capacity: CapacityRequests | None = Field(
        None, description="A share of each device instead of the whole device (DRA consumable capacity), e.g. "
                          "requests: {dra.cpu/cpu: \"4\"}. Omitted, a pod takes whole devices.")


class NodeSelector(ApiModel):
    devices: list[DeviceRequest] = Field(min_length=1, max_length=16, json_schema_extra=list_map("name"))


class WorkerSpec(ApiModel):
    nodes: int = Field(ge=1, le=63, description="Worker pods, one per node, beside the Leader.")


class Member(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [WORKER_ONLY_ON_WORKERS]})

    role: Role = "Standalone"
    node_selector: NodeSelector | None = Field(
        None, description="What each pod needs from its node; omitted, the member claims nothing.")
    # No default: defaults apply before the rules, and a defaulted worker would trip the rule above.
    worker: WorkerSpec | None = None
    template: PodTemplate


class Engine(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule(ENGINE_SHAPE, "an engine must be either a single Standalone member or one Leader and one or more Workers"),
        rule("self.members.exists(m, has(m.nodeSelector))",
             "at least one member of an engine must carry a nodeSelector requesting devices"),
    ]})

    name: EngineName
    copies: Copies = 1
    phase: Phase | None = None
    members: list[Member] = Field(min_length=1, max_length=2, json_schema_extra=ATOMIC)


class ModelCacheRef(ApiModel):
    name: str = Field(min_length=1)


class Serving(ApiModel):
    # `mode` is required as written and defaulted when `serving` is absent, as in Modelplane's API.
    model_config = ConfigDict(json_schema_extra={"required": ["mode"]})

    mode: ServingMode = "Unified"


class Toleration(ApiModel):
    """A Kubernetes toleration, matched against an InferenceCluster's fleet taints."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("self.operator != 'Equal' || (has(self.key) && self.key != '')", "an Equal toleration must set a key"),
        rule("self.operator != 'Exists' || !has(self.value)", "an Exists toleration must not set a value"),
    ]})

    key: str | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "NoExecute"] | None = None


Tolerations = Annotated[list[Toleration], Field(json_schema_extra=ATOMIC)]


class ReplicaMetadata(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": metadata_rules(
        "template.metadata")})

    labels: Labels | None = Field(None, description="Set on the ModelReplicas and ModelEndpoints composed.")


class ReplicaTemplateSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": SERVING_RULES})

    cluster_selector: ClusterSelector | None = Field(None, description="Omitted, every ready cluster is a candidate.")
    model_cache_ref: ModelCacheRef | None = None
    serving: Serving | None = None
    tolerations: Tolerations | None = None
    engines: list[Engine] = Field(min_length=1, max_length=8, json_schema_extra=list_map("name"))


class ReplicaTemplate(ApiModel):
    metadata: ReplicaMetadata | None = None
    spec: ReplicaTemplateSpec


class ModelDeploymentSpec(ApiModel):
    replicas: int = Field(ge=1, le=10, description="ModelReplicas to place, each a whole serving instance.")
    template: ReplicaTemplate


class ReplicaCounts(ApiModel):
    total: int | None = Field(None, description="Replicas scheduled (the scale subresource's status).")
    ready: int | None = None


class ModelDeploymentStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))
    replicas: ReplicaCounts | None = None
    clusters: list[str] | None = Field(None, description="The clusters the replicas are pinned to.")


class ModelDeployment(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ModelDeployment"
    PLURAL: ClassVar[str] = "modeldeployments"
    SCOPE: ClassVar[str] = "Namespaced"
    DESCRIPTION: ClassVar[str] = "Replicas of a serving topology, placed onto pools whose devices match."
    SHORT_NAMES: ClassVar = ("md",)
    COLUMNS: ClassVar = (("REPLICAS", ".spec.replicas", "integer"), ("READY", ".status.replicas.ready", "integer"),
                         ("CLUSTERS", ".status.clusters", "string"))
    # `kubectl scale` and autoscalers drive spec.replicas; the status side counts scheduled replicas.
    SCALE: ClassVar = {"specReplicasPath": ".spec.replicas",
                                              "statusReplicasPath": ".status.replicas.total"}

    spec: ModelDeploymentSpec
    status: ModelDeploymentStatus | None = None

