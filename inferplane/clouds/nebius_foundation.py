"""What a Nebius cluster stands on: a network and subnet, one GPU cluster per InfiniBand fabric its
pools use, and a shared filesystem attached to every node and mounted there by cloud-init.

Bring your own: `subnet_id` replaces the network and subnet. `parent_id` (the project) is optional
everywhere: without it the provider uses its ProviderConfig's project.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Sequence

from inferplane.api.managed import MANAGED_NAMESPACE
from inferplane.clouds.foundation import Foundation, FoundationPool, Namer, ResourceBuilder

VPC = "vpc.nebius.m.upbound.io/v1beta1"
COMPUTE = "compute.nebius.m.upbound.io/v1beta1"

# The subnet takes its addresses from the network's default pools.
SUBNET_POOLS = {"useNetworkPools": True}
# One network SSD filesystem per cluster for shared data (model weights), as Modelplane sizes it;
# Nebius filesystems have a fixed size.
FILESYSTEM = {"type": "NETWORK_SSD", "sizeGibibytes": 1024}
# The tag nodes see the filesystem under (virtiofs), and the host path cloud-init mounts it on, where the
# CSI driver serves cache volumes from (nebius.py); /mnt/data as Modelplane v0.3.1 mounts it
# (functions/compose-nebius-cluster/function/fn.py, _FS_MOUNT_POINT).
FILESYSTEM_MOUNT_TAG = "inferplane-cache"
FILESYSTEM_MOUNT_POINT = "/mnt/data"
FILESYSTEM_ATTACH_MODE = "READ_WRITE"
# A node group takes cloud-init user data only by Secret reference (the provider's NodeGroup
# template.cloudInitUserDataSecretRef {name, key}), read from the node group's own namespace. The user
# data mounts the attached filesystem at first boot, and its fstab entry keeps the mount across reboots
# (Nebius docs, "Using shared filesystems over CSI", docs.nebius.com/kubernetes/storage/filesystem-over-csi;
# Modelplane v0.3.1's _FS_CLOUD_INIT, the same commands).
CLOUD_INIT_KEY = "cloud-init"
CLOUD_INIT_SECRET_KEY = "userData"
CLOUD_INIT = f"""#cloud-config
runcmd:
  - mkdir -p {FILESYSTEM_MOUNT_POINT}
  - mount -t virtiofs {FILESYSTEM_MOUNT_TAG} {FILESYSTEM_MOUNT_POINT}
  - printf "{FILESYSTEM_MOUNT_TAG} {FILESYSTEM_MOUNT_POINT} virtiofs defaults,nofail 0 2\\n" >> /etc/fstab
"""


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
    out.resources[CLOUD_INIT_KEY] = cloud_init_secret(namer(CLOUD_INIT_KEY))
    for fabric in sorted({p.infiniband_fabric for p in inputs.pools if p.infiniband_fabric}):
        add(COMPUTE, "GpuCluster", f"gpu-cluster-{fabric}", {"infinibandFabric": fabric})

    for pool in inputs.pools:
        template = {
            "networkInterfaces": [dict(subnet)],
            "filesystems": [{"attachMode": FILESYSTEM_ATTACH_MODE, "mountTag": FILESYSTEM_MOUNT_TAG,
                             "existingFilesystem": {"idRef": build.ref("filesystem")}}],
            "cloudInitUserDataSecretRef": {"name": namer(CLOUD_INIT_KEY), "key": CLOUD_INIT_SECRET_KEY}}
        if pool.infiniband_fabric:
            template["gpuCluster"] = {"idRef": build.ref(f"gpu-cluster-{pool.infiniband_fabric}")}
        out.pool_fields[pool.name] = {"template": template}
    return out


def cloud_init_secret(name: str) -> dict:
    """The Secret holding the node groups' cloud-init user data, next to them in inferplane's namespace.
    A plain Kubernetes object, not a managed resource: it is ready once it exists."""
    user_data = base64.b64encode(CLOUD_INIT.encode()).decode()
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": MANAGED_NAMESPACE},
            "type": "Opaque", "data": {CLOUD_INIT_SECRET_KEY: user_data}}
