"""ServingStack: the components a cluster needs to serve models, installed on that cluster."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from inferplane import API_VERSION, INFRA_GROUP
from inferplane.api.cloud import DriverName, Source
from inferplane.api.common import KUBERNETES_VERSION, ApiModel, Condition, Name, Resource, SecretKeyRef, Taint, \
    list_map, rule


class StackSecrets(ApiModel):
    hugging_face_token: SecretKeyRef | None = Field(None, description="Token engines use to pull gated models.")


class IdentityRef(SecretKeyRef):
    type: Literal["GoogleApplicationCredentials", "AWSWebIdentityCredentials", "NebiusServiceAccountCredentials"]


class StackVersions(ApiModel):
    kubernetes: str | None = Field(None, pattern=KUBERNETES_VERSION,
                                   description="The target cluster's Kubernetes version, for charts' kubeVersion.")


class Gateway(ApiModel):
    enabled: bool = True
    class_name: str = Field("inferplane", description="The GatewayClass of the inference gateway.")


class ServingStackSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("self.source == 'Existing' || !has(self.preinstalledDrivers) || size(self.preinstalledDrivers) == 0",
             "only an Existing cluster's owner runs drivers of its own; on a cloud the stack installs every driver: "
             "remove preinstalledDrivers", field_path=".preinstalledDrivers", reason="FieldValueForbidden")]})

    source: Source = Field(description="The cloud the target cluster runs on; selects the component list.")
    cluster_name: Name = Field(description="The target cluster: names the Helm and Kubernetes ProviderConfigs.")
    kubeconfig_secret_ref: SecretKeyRef | None = Field(
        None, description="Where the target cluster's kubeconfig is. Set: the stack composes the Helm and "
                          "Kubernetes ClusterProviderConfigs its releases use; absent: they are managed elsewhere.")
    identity_secret_ref: IdentityRef | None = Field(
        None, description="Cloud credentials the ProviderConfigs authenticate with, beside the kubeconfig.")
    dra_drivers: list[str] | None = Field(
        None, json_schema_extra={"x-kubernetes-list-type": "set"},
        description="Drivers the cluster's classes claim that the stack installs for (not the owner's). Absent: not "
                    "yet stamped, the cloud's full list is installed so that an upgrade never strips a running stack. "
                    "Empty: no device stack.")
    preinstalled_drivers: list[DriverName] = Field(
        default_factory=list, max_length=32, json_schema_extra={"x-kubernetes-list-type": "set"},
        description="Claimed drivers the cluster's owner installed and runs (an Existing cluster's "
                    "spec.cluster.existing.preinstalledDrivers): served without a component of this stack.")
    pool_taints: dict[str, list[Taint]] = Field(
        default_factory=dict,
        description="For each claimed driver whose pools carry no taint of its own (DRANET's are GPU or CPU "
                    "pools), the taints of the pools whose classes claim it: its node agents tolerate exactly these.")
    secrets: StackSecrets = Field(default_factory=StackSecrets)
    versions: StackVersions = Field(default_factory=StackVersions)
    gateway: Gateway = Field(default_factory=Gateway)


class GatewayStatus(ApiModel):
    address: str | None = Field(None, description="The address of the cluster's gateway, which its replicas' "
                                                  "routes attach to; absent until its load balancer has one.")


# Whether the stack is installed: set by the ServingStack on itself, and by its InferenceCluster from
# the stack's readiness.
STACK_READY = "StackReady"


class ServingStackStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))
    components: list[str] = Field(default_factory=list, description="Keys of the installed components.")
    gateway: GatewayStatus | None = None


class ServingStack(Resource):
    GROUP: ClassVar[str] = INFRA_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ServingStack"
    PLURAL: ClassVar[str] = "servingstacks"
    SCOPE: ClassVar[str] = "Cluster"
    DESCRIPTION: ClassVar[str] = "The serving components of one cluster: device stacks, gateway, metrics."
    SHORT_NAMES: ClassVar = ("stack",)
    COLUMNS: ClassVar = (("SOURCE", ".spec.source", "string"), ("CLUSTER", ".spec.clusterName", "string"))

    spec: ServingStackSpec
    status: ServingStackStatus | None = None
