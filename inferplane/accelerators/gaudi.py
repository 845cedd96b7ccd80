"""Intel's Gaudi resource driver (`gaudi.intel.com`): the devices it publishes, the DeviceClass its chart
installs, and its serving stack (the driver's chart, with its NodeFeatureRule, on Existing clusters).

Source: intel/intel-resource-drivers-for-kubernetes, tag gaudi-v0.7.2 (commit 7a4d31b, 2026-06-10), the
release line that supports Kubernetes v1.34+ / resource.k8s.io/v1 (doc/gaudi/README.md):
`cmd/kubelet-gaudi-plugin/node_state.go` (`GetResources`: the attributes), `pkg/gaudi/discovery/discovery.go`
(what each comes from), `pkg/gaudi/device/device.go` (`ModelNames`: PCI device id -> model),
`pkg/helpers/device.go` (`DeviceUIDFromPCIinfo`: the device's name), `doc/gaudi/USAGE.md` (a published slice)
and `charts/intel-gaudi-resource-driver/` (values, DeviceClass, NodeFeatureRule, DaemonSet).

Clouds: none of ours offers Gaudi with this driver. EC2's DL1 (dl1.24xlarge) carries first-generation
Gaudi (PCI 1da3:1000), which the chart's NodeFeatureRule does not label (it matches 1020 Gaudi2 and 1030
Gaudi3 only), so the driver would never land there; EKS has no Gaudi2/Gaudi3 instance, and dl2q is not a
Gaudi instance. GKE, AKS, Nebius, Vultr and Civo offer none. The gate refuses `gaudi.intel.com` there.
"""

from __future__ import annotations

import hashlib

from inferplane.api.cloud import EXISTING
from inferplane.accelerators.component import Chart, Component, DriverStack
from inferplane.accelerators.devices import (
    PCIE_ROOT,
    AttributeSpec,
    DeviceClassSpec,
    DeviceModel,
    DriverSlices,
    Varies,
    pcie_root,
)
from inferplane.accelerators.workload import Installed, Placement, Rendered, Values, Workload, dig, helm_merge, \
    tolerations_of
from inferplane.api.drivers import GAUDI

D = GAUDI.name
SOURCE = "intel/intel-resource-drivers-for-kubernetes gaudi-v0.7.2 cmd/kubelet-gaudi-plugin/node_state.go"

# Written bare, in the driver's domain (device.attributes["gaudi.intel.com"].model in CEL). No capacity.
ATTRIBUTES = (
    AttributeSpec(f"{D}/model", "string", Varies.MODEL),  # device.ModelNames of the PCI device id
    # HLML's serial number, read when health monitoring is on (the chart's default, `-m`); "" without it.
    AttributeSpec(f"{D}/serial", "string", Varies.DEVICE),
    # True at discovery for every device; health monitoring turns it false on a critical event
    # (healthcare.go), which the simulation has none of: a class may state true, as every model's table does.
    AttributeSpec(f"{D}/healthy", "bool", Varies.MODEL),
    # Deprecated (to be removed in 1.0.0): the root complex's bus only, as before pcieRoot existed.
    AttributeSpec(f"{D}/pciRoot", "string", Varies.DEVICE),
    AttributeSpec(PCIE_ROOT, "string", Varies.DEVICE),
)
CAPACITIES: tuple[str, ...] = ()

# Each model's PCI device id, which the device's name ends with. device.go maps 0x1020 to Gaudi2 and 0x1030,
# 0x1060-0x1063 to Gaudi3; the chart's NodeFeatureRule labels only 1020 and 1030 nodes, so those are the ids
# simulated. (0x1000/0x1001/0x1010/0x1011, first-generation "Gaudi", are left out: that rule never labels them.)
DEVICE_IDS = {"Gaudi2": "0x1020", "Gaudi3": "0x1030"}
MODELS = tuple(DeviceModel(name, {f"{D}/model": {"string": name}, f"{D}/healthy": {"bool": True}}, {})
               for name in DEVICE_IDS)


def _node_identity(node: str, index: int) -> dict:
    # *Unconfirmed*: the form of HLML's serial numbers; a stable stand-in per node and device.
    return {f"{D}/serial": {"string": hashlib.sha256(f"{node}/{index}".encode()).hexdigest()[:12].upper()}}


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # Named by DeviceUIDFromPCIinfo: the PCI address with ':' and '.' as '-', then the device id
    # (USAGE.md's slice: 0000-a0-00-0-0x1020). Each OAM card on its own bus and root complex here.
    bus = 0x19 + 0x10 * index
    root = pcie_root(bus)
    # A model the table lacks ("Gaudi", "Unknown", or none stated) has no id to end with.
    suffix = f"-{DEVICE_IDS[model.name]}" if model.name in DEVICE_IDS else ""
    return f"0000-{bus:02x}-00-0{suffix}", {
        **_node_identity(node, index), f"{D}/pciRoot": {"string": root.partition(":")[2]}, PCIE_ROOT: {"string": root}}


