"""What an AKS cluster stands on: a resource group, a virtual network and one subnet for every pool.

Bring your own: `resource_group_name` replaces the resource group (the network is then made in
yours); `subnet_id` replaces the virtual network and its subnet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from inferplane.clouds.foundation import Foundation, Namer, ResourceBuilder, bounded_name

AZURE = "azure.m.upbound.io/v1beta1"
NETWORK = "network.azure.m.upbound.io/v1beta1"

# The virtual network and the nodes' subnet (4091 node addresses). Pods take addresses from an
# overlay range outside the virtual network (Azure CNI overlay), so the subnet holds nodes only.
VNET_CIDR = "10.0.0.0/16"
SUBNET_CIDR = "10.0.0.0/20"
NETWORK_PROFILE = {"networkPlugin": "azure", "networkPluginMode": "overlay", "podCidr": "10.244.0.0/16",
                   "serviceCidr": "10.96.0.0/16", "dnsServiceIp": "10.96.0.10"}
# AKS puts the nodes' own resources in a second resource group, by default MC_<group>_<cluster>_<location>,
# which can pass Azure's 80-character limit: name it after the cluster instead.
NODE_RESOURCE_GROUP_MAX = 80


@dataclass(frozen=True)
class AKSInputs:
    cluster_name: str  # the cluster resource's metadata.name
    location: str
    pools: Sequence[str]
    resource_group_name: str | None = None
    subnet_id: str | None = None


def aks_foundation(inputs: AKSInputs, namer: Namer, provider_config: dict[str, str]) -> Foundation:
    build = ResourceBuilder(namer, provider_config)
    out = Foundation()
    location = inputs.location

    if inputs.resource_group_name:
        group = {"resourceGroupName": inputs.resource_group_name}
    else:
        out.resources["resource-group"] = build.resource(AZURE, "ResourceGroup", "resource-group",
                                                         {"location": location})
        group = {"resourceGroupNameRef": build.ref("resource-group")}

    if inputs.subnet_id:
        subnet = {"vnetSubnetId": inputs.subnet_id}
    else:
        out.resources["virtual-network"] = build.resource(NETWORK, "VirtualNetwork", "virtual-network", {
            "location": location, **group, "addressSpace": [VNET_CIDR]})
        out.resources["subnet"] = build.resource(NETWORK, "Subnet", "subnet", {
            **group, "virtualNetworkNameRef": build.ref("virtual-network"), "addressPrefixes": [SUBNET_CIDR]})
        subnet = {"vnetSubnetIdRef": build.ref("subnet")}

    out.cluster_fields.update({
        **group, "networkProfile": dict(NETWORK_PROFILE), "defaultNodePool": dict(subnet),
        "nodeResourceGroup": bounded_name(f"{inputs.cluster_name}-nodes", NODE_RESOURCE_GROUP_MAX)})
    for pool in inputs.pools:
        out.pool_fields[pool] = dict(subnet)
    return out
