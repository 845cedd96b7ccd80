"""AMD's GPU DRA driver (`gpu.amd.com`): the devices it publishes, the DeviceClass installed with it, and its
serving stack (the AMD GPU operator in DRA mode and its DeviceConfig, with the metrics exporter).

Source: ROCm/k8s-gpu-dra-driver v1.0 (the operator deploys image v1.0.1, see the catalog):
`cmd/gpu-kubeletplugin/deviceinfo.go` (`AmdGpuInfo.GetDevice`), `pkg/amdgpu/amdgpu.go` (where the
values come from), `docs/driver-attributes.md`; read at commit 08bc729 (deviceinfo.go) / 086e278
(amdgpu.go) of the stored history, after chart v1.0.0 (2026-05-09): the repository has no tags to
read. Earlier (alpha) releases published `family`, `cardIndex`, `renderIndex`, `pciAddr` and
`driverSrcVersion`; v1.0 publishes none of them.
"""

from __future__ import annotations

import re
from typing import Any

from inferplane.api.cloud import EXISTING
from inferplane.accelerators.component import Chart, Component, DriverStack, gpu_toleration
from inferplane.accelerators.devices import (
    PCI_BUS_ID,
    PCIE_ROOT,
    AttributeSpec,
    DeviceClassSpec,
    DeviceModel,
    DriverSlices,
    Varies,
    numa_of,
    pci_address,
    pcie_root,
)
from inferplane.accelerators.workload import Installed, Placement, Rendered, Values, Workload, dig, helm_merge, \
    no_workloads, tolerations_of
from inferplane.api.drivers import AMD_GPU
from inferplane.metrics.scrape import MetricsEndpoint

D = AMD_GPU.name
SOURCE = "ROCm/k8s-gpu-dra-driver v1.0 cmd/gpu-kubeletplugin/deviceinfo.go"

ATTRIBUTES = (
    AttributeSpec(f"{D}/type", "string", Varies.MODEL),  # consts.AmdGpuDeviceType, "amdgpu" (a whole GPU)
    # sysfs product_name with " " -> "_" and "(" ")" dropped (amdgpu.go's replacer).
    AttributeSpec(f"{D}/productName", "string", Varies.MODEL),
    # sysfs device/device, the PCI device id as "0x74a1"; omitted when unreadable.
    AttributeSpec(f"{D}/deviceID", "string", Varies.MODEL),
    # "<compute>_<memory>" partition modes, on parts that partition (MI300 series: spx_nps1 whole).
    AttributeSpec(f"{D}/partitionProfile", "string", Varies.MODEL),
    AttributeSpec(f"{D}/numaNode", "int", Varies.DEVICE),  # sysfs numa_node
    # The module's version string: the in-kernel amdgpu module (the host's driver, which inferplane
    # runs: driver management is off) has none, and then both are omitted. Published only when a class
    # states the host's module has one.
    AttributeSpec(f"{D}/driverVersion", "version", Varies.NODE, optional=True),
    AttributeSpec(f"{D}/driverVersionFull", "string", Varies.NODE, optional=True),
    AttributeSpec(PCI_BUS_ID, "string", Varies.DEVICE),
    AttributeSpec(PCIE_ROOT, "string", Varies.DEVICE),
)
# memory (KFD VRAM bytes, BinarySI), computeUnits and simdUnits (KFD topology).
CAPACITIES = (f"{D}/memory", f"{D}/computeUnits", f"{D}/simdUnits")


def _model(name: str, product: str, device_id: str, memory: str, cus: int,
           unconfirmed: frozenset[str] = frozenset()) -> DeviceModel:
    return DeviceModel(name, {
        f"{D}/type": {"string": "amdgpu"},
        f"{D}/productName": {"string": product},
        f"{D}/deviceID": {"string": device_id},
        f"{D}/partitionProfile": {"string": "spx_nps1"},
    }, {f"{D}/memory": memory, f"{D}/computeUnits": str(cus), f"{D}/simdUnits": str(cus * 4)}, unconfirmed)


