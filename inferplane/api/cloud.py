"""Per-cloud blocks shared by classes (how to provision a pool) and clusters (where it runs).

A provider's block is named after it in lower case (`eks`, `gke`, ...); a class or cluster sets the
block of its provider and no other, which the rules built here enforce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from inferplane.api.common import KUBERNETES_VERSION, ApiModel, Name, SecretKeyRef


def block_name(source: str) -> str:
    """The field holding a source's settings: `EKS` -> `eks`, `Existing` -> `existing`."""
    return source.lower()


def one_block_rules(discriminator: str, sources: tuple[str, ...], owner: str) -> list[dict[str, str]]:
    """Rules: the discriminator's block is set, and no other source's block is.

    Two rules for all sources (not two per source): every rule costs an evaluation per manifest.
    """
    blocks = [(source, block_name(source)) for source in sources]
    required = " || ".join(f"(self.{discriminator} == '{s}' && has(self.{b}))" for s, b in blocks)
    stray = " && ".join(f"(!has(self.{b}) || self.{discriminator} == '{s}')" for s, b in blocks)
    stray_names = ", ".join(f"has(self.{b}) && self.{discriminator} != '{s}' ? '{b}' : ''" for s, b in blocks)
    return [
        {"rule": required,
         "messageExpression": f"'{owner}.{discriminator} is ' + self.{discriminator} + ', so {owner}.' + "
                              f"self.{discriminator}.lowerAscii() + ' is required: add it'",
         "reason": "FieldValueRequired"},
        {"rule": stray,
         "messageExpression": f"'{owner} sets ' + [{stray_names}].filter(b, b != '').join(', ') + "
                              f"' but {owner}.{discriminator} is ' + self.{discriminator} + "
                              f"': keep only {owner}.' + self.{discriminator}.lowerAscii()",
         "reason": "FieldValueForbidden"},
    ]


# ---- how a pool is provisioned (InferenceClass.spec.provisioning, and cloud cluster node pools)


class Accelerator(ApiModel):
    type: str = Field(description="The cloud's accelerator name, e.g. nvidia-l4 (GKE) or nvidia-a10g (EKS).")
    count: int = Field(1, ge=1, description="Accelerators per node.")


class _Machine(ApiModel):
    disk_size_gb: int = Field(100, ge=20, le=65536, description="Boot disk size per node, in GiB.")
    accelerator: Accelerator | None = Field(
        None, description="The GPU attached to each node; absent for a pool without an accelerator.")


class EKSMachine(_Machine):
    instance_type: str = Field(description="EC2 instance type, e.g. g6.xlarge or m7i.2xlarge.")


class GKEMachine(_Machine):
    machine_type: str = Field(description="Compute Engine machine type, e.g. g2-standard-8.")


class AKSMachine(_Machine):
    vm_size: str = Field(description="Azure VM size, e.g. Standard_NC24ads_A100_v4.")


class NebiusMachine(_Machine):
    platform: str = Field(description="Nebius platform, e.g. gpu-h100-sxm or cpu-d3.")
    preset: str = Field(description="Nebius resource preset, e.g. 1gpu-16vcpu-200gb.")


class VultrMachine(ApiModel):
    plan: str = Field(description="Vultr plan, e.g. vcg-a100-1c-6g-4vram.")
    accelerator: Accelerator | None = None


class CivoMachine(ApiModel):
    size: str = Field(description="Civo node size, e.g. g4p.kube.medium.")
    accelerator: Accelerator | None = None


# ---- where a cluster runs (InferenceCluster.spec.cluster, and the cloud cluster kinds)


class _ClusterBlock(ApiModel):
    kubernetes_version: str | None = Field(
        None, pattern=KUBERNETES_VERSION,
        description="Kubernetes minor version, e.g. \"1.36\"; defaults to the cloud's default.")
    provider_config_name: Name = Field(
        "default", description="The Crossplane ProviderConfig holding this cloud's credentials.")


class EKSSettings(_ClusterBlock):
    region: str
    # EKS cannot create a cluster or a node group without these; inferplane does not compose IAM
    # roles or VPCs, so the platform team names the ones to use.
    role_arn: str = Field(description="IAM role of the control plane.")
    node_role_arn: str = Field(description="IAM role of the nodes.")
    subnet_ids: list[str] = Field(min_length=1, description="Subnets of the cluster and its node groups.")


class GKESettings(_ClusterBlock):
    project: str | None = None
    location: str = Field(description="Region or zone, e.g. us-central1.")


class AKSSettings(_ClusterBlock):
    location: str
    resource_group_name: str


class NebiusSettings(_ClusterBlock):
    parent_id: str = Field(description="The Nebius project ID.")
    subnet_id: str


class VultrSettings(_ClusterBlock):
    region: str


class CivoSettings(_ClusterBlock):
    region: str
    firewall_id: str | None = None
    network_id: str | None = None


class ExistingSettings(ApiModel):
    kubeconfig_secret_ref: SecretKeyRef = Field(description="Secret holding the cluster's kubeconfig.")
    kubernetes_version: str | None = Field(
        None, pattern=KUBERNETES_VERSION,
        description="The cluster's Kubernetes version; defaults to the one the cluster reports.")


# ---- every source, once: the cloud names, their Literal types and their blocks are derived from here


@dataclass(frozen=True)
class Blocks:
    settings: type[ApiModel]
    # How a pool's machine is described; None where inferplane provisions nothing (Existing).
    machine: type[ApiModel] | None
    # Whether a pool can be pinned to zones; elsewhere placement follows the cluster's subnets.
    zoned_pools: bool = False


CLOUD_BLOCKS: dict[str, Blocks] = {
    "EKS": Blocks(EKSSettings, EKSMachine),
    "GKE": Blocks(GKESettings, GKEMachine, zoned_pools=True),
    "AKS": Blocks(AKSSettings, AKSMachine, zoned_pools=True),
    "Nebius": Blocks(NebiusSettings, NebiusMachine),
    "Vultr": Blocks(VultrSettings, VultrMachine),
    "Civo": Blocks(CivoSettings, CivoMachine),
    "Existing": Blocks(ExistingSettings, None),
}
SOURCES: tuple[str, ...] = tuple(CLOUD_BLOCKS)
# The clouds inferplane provisions clusters on.
PROVIDERS: tuple[str, ...] = tuple(s for s, blocks in CLOUD_BLOCKS.items() if blocks.machine is not None)
ZONED_SOURCES: tuple[str, ...] = tuple(s for s, blocks in CLOUD_BLOCKS.items() if blocks.zoned_pools)
Source = Literal[SOURCES]  # type: ignore[valid-type]
Provider = Literal[PROVIDERS]  # type: ignore[valid-type]
SETTINGS_BLOCKS: dict[str, type[ApiModel]] = {s: blocks.settings for s, blocks in CLOUD_BLOCKS.items()}
MACHINE_BLOCKS: dict[str, type[ApiModel]] = {p: CLOUD_BLOCKS[p].machine for p in PROVIDERS}  # type: ignore[misc]




def block_fields(blocks: dict[str, type[ApiModel]]) -> dict[str, Any]:
    """One optional field per source, named after it, for pydantic's create_model."""
    return {block_name(source): (block | None, None) for source, block in blocks.items()}
