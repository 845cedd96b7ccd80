"""Per-cloud blocks shared by classes (how to provision a pool) and clusters (where it runs).

A provider's block is named after it in lower case (`eks`, `gke`, ...); a class or cluster sets the
block of its provider (the rule built here enforces it); another provider's block is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from inferplane.api.common import DNS_SUBDOMAIN, GKE_VERSION, KUBERNETES_MINOR, KUBERNETES_PATCH, KUBERNETES_VERSION, \
    VULTR_VERSION, ApiModel, ObjectName, rule
from inferplane.api.drivers import CPU


def block_name(source: str) -> str:
    """The field holding a source's settings: `EKS` -> `eks`, `Existing` -> `existing`."""
    return source.lower()


def required_block_rules(discriminator: str, sources: tuple[str, ...], owner: str) -> list[dict[str, str]]:
    """The rule that the discriminator's block is set. Another source's block may be set too and is
    ignored, as Modelplane ignores it (one rule for all sources: every rule costs an evaluation)."""
    blocks = [(source, block_name(source)) for source in sources]
    required = " || ".join(f"(self.{discriminator} == '{s}' && has(self.{b}))" for s, b in blocks)
    return [
        {"rule": required,
         "messageExpression": f"'{owner}.{discriminator} is ' + self.{discriminator} + ', so {owner}.' + "
                              f"self.{discriminator}.lowerAscii() + ' is required: add it'",
         "reason": "FieldValueRequired"},
    ]


# ---- how a pool is provisioned (InferenceClass.spec.provisioning, and cloud cluster node pools)


class Accelerator(ApiModel):
    type: str = Field(min_length=1, max_length=63,
                      description="The cloud's accelerator name, e.g. nvidia-l4 (GKE) or nvidia-a10g (EKS).")
    count: int = Field(1, ge=1, le=16, description="Accelerators per node.")


# Cloud identifiers: Modelplane's limits.
CloudName = Annotated[str, Field(min_length=1, max_length=63)]


class _Machine(ApiModel):
    disk_size_gb: int = Field(100, ge=10, description="Boot disk size per node, in GiB.")
    accelerator: Accelerator | None = Field(
        None, description="The GPU attached to each node; absent for a pool without an accelerator.")


class EKSMachine(_Machine):
    instance_type: str = Field(min_length=1, description="EC2 instance type, e.g. g6.xlarge or m7i.2xlarge.")


class GKEMachine(_Machine):
    machine_type: str = Field(min_length=1, description="Compute Engine machine type, e.g. g2-standard-8.")
    tpu_topology: str | None = Field(
        None, pattern=r"^[0-9]+x[0-9]+(x[0-9]+)?$", max_length=16,
        description="A TPU machine type's slice topology across the pool's nodes, e.g. 4x4 for a multi-host v6e "
                    "slice of four ct6e-standard-4t VMs (GKE's placement policy); absent for a single-host pool.")


class AKSMachine(_Machine):
    vm_size: str = Field(min_length=1, description="Azure VM size, e.g. Standard_NC24ads_A100_v4.")


class NebiusMachine(_Machine):
    platform: CloudName = Field(description="Nebius platform, e.g. gpu-h100-sxm or cpu-d3.")
    preset: CloudName = Field(description="Nebius resource preset, e.g. 1gpu-16vcpu-200gb.")
    drivers_preset: CloudName = Field(
        "cuda13.0", description="The NVIDIA driver stack mk8s preinstalls on a GPU pool's nodes (e.g. cuda12.4, "
                                "cuda13.0); mk8s validates it against the platform and Kubernetes version.")


class VultrMachine(ApiModel):
    plan: CloudName = Field(description="Vultr plan, e.g. vcg-a100-1c-6g-4vram.")
    accelerator: Accelerator | None = None


class CivoMachine(ApiModel):
    size: str = Field(min_length=1, description="Civo node size, e.g. g4p.kube.medium.")
    accelerator: Accelerator | None = None


# ---- how a pool's nodes are placed and networked (InferenceCluster pools and cloud cluster pools)


class CapacityBlock(ApiModel):
    capacity_reservation_id: str = Field(
        pattern=r"^cr-[0-9a-f]+$", min_length=4, max_length=64,
        description="The Capacity Reservation of an EC2 Capacity Block for ML, e.g. cr-0123456789abcdef0; used on "
                    "EKS, ignored elsewhere")


class InfiniBand(ApiModel):
    fabric: str = Field(min_length=1, max_length=63, description="The physical InfiniBand fabric, e.g. fabric-2.")


class Fabric(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("!has(self.infiniband) || self.type == 'InfiniBand'",
             "fabric.infiniband is only valid when fabric.type is InfiniBand: set type: InfiniBand or remove it",
             field_path=".infiniband", reason="FieldValueForbidden")]})

    type: Literal["None", "EFA", "InfiniBand"] = Field(
        "None", description="None: the cloud's standard network. EFA: Elastic Fabric Adapters (EKS). InfiniBand: "
                            "the pool's nodes on one InfiniBand fabric (Nebius, AKS).")
    infiniband: InfiniBand | None = None