# MI300X: productName AMD_Instinct_MI300X_OAM, memory 196592Mi, 304 CUs / 1216 SIMDs, spx_nps1: the
# slice in the driver's docs/demo.md (an MI300X node). Device ids: NFD's gpu-nfd-default-rule.yaml
# (MI300X 74a1, MI325X 74a5), written as sysfs writes them.
# MI325X: *unconfirmed*: its product name is taken to follow MI300X's (AMD_Instinct_MI325X_OAM); its
# 304 CUs are AMD's specification; its memory is 256 GiB less the 16Mi the MI300X's report keeps
# back (262128Mi), never seen in a slice: select at or below 256Gi less a margin (e.g. >= 240Gi).
MODELS = (
    _model("MI300X", "AMD_Instinct_MI300X_OAM", "0x74a1", "196592Mi", 304),
    _model("MI325X", "AMD_Instinct_MI325X_OAM", "0x74a5", "262128Mi", 304,
           frozenset({f"{D}/productName", f"{D}/memory"})),
)


# sysfs writes a PCI id as "0x" and four lower-case hex digits (the kernel's `device` attribute, "%#06x").
_DEVICE_ID = re.compile(r"^0x[0-9a-f]{4}$")


def _value_problem(key: str, value: str) -> str | None:
    """A productName or deviceID in a form the driver never writes, with the form it writes: productName has
    no space and no parentheses (amdgpu.go replaces " " with "_" and drops "(" and ")"), and a deviceID is
    sysfs's "0x74a1"."""
    if key == f"{D}/productName" and any(c in value for c in " ()"):
        normal = value.strip().replace(" ", "_").replace("(", "").replace(")", "")
        known = next((p for m in MODELS if normal in ((p := m.attributes[key]["string"]), p.removesuffix("_OAM"))),
                     normal)
        return f"the {D} driver publishes {key} as {known!r}, not {value!r}: use {known}"
    if key == f"{D}/deviceID" and not _DEVICE_ID.match(value):
        digits = value.strip().lower().removeprefix("0x")
        fix = f"use 0x{digits}" if re.fullmatch(r"[0-9a-f]{4}", digits) else "write it as sysfs does, e.g. 0x74a1"
        return f"the {D} driver publishes {key} as sysfs writes a PCI device id (0x and four lower-case hex " \
               f"digits), never {value!r}: {fix}"
    return None


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # CanonicalName gpu-<card>-<render>; each OAM GPU on its own PCIe root, half per socket.
    bus = 0x05 + 0x10 * index
    return f"gpu-{index + 1}-{128 + index}", {
        f"{D}/numaNode": {"int": numa_of(index, count)},
        PCI_BUS_ID: {"string": pci_address(bus)}, PCIE_ROOT: {"string": pcie_root(bus)}}


# The AMD GPU operator (v1.5.1, which the catalog installs) creates DeviceClass gpu.amd.com
# (`draDriver.deviceClass.create`, default true): ROCm/gpu-operator docs/dra/dra-driver.md; the driver's
# own chart writes the same selector (ROCm/k8s-gpu-dra-driver helm-charts-k8s/templates/deviceclass.yaml).
DEVICE_CLASS = DeviceClassSpec(AMD_GPU.device_class, ("device.driver == 'gpu.amd.com'",),
                               "ROCm/gpu-operator v1.5.1 docs/dra/dra-driver.md (DeviceClass)")

SLICES = DriverSlices(
    driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=MODELS, identity=_identity,
    device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/productName", f"{D}/deviceID"), product_key=f"{D}/productName",
    common={f"{D}/type": {"string": "amdgpu"}}, value_problem=_value_problem)

# ==== the serving stack: components with their pins and values, and the workloads they run

# ---- AMD: the GPU operator in DRA mode, configured by its DeviceConfig

AMD_NAMESPACE = "kube-amd-gpu"
# The operator names its operands after the DeviceConfig (v1.5.1 internal/utils.go): DaemonSets
# `<name>-dra-driver` and `<name>-metrics-exporter`, and the metrics Service
# `<name>-metrics-exporter`, which the metrics collector scrapes.
AMD_DEVICE_CONFIG_NAME = "inferplane"
# The operator defaults this image to `latest`. v1.0.1 is the release pinned alongside operator
# v1.5.1 in public deployments; *unconfirmed* against AMD's own compatibility notes.
AMD_DRA_DRIVER_IMAGE = "docker.io/rocm/k8s-gpu-dra-driver:v1.0.1"
AMD_METRICS_EXPORTER_IMAGE = "docker.io/rocm/device-metrics-exporter:v1.5.1"
AMD_METRICS_PORT = 5000  # the exporter's documented port, named `exporter-port`
# The operator labels every metrics exporter pod app.kubernetes.io/name=metrics-exporter and names
# its port `exporter-port` (ROCm/gpu-operator v1.5.1, internal/metricsexporter/metricsexporter.go).
AMD_EXPORTER_METRICS = MetricsEndpoint(job="inferplane-gpu-amd", driver=AMD_GPU.name, namespace=AMD_NAMESPACE,
                                       pod_labels=(("app.kubernetes.io/name", "metrics-exporter"),),
                                       port_name="exporter-port")

