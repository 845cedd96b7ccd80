"""What an EKS cluster stands on: a VPC with public and private subnets per zone, gateways and
routes, the cluster and node IAM roles, the addons every node needs, launch templates for pools
that need one (a Capacity Block, EFA), the EFA security group, and the ClusterAuth that publishes
the kubeconfig.

Bring your own: `subnet_ids` replaces the whole network (VPC, subnets, gateways, routes, and the
EFA security group: EFA pools then use the cluster security group, which already lets its members
reach each other on every port), `role_arn` the cluster role and `node_role_arn` the node role,
each with its policy attachments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from inferplane.api.cloud import EKS as EKS_SOURCE
from inferplane.clouds.base import CLUSTER_KEY
from inferplane.clouds.foundation import Foundation, FoundationError, FoundationPool, Namer, ResourceBuilder
from inferplane.clouds.offerings import offerings

EC2 = "ec2.aws.m.upbound.io/v1beta1"
IAM = "iam.aws.m.upbound.io/v1beta1"
EKS = "eks.aws.m.upbound.io/v1beta1"

# The VPC's range and its /20 subnets: public subnet i at 10.0.16*i.0/20, private subnet i at
# 10.0.(128 + 16*i).0/20, so up to 8 zones fit (no AWS region has more than 6).
VPC_CIDR = "10.0.0.0/16"
MAX_ZONES = 8
# The EKS control plane needs subnets in at least two zones. Pools that name no zone get three, as
# Modelplane gives them; the zones are the region's first ones in EKS's table of offerings (a, b, c in
# most regions; ca-central-1 has no c, us-west-1 two zones), or a, b, c for a region the table lacks.
MIN_ZONES = 2
DEFAULT_ZONES = 3
DEFAULT_ZONE_SUFFIXES = ("a", "b", "c")
ANYWHERE = "0.0.0.0/0"
# Subnet tags the AWS load balancer integrations look for: internet-facing load balancers go in
# public subnets, internal ones in private subnets. Nodes run in the private subnets.
PUBLIC_TAGS = {"kubernetes.io/role/elb": "1"}
PRIVATE_TAGS = {"kubernetes.io/role/internal-elb": "1"}

AWS_POLICY = "arn:aws:iam::aws:policy/"
CLUSTER_POLICIES = {"policy": AWS_POLICY + "AmazonEKSClusterPolicy"}
# What a managed node needs: join the cluster, run the VPC CNI (pod IPs from the VPC), pull images
# from ECR (the EKS addons' images live there).
NODE_POLICIES = {
    "worker": AWS_POLICY + "AmazonEKSWorkerNodePolicy",
    "cni": AWS_POLICY + "AmazonEKS_CNI_Policy",
    "ecr": AWS_POLICY + "AmazonEC2ContainerRegistryReadOnly",
}
# Pod networking, service routing and DNS, which a cluster made through the EKS API has only as
# addons; and the pod identity agent, through which in-cluster components get IAM roles from a
# PodIdentityAssociation (the storage and autoscaler integrations use it).
ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
# API_AND_CONFIG_MAP with the creator as cluster admin: the provider's own identity, which also
# signs ClusterAuth's token, can install the serving stack.
ACCESS_CONFIG = {"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": True}
# A Capacity Block is reached only through a launch template whose market type says so; its node
# group then declares the matching capacity type.
CAPACITY_BLOCK_MARKET = "capacity-block"
CAPACITY_BLOCK_CAPACITY_TYPE = "CAPACITY_BLOCK"
ROOT_DEVICE = "/dev/xvda"  # Amazon Linux 2023's root volume
LATEST_VERSION = "$Latest"
# EFA: an instance gets one EFA interface per network card, the most its type has, so that every
# GPU reaches the fabric at full bandwidth (AWS's EFA guide; Modelplane composes the same counts).
# Card 0 carries the instance's IP traffic too ("efa"); the others are fabric-only ("efa-only") and
# sit at device index 1. Instance families not listed have one network card.
EFA_NETWORK_CARDS = {"p5": 32, "p5e": 32, "p5en": 16, "p4d": 4, "p4de": 4}
EFA_INTERFACE, EFA_ONLY_INTERFACE = "efa", "efa-only"
ALL_PROTOCOLS = "-1"
EFA_SECURITY_GROUP = "efa-security-group"

# ---- shared storage for ModelCache volumes: EFS (as Modelplane v0.3.1's compose-eks-cluster composes it)
EFS = "efs.aws.m.upbound.io/v1beta1"
EFS_FILESYSTEM = "efs-filesystem"
EFS_SECURITY_GROUP = "efs-security-group"
# Elastic throughput scales with use and costs nothing idle; encrypted at rest (AWS EFS user guide,
# "Throughput modes"; the provider's FileSystem throughputMode and encrypted fields).
EFS_FILESYSTEM_FIELDS = {"throughputMode": "elastic", "encrypted": True}
# NFS, the protocol EFS is mounted with, on TCP 2049: the mount targets' security group must allow it
# from the nodes (AWS EFS user guide, "Using VPC security groups").
NFS_PORT = 2049
# The EFS CSI driver as an EKS add-on, its controller's service account, and the AWS managed policy it
# needs to create access points (AWS EKS user guide, "Use elastic file system storage with Amazon EFS";
# kubernetes-sigs/aws-efs-csi-driver docs/iam-policy-create.md). Its role is bound through EKS Pod
# Identity (the eks-pod-identity-agent add-on in ADDONS), whose principal may AssumeRole and TagSession
# (AWS EKS user guide, "EKS Pod Identity role").
EFS_CSI_ADDON = "aws-efs-csi-driver"
EFS_CSI_NAMESPACE = "kube-system"
EFS_CSI_SERVICE_ACCOUNT = "efs-csi-controller-sa"
EFS_CSI_POLICIES = {"policy": AWS_POLICY + "service-role/AmazonEFSCSIDriverPolicy"}
POD_IDENTITY_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
     "Action": ["sts:AssumeRole", "sts:TagSession"]}]}, sort_keys=True)


def trust_policy(service: str) -> str:
    """An IAM trust policy letting an AWS service assume the role."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]}, sort_keys=True)