# ---- where a cluster runs (InferenceCluster.spec.cluster, and the cloud cluster kinds)


class Credentials(ApiModel):
    """The Crossplane provider config holding the cloud's credentials."""

    type: Literal["ProviderConfig", "ClusterProviderConfig"] = Field(
        "ClusterProviderConfig", description="ProviderConfig: namespaced, in inferplane-system, beside the "
                                             "composed resources. ClusterProviderConfig: cluster-scoped.")
    name: ObjectName = "default"


Region = Annotated[str, Field(min_length=1, max_length=32)]
# Every cloud's default Kubernetes version, stored on the object by the XRD (a later change of
# default never upgrades a running cluster). dra.cpu's minimum everywhere: served on every cloud, it needs
# consumable capacity (api/drivers.py states the version); Modelplane defaults GKE to 1.35 and AKS and Nebius to 1.34.
DEFAULT_MINOR = CPU.min_kubernetes_version
DEFAULT_VULTR_VERSION = "v1.36.1+3"


def kubernetes_version(default: str, pattern: str) -> Any:
    return Field(default, pattern=pattern,
                 description=f"Defaults to {default}: dra.cpu, served on every cloud, needs Kubernetes "
                             f"{CPU.min_kubernetes_version}")


class _ClusterBlock(ApiModel):
    credentials: Credentials = Field(default_factory=Credentials)


class EKSSettings(_ClusterBlock):
    region: Region = Field(description="AWS region, e.g. us-west-2.")
    kubernetes_version: str = kubernetes_version(DEFAULT_MINOR, KUBERNETES_MINOR)
    # Bring your own: set, and inferplane composes no role or network of that kind.
    role_arn: str | None = Field(None, description="IAM role of the control plane (bring your own).")
    node_role_arn: str | None = Field(None, description="IAM role of the nodes (bring your own).")
    subnet_ids: list[str] | None = Field(
        None, min_length=1, description="Subnets of the cluster and its node groups (bring your own).")


class GKESettings(_ClusterBlock):
    region: Region = Field(description="GCP region, e.g. us-central1: the cluster is regional.")
    kubernetes_version: str = kubernetes_version(DEFAULT_MINOR, GKE_VERSION)
    project: str | None = Field(None, description="GCP project; defaults to the provider config's.")
    # Bring your own: set, and inferplane composes no network or node service account.
    network: str | None = Field(None, min_length=1, description="VPC network to use (bring your own).")
    subnetwork: str | None = Field(None, min_length=1, description="Subnetwork of that network to use (bring "
                                                                   "your own).")
    service_account: str | None = Field(None, min_length=1, description="Email of the service account the "
                                                                        "nodes run as (bring your own).")


class AKSSettings(_ClusterBlock):
    location: Region = Field(description="Azure region, e.g. westeurope.")
    kubernetes_version: str = kubernetes_version(DEFAULT_MINOR, KUBERNETES_PATCH)
    resource_group_name: str | None = Field(None, description="Resource group to use (bring your own).")
    subnet_id: str | None = Field(None, min_length=1, description="Azure resource ID of the subnet the nodes use "
                                                                  "(bring your own): no virtual network is composed.")


class NebiusSettings(_ClusterBlock):
    kubernetes_version: str = kubernetes_version(DEFAULT_MINOR, KUBERNETES_MINOR)
    parent_id: str | None = Field(None, description="The Nebius project ID; defaults to the provider config's.")
    subnet_id: str | None = Field(None, description="Subnet to use (bring your own).")


class VultrSettings(_ClusterBlock):
    region: Region = Field(description="Vultr region, e.g. ewr.")
    kubernetes_version: str = kubernetes_version(DEFAULT_VULTR_VERSION, VULTR_VERSION)


class CivoSettings(_ClusterBlock):
    region: str
    kubernetes_version: str = kubernetes_version(DEFAULT_MINOR, KUBERNETES_PATCH)
    firewall_id: str | None = None
    network_id: str | None = None


class ExistingSecretRef(ApiModel):
    name: ObjectName
    key: str = Field("kubeconfig", min_length=1, max_length=253)
    namespace: str | None = Field(None, description="Defaults to inferplane-system, where inferplane runs.")


class IdentitySecretRef(ApiModel):
    name: ObjectName
    key: str = Field("private_key", min_length=1, max_length=253)
    type: Literal["GoogleApplicationCredentials", "AWSWebIdentityCredentials", "NebiusServiceAccountCredentials"] \
        = Field("GoogleApplicationCredentials", description="The cloud identity the credential authenticates as.")


class ExistingCache(ApiModel):
    storage_class_name: ObjectName | None = Field(
        None, description="An existing ReadWriteMany StorageClass for ModelCache volumes.")