AMD_GPU_OPERATOR = Component(
    key="amd-gpu-operator",
    namespace=AMD_NAMESPACE,
    chart=Chart("gpu-operator-charts", "https://rocm.github.io/gpu-operator", "v1.5.1"),
    values=lambda _: {
        # Driver management off: the host's amdgpu driver is used, so no KMM. `watch` must go off
        # with it (ROCm/gpu-operator v1.5.1 docs/installation/kubernetes-helm.md): left on, the
        # operator's controller watches KMM's Module kinds, whose CRDs only the KMM subchart ships.
        "kmm": {"enabled": False, "watch": False},
        # The remediation workflow controller (Argo, with its CRDs) repairs nodes by draining and
        # rebooting them through workflows; inferplane does not configure remediation, so it is off.
        "remediation": {"enabled": False, "installCRDs": False},
        # NFD is its own component; a second copy from this chart would fight it.
        "node-feature-discovery": {"enabled": False},
        # The operator's NFD rule is what labels AMD nodes feature.node.kubernetes.io/amd-gpu.
        "installdefaultNFDRule": True,
        # The default DeviceConfig enables the device plugin with `latest` images; we compose our own.
        "crds": {"defaultCR": {"install": False}},
    },
    dra_drivers=frozenset({AMD_GPU.name}),
)
AMD_DEVICE_CONFIG = Component(
    key="amd-device-config",
    namespace=AMD_NAMESPACE,
    manifest=lambda _: {
        "apiVersion": "amd.com/v1alpha1",
        "kind": "DeviceConfig",
        "metadata": {"name": AMD_DEVICE_CONFIG_NAME, "namespace": AMD_NAMESPACE},
        "spec": {
            "selector": dict(AMD_GPU.node_labels),
            "driver": {"enable": False},
            # DRA and the device plugin are mutually exclusive. The node labeller's default image
            # is `labeller-latest`, and DRA publishes the same facts as device attributes.
            "devicePlugin": {"enableDevicePlugin": False, "enableNodeLabeller": False},
            "draDriver": {"enable": True, "image": AMD_DRA_DRIVER_IMAGE,
                          "tolerations": [gpu_toleration(AMD_GPU)]},
            "metricsExporter": {"enable": True, "image": AMD_METRICS_EXPORTER_IMAGE,
                                "serviceType": "ClusterIP", "port": AMD_METRICS_PORT,
                                "tolerations": [gpu_toleration(AMD_GPU)]},
        },
    },
    dra_drivers=frozenset({AMD_GPU.name}),
    metrics=AMD_EXPORTER_METRICS,
)


# ---- AMD: the GPU operator at the pinned chart, and the operands of each DeviceConfig

