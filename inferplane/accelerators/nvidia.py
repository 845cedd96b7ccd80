"""NVIDIA's DRA driver (`gpu.nvidia.com`): the devices it publishes, the DeviceClass its chart installs, and its
serving stack (the DRA driver's chart, the quota its pods need, dcgm-exporter; GKE's driver installer).

Source: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 (the chart the catalog pins),
`cmd/gpu-kubelet-plugin/deviceinfo.go` (`GpuInfo.Attributes`, `GetDevice`), `nvlib.go` (where each
value comes from), `partitions.go` (`fullGpuCapacity`), and the attribute list its own test asserts
(`tests/bats/test_gpu_basic.bats`, "inspect device attributes in resource slice (gpu)").
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from inferplane import API_GROUP
from inferplane.accelerators.component import Chart, Component, DriverStack, Render, gpu_toleration
from inferplane.accelerators.devices import (
    PCI_BUS_ID,
    PCIE_ROOT,
    AttributeSpec,
    DeviceClassSpec,
    DeviceModel,
    DriverSlices,
    Varies,
    pci_address,
    pcie_root,
    stable_uuid,
)
from inferplane.accelerators.workload import Installed, Placement, Rendered, Values, Workload, dig, helm_merge, \
    no_workloads, tolerations_of
from inferplane.api.cloud import EXISTING, GKE, SOURCES
from inferplane.api.drivers import GKE_ACCELERATOR_LABEL, NVIDIA_GPU
from inferplane.api.serving_stack import ServingStackSpec
from inferplane.metrics.scrape import MetricsEndpoint

D = NVIDIA_GPU.name
SOURCE = "kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 cmd/gpu-kubelet-plugin/deviceinfo.go"

ATTRIBUTES = (
    AttributeSpec(f"{D}/type", "string", Varies.MODEL),  # GpuDeviceType, "gpu" (types.go)
    AttributeSpec(f"{D}/uuid", "string", Varies.DEVICE),  # NVML's UUID, GPU-...
    AttributeSpec(f"{D}/productName", "string", Varies.MODEL),  # NVML device.GetName(), as NVML spells it
    AttributeSpec(f"{D}/brand", "string", Varies.MODEL),  # go-nvlib GetBrandAsString
    AttributeSpec(f"{D}/architecture", "string", Varies.MODEL),  # go-nvlib GetArchitectureAsString
    AttributeSpec(f"{D}/cudaComputeCapability", "version", Varies.MODEL),  # "9.0" as semver 9.0.0
    AttributeSpec(f"{D}/driverVersion", "version", Varies.NODE),  # the host's NVIDIA driver
    AttributeSpec(f"{D}/cudaDriverVersion", "version", Varies.NODE),  # "major.minor" as semver
    # deviceattribute.GetPCIBusIDAttribute / GetPCIeRootAttributeByPCIBusID (standard attributes).
    AttributeSpec(PCI_BUS_ID, "string", Varies.DEVICE),
    AttributeSpec(PCIE_ROOT, "string", Varies.DEVICE),
    # The platform's memory-addressing mode (nvlib.go, go-nvlib v0.10.0 GetAddressingModeAsString): "HMM" or
    # "ATS" on coherent-memory platforms (Grace), "None" where NVML supports the query but the mode is
    # inactive, as on x86 hosts; omitted only where NVML answers NOT_SUPPORTED or lacks the symbol. The
    # driver's own test expects it on its GPUs (tests/bats/test_gpu_basic.bats), so it is the node's.
    AttributeSpec(f"{D}/addressingMode", "string", Varies.NODE),
)
# fullGpuCapacity: NVML's total memory in bytes, as a BinarySI quantity (so 85520809984 -> 81559Mi).
CAPACITIES = (f"{D}/memory",)


def _model(product: str, architecture: str, compute: str, memory: str, confirmed_memory: bool = True) -> DeviceModel:
    # The brand is unconfirmed for every model (below); the memory where no source shows the total.
    unconfirmed = {f"{D}/brand"} | (set() if confirmed_memory else {f"{D}/memory"})
    return DeviceModel(product, {
        f"{D}/type": {"string": "gpu"},
        f"{D}/productName": {"string": product},
        # NVML_BRAND_NVIDIA -> "Nvidia" (go-nvlib device.go); the brand NVML reports for these data-centre
        # parts is *unconfirmed* per model (older Tesla-branded boards report "Tesla").
        f"{D}/brand": {"string": "Nvidia"},
        f"{D}/architecture": {"string": architecture},
        f"{D}/cudaComputeCapability": {"version": compute},
    }, {f"{D}/memory": memory}, frozenset(unconfirmed))


# The models our clouds' instance types carry, by NVML's product name. Architecture names are
# go-nvlib's (device.go); compute capabilities are NVIDIA's published ones. Memory is NVML's total as the
# driver reports it: 81559Mi for the H100 80GB HBM3 (read from a slice on hardware); for the A100s, the
# A10, the L40S and the L4, the totals nvidia-smi (NVML) reports on them, as modal-labs/modal-client PR
# #2797 lists them across its fleet (A100 80GB 81920MiB, A100 40GB 40960MiB, A10 23028MiB, L40S 46068MiB,
# L4 23034MiB); the A10's also in NVML's memoryInfo.Total 24146608128 bytes (= 23028Mi) in
# mayooot/detect-gpu issue #3. The others are *unconfirmed*: a class stating another value is believed.
MODELS = (
    _model("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi"),  # Nebius gpu-h100-sxm, EKS p5
    _model("NVIDIA H200", "Hopper", "9.0.0", "143771Mi", confirmed_memory=False),
    _model("NVIDIA B200", "Blackwell", "10.0.0", "183359Mi", confirmed_memory=False),
    _model("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "81920Mi"),
    _model("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "40960Mi"),
    # AKS NC A100 v4, Vultr: the SXM part's total, taken to be the PCIe part's too.
    _model("NVIDIA A100 80GB PCIe", "Ampere", "8.0.0", "81920Mi", confirmed_memory=False),
    _model("NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi"),
    _model("NVIDIA L4", "Ada Lovelace", "8.9.0", "23034Mi"),  # GKE g2, EKS g6
    # EKS g5: 23028MiB in nvidia-smi on a g5 (NVIDIA/DCGM issue #232, driver 535.247.01).
    _model("NVIDIA A10G", "Ampere", "8.6.0", "23028Mi"),
    # Azure NV A10 v5. (Until issue 44 this row said 24564Mi, the RTX 4090's total, as Modelplane's AKS example
    # states it, marked "verify" there.)
    _model("NVIDIA A10", "Ampere", "8.6.0", "23028Mi"),
    # Parts the clouds' offerings tables name (clouds/offerings/*.yaml gpus), each total from an nvidia-smi:
    # T4 (EKS g4dn, GKE, AKS NCasT4_v3): 15360MiB on g4dn.xlarge, zylon-ai/private-gpt#1173 (and modal-labs/
    # modal-client PR #2797); 7.5 as sgl-project/sglang#1325 reports it for "Tesla T4".
    _model("Tesla T4", "Turing", "7.5.0", "15360Mi"),
    # V100 SXM2 16 GB (EKS p3, GKE): 16384MiB on a p3 (driver 525), huggingface/text-generation-inference#424
    # (an older driver, 384, showed 16152MiB: vantage-sh/ec2instances.info#289).
    _model("Tesla V100-SXM2-16GB", "Volta", "7.0.0", "16384Mi"),
    # V100 SXM2 32 GB (EKS p3dn, AKS ND40rs_v2): *unconfirmed* memory (32 GiB; no nvidia-smi total found).
    _model("Tesla V100-SXM2-32GB", "Volta", "7.0.0", "32768Mi", confirmed_memory=False),
    # H100 NVL (AKS NC H100 v5): 95830MiB, nvidia-smi in NVIDIA/gpu-admin-tools#4.
    _model("NVIDIA H100 NVL", "Hopper", "9.0.0", "95830Mi"),
)

# The host's driver when a class does not state it: R570 with its CUDA 12.8 (SystemGetCudaDriverVersion
# 12080 -> "12.8" -> 12.8.0).
NODE_DEFAULTS = {f"{D}/driverVersion": {"version": "570.133.20"}, f"{D}/cudaDriverVersion": {"version": "12.8.0"},
                 f"{D}/addressingMode": {"string": "None"}}


def _node_identity(node: str, index: int) -> dict:
    return {f"{D}/uuid": {"string": f"GPU-{stable_uuid(node, index)}"}}


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # CanonicalName: gpu-<minor>; one PCIe root per GPU, as on the multi-GPU servers these run on.
    bus = 0x18 + 0x10 * index
    return f"gpu-{index}", {**_node_identity(node, index),
                            PCI_BUS_ID: {"string": pci_address(bus)}, PCIE_ROOT: {"string": pcie_root(bus)}}


# deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml at v0.4.0 (GPUs enabled; the
# MIG, VFIO and ComputeDomain classes are off with the values the catalog sets).
DEVICE_CLASS = DeviceClassSpec(
    NVIDIA_GPU.device_class,
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",),
    "kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 "
    "deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml")

SLICES = DriverSlices(
    driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=MODELS, identity=_identity,
    device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/productName",), product_key=f"{D}/productName",
    node_defaults=NODE_DEFAULTS, pinned={f"{D}/type": {"string": "gpu"}}, node_identity=_node_identity)

# ==== the serving stack: components with their pins and values, and the workloads they run

# ---- NVIDIA: the DRA driver and the quota its critical pods need

NVIDIA_NAMESPACE = "nvidia-dra-driver-gpu"
# Where GKE's COS images install the NVIDIA driver; elsewhere the driver is on the host at `/`,
# the chart's default. *Unconfirmed* for Vultr and Civo, whose GPU nodes may use NVIDIA's driver
# container (`/run/nvidia/driver`); kept at the default until checked on a real node.
GKE_NVIDIA_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"


def _nvidia_values(driver_root: str | None) -> Render:
    def values(_: ServingStackSpec) -> dict[str, Any]:
        out: dict[str, Any] = {
            # The chart refuses to render GPU support without this acknowledgement.
            "gpuResourcesEnabledOverride": True,
            # ComputeDomains are for multi-node NVLink (IMEX); inferplane claims plain GPUs.
            "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
            "kubeletPlugin": {"tolerations": [gpu_toleration(NVIDIA_GPU)]},
        }
        if driver_root:
            out["nvidiaDriverRoot"] = driver_root
        return out
    return values


NVIDIA_DRA_DRIVER = Component(
    key="dra-driver-nvidia-gpu",
    namespace=NVIDIA_NAMESPACE,
    chart=Chart("dra-driver-nvidia-gpu", "oci://registry.k8s.io/dra-driver-nvidia/charts", "0.4.0"),
    values=_nvidia_values(None),
    dra_drivers=frozenset({NVIDIA_GPU.name}),
)
GKE_NVIDIA_DRA_DRIVER = replace(NVIDIA_DRA_DRIVER, values=_nvidia_values(GKE_NVIDIA_DRIVER_ROOT))

# GKE's automatic driver installation is off on DRA pools (GKE's DRA set-up page, "Prepare GKE
# infrastructure for DRA workloads": not supported with DRA; pools set gpu-driver-version=disabled),
# so the driver comes from Google's driver-installer DaemonSet for COS, our pools' image. (The DRA
# driver's own GKE demo, v0.4.0 demo/clusters/gke/create-cluster.sh, runs UBUNTU_CONTAINERD pools
# with the Ubuntu installer instead.) Pinned to the last commit of its manifest; the DaemonSet below
# carries that manifest's facts (images, host paths, affinity, tolerations).
GKE_DRIVER_INSTALLER_MANIFEST = (
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml")
GKE_DRIVER_INSTALLER_NAME = "nvidia-driver-installer"
GKE_DRIVER_INSTALLER_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [
        {"key": GKE_ACCELERATOR_LABEL, "operator": "Exists"},
        # GKE labels the nodes of pools whose driver it installs with the version it chose (`default`,
        # `latest`: container-engine-accelerators' Autopilot tests select on it); pools with
        # installation disabled (ours) carry no such label, so the installer runs there.
        # The demo above removes the label by hand because its pools leave gpu-driver-version unset
        # (GKE-managed); NVIDIA's GKE COS installer for gpu-driver-version=disabled pools keeps this
        # DoesNotExist term for that reason (NVIDIA/aicr 6f14327, recipes/components/
        # gcp-driver-installer/manifests/nvidia-driver-installer.yaml). Confidential nodes have their own.
        {"key": "cloud.google.com/gke-gpu-driver-version", "operator": "DoesNotExist"},
        {"key": "cloud.google.com/gke-confidential-nodes-instance-type", "operator": "DoesNotExist"}]}]}}}


def _gke_driver_installer(_: ServingStackSpec) -> dict[str, Any]:
    host = {"dev": "/dev", "vulkan-icd-mount": "/home/kubernetes/bin/nvidia/vulkan/icd.d",
            "nvidia-install-dir-host": GKE_NVIDIA_DRIVER_ROOT, "root-mount": "/", "cos-tools": "/var/lib/cos-tools",
            "nvidia-config": "/etc/nvidia"}
    mounts = {"nvidia-install-dir-host": "/usr/local/nvidia", "vulkan-icd-mount": "/etc/vulkan/icd.d",
              "dev": "/dev", "root-mount": "/root", "cos-tools": "/build/cos-tools"}
    env = {"NVIDIA_INSTALL_DIR_HOST": GKE_NVIDIA_DRIVER_ROOT, "NVIDIA_INSTALL_DIR_CONTAINER": "/usr/local/nvidia",
           "VULKAN_ICD_DIR_HOST": "/home/kubernetes/bin/nvidia/vulkan/icd.d", "VULKAN_ICD_DIR_CONTAINER": "/etc/vulkan/icd.d",
           "ROOT_MOUNT_DIR": "/root", "COS_TOOLS_DIR_HOST": "/var/lib/cos-tools", "COS_TOOLS_DIR_CONTAINER": "/build/cos-tools"}
    labels = {"k8s-app": GKE_DRIVER_INSTALLER_NAME}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": GKE_DRIVER_INSTALLER_NAME, "namespace": "kube-system", "labels": labels,
                     "annotations": {f"{API_GROUP}/source": GKE_DRIVER_INSTALLER_MANIFEST}},
        "spec": {"selector": {"matchLabels": labels}, "updateStrategy": {"type": "RollingUpdate"}, "template": {
            "metadata": {"labels": {"name": GKE_DRIVER_INSTALLER_NAME, **labels}},
            "spec": {
                "priorityClassName": "system-node-critical", "affinity": GKE_DRIVER_INSTALLER_AFFINITY,
                # The manifest tolerates every taint ({operator: Exists}) and relies on its affinity
                # alone; the GPU taint's key (GKE's `nvidia.com/gpu=present` and our pools') is all it needs.
                "tolerations": [{"key": NVIDIA_GPU.pool_taint.key, "operator": "Exists"}],  # type: ignore[union-attr]
                "hostNetwork": True, "hostPID": True,
                "volumes": [{"name": n, "hostPath": {"path": p}} for n, p in host.items()],
                "initContainers": [
                    # GKE preloads this image on GPU nodes' COS; it is never pulled.
                    {"name": GKE_DRIVER_INSTALLER_NAME, "image": "cos-nvidia-installer:fixed", "imagePullPolicy": "Never",
                     "command": ["/cos-gpu-installer", "install"], "resources": {"requests": {"cpu": "150m"}},
                     "securityContext": {"privileged": True},
                     "env": [{"name": k, "value": v} for k, v in env.items()],
                     "volumeMounts": [{"name": n, "mountPath": p} for n, p in mounts.items()]},
                    {"name": "partition-gpus", "image": "gcr.io/gke-release/nvidia-partition-gpu@sha256:"
                     "de12f85ebfb4fb6c1893cd30c23aab662a72fa0448f97ef74fccb82d7522ef17",
                     "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
                     "resources": {"requests": {"cpu": "150m"}}, "securityContext": {"privileged": True},
                     "volumeMounts": [{"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia"},
                                      {"name": "dev", "mountPath": "/dev"},
                                      {"name": "nvidia-config", "mountPath": "/etc/nvidia"}]}],
                "containers": [{"name": "pause", "image": "gke.gcr.io/pause:3.8@sha256:"
                                "880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"}]}}}}


GKE_NVIDIA_DRIVER_INSTALLER = Component(
    key="nvidia-driver-installer",
    namespace="kube-system",
    manifest=_gke_driver_installer,
    dra_drivers=frozenset({NVIDIA_GPU.name}),
)

# The driver's pods run at priority system-node-critical; outside kube-system the API server
# admits such pods only under a ResourceQuota that scopes those PriorityClasses in the namespace.
# 100 pods is far above one kubelet plugin per GPU node plus a controller, and still a bound.
CRITICAL_PODS_QUOTA = "100"
NVIDIA_CRITICAL_PODS_QUOTA = Component(
    key="nvidia-critical-pods-quota",
    namespace=NVIDIA_NAMESPACE,
    manifest=lambda _: {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "critical-pods", "namespace": NVIDIA_NAMESPACE},
        "spec": {
            "hard": {"pods": CRITICAL_PODS_QUOTA},
            "scopeSelector": {"matchExpressions": [{
                "scopeName": "PriorityClass",
                "operator": "In",
                "values": ["system-node-critical", "system-cluster-critical"],
            }]},
        },
    },
    dra_drivers=frozenset({NVIDIA_GPU.name}),
)

# NVIDIA's GPU metrics: dcgm-exporter chart 4.8.2 (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2, deployment/),
# running the 4.6.0-4.8.3 exporter (below). Its pods are labelled app.kubernetes.io/name=dcgm-exporter
# (the chart name) with the container port named `metrics` (9400); it runs at system-node-critical,
# which the namespace's critical-pods quota admits.
DCGM_EXPORTER_METRICS = MetricsEndpoint(job="inferplane-gpu-nvidia", driver=NVIDIA_GPU.name,
                                        namespace=NVIDIA_NAMESPACE,
                                        pod_labels=(("app.kubernetes.io/name", "dcgm-exporter"),),
                                        port_name="metrics")
# NVIDIA nodes as the DRA driver finds them: labelled by their cloud pool, or by NFD (PCI vendor 10de).
NVIDIA_NODE_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": key, "operator": "In", "values": ["true"]}]}
    for key in (*NVIDIA_GPU.node_labels, "feature.node.kubernetes.io/pci-10de.present")]}}}
DCGM_EXPORTER = Component(
    key="dcgm-exporter",
    namespace=NVIDIA_NAMESPACE,
    chart=Chart("dcgm-exporter", "https://nvidia.github.io/dcgm-exporter/helm-charts", "4.8.2"),
    values=lambda _: {
        # The chart's default tolerates only the control plane and lands on every node it may.
        "tolerations": [gpu_toleration(NVIDIA_GPU)],
        "affinity": NVIDIA_NODE_AFFINITY,
        # The GPU scrape job reads it; the chart's ServiceMonitor would scrape it a second time and
        # rename the workload's pod labels exported_*.
        "serviceMonitor": {"enabled": False},
        # GPUs are allocated by DRA: attribute their metrics to pods (the `pod`, `namespace` and
        # `container` labels) through the gpu.nvidia.com ResourceSlices. The chart's switch, not the
        # bare env var: besides KUBERNETES_ENABLE_DRA it mounts the ServiceAccount token and creates
        # the ClusterRole that reads pods and resourceslices (4.5.3-4.8.2 templates/daemonset.yaml,
        # clusterrole.yaml, serviceaccount.yaml). Without them the exporter has no in-cluster client
        # and logs "pod labels will not be available" (internal/pkg/transformation/kubernetes.go).
        "kubernetesDRA": {"enabled": True},
        # The exporter one release newer than the chart: 4.5.3-4.8.2's ResourceSlice informer is
        # resource.k8s.io/v1beta1 only, and its metrics server is built after that informer syncs,
        # with no time limit (transformation/dra.go:43, :71; server/server.go:70), while our clusters
        # (1.34+) serve v1 and leave v1beta1 off (beta APIs are off by default, KEP-3136): it would
        # never serve a metric. 4.6.0-4.8.3 reads v1 (NVIDIA/dcgm-exporter#590, fixed in that
        # release; its README's quick start runs nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless).
        # Its chart could not be read here to vendor; the 4.8.2 chart's templates give it what it
        # needs (the env var, the token, and a ClusterRole on resource.k8s.io resourceslices, which
        # RBAC grants for every version of the group). Move the chart to 4.8.3 once it can be vendored.
        "image": {"tag": "4.6.0-4.8.3-distroless"},
    },
    dra_drivers=frozenset({NVIDIA_GPU.name}),
    metrics=DCGM_EXPORTER_METRICS,
)


# ---- NVIDIA: dra-driver-nvidia-gpu, at the chart version pinned above

# The kubelet plugin's default required affinity: NFD's PCI vendor 10de labels (any device, 3D
# controller 0302, VGA 0300), NFD's Tegra CPU vendor, or the GPU operator's gpu.present label.
NVIDIA_KUBELET_PLUGIN_AFFINITY: Values = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In",
                               "values": ["true"]}]},
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-0302_10de.present", "operator": "In",
                               "values": ["true"]}]},
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-0300_10de.present", "operator": "In",
                               "values": ["true"]}]},
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/cpu-model.vendor_id", "operator": "In",
                               "values": ["NVIDIA"]}]},
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]},
    ]}}}
NVIDIA_DEFAULTS: Values = {
    "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
    "kubeletPlugin": {"nodeSelector": {}, "affinity": NVIDIA_KUBELET_PLUGIN_AFFINITY,
                      "tolerations": [{"key": NVIDIA_GPU.pool_taint.key, "operator": "Exists",  # type: ignore[union-attr]
                                       "effect": "NoSchedule"}]},
    # The ComputeDomain controller (rendered only with ComputeDomains on); its control-plane
    # affinity is preferred, so it lands on whatever untainted node there is.
    "controller": {"replicas": 1, "nodeSelector": {},
                   "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                    "effect": "NoSchedule"},
                                   {"key": "node-role.kubernetes.io/master", "operator": "Exists",
                                    "effect": "NoSchedule"},
                                   {"key": "CriticalAddonsOnly", "operator": "Exists"}],
                   "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                       {"weight": 100, "preference": {"matchExpressions": [
                           {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}}]}}},
}
# The chart names its objects after the chart, not the release.
NVIDIA_CHART = "dra-driver-nvidia-gpu"


def _nvidia(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(NVIDIA_DEFAULTS, rendered)
    key, ns = NVIDIA_DRA_DRIVER.key, NVIDIA_DRA_DRIVER.namespace or ""
    gpus = bool(dig(values, "resources.gpus.enabled", False))
    domains = bool(dig(values, "resources.computeDomains.enabled", False))
    out = []
    if gpus or domains:
        plugin = values["kubeletPlugin"]
        out.append(Workload("DaemonSet", f"{NVIDIA_CHART}-kubelet-plugin", ns, key, Placement.DRIVERS,
                            node_selector=plugin.get("nodeSelector") or {},
                            affinity=plugin.get("affinity") or {}, tolerations=tolerations_of(plugin.get("tolerations")),
                            container="gpus" if gpus else "compute-domains",
                            publishes_slices_for=NVIDIA_GPU.name if gpus else None))
    if domains:
        controller = values["controller"]
        out.append(Workload("Deployment", f"{NVIDIA_CHART}-controller", ns, key, Placement.SYSTEM,
                            replicas=int(controller.get("replicas", 1)),
                            node_selector=controller.get("nodeSelector") or {},
                            affinity=controller.get("affinity") or {},
                            tolerations=tolerations_of(controller.get("tolerations")), container="compute-domain"))
    return tuple(out)


# dcgm-exporter at the pinned chart, release `dcgm-exporter`: one DaemonSet named after the release (it contains
# the chart's name), container `exporter`.
DCGM_DEFAULTS: Values = {
    "nodeSelector": {}, "affinity": {},
    "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
}


def _dcgm_exporter(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(DCGM_DEFAULTS, rendered)
    return (Workload("DaemonSet", DCGM_EXPORTER.key, DCGM_EXPORTER.namespace or "", DCGM_EXPORTER.key,
                     Placement.DRIVERS, node_selector=values.get("nodeSelector") or {}, affinity=values.get("affinity") or {},
                     tolerations=tolerations_of(values.get("tolerations")),
                     requests=dig(values, "resources.requests", {}), container="exporter"),)


def _gke_driver_installer(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    """The DaemonSet the object is: placed by its own affinity and tolerations."""
    spec = dig(rendered, "spec.template.spec", {})
    return (Workload("DaemonSet", rendered["metadata"]["name"], rendered["metadata"]["namespace"],
                     GKE_NVIDIA_DRIVER_INSTALLER.key, Placement.DRIVERS,
                     node_selector=spec.get("nodeSelector") or {}, affinity=spec.get("affinity") or {},
                     tolerations=tolerations_of(spec.get("tolerations")), container="pause"),)


# Clouds that provision their own pools label GPU nodes with the driver's node label
# (`nvidia.com/gpu.present`), which the driver's affinity accepts; on Existing clusters NFD finds them
# (PCI vendor 10de). GKE installs the driver itself, and its DRA driver reads it where COS puts it.
_STACK = (NVIDIA_DRA_DRIVER, NVIDIA_CRITICAL_PODS_QUOTA, DCGM_EXPORTER)
STACK = DriverStack(
    driver=NVIDIA_GPU,
    # Every cloud, GKE with its own driver installer and DRA driver.
    clouds={**dict.fromkeys(SOURCES, _STACK), GKE: (GKE_NVIDIA_DRIVER_INSTALLER, GKE_NVIDIA_DRA_DRIVER,
                                                     NVIDIA_CRITICAL_PODS_QUOTA, DCGM_EXPORTER)},
    workloads={NVIDIA_DRA_DRIVER.key: _nvidia, GKE_NVIDIA_DRIVER_INSTALLER.key: _gke_driver_installer,
               NVIDIA_CRITICAL_PODS_QUOTA.key: no_workloads("a ResourceQuota admits pods; it runs none"),
               DCGM_EXPORTER.key: _dcgm_exporter},
    nfd=frozenset({EXISTING}),
)
