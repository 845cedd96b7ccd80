"""What an EKS cluster stands on: a VPC with public and private subnets per zone, gateways and
routes, the cluster and node IAM roles, the addons every node needs, launch templates for pools
that need one, and the ClusterAuth that publishes the kubeconfig.

Bring your own: `subnet_ids` replaces the whole network (VPC, subnets, gateways, routes),
`role_arn` the cluster role and `node_role_arn` the node role, each with its policy attachments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

from inferplane.clouds.base import CLUSTER_KEY
from inferplane.clouds.foundation import Foundation, FoundationError, FoundationPool, Namer, ResourceBuilder

EC2 = "ec2.aws.m.upbound.io/v1beta1"
IAM = "iam.aws.m.upbound.io/v1beta1"
EKS = "eks.aws.m.upbound.io/v1beta1"

# The VPC's range and its /20 subnets: public subnet i at 10.0.16*i.0/20, private subnet i at
# 10.0.(128 + 16*i).0/20, so up to 8 zones fit (no AWS region has more than 6).
VPC_CIDR = "10.0.0.0/16"
MAX_ZONES = 8
# The EKS control plane needs subnets in at least two zones. Pools that name no zone get three, as
# Modelplane gives them; the zones are the region's first ones (a, b, c).
MIN_ZONES = 2
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


def trust_policy(service: str) -> str:
    """An IAM trust policy letting an AWS service assume the role."""
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]}, sort_keys=True)


def cluster_zones(region: str, pools: Sequence[FoundationPool]) -> list[str]:
    """The zones the VPC gets subnets in: the pools' zones (at least two), else the region's a, b, c."""
    named = sorted({zone for pool in pools for zone in pool.zones})
    defaults = [region + suffix for suffix in DEFAULT_ZONE_SUFFIXES]
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


@dataclass(frozen=True)
class EKSInputs:
    name: str
    region: str
    pools: Sequence[FoundationPool]
    connection_secret: str
    role_arn: str | None = None
    node_role_arn: str | None = None
    subnet_ids: Sequence[str] = ()


def eks_foundation(inputs: EKSInputs, namer: Namer, provider_config: dict[str, str]) -> Foundation:
    build = ResourceBuilder(namer, provider_config)
    out = Foundation()
    region = inputs.region
    out.cluster_fields["accessConfig"] = dict(ACCESS_CONFIG)

    # ---- network
    if inputs.subnet_ids:
        subnets = list(inputs.subnet_ids)
        out.cluster_fields["vpcConfig"] = {"subnetIds": subnets}
        pool_subnets = {pool.name: {"subnetIds": subnets} for pool in inputs.pools}
    else:
        zones = cluster_zones(region, inputs.pools)
        compose_network(build, out, region, zones)
        out.cluster_fields["vpcConfig"] = {
            "endpointPrivateAccess": True, "endpointPublicAccess": True,
            "subnetIdRefs": [build.ref(f"subnet-{tier}-{zone}") for tier in ("public", "private") for zone in zones]}
        pool_subnets = {pool.name: {"subnetIdRefs": [build.ref(f"subnet-private-{zone}")
                                                      for zone in (sorted(pool.zones) or zones)]}
                        for pool in inputs.pools}

    # ---- identities
    if inputs.role_arn:
        out.cluster_fields["roleArn"] = inputs.role_arn
    else:
        compose_role(build, out, "cluster", "eks.amazonaws.com", CLUSTER_POLICIES)
        out.cluster_fields["roleArnRef"] = build.ref("iam-role-cluster")
    node_role = ({"nodeRoleArn": inputs.node_role_arn} if inputs.node_role_arn
                 else {"nodeRoleArnRef": build.ref("iam-role-node")})
    if not inputs.node_role_arn:
        compose_role(build, out, "node", "ec2.amazonaws.com", NODE_POLICIES)

    # ---- addons and the kubeconfig
    for addon in ADDONS:
        out.resources[f"addon-{addon}"] = build.resource(EKS, "Addon", f"addon-{addon}", {
            "region": region, "addonName": addon, "clusterNameRef": build.ref(CLUSTER_KEY)})
    # The eks Cluster publishes no kubeconfig; ClusterAuth writes one (a token it refreshes) to the
    # Secret the serving stack reads.
    out.resources["cluster-auth"] = build.resource(
        EKS, "ClusterAuth", "cluster-auth", {"region": region, "clusterNameRef": build.ref(CLUSTER_KEY)},
        connection_secret=inputs.connection_secret)

    # ---- pools
    for pool in inputs.pools:
        fields = {**node_role, **pool_subnets[pool.name]}
        if pool.capacity_reservation_id:
            key = f"launch-template-{pool.name}"
            template_name = namer(key)
            out.resources[key] = build.resource(EC2, "LaunchTemplate", key, launch_template(region, template_name, pool))
            fields["launchTemplate"] = {"name": template_name, "version": LATEST_VERSION}
            fields["capacityType"] = CAPACITY_BLOCK_CAPACITY_TYPE
        out.pool_fields[pool.name] = fields
    return out


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


def launch_template(region: str, name: str, pool: FoundationPool) -> dict:
    """A launch template holding what a Capacity Block pool's node group cannot: the reservation."""
    fields: dict = {"region": region, "name": name, "instanceType": pool.machine_type}
    if pool.disk_size_gb:
        fields["blockDeviceMappings"] = [{"deviceName": ROOT_DEVICE, "ebs": {"volumeSize": pool.disk_size_gb}}]
    fields["instanceMarketOptions"] = {"marketType": CAPACITY_BLOCK_MARKET}
    fields["capacityReservationSpecification"] = {
        "capacityReservationTarget": {"capacityReservationId": pool.capacity_reservation_id}}
    return fields