# A DRA driver's name, as a ResourceSlice's spec.driver takes it: a DNS subdomain of at most 63
# characters (Kubernetes' DRA validation).
DriverName = Annotated[str, Field(pattern=DNS_SUBDOMAIN, min_length=1, max_length=63)]


class ExistingSettings(ApiModel):
    secret_ref: ExistingSecretRef = Field(description="Secret holding the cluster's kubeconfig.")
    preinstalled_drivers: list[DriverName] | None = Field(
        # Bounded, as every list an object carries.
        None, max_length=32, json_schema_extra={"x-kubernetes-list-type": "set"},
        description="DRA drivers the cluster's owner installed and runs (e.g. gpu.example.com, the DRA example "
                    "driver on a kind cluster, or a vendor driver installed by hand): classes may claim them here, "
                    "and inferplane installs no device stack for them.")
    identity_secret_ref: IdentitySecretRef | None = Field(
        None, description="Cloud credentials the stack authenticates with, instead of a token in the kubeconfig.")
    cache: ExistingCache | None = None
    kubernetes_version: str | None = Field(
        None, pattern=KUBERNETES_VERSION,
        description="The cluster's Kubernetes version; defaults to the one the cluster reports.")


# ---- every source, once: the cloud names, their Literal types and their blocks are derived from here


@dataclass(frozen=True)
class Blocks:
    settings: type[ApiModel]
    # How a pool's machine is described; None where inferplane provisions nothing (Existing).
    machine: type[ApiModel] | None
    # Whether a pool can be pinned to zones; elsewhere zones are ignored (with a Warning event).
    zoned_pools: bool = False
    # Whether a pool without minNodeCount/maxNodeCount autoscales between AUTOSCALED_POOL_BOUNDS, as
    # on Modelplane; elsewhere it keeps nodeCount nodes.
    autoscaled_pools: bool = False


CLOUD_BLOCKS: dict[str, Blocks] = {
    "EKS": Blocks(EKSSettings, EKSMachine, zoned_pools=True, autoscaled_pools=True),
    "GKE": Blocks(GKESettings, GKEMachine, zoned_pools=True, autoscaled_pools=True),
    "AKS": Blocks(AKSSettings, AKSMachine, zoned_pools=True, autoscaled_pools=True),
    "Nebius": Blocks(NebiusSettings, NebiusMachine),
    "Vultr": Blocks(VultrSettings, VultrMachine),
    "Civo": Blocks(CivoSettings, CivoMachine),
    "Existing": Blocks(ExistingSettings, None),
}
SOURCES: tuple[str, ...] = tuple(CLOUD_BLOCKS)
# The clouds inferplane provisions clusters on.
PROVIDERS: tuple[str, ...] = tuple(s for s, blocks in CLOUD_BLOCKS.items() if blocks.machine is not None)
ZONED_SOURCES: tuple[str, ...] = tuple(s for s, blocks in CLOUD_BLOCKS.items() if blocks.zoned_pools)
AUTOSCALED_SOURCES: tuple[str, ...] = tuple(s for s, blocks in CLOUD_BLOCKS.items() if blocks.autoscaled_pools)
# (minNodeCount, maxNodeCount) of such a pool when it sets neither: Modelplane's defaults.
AUTOSCALED_POOL_BOUNDS = (0, 8)
Source = Literal[SOURCES]  # type: ignore[valid-type]
Provider = Literal[PROVIDERS]  # type: ignore[valid-type]
SETTINGS_BLOCKS: dict[str, type[ApiModel]] = {s: blocks.settings for s, blocks in CLOUD_BLOCKS.items()}
MACHINE_BLOCKS: dict[str, type[ApiModel]] = {p: CLOUD_BLOCKS[p].machine for p in PROVIDERS}  # type: ignore[misc]
# Each cloud's default Kubernetes version, read from its settings block (the XRD's default).
DEFAULT_KUBERNETES_VERSION: dict[str, str] = {
    p: CLOUD_BLOCKS[p].settings.model_fields["kubernetes_version"].default for p in PROVIDERS}


def block_fields(blocks: dict[str, type[ApiModel]]) -> dict[str, Any]:
    """One optional field per source, named after it, for pydantic's create_model."""
    return {block_name(source): (block | None, None) for source, block in blocks.items()}


@dataclass(frozen=True)
class MachineGpu:
    """The GPU a cloud machine carries on each node, as the cloud's table of offerings says
    (`inferplane/clouds/offerings/`): what a class provisioning that machine has, whatever it states."""

    machine: str  # as the class names it, e.g. "EKS instance type g6.xlarge"
    driver: str  # the DRA driver that publishes it
    product: str  # its productName as that driver publishes it
    count: int  # GPUs per node
    unconfirmed: bool = False  # the product's exact spelling is not confirmed by a source
    table: str = ""  # the table and the date it was read, for messages