def cluster_zones(region: str, pools: Sequence[FoundationPool]) -> list[str]:
    """The zones the VPC gets subnets in: the pools' zones (at least two), else the region's first three."""
    named = sorted({zone for pool in pools for zone in pool.zones})
    listed = offerings(EKS_SOURCE).regions.get(region) or [region + suffix for suffix in DEFAULT_ZONE_SUFFIXES]
    defaults = list(listed[:DEFAULT_ZONES])
    if not named:
        return defaults
    for zone in defaults:
        if len(named) >= MIN_ZONES:
            break
        if zone not in named:
            named.append(zone)
    if len(named) > MAX_ZONES:
        raise FoundationError(f"the pools name {len(named)} zones ({', '.join(named)}); an EKS network holds at "
                              f"most {MAX_ZONES}: name fewer zones")
    return sorted(named)


def efa_network_cards(instance_type: str | None) -> int:
    """How many EFA interfaces an instance type takes: one per network card."""
    family = (instance_type or "").split(".", 1)[0]
    return EFA_NETWORK_CARDS.get(family, 1)


def needs_launch_template(pool: FoundationPool) -> bool:
    """A Capacity Block and EFA interfaces can only be asked for through a launch template; the
    node group then leaves its instance type and disk to the template."""
    return bool(pool.capacity_reservation_id) or pool.fabric == "EFA"


@dataclass(frozen=True)
class EKSInputs:
    name: str
    region: str
    pools: Sequence[FoundationPool]
    connection_secret: str
    role_arn: str | None = None
    node_role_arn: str | None = None
    subnet_ids: Sequence[str] = ()
    # Known once the provider reports them: the security group EKS made for the cluster
    # (status.atProvider.vpcConfig.clusterSecurityGroupId) and the composed EFA security group's id.
    cluster_security_group_id: str | None = None
    efa_security_group_id: str | None = None


def eks_foundation(inputs: EKSInputs, namer: Namer, provider_config: dict[str, str]) -> Foundation:
    build = ResourceBuilder(namer, provider_config)
    out = Foundation()
    out.cluster_fields["accessConfig"] = dict(ACCESS_CONFIG)
    zones, pool_subnets = _network(build, out, inputs)
    node_role = _identities(build, out, inputs)
    _addons_and_kubeconfig(build, out, inputs)
    # Shared storage: one mount target per node subnet, so nodes of every zone mount it.
    mount_subnets = ([{"subnetId": subnet} for subnet in inputs.subnet_ids] if inputs.subnet_ids
                     else [{"subnetIdRef": build.ref(f"subnet-private-{zone}")} for zone in zones])
    compose_efs(build, out, inputs.region, mount_subnets, own_network=not inputs.subnet_ids)
    _pools(build, out, inputs, node_role, pool_subnets)
    return out