# templates/device-class.yaml: resource.k8s.io/v1 (v1beta1 only on OpenShift before 4.21).
DEVICE_CLASS = DeviceClassSpec(GAUDI.device_class, ('device.driver == "gaudi.intel.com"',),
                               "intel/intel-resource-drivers-for-kubernetes gaudi-v0.7.2 "
                               "charts/intel-gaudi-resource-driver/templates/device-class.yaml")

# Every name ModelNames maps a PCI id to, and SetModelName's "Unknown" for any other id (pkg/gaudi/device/device.go
# at the tag): the driver publishes no other model.
MODEL_NAMES = ("Gaudi", "Gaudi2", "Gaudi3", "Unknown")


def _value_problem(key: str, value: str) -> str | None:
    if key == f"{D}/model" and value not in MODEL_NAMES:
        return (f"the {D} driver publishes {key} as one of {', '.join(MODEL_NAMES)} (pkg/gaudi/device/device.go "
                f"ModelNames), never {value!r}: use the one your device's PCI id maps to, e.g. Gaudi2")
    return None


SLICES = DriverSlices(driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=MODELS,
                      identity=_identity, device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/model",),
                      common={f"{D}/healthy": {"bool": True}}, value_problem=_value_problem,
                      node_identity=_node_identity)


# ==== the serving stack: components with their pins and values, and the workloads they run

# The chart's README and USAGE.md install it here.
GAUDI_NAMESPACE = "intel-gaudi-resource-driver"
GAUDI_DRA_DRIVER = Component(
    key="intel-gaudi-resource-driver",
    namespace=GAUDI_NAMESPACE,
    # Its image defaults to the chart's appVersion (ghcr.io/intel/intel-resource-drivers-for-kubernetes/
    # intel-gaudi-resource-driver:v0.7.2).
    chart=Chart("intel-gaudi-resource-driver-chart", "oci://ghcr.io/intel/intel-resource-drivers-for-kubernetes",
                "0.7.2"),
    values=lambda _: {
        # The chart's NodeFeatureRule labels Gaudi nodes for NFD (the catalog's NFD component; the chart's
        # own NFD subchart, `nfd.enabled`, stays off) and its DaemonSet then selects that label. Left off,
        # the kubelet plugin has no nodeSelector and lands on every node that tolerates nothing else.
        "nodeFeatureRules": {"enabled": True},
    },
    dra_drivers=frozenset({GAUDI.name}),
)

# The chart's defaults the DaemonSet's placement reads (values.yaml at gaudi-v0.7.2).
GAUDI_DEFAULTS: Values = {
    "kubeletPlugin": {
        "nodeSelector": {},
        "tolerations": [
            {"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "intel.feature.node.kubernetes.io/gaudi", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {},
    },
    "nodeFeatureRules": {"enabled": False},
}


def _gaudi_driver(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    """templates/resource-driver.yaml: one DaemonSet, named by the chart, container `kubelet-plugin`; with
    the NodeFeatureRule on, its nodeSelector is the rule's label and `kubeletPlugin.nodeSelector` is ignored."""
    values = helm_merge(GAUDI_DEFAULTS, rendered)
    plugin = values["kubeletPlugin"]
    selector = (dict(GAUDI.node_labels) if dig(values, "nodeFeatureRules.enabled", False)
                else plugin.get("nodeSelector") or {})
    return (Workload("DaemonSet", "intel-gaudi-resource-driver-kubelet-plugin", GAUDI_NAMESPACE, GAUDI_DRA_DRIVER.key,
                     Placement.DRIVERS, node_selector=selector, affinity=plugin.get("affinity") or {},
                     tolerations=tolerations_of(plugin.get("tolerations")), container="kubelet-plugin",
                     publishes_slices_for=GAUDI.name),)


# Existing clusters only (see the module's docstring), where NFD runs the chart's NodeFeatureRule.
# No metrics exporter: Intel's Prometheus Metric Exporter ships no chart or manifest that could be read
# and pinned here.
STACK = DriverStack(
    driver=GAUDI,
    clouds={EXISTING: (GAUDI_DRA_DRIVER,)},
    workloads={GAUDI_DRA_DRIVER.key: _gaudi_driver},
    nfd=frozenset({EXISTING}),
)
