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
    # The oldest patch release (of that minor) the driver's nodes need, where it needs one, as the cloud
    # spells its versions ("1.34.1-gke.1127000", "1.34.2"), with where that is said. A cluster pinned to an
    # older patch is refused; a minor alone is not, as the cloud picks its newest patch.
    min_patch_version: str | None = field(default=None, kw_only=True)
    min_patch_source: str = field(default="", kw_only=True)


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

# Google's TPU DRA driver (kubernetes-sigs/dra-driver-google-tpu v0.2.0, commit b912410).
TPU_DRA_LABEL = "cloud.google.com/gke-tpu-dra-driver"
GOOGLE_TPU = Driver(
    name="tpu.google.com",  # kubeletplugin.DriverName, cmd/tpu-dra-kubeletplugin (DriverName)
    device_class="tpu.google.com",  # deployments/helm/dra-driver-google-tpu/templates/deviceclass.yaml
    kind=DriverKind.GPU,
    # GKE taints TPU nodes google.com/tpu=present:NoSchedule (Google Cloud, "Deploy TPU workloads in GKE
    # Standard", *documentation*); the chart's kubelet plugin tolerates the key (values.yaml kubeletPlugin.
    # tolerations: google.com/tpu Exists NoSchedule), as the driver's vLLM demo does (demo/specs/vllm-tpu.yaml).
    pool_taint=Taint("google.com/tpu", "present"),
    # The node label that turns GKE's own TPU device plugin off, so the DRA driver owns the chips
    # (demo/clusters/gke/create-tpu-cluster-for-dra.sh: LABELS="cloud.google.com/gke-tpu-dra-driver=true").
    node_labels={TPU_DRA_LABEL: "true"},
    # demo/clusters/gce/create-kubeadm-tpu-cluster.sh: "DRA is GA in 1.34"; the GKE demo's NODE_VERSION 1.34.
    min_kubernetes_version="1.34",
    min_patch_version="1.34.1-gke.1127000",
    min_patch_source=("kubernetes-sigs/dra-driver-google-tpu v0.2.0 demo/clusters/gke/create-tpu-cluster-for-dra.sh: "
                      "the label that turns GKE's TPU device plugin off \"only works on or after GKE version: "
                      "1.34.1-gke.1127000\""),
)
# A single-host TPU's topology by its chips (dra-driver-google-tpu v0.2.0 util.go
# requestedChipCountToChipsPerDimNumaAligned, trailing 1s dropped as singleHostTopology does).
TPU_SINGLE_HOST_TOPOLOGY = {1: "1x1", 2: "1x2", 4: "2x2", 8: "2x4"}
# AWS's Neuron DRA driver, from the Neuron Helm chart (oci://public.ecr.aws/neuron/neuron-helm-chart) with
# draDriver.enabled. Its source is not public: these facts rest on AWS's documentation (aws-neuron/aws-neuron-sdk
# containers/neuron-dra.rst, commit db1586c) and the chart's templates (aws-neuron/neuron-helm-charts).
NEURON_LABEL = f"{API_GROUP}/neuron"
NEURON = Driver(
    name="neuron.aws.com",  # neuron-dra.rst: the claims' opaque config driver, the allocation results' driver
    device_class="neuron.aws.com",  # templates/dra-driver/dra-driver-deviceclass.yaml
    kind=DriverKind.GPU,
    # The key the chart's DRA kubelet plugin tolerates by default (values draDriver.tolerations:
    # aws.amazon.com/neuron Exists NoSchedule), so its own tolerations reach our pools.
    pool_taint=Taint("aws.amazon.com/neuron"),
    # The chart's plugin selects nodes by their instance type (its affinity, node.kubernetes.io/instance-type In
    # the chart's Trainium types); this label marks the pools inferplane composes for it.
    node_labels={NEURON_LABEL: "true"},
    # neuron-dra.rst, Prerequisites and FAQ: "Kubernetes control plane must be on 1.34. For Node AMI, we support
    # 1.34.2+ ... not 1.34.0 or 1.34.1 since it had a regression in DRA" (kubernetes/kubernetes#133920).
    min_kubernetes_version="1.34",
    min_patch_version="1.34.2",
    min_patch_source=("aws-neuron/aws-neuron-sdk containers/neuron-dra.rst (documentation): node AMIs 1.34.2 or "
                      "later; 1.34.0 and 1.34.1 had a DRA regression (kubernetes/kubernetes#133920)"),
)

DRIVERS: dict[str, Driver] = {d.name: d for d in (NVIDIA_GPU, AMD_GPU, CPU, DRANET, GAUDI, GOOGLE_TPU, NEURON)}
GPU_DRIVERS: tuple[str, ...] = tuple(sorted(d.name for d in DRIVERS.values() if d.kind is DriverKind.GPU))
# Accelerators that come with the machine type and are never attached as a cloud's accelerator (GKE's TPU machine
# types carry their chips, "Plan TPUs in GKE"; EC2's Trainium instances their Neuron devices).
MACHINE_TYPE_DRIVERS: tuple[str, ...] = (GOOGLE_TPU.name, NEURON.name)
