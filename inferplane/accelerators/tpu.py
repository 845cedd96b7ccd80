"""Google's TPU DRA driver (`tpu.google.com`): the devices it publishes, the DeviceClass its chart installs, and
its serving stack on GKE (the driver's chart, and the quota its critical pods need).

Source: kubernetes-sigs/dra-driver-google-tpu v0.2.0 (commit b912410, 2026-08-20):
`cmd/tpu-dra-kubeletplugin/manager.go` (`AllocatableDevice.GetDevice`: the attributes; `getTpuInfo`: where each
comes from; `generateUUIDs`: one uuid per node, seeded by NODE_NAME), `util.go` (`AcceleratorGen`: the accelerator
label -> tpuGen; `singleHostTopology`; the GKE labels it reads), `hardware.go` (`tpuGenerationFamilies`: the
generations it knows), `state.go` (`prepareDevices`: a claim must take every chip of its node),
`deployments/helm/dra-driver-google-tpu/` (values, DeviceClass, DaemonSet) and `demo/clusters/gke/` (the GKE
pool's label and its minimum GKE version).

Clouds: GKE only. Its TPU machine types (ct6e, ct5lp, ct5p, ct4p) carry the chips; no other cloud of ours offers
TPUs, so the gate refuses `tpu.google.com` there (and on Existing clusters unless their owner declares it).

Metrics: none mapped. The driver ships no exporter and its chart installs none; GKE reports TPU utilisation
through Cloud Monitoring (and libtpu's own metrics inside the workload's container), which no scrape job in
the cluster reads.
"""

from __future__ import annotations

from typing import Any

from inferplane.accelerators.component import Chart, Component, DriverStack, gpu_toleration
from inferplane.accelerators.devices import AttributeSpec, DeviceClassSpec, DeviceModel, DriverSlices, Varies, \
    stable_uuid
from inferplane.accelerators.workload import Installed, Placement, Rendered, Values, Workload, dig, helm_merge, \
    no_workloads, tolerations_of
from inferplane.api.drivers import GOOGLE_TPU, TPU_SINGLE_HOST_TOPOLOGY
from inferplane.api.serving_stack import ServingStackSpec

D = GOOGLE_TPU.name
SOURCE = "kubernetes-sigs/dra-driver-google-tpu v0.2.0 cmd/tpu-dra-kubeletplugin/manager.go"

# GetDevice, written bare in the driver's domain. No capacity.
ATTRIBUTES = (
    AttributeSpec(f"{D}/index", "int", Varies.DEVICE),  # the chip's place in the walk of /dev (getTpuInfo)
    # "tpu-" + a UUID from math/rand seeded by hash(NODE_NAME): every chip of a node carries the same one.
    AttributeSpec(f"{D}/uuid", "string", Varies.NODE_IDENTITY),
    AttributeSpec(f"{D}/tpuGen", "string", Varies.MODEL),  # AcceleratorGen(accelerator label)
    AttributeSpec(f"{D}/brand", "string", Varies.MODEL),  # "Google", always
    AttributeSpec(f"{D}/accelerator", "string", Varies.MODEL),  # the node's cloud.google.com/gke-tpu-accelerator
    # The node's chips (cloud.google.com/gke-accelerator-count, checked against the chips in /dev).
    AttributeSpec(f"{D}/chipCount", "int", Varies.NODE),
    # The node's slice topology (cloud.google.com/gke-tpu-topology); left out where a node of a multi-host
    # slice cannot tell it, and, without the label, the single-host one for 1, 2, 4 or 8 chips.
    AttributeSpec(f"{D}/topology", "string", Varies.NODE, optional=True),
)
CAPACITIES: tuple[str, ...] = ()

# AcceleratorGen's mapping of GKE's accelerator label (util.go, its comment and code), for the accelerators GKE's
# TPU machine types carry (the offerings table names which machine carries which).
ACCELERATOR_GENERATIONS = {
    "tpu-v6e-slice": "v6e",
    "tpu-v5-lite-podslice": "v5litepod",
    "tpu-v5-lite-device": "v5lite",
    "tpu-v5p-slice": "v5p",
    "tpu-v4-podslice": "v4",
}
MODELS = tuple(DeviceModel(accelerator, {f"{D}/accelerator": {"string": accelerator},
                                         f"{D}/tpuGen": {"string": generation},
                                         f"{D}/brand": {"string": "Google"}}, {})
               for accelerator, generation in ACCELERATOR_GENERATIONS.items())
# hardware.go tpuGenerationFamilies: every generation AcceleratorGen returns (v7x is not supported yet).
GENERATIONS = ("v3", "v4", "v4lite", "v5lite", "v5litepod", "v5p", "v6e")
SINGLE_HOST_TOPOLOGY = TPU_SINGLE_HOST_TOPOLOGY


def _node_defaults(count: int) -> dict:
    """What a node of `count` chips says of them: its chip count, and its single-host topology (completeLabelsFrom
    Hardware; GKE's topology label says the same of a single-host pool). A multi-host pool's class states its own."""
    out: dict[str, Any] = {f"{D}/chipCount": {"int": count}}
    if count in SINGLE_HOST_TOPOLOGY:
        out[f"{D}/topology"] = {"string": SINGLE_HOST_TOPOLOGY[count]}
    return out


