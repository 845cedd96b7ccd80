"""Building blocks shared by every kind: the model base, metadata, conditions, references.

Models are the typed view the composition functions read after admission; their JSON schema
(with the `x-kubernetes-*` extensions declared here) is what the generated XRDs publish.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# Kubernetes' own patterns, so that admission refuses what the API server would.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUALIFIED_NAME = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# The pattern controller-gen publishes for resource.Quantity fields.
QUANTITY = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)"
            r"|(\.[0-9]+))))?$")
SEMVER = r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
# Kubernetes versions as each cloud's API takes them; every one of them reads as (major, minor)
# through clouds.kubernetes_version.minor(), the one parser comparisons use.
KUBERNETES_MINOR = r"^1\.[0-9]+$"  # EKS and Nebius take a minor only: "1.36"
KUBERNETES_PATCH = r"^1\.[0-9]+(\.[0-9]+)?$"  # AKS and Civo: "1.36" or "1.36.1"
GKE_VERSION = r"^1\.[0-9]+(\.[0-9]+(-gke\.[0-9]+)?)?$"  # a prefix of "1.36.1-gke.1200"
VULTR_VERSION = r"^v1\.[0-9]+\.[0-9]+\+[0-9]+$"  # VKE takes the exact build: "v1.36.1+3"
# Any of the above, or what a cluster reports (`kubectl version`: "v1.36.1-eks-1a2b3c"): for
# existing clusters and the serving stack, which never pass it to a cloud API.
KUBERNETES_VERSION = r"^v?1\.[0-9]+(\.[0-9]+([-+][0-9A-Za-z.+-]+)?)?$"


def rule(expression: str, message: str, field_path: str | None = None, reason: str | None = None) -> dict[str, str]:
    """One `x-kubernetes-validations` entry: a CEL rule evaluated with `self` bound to the node."""
    entry = {"rule": expression, "message": message}
    if field_path:
        entry["fieldPath"] = field_path
    if reason:
        entry["reason"] = reason
    return entry


def list_map(*keys: str) -> dict[str, Any]:
    """A list whose items are unique by `keys`, merged by them on apply (Kubernetes list-map)."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


# The pool the cloud modules add for the serving stack's own components.
SYSTEM_POOL_NAME = "system"


class ApiModel(BaseModel):
    """Fields are camelCase on the wire; unknown fields are refused, never silently dropped."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel, defer_build=True)


Quantity = Annotated[
    int | str,
    Field(json_schema_extra={"x-kubernetes-int-or-string": True, "pattern": QUANTITY}),
]
Name = Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
# Names of cluster-scoped objects such as classes, and of Secrets: what Kubernetes allows.
ObjectName = Annotated[str, Field(pattern=DNS_SUBDOMAIN, min_length=1, max_length=253)]


class PoolSize(ApiModel):
    """A pool's name and size; the autoscaling bounds, when set, contain the node count.

    The ordering rules are stricter than Modelplane's: the clouds refuse a pool whose starting size
    is outside its bounds (EKS: desiredSize between minSize and maxSize), so admission says so first.
    """

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("!has(self.minNodeCount) || self.minNodeCount <= self.nodeCount",
             "minNodeCount is above nodeCount, which the clouds refuse: lower minNodeCount or raise nodeCount",
             field_path=".minNodeCount", reason="FieldValueInvalid"),
        rule("!has(self.maxNodeCount) || self.nodeCount <= self.maxNodeCount",
             "nodeCount is above maxNodeCount, which the clouds refuse: raise maxNodeCount or lower nodeCount",
             field_path=".maxNodeCount", reason="FieldValueInvalid"),
    ]})

    name: Name
    node_count: int = Field(1, ge=0)
    min_node_count: int | None = Field(None, ge=0)
    max_node_count: int | None = Field(None, ge=1)


class ObjectMeta(BaseModel):
    """Kubernetes object metadata; the fields the runtime sets are kept as they come."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    name: str
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class Condition(ApiModel):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


class SecretKeyRef(ApiModel):
    name: ObjectName
    namespace: str | None = Field(None, description="Defaults to the namespace inferplane runs in.")
    key: str


class Taint(ApiModel):
    """A node taint, as Kubernetes defines it."""

    key: str = Field(pattern=QUALIFIED_NAME)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


def taint_text(key: str, value: str | None, effect: str) -> str:
    """A taint as kubectl spells it: key=value:Effect, or key:Effect without a value."""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


# The InferenceClusters a ModelDeployment or ModelCache selects, by their labels (a comment: a docstring
# would become the schema's description).
class ClusterSelector(ApiModel):
    match_labels: dict[str, str] | None = None


class Resource(BaseModel):
    """A whole object: apiVersion, kind, metadata, spec, status. Subclasses set the ClassVars."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    GROUP: ClassVar[str]
    VERSION: ClassVar[str]
    KIND: ClassVar[str]
    PLURAL: ClassVar[str]
    SCOPE: ClassVar[Literal["Cluster", "Namespaced"]]
    DESCRIPTION: ClassVar[str]
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    # Printer columns for the generated XRD: (name, JSONPath, type).
    COLUMNS: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    # The scale subresource's paths (specReplicasPath, statusReplicasPath), for kinds that scale.
    SCALE: ClassVar[dict[str, str] | None] = None

    api_version: str = Field(alias="apiVersion")
    kind: str
    metadata: ObjectMeta

    @classmethod
    def api_version_string(cls) -> str:
        return f"{cls.GROUP}/{cls.VERSION}"