AMD_OPERATOR_DEFAULTS: Values = {
    "controllerManager": {
        "replicas": 1, "nodeSelector": {},
        "manager": {"tolerations": [
            {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
             "effect": "NoSchedule"}],
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}},
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}}]}},
    },
    # KMM and the remediation workflow controller (Argo) are on by default (v1.5.1 values.yaml).
    "kmm": {"enabled": True, "watch": True},
    "remediation": {"enabled": True, "controller": {"nodeSelector": {}, "affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}}]}}}},
}
# The operator names the chart's controller `<release>-<chart>-controller-manager`.
AMD_OPERATOR_CHART = "gpu-operator-charts"


def _amd_operator(rendered: Rendered, installed: Installed) -> tuple[Workload, ...]:
    values = helm_merge(AMD_OPERATOR_DEFAULTS, rendered)
    key, ns = AMD_GPU_OPERATOR.key, AMD_GPU_OPERATOR.namespace or ""
    manager = values["controllerManager"]
    # The manager watches KMM's Module kinds while `kmm.watch` is on (env KMM_WATCH_ENABLED); without
    # the KMM subchart their CRDs do not exist, and the manager exits at start-up.
    kmm_missing = dig(values, "kmm.watch", True) and not dig(values, "kmm.enabled", True)
    out = [Workload("Deployment", f"{key}-{AMD_OPERATOR_CHART}-controller-manager", ns, key, Placement.SYSTEM,
                    replicas=int(manager.get("replicas", 1)), node_selector=manager.get("nodeSelector") or {},
                    affinity=manager.get("affinity") or {},
                    tolerations=tolerations_of(dig(manager, "manager.tolerations")),
                    requests=dig(manager, "manager.resources.requests", {}), container="manager",
                    crash=("kmm.watch is on but kmm.enabled is off: the KMM Module CRDs are not installed, "
                           "so the manager's watch fails" if kmm_missing else None))]
    if dig(values, "remediation.enabled", False):
        controller = dig(values, "remediation.controller", {})
        out.append(Workload("Deployment", "amd-gpu-operator-workflow-controller", ns, key, Placement.SYSTEM,
                            node_selector=controller.get("nodeSelector") or {},
                            affinity=controller.get("affinity") or {},
                            tolerations=({"key": "amd-gpu-unhealthy", "operator": "Exists", "effect": "NoSchedule"},),
                            container="workflow-controller"))
    # The operator reconciles every DeviceConfig into its operands; without the operator, a
    # DeviceConfig runs nothing.
    for body in installed.values():
        if body.get("kind") == "DeviceConfig" and str(body.get("apiVersion", "")).startswith("amd.com/"):
            out.extend(device_config_operands(body))
    return tuple(out)


def device_config_operands(device_config: Rendered) -> tuple[Workload, ...]:
    """The DaemonSets the AMD operator runs for one DeviceConfig, named `<name>-<operand>` (v1.5.1
    internal/utils.go: dra-driver, metrics-exporter, device-plugin, node-labeller), each on the
    DeviceConfig's selector with that operand's own tolerations (default: none)."""
    metadata, spec = device_config.get("metadata") or {}, device_config.get("spec") or {}
    name, ns = metadata.get("name", ""), metadata.get("namespace", "")
    selector = spec.get("selector") or dict(AMD_GPU.node_labels)
    out = []

    def operand(suffix: str, tolerations: Any, container: str, node_selector: Any = None,
                publishes: str | None = None) -> Workload:
        return Workload("DaemonSet", f"{name}-{suffix}", ns, AMD_GPU_OPERATOR.key, Placement.DRIVERS,
                        node_selector=node_selector or selector, tolerations=tolerations_of(tolerations),
                        container=container, publishes_slices_for=publishes)

    dra, plugin = spec.get("draDriver") or {}, spec.get("devicePlugin") or {}
    metrics = spec.get("metricsExporter") or {}
    if dra.get("enable", False):
        out.append(operand("dra-driver", dra.get("tolerations"), "dra-driver", publishes=AMD_GPU.name))
    # The CRD defaults the device plugin and node labeller on; DRA mode turns them off.
    if plugin.get("enableDevicePlugin", True):
        out.append(operand("device-plugin", plugin.get("devicePluginTolerations"), "device-plugin"))
    if plugin.get("enableNodeLabeller", True):
        out.append(operand("node-labeller", plugin.get("nodeLabellerTolerations"), "node-labeller"))
    if metrics.get("enable", False):
        out.append(operand("metrics-exporter", metrics.get("tolerations"), "metrics-exporter",
                           node_selector=metrics.get("selector")))
    return tuple(out)


# Served on Existing clusters only, where NFD (the operator's NFD rule) labels AMD nodes.
STACK = DriverStack(
    driver=AMD_GPU,
    clouds={EXISTING: (AMD_GPU_OPERATOR, AMD_DEVICE_CONFIG)},
    workloads={AMD_GPU_OPERATOR.key: _amd_operator,
               AMD_DEVICE_CONFIG.key: no_workloads("the operator runs a DeviceConfig's operands; they are described "
                                                   f"under {AMD_GPU_OPERATOR.key}")},
    nfd=frozenset({EXISTING}),
)