def _network(build: ResourceBuilder, out: Foundation, inputs: EKSInputs
             ) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The cluster's subnets (the user's, or a composed network's), and each pool's: (the composed
    network's zones, none with the user's subnets; each pool's subnet fields by name)."""
    if inputs.subnet_ids:
        subnets = list(inputs.subnet_ids)
        out.cluster_fields["vpcConfig"] = {"subnetIds": subnets}
        return [], {pool.name: {"subnetIds": subnets} for pool in inputs.pools}
    zones = cluster_zones(inputs.region, inputs.pools)
    compose_network(build, out, inputs.region, zones)
    out.cluster_fields["vpcConfig"] = {
        "endpointPrivateAccess": True, "endpointPublicAccess": True,
        "subnetIdRefs": [build.ref(f"subnet-{tier}-{zone}") for tier in ("public", "private") for zone in zones]}
    return zones, {pool.name: {"subnetIdRefs": [build.ref(f"subnet-private-{zone}")
                                                 for zone in (sorted(pool.zones) or zones)]}
                   for pool in inputs.pools}


def _identities(build: ResourceBuilder, out: Foundation, inputs: EKSInputs) -> dict[str, Any]:
    """The cluster's role (the user's, or composed), and the node role's field every pool carries."""
    if inputs.role_arn:
        out.cluster_fields["roleArn"] = inputs.role_arn
    else:
        compose_role(build, out, "cluster", "eks.amazonaws.com", CLUSTER_POLICIES)
        out.cluster_fields["roleArnRef"] = build.ref("iam-role-cluster")
    if inputs.node_role_arn:
        return {"nodeRoleArn": inputs.node_role_arn}
    compose_role(build, out, "node", "ec2.amazonaws.com", NODE_POLICIES)
    return {"nodeRoleArnRef": build.ref("iam-role-node")}


def _addons_and_kubeconfig(build: ResourceBuilder, out: Foundation, inputs: EKSInputs) -> None:
    for addon in ADDONS:
        out.resources[f"addon-{addon}"] = build.resource(EKS, "Addon", f"addon-{addon}", {
            "region": inputs.region, "addonName": addon, "clusterNameRef": build.ref(CLUSTER_KEY)})
    # The eks Cluster publishes no kubeconfig; ClusterAuth writes one (a token it refreshes) to the
    # Secret the serving stack reads.
    out.resources["cluster-auth"] = build.resource(
        EKS, "ClusterAuth", "cluster-auth", {"region": inputs.region, "clusterNameRef": build.ref(CLUSTER_KEY)},
        connection_secret=inputs.connection_secret)


def _pools(build: ResourceBuilder, out: Foundation, inputs: EKSInputs, node_role: dict[str, Any],
           pool_subnets: dict[str, dict[str, Any]]) -> None:
    """Each pool's role and subnets, and the launch template of a pool that needs one (held while its
    EFA interfaces wait for the security groups' ids)."""
    region = inputs.region
    if any(pool.fabric == "EFA" for pool in inputs.pools) and not inputs.subnet_ids:
        compose_efa_security_group(build, out, region)
    for pool in inputs.pools:
        fields = {**node_role, **pool_subnets[pool.name]}
        if needs_launch_template(pool):
            security_groups = efa_security_groups(inputs) if pool.fabric == "EFA" else []
            if security_groups is None:
                # An interface the template names replaces the one EKS would give the node, with
                # the cluster security group the node needs to join: wait until its id is known.
                out.held_pools[pool.name] = "the cluster's security group ids, which the provider reports once " \
                                            "the cluster and the EFA security group exist"
                continue
            key = f"launch-template-{pool.name}"
            template_name = build.namer(key)
            out.resources[key] = build.resource(EC2, "LaunchTemplate", key,
                                                launch_template(region, template_name, pool, security_groups))
            fields["launchTemplate"] = {"name": template_name, "version": LATEST_VERSION}
            if pool.capacity_reservation_id:
                fields["capacityType"] = CAPACITY_BLOCK_CAPACITY_TYPE
        out.pool_fields[pool.name] = fields


def efa_security_groups(inputs: EKSInputs) -> list[str] | None:
    """The security groups of an EFA pool's interfaces: the cluster's (to join it and reach the
    other nodes), and the composed EFA group; None until the provider has reported their ids."""
    wanted = [inputs.cluster_security_group_id] + ([] if inputs.subnet_ids else [inputs.efa_security_group_id])
    return None if None in wanted else wanted


def compose_efs(build: ResourceBuilder, out: Foundation, region: str, mount_subnets: list[dict],
                own_network: bool) -> None:
    """An EFS file system, a mount target per node subnet, the EFS CSI driver add-on and its role. On the
    composed VPC the mount targets get a security group letting NFS in from the VPC; on the user's
    subnets they get the VPC's default security group (a mount target without security groups does:
    the provider's MountTarget securityGroups field), which the user's network must open to NFS."""
    out.resources[EFS_FILESYSTEM] = build.resource(EFS, "FileSystem", EFS_FILESYSTEM,
                                                   {"region": region, **EFS_FILESYSTEM_FIELDS})
    groups = {}
    if own_network:
        out.resources[EFS_SECURITY_GROUP] = build.resource(EC2, "SecurityGroup", EFS_SECURITY_GROUP, {
            "region": region, "vpcIdRef": build.ref("vpc"), "name": build.namer(EFS_SECURITY_GROUP),
            "description": "NFS to the ModelCache EFS mount targets"})
        key = f"{EFS_SECURITY_GROUP}-ingress"
        out.resources[key] = build.resource(EC2, "SecurityGroupIngressRule", key, {
            "region": region, "securityGroupIdRef": build.ref(EFS_SECURITY_GROUP), "ipProtocol": "tcp",
            "fromPort": NFS_PORT, "toPort": NFS_PORT, "cidrIpv4": VPC_CIDR})
        groups = {"securityGroupsRefs": [build.ref(EFS_SECURITY_GROUP)]}
    for i, subnet in enumerate(mount_subnets):
        key = f"efs-mount-target-{i}"
        out.resources[key] = build.resource(EFS, "MountTarget", key, {
            "region": region, "fileSystemIdRef": build.ref(EFS_FILESYSTEM), **subnet, **groups})
    role = "iam-role-efs-csi"
    out.resources[role] = build.resource(IAM, "Role", role, {"assumeRolePolicy": POD_IDENTITY_TRUST})
    for short, arn in EFS_CSI_POLICIES.items():
        attach = f"iam-attach-efs-csi-{short}"
        out.resources[attach] = build.resource(IAM, "RolePolicyAttachment", attach,
                                               {"policyArn": arn, "roleRef": build.ref(role)})
    out.resources["pod-identity-efs-csi"] = build.resource(EKS, "PodIdentityAssociation", "pod-identity-efs-csi", {
        "region": region, "clusterNameRef": build.ref(CLUSTER_KEY), "namespace": EFS_CSI_NAMESPACE,
        "serviceAccount": EFS_CSI_SERVICE_ACCOUNT, "roleArnRef": build.ref(role)})
    out.resources[f"addon-{EFS_CSI_ADDON}"] = build.resource(EKS, "Addon", f"addon-{EFS_CSI_ADDON}", {
        "region": region, "addonName": EFS_CSI_ADDON, "clusterNameRef": build.ref(CLUSTER_KEY)})


def compose_efa_security_group(build: ResourceBuilder, out: Foundation, region: str) -> None:
    """EFA traffic bypasses IP: the interfaces' security group must let its members reach each
    other on every protocol, both ways (AWS's EFA guide)."""
    group = {"securityGroupIdRef": build.ref(EFA_SECURITY_GROUP)}
    out.resources[EFA_SECURITY_GROUP] = build.resource(EC2, "SecurityGroup", EFA_SECURITY_GROUP, {
        "region": region, "vpcIdRef": build.ref("vpc"), "name": build.namer(EFA_SECURITY_GROUP),
        "description": "EFA: all traffic between the cluster's EFA interfaces"})
    for direction, kind in (("ingress", "SecurityGroupIngressRule"), ("egress", "SecurityGroupEgressRule")):
        key = f"{EFA_SECURITY_GROUP}-{direction}"
        out.resources[key] = build.resource(EC2, kind, key, {
            "region": region, **group, "ipProtocol": ALL_PROTOCOLS,
            "referencedSecurityGroupIdRef": build.ref(EFA_SECURITY_GROUP)})


def compose_network(build: ResourceBuilder, out: Foundation, region: str, zones: list[str]) -> None:
    def add(kind: str, key: str, fields: dict) -> None:
        out.resources[key] = build.resource(EC2, kind, key, {"region": region, **fields})

    vpc = {"vpcIdRef": build.ref("vpc")}
    add("VPC", "vpc", {"cidrBlock": VPC_CIDR, "enableDnsHostnames": True, "enableDnsSupport": True})
    for i, zone in enumerate(zones):
        add("Subnet", f"subnet-public-{zone}", {
            **vpc, "availabilityZone": zone, "cidrBlock": f"10.0.{16 * i}.0/20", "mapPublicIpOnLaunch": True,
            "tags": dict(PUBLIC_TAGS)})
        add("Subnet", f"subnet-private-{zone}", {
            **vpc, "availabilityZone": zone, "cidrBlock": f"10.0.{128 + 16 * i}.0/20",
            "mapPublicIpOnLaunch": False, "tags": dict(PRIVATE_TAGS)})
    add("InternetGateway", "internet-gateway", dict(vpc))
    # One NAT gateway, in the first zone, for every private subnet: nodes reach registries and the
    # cloud's APIs through it. (One per zone would survive a zone outage, at three times the cost.)
    add("EIP", "nat-eip", {"domain": "vpc"})
    add("NATGateway", "nat-gateway", {"allocationIdRef": build.ref("nat-eip"),
                                      "subnetIdRef": build.ref(f"subnet-public-{zones[0]}")})
    gateways = {"public": {"gatewayIdRef": build.ref("internet-gateway")},
                "private": {"natGatewayIdRef": build.ref("nat-gateway")}}
    for tier, gateway in gateways.items():
        table = {"routeTableIdRef": build.ref(f"route-table-{tier}")}
        add("RouteTable", f"route-table-{tier}", dict(vpc))
        add("Route", f"route-{tier}-default", {**table, "destinationCidrBlock": ANYWHERE, **gateway})
        for zone in zones:
            add("RouteTableAssociation", f"route-table-association-{tier}-{zone}",
                {**table, "subnetIdRef": build.ref(f"subnet-{tier}-{zone}")})


def compose_role(build: ResourceBuilder, out: Foundation, role: str, service: str, policies: dict[str, str]) -> None:
    # IAM is global: its kinds have no region.
    key = f"iam-role-{role}"
    out.resources[key] = build.resource(IAM, "Role", key, {"assumeRolePolicy": trust_policy(service)})
    for short, arn in policies.items():
        attach = f"iam-attach-{role}-{short}"
        out.resources[attach] = build.resource(IAM, "RolePolicyAttachment", attach,
                                               {"policyArn": arn, "roleRef": build.ref(key)})


def launch_template(region: str, name: str, pool: FoundationPool, security_groups: list[str]) -> dict:
    """A launch template holding what a node group cannot: a Capacity Block's reservation, EFA
    interfaces. No subnets: the node group places the nodes."""
    fields: dict = {"region": region, "name": name, "instanceType": pool.machine_type}
    if pool.disk_size_gb:
        fields["blockDeviceMappings"] = [{"deviceName": ROOT_DEVICE, "ebs": {"volumeSize": pool.disk_size_gb}}]
    if pool.capacity_reservation_id:
        fields["instanceMarketOptions"] = {"marketType": CAPACITY_BLOCK_MARKET}
        fields["capacityReservationSpecification"] = {
            "capacityReservationTarget": {"capacityReservationId": pool.capacity_reservation_id}}
    if pool.fabric == "EFA":
        fields["networkInterfaces"] = [
            {"networkCardIndex": card, "deviceIndex": 0 if card == 0 else 1,
             "interfaceType": EFA_INTERFACE if card == 0 else EFA_ONLY_INTERFACE,
             "deleteOnTermination": "true", "securityGroups": list(security_groups)}
            for card in range(efa_network_cards(pool.machine_type))]
    return fields
