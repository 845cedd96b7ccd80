"""The DRA drivers inferplane knows, and what a pool that serves each one looks like.

This is the one home of driver names, their DeviceClasses and their pool taints and labels;
everything else (XRD rules, pool roles, the catalog's tags) imports them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from inferplane import API_GROUP

# Labels and taints inferplane puts on the node pools it composes.
POOL_LABEL = f"{API_GROUP}/pool"
CPU_LABEL = f"{API_GROUP}/cpu"
# CPU pools are tainted so that system workloads (and DaemonSets that tolerate only their own
# vendor's taint) stay off the cores the CPU DRA driver hands out.
CPU_TAINT_KEY = CPU_LABEL
# Pools whose class claims DRANET carry this label, which its DaemonSet selects: its pools are GPU or
# CPU pools by their other devices, so neither role's label tells them apart from pools without it.
DRANET_LABEL = f"{API_GROUP}/dranet"
# Labels the kubelet and the clouds put on nodes, which charts select on. The kubelet's label naming its
# node's machine type, as the cloud reports it (Kubernetes' well-known labels, node.kubernetes.io/
# instance-type): the simulated nodes carry it, and aws-dranet's affinity reads it on EKS.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# GKE labels every GPU node with its accelerator type; NVIDIA's driver installer runs on those nodes only.
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"


class DriverKind(str, Enum):
    GPU = "GPU"
    CPU = "CPU"
    NETWORK = "network"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = "true"
    effect: str = "NoSchedule"

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def toleration(self) -> dict[str, str]:
        """The toleration that lets a pod onto a node carrying exactly this taint."""
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


@dataclass(frozen=True)
class Driver:
    name: str
    device_class: str
    kind: DriverKind
    # The taint a pool serving this driver carries (None: pools are not tainted for it).
    pool_taint: Taint | None = None
    # Labels a node serving this driver carries (what the driver's DaemonSet selects on).
    node_labels: dict[str, str] = field(default_factory=dict)
    # The oldest Kubernetes minor version the driver runs on, as a managed cluster offers it (DRA
    # feature gates cannot be turned on by hand there). Every driver states one: clouds' default
    # versions and every cluster's pools are checked against it.
    min_kubernetes_version: str = field(kw_only=True)


NVIDIA_GPU = Driver(
    name="gpu.nvidia.com",
    device_class="gpu.nvidia.com",
    kind=DriverKind.GPU,
    pool_taint=Taint("nvidia.com/gpu"),
    # The NVIDIA DRA driver's node affinity accepts this label (or NFD's PCI vendor 10de labels).
    node_labels={"nvidia.com/gpu.present": "true"},
    # dra-driver-nvidia-gpu v0.4.0 docs/prerequisites.md: Kubernetes v1.34.2 or later (1.32/1.33
    # need DRA feature gates turned on by hand, which managed clouds do not allow).
    min_kubernetes_version="1.34",
)
AMD_GPU = Driver(
    name="gpu.amd.com",
    device_class="gpu.amd.com",
    kind=DriverKind.GPU,
    pool_taint=Taint("amd.com/gpu"),
    # The AMD GPU operator's default node selector (its NFD rule for PCI vendor 1002).
    node_labels={"feature.node.kubernetes.io/amd-gpu": "true"},
    # AMD GPU operator v1.5.1 docs/dra/dra-driver.md: Kubernetes 1.32 or later, with the
    # DynamicResourceAllocation feature gate turned on on 1.32/1.33. inferplane serves AMD only on
    # Existing clusters, whose operators can turn the gate on.
    min_kubernetes_version="1.32",
)
CPU = Driver(
    name="dra.cpu",
    device_class="dra.cpu",
    kind=DriverKind.CPU,
    pool_taint=Taint(CPU_TAINT_KEY),
    node_labels={CPU_LABEL: "true"},
    # Grouped mode (the default: one device per NUMA node, shared by consumable capacity) needs
    # DRAConsumableCapacity (KEP-5075), beta and on by default from Kubernetes 1.36.
    min_kubernetes_version="1.36",
)
# DRANET, as EKS runs it: AWS's aws-dranet chart publishes each node's EFA interfaces under the
# driver name dra.net and creates the DeviceClass efa.networking.k8s.aws that selects them (the
# name Modelplane's EFA classes claim). aws-dranet 1.0.0's README asks for Kubernetes 1.35 or later.
DRANET = Driver(name="dra.net", device_class="efa.networking.k8s.aws", kind=DriverKind.NETWORK,
                node_labels={DRANET_LABEL: "true"}, min_kubernetes_version="1.35")

# Intel's Gaudi resource driver (intel/intel-resource-drivers-for-kubernetes, chart
# intel-gaudi-resource-driver-chart 0.7.2, tag gaudi-v0.7.2).
GAUDI = Driver(
    name="gaudi.intel.com",
    device_class="gaudi.intel.com",
    kind=DriverKind.GPU,
    # The key the chart's kubelet plugin tolerates by default (values.yaml kubeletPlugin.tolerations, NFD's
    # node tainting), so its own tolerations reach our pools.
    pool_taint=Taint("intel.feature.node.kubernetes.io/gaudi"),
    # The label the chart's NodeFeatureRule gives nodes with a Gaudi2/Gaudi3 (PCI 1da3:1020/1030), which its
    # DaemonSet then selects (templates/node-feature-rules.yaml, resource-driver.yaml).
    node_labels={"intel.feature.node.kubernetes.io/gaudi": "true"},
    # doc/gaudi/README.md "Supported Kubernetes Versions": v0.7.0 and later, Kubernetes v1.34+
    # (resource.k8s.io/v1; doc/gaudi/USAGE.md Requirements: Kubernetes v1.34+).
    min_kubernetes_version="1.34",
)

DRIVERS: dict[str, Driver] = {d.name: d for d in (NVIDIA_GPU, AMD_GPU, CPU, DRANET, GAUDI)}
GPU_DRIVERS: tuple[str, ...] = tuple(sorted(d.name for d in DRIVERS.values() if d.kind is DriverKind.GPU))
