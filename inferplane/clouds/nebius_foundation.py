"""What a Nebius cluster stands on: a network and subnet, one GPU cluster per InfiniBand fabric its
pools use, and a shared filesystem attached to every node.

Bring your own: `subnet_id` replaces the network and subnet. `parent_id` (the project) is optional
everywhere: without it the provider uses its ProviderConfig's project.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from inferplane.clouds.foundation import Foundation, FoundationPool, Namer, ResourceBuilder

VPC = "vpc.nebius.m.upbound.io/v1beta1"
COMPUTE = "compute.nebius.m.upbound.io/v1beta1"

# The subnet takes its addresses from the network's default pools.
SUBNET_POOLS = {"useNetworkPools": True}
# One network SSD filesystem per cluster for shared data (model weights), as Modelplane sizes it;
# Nebius filesystems have a fixed size.
FILESYSTEM = {"type": "NETWORK_SSD", "sizeGibibytes": 1024}
# The tag nodes see the filesystem under (virtiofs); mounting it is the cache's business.
FILESYSTEM_MOUNT_TAG = "inferplane-cache"
FILESYSTEM_ATTACH_MODE = "READ_WRITE"


@dataclass(frozen=True)
class NebiusInputs:
    pools: Sequence[FoundationPool]
    parent_id: str | None = None
    subnet_id: str | None = None


def nebius_foundation(inputs: NebiusInputs, namer: Namer, provider_config: dict[str, str]) -> Foundation:
    build = ResourceBuilder(namer, provider_config)
    out = Foundation()
    parent = {"parentId": inputs.parent_id} if inputs.parent_id else {}

    def add(api_version: str, kind: str, key: str, fields: dict) -> None:
        # Every Nebius resource is created under an explicit name, unique in its project.
        out.resources[key] = build.resource(api_version, kind, key, {"name": namer(key), **parent, **fields})

    if inputs.subnet_id:
        subnet = {"subnetId": inputs.subnet_id}
    else:
        add(VPC, "Network", "network", {})
        add(VPC, "Subnet", "subnet", {"networkIdRef": build.ref("network"), "ipv4PrivatePools": dict(SUBNET_POOLS)})
        subnet = {"subnetIdRef": build.ref("subnet")}
    out.cluster_fields["controlPlane"] = dict(subnet)

    add(COMPUTE, "Filesystem", "filesystem", dict(FILESYSTEM))
    for fabric in sorted({p.infiniband_fabric for p in inputs.pools if p.infiniband_fabric}):
        add(COMPUTE, "GpuCluster", f"gpu-cluster-{fabric}", {"infinibandFabric": fabric})

    for pool in inputs.pools:
        template = {
            "networkInterfaces": [dict(subnet)],
            "filesystems": [{"attachMode": FILESYSTEM_ATTACH_MODE, "mountTag": FILESYSTEM_MOUNT_TAG,
                             "existingFilesystem": {"idRef": build.ref("filesystem")}}]}
        if pool.infiniband_fabric:
            template["gpuCluster"] = {"idRef": build.ref(f"gpu-cluster-{pool.infiniband_fabric}")}
        out.pool_fields[pool.name] = {"template": template}
    return out
