"""EKS: an eks.aws Cluster and one managed NodeGroup per pool."""

from __future__ import annotations

from typing import Any

from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.drivers import INSTANCE_TYPE_LABEL, NEURON
from inferplane.clouds.base import CLUSTER_KEY, ProvisionedCloud, at_provider, connection_secret_name, present, \
    provisioned_sample, scaling, taint_objects, upbound_provider, upper_snake
from inferplane.clouds.eks_foundation import EFA_SECURITY_GROUP, EFS_FILESYSTEM, EKSInputs, eks_foundation, \
    needs_launch_template
from inferplane.clouds.foundation import Foundation
from inferplane.clouds.storage import STORAGE_CLASS_KEY, SharedStorage, storage_class

# Amazon Linux 2023 node images: the NVIDIA variant ships the GPU driver and container toolkit the
# NVIDIA DRA driver expects on the host; every other pool runs the standard image.
GPU_AMI = "AL2023_x86_64_NVIDIA"
STANDARD_AMI = "AL2023_x86_64_STANDARD"
# Neuron pools run the Neuron variant, with the Neuron kernel driver the DRA driver needs (EKS's AMI types,
# AL2023_x86_64_NEURON: EKS API Nodegroup amiType, documentation).
NEURON_AMI = "AL2023_x86_64_NEURON"
# EKS refuses a node group whose maxSize is below 1, even when it is scaled to zero.
MIN_MAX_SIZE = 1
# ModelCache volumes: the EFS CSI driver's dynamic provisioning, an access point per volume in the
# cluster's file system (kubernetes-sigs/aws-efs-csi-driver examples/kubernetes/dynamic_provisioning/
# README.md, "Dynamic Provisioning": provisioner efs.csi.aws.com, provisioningMode efs-ap, fileSystemId,
# directoryPerms; Modelplane v0.3.1's compose-eks-cluster composes the same class).
EFS_STORAGE_CLASS = "inferplane-rwx-efs"
EFS_PROVISIONER = "efs.csi.aws.com"
EFS_PARAMETERS = {"provisioningMode": "efs-ap", "directoryPerms": "700"}


class EKS(ProvisionedCloud):
    source = "EKS"
    api_version = "eks.aws.m.upbound.io/v1beta1"
    cluster_kind = "Cluster"
    pool_kind = "NodeGroup"
    cluster_ref = "clusterNameRef"
    # 4 vCPU / 16 GiB, general purpose.
    system_machine = {"instanceType": "m7i.xlarge"}
    endpoint_field = "endpoint"
    # The eks Cluster writes no kubeconfig: the foundation's ClusterAuth does.
    publishes_kubeconfig = False
    # A pool with a launch template names its instance type there (an ec2 LaunchTemplate), not checked.
    offered_on_cluster = {"region": "region"}
    offered_on_pool = {"machine": "instanceTypes"}
    machine_field, machine_word = "instance_type", "EC2 instance type"
    # vCPUs from AWS's published instance types, *unconfirmed* here but for m6i.2xlarge: Modelplane PR #556's
    # test saw 6 claimable CPUs on a real node (SMT on), 8 less the CPU driver's reservedCPUs.
    vcpus_field, vcpus = "instanceType", {"m6i.2xlarge": 8, "m7i.2xlarge": 8}
    provider_packages = {f"{group}.aws.m.upbound.io": upbound_provider(f"provider-aws-{group}", "v2.6.0")
                         for group in ("eks", "ec2", "iam", "efs")}
    sample = provisioned_sample(
        {"region": "us-east-2", "roleArn": "arn:aws:iam::123456789012:role/c",
         "nodeRoleArn": "arn:aws:iam::123456789012:role/n", "subnetIds": ["subnet-1", "subnet-2"]},
        {"instanceType": "g6.xlarge", "accelerator": {"type": "nvidia-l4"}}, {"instanceType": "m7i.2xlarge"})

    def node_labels(self, machine: dict[str, Any]) -> dict[str, str]:
        """EKS nodes carry their instance type (aws-dranet's affinity reads it)."""
        return {INSTANCE_TYPE_LABEL: machine["instanceType"]} if machine.get("instanceType") else {}

    def foundation(self, name: str, spec: Any, observed: dict) -> Foundation:
        # Roles and subnets (the provider requires vpcConfig) come from the foundation: composed, or
        # the user's own. A node group's nodes go where its subnets are: EKS has no zone field.
        inputs = EKSInputs(name=name, region=spec.region, pools=self.foundation_pools(spec),
                           connection_secret=connection_secret_name(name), role_arn=spec.role_arn,
                           node_role_arn=spec.node_role_arn, subnet_ids=tuple(spec.subnet_ids or ()),
                           cluster_security_group_id=at_provider(observed.get(CLUSTER_KEY)).get(
                               "vpcConfig", {}).get("clusterSecurityGroupId"),
                           efa_security_group_id=at_provider(observed.get(EFA_SECURITY_GROUP)).get("id"))
        return eks_foundation(inputs, self.namer(name), self.provider_config(spec))

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        return {"region": spec.region, "version": version}

    def shared_storage(self, cluster: Any, observed: dict | None = None) -> SharedStorage:
        """The StorageClass pinned to the cluster's EFS file system, once the provider reports its id."""
        filesystem_id = at_provider((observed or {}).get(EFS_FILESYSTEM)).get("id")
        if not filesystem_id:
            return SharedStorage(EFS_STORAGE_CLASS, waiting="the EFS file system's id, which the provider reports "
                                                            "once it exists")
        manifest = storage_class(EFS_STORAGE_CLASS, EFS_PROVISIONER, {**EFS_PARAMETERS, "fileSystemId": filesystem_id},
                                 volumeBindingMode="Immediate")
        return SharedStorage(EFS_STORAGE_CLASS, {STORAGE_CLASS_KEY: manifest})

    def standalone_fields(self, spec: Any, pool: Any) -> dict[str, Any]:
        return {"region": spec.region}

    def external_name(self, pool: Any) -> str | None:
        return pool.name  # a node group's name is unique within its cluster

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        s = scaling(pool)
        size = {"minSize": s.minimum, "maxSize": max(s.maximum, MIN_MAX_SIZE)}
        # desiredSize of an autoscaled group is only its starting size: the autoscaler owns it after.
        init = {"scalingConfig": {"desiredSize": s.count}} if s.autoscaled else {}
        if not s.autoscaled:
            size = {"desiredSize": s.count, **size}
        machine = pool.machine
        # A launch template, when the pool has one, holds the instance type and disk instead.
        templated = needs_launch_template(self.foundation_pool(pool))
        fields = present(instanceTypes=None if templated else [machine.instance_type],
                         diskSize=None if templated else machine.disk_size_gb,
                         amiType=_ami(pool), scalingConfig=size,
                         labels=dict(pool.labels), taint=taint_objects(pool.taints, upper_snake))
        return fields, init


def _ami(pool: Any) -> str:
    """The node image of a pool: Neuron's for a pool composed for the Neuron driver (its label), NVIDIA's for
    another GPU pool, the standard one otherwise."""
    if all(pool.labels.get(k) == v for k, v in NEURON.node_labels.items()):
        return NEURON_AMI
    return GPU_AMI if pool.role == PoolRole.GPU else STANDARD_AMI