def _node_identity(node: str, index: int) -> dict:
    # *Unconfirmed* value: Go's math/rand stream is not reproduced; a stable stand-in of the same form per node.
    return {f"{D}/uuid": {"string": f"tpu-{stable_uuid(node, 0)}"}}


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # The device's name is its file in the device directory: accel<N> for v4 and earlier, the chip's IOMMU group
    # number in /dev/vfio for v5 and later (enumerateAllPossibleTpuDevices). The group numbers a host assigns are
    # *unconfirmed*: the chip's index stands in for them.
    generation = (model.attributes.get(f"{D}/tpuGen") or {}).get("string", "")
    name = f"accel{index}" if generation in ("v3", "v4", "v4lite") else str(index)
    return name, {**_node_identity(node, index), f"{D}/index": {"int": index}}


DEVICE_CLASS = DeviceClassSpec(GOOGLE_TPU.device_class, ('device.driver == "tpu.google.com"',),
                               "kubernetes-sigs/dra-driver-google-tpu v0.2.0 "
                               "deployments/helm/dra-driver-google-tpu/templates/deviceclass.yaml")


def _value_problem(key: str, value: Any) -> str | None:
    if key == f"{D}/tpuGen" and value not in GENERATIONS:
        return (f"the {D} driver publishes {key} as one of {', '.join(GENERATIONS)} (hardware.go "
                f"tpuGenerationFamilies), never {value!r}: e.g. v6e for a ct6e machine")
    if key == f"{D}/brand" and value != "Google":
        return f"the {D} driver publishes {key} as \"Google\" on every chip (manager.go getTpuInfo), never {value!r}"
    return None


SLICES = DriverSlices(driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=MODELS,
                      identity=_identity, device_classes=(DEVICE_CLASS,),
                      model_keys=(f"{D}/accelerator", f"{D}/tpuGen"), product_key=f"{D}/accelerator",
                      common={f"{D}/brand": {"string": "Google"}}, value_problem=_value_problem,
                      node_identity=_node_identity, count_defaults=_node_defaults, whole_node=True)


# ==== the serving stack

TPU_NAMESPACE = "dra-driver-google-tpu"  # the driver's demo (create-tpu-cluster-for-dra.sh, install-dra-driver.sh)
TPU_CHART = "dra-driver-google-tpu"
# The image defaults to v<appVersion> (templates/_helpers.tpl fullimage); named here so the pin is ours, checked.
TPU_IMAGE = {"repository": "registry.k8s.io/dra-driver-google/dra-driver-google-tpu", "tag": "v0.2.0"}


def _tpu_values(_: ServingStackSpec) -> dict[str, Any]:
    return {
        "image": TPU_IMAGE,
        "kubeletPlugin": {
            # Only the pools composed for the driver (their label turns GKE's TPU device plugin off); the chart's
            # default runs everywhere and idles where it finds no chip.
            "nodeSelector": dict(GOOGLE_TPU.node_labels),
            "tolerations": [gpu_toleration(GOOGLE_TPU)],
        },
    }


TPU_DRA_DRIVER = Component(
    key=TPU_CHART,
    namespace=TPU_NAMESPACE,
    # RELEASE.md: the chart is promoted to registry.k8s.io/dra-driver-google/charts/dra-driver-google-tpu, its
    # version the tag without its v (Chart.yaml version 0.2.0, appVersion "0.2.0").
    chart=Chart(TPU_CHART, "oci://registry.k8s.io/dra-driver-google/charts", "0.2.0"),
    values=_tpu_values,
    dra_drivers=frozenset({D}),
)
# The kubelet plugin runs at system-node-critical (values.yaml kubeletPlugin.priorityClassName); outside
# kube-system the API server admits such pods only under a quota scoping that class, as for NVIDIA's driver.
TPU_CRITICAL_PODS_QUOTA = Component(
    key="tpu-critical-pods-quota",
    namespace=TPU_NAMESPACE,
    manifest=lambda _: {
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "critical-pods", "namespace": TPU_NAMESPACE},
        "spec": {"hard": {"pods": "100"}, "scopeSelector": {"matchExpressions": [{
            "scopeName": "PriorityClass", "operator": "In",
            "values": ["system-node-critical", "system-cluster-critical"]}]}},
    },
    dra_drivers=frozenset({D}),
)

# The chart's defaults the DaemonSet's placement reads (values.yaml at v0.2.0).
TPU_DEFAULTS: Values = {"kubeletPlugin": {
    "nodeSelector": {}, "affinity": {},
    "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]}}


def _tpu_driver(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    """templates/kubeletplugin.yaml: one DaemonSet, <fullname>-kubeletplugin (the release's name holds the chart's,
    so the fullname is the release's), container `tpu-dra-plugin`."""
    values = helm_merge(TPU_DEFAULTS, rendered)
    plugin = values["kubeletPlugin"]
    return (Workload("DaemonSet", f"{TPU_CHART}-kubeletplugin", TPU_NAMESPACE, TPU_DRA_DRIVER.key, Placement.DRIVERS,
                     node_selector=plugin.get("nodeSelector") or {}, affinity=dig(values, "kubeletPlugin.affinity", {}),
                     tolerations=tolerations_of(plugin.get("tolerations")), container="tpu-dra-plugin",
                     publishes_slices_for=D),)


STACK = DriverStack(
    driver=GOOGLE_TPU,
    clouds={"GKE": (TPU_DRA_DRIVER, TPU_CRITICAL_PODS_QUOTA)},
    workloads={TPU_DRA_DRIVER.key: _tpu_driver,
               TPU_CRITICAL_PODS_QUOTA.key: no_workloads("a ResourceQuota admits pods; it runs none")},
)
