"""AWS's Neuron DRA driver (`neuron.aws.com`): the devices it publishes on Trainium instances, the DeviceClass its
chart installs, and its serving stack on EKS (the Neuron Helm chart with its DRA driver on, its device plugin off).

Sources, and what rests on documentation alone: the driver's source is not public. Its attributes, their types
and which instances carry which are AWS's documentation only: aws-neuron/aws-neuron-sdk
`containers/neuron-dra.rst` (commit db1586c; "Neuron DRA Driver Attributes Reference", the examples' slices and
claims). The chart's templates are read from aws-neuron/neuron-helm-charts (`templates/dra-driver/`: the
DaemonSet, the DeviceClass; `templates/_helpers.tpl`: its affinity), which has no tags; the chart version pinned,
1.10.0, and its values are as its registry publishes them (`helm show values oci://public.ecr.aws/neuron/
neuron-helm-chart --version 1.10.0`, digest sha256:ed5d8f73b7a05d3a1edf17b2bfaf277ea995ad1c65b115fa8ba2c7b4dc649346,
as a published transcript shows it; see inferplane/data/charts/neuron-helm-chart-1.10.0/SOURCE).

Instances: the documentation's driver "implements the kubelet plugin for DRA for AWS Trainium instances", and the
chart's DRA affinity drops every inf* type from its instance list (_helpers.tpl neuron-dra-driver.affinity): the
table is Trainium's. Inferentia (inf1, inf2) nodes get no DRA driver from this chart.

Clouds: EKS only, on managed node groups (not EKS Auto Mode: the chart's affinity excludes compute-type auto).

Metrics: none mapped. neuron-monitor's Prometheus series are per NeuronCore (neuroncore_utilization_ratio with a
neuroncore label) and per instance, while DRA allocates whole Neuron devices named neurondeviceN; nothing in the
series names the device a core belongs to in the DRA driver's terms, so a per-device mapping would be invented.
"""

from __future__ import annotations

import hashlib
from typing import Any

from inferplane.accelerators.component import Chart, Component, DriverStack, gpu_toleration
from inferplane.accelerators.devices import AttributeSpec, DeviceClassSpec, DeviceModel, DriverSlices, Varies
from inferplane.accelerators.workload import Installed, Placement, Rendered, Workload, tolerations_of
from inferplane.api.drivers import INSTANCE_TYPE_LABEL, NEURON
from inferplane.api.serving_stack import ServingStackSpec

D = NEURON.name
GROUPS = "resource.aws.com"
SOURCE = "aws-neuron/aws-neuron-sdk containers/neuron-dra.rst (documentation; the driver's source is not public)"
DEVICE_KIND, NODE_KIND = "neuron_device", "neuron_node"  # resourceType: a device, an UltraServer node

ATTRIBUTES = (
    # "Common Attributes": every instance, every device.
    AttributeSpec(f"{D}/deviceId", "int", Varies.DEVICE),
    AttributeSpec(f"{D}/instanceType", "string", Varies.MODEL),
    AttributeSpec(f"{D}/neuronDriverVersion", "string", Varies.NODE),
    AttributeSpec(f"{D}/draDriverVersion", "version", Varies.NODE),
    AttributeSpec(f"{D}/resourceType", "string", Varies.MODEL),
    # EC2 instance topology's network nodes: the instance's, from the cloud (one per node).
    *(AttributeSpec(f"{D}/networkNodeLayer{n}", "string", Varies.NODE_IDENTITY) for n in (1, 2, 3)),
    # "Trn Non-UltraServer Attributes": grid place, on instances of more than one device (topology8_id: 8 or more).
    *(AttributeSpec(f"{D}/{name}", "int", Varies.DEVICE, optional=True)
      for name in ("topology_x", "topology_y", "topology4_id", "topology8_id")),
    # "Trn UltraServer Attributes".
    AttributeSpec(f"{D}/capacityBlockId", "string", Varies.NODE, optional=True),
    # "EFA-Enabled Instance Attributes": the device's EFA BDF, and a hash shared by the devices of its group.
    *(AttributeSpec(f"{GROUPS}/devicegroup{n}_id", "string", Varies.DEVICE, optional=True) for n in (1, 4, 8, 16)),
)
CAPACITIES: tuple[str, ...] = ()  # none documented


def _model(instance: str) -> DeviceModel:
    # resourceType is the kind of device the class states, not the instance's: an UltraServer has both kinds.
    return DeviceModel(instance, {f"{D}/instanceType": {"string": instance},
                                  f"{D}/resourceType": {"string": DEVICE_KIND}}, {},
                       frozenset({f"{D}/resourceType"}))


# The Trainium types of the chart's neuronInstances (1.10.0 values). Devices per instance and EFA: AWS's
# accelerated-computing specifications (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html,
# *documentation*); neuron-dra.rst confirms trn2.48xlarge's 16 ("Allocate All 16 devices").
MODELS = tuple(_model(i) for i in ("trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge", "trn2.48xlarge",
                                   "trn2u.48xlarge"))
# The EFA-enabled ones, which publish the device groups (the same specifications; *documentation*).
EFA_INSTANCES = ("trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge")
ULTRASERVERS = ("trn2u.48xlarge",)
# The host's drivers when a class does not state them: the Neuron driver of the documentation's example
# (SDK 2.27's, '2.25.4.0') and the DRA driver the pinned chart runs (draDriver.image.tag 1.2.0).
NODE_DEFAULTS = {f"{D}/neuronDriverVersion": {"string": "2.25.4.0"}, f"{D}/draDriverVersion": {"version": "1.2.0"}}


def _stand_in(*parts: Any, length: int = 17) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:length]


def _node_identity(node: str, index: int) -> dict:
    # EC2 network node ids (nn-<17 hex>); *unconfirmed* values: stable stand-ins per node.
    return {f"{D}/networkNodeLayer{n}": {"string": f"nn-{_stand_in(node, n)}"} for n in (1, 2, 3)}


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    out: dict[str, Any] = {**_node_identity(node, index), f"{D}/deviceId": {"int": index}}
    if (model.attributes.get(f"{D}/resourceType") or {}).get("string") == NODE_KIND:
        # An UltraServer's node device: its name is *unconfirmed* (no published slice shows one).
        return f"neuronnode{index}", out
    instance = (model.attributes.get(f"{D}/instanceType") or {}).get("string", "")
    if instance.startswith("trn") and instance not in ULTRASERVERS and count > 1:
        # A 4-wide grid (trn1/trn2's 4x4 torus): row, column, the row's id, the two rows' id. The numbering is
        # *unconfirmed* beyond the documentation's words.
        row, column = divmod(index, 4)
        out.update({f"{D}/topology_x": {"int": row}, f"{D}/topology_y": {"int": column},
                    f"{D}/topology4_id": {"int": row}})
        if count >= 8:
            out[f"{D}/topology8_id"] = {"int": index // 8}
    if instance in EFA_INSTANCES:
        out[f"{GROUPS}/devicegroup1_id"] = {"string": f"0000:{0x10 + index:02x}:00.0"}  # the EFA's BDF, a stand-in
        for size in (4, 8, 16):
            if count >= size:
                out[f"{GROUPS}/devicegroup{size}_id"] = {"string": _stand_in(size, index // size, length=16)}
    # neuron-dra.rst's allocation results name the devices neurondevice0, neurondevice1, ...
    return f"neurondevice{index}", out


DEVICE_CLASS = DeviceClassSpec(NEURON.device_class, ('device.driver == "neuron.aws.com"',),
                               "aws-neuron/neuron-helm-charts charts/neuron-helm-chart/templates/dra-driver/"
                               "dra-driver-deviceclass.yaml")


def _value_problem(key: str, value: Any) -> str | None:
    if key == f"{D}/resourceType" and value not in (DEVICE_KIND, NODE_KIND):
        return (f"the {D} driver publishes {key} as {DEVICE_KIND} (a device) or {NODE_KIND} (an UltraServer node), "
                f"never {value!r} (neuron-dra.rst)")
    return None


SLICES = DriverSlices(driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=MODELS,
                      identity=_identity, device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/instanceType",),
                      product_key=f"{D}/instanceType", node_defaults=NODE_DEFAULTS, value_problem=_value_problem,
                      node_identity=_node_identity, kind_key=f"{D}/resourceType", primary_kind=DEVICE_KIND,
                      common={f"{D}/resourceType": {"string": DEVICE_KIND}})


# ==== the serving stack

NEURON_NAMESPACE = "neuron-dra-driver"  # the chart's draDriver.namespaceOverride
# The chart's neuronInstances at 1.10.0 less the inf* ones its DRA affinity drops (_helpers.tpl).
DRA_INSTANCES = ("trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.3xlarge", "trn2.48xlarge", "trn2u.48xlarge",
                 "trn3.48xlarge", "trn3n.48xlarge", "trn3en.24xlarge", "trn3s-es.48xlarge", "ml.trn1.2xlarge",
                 "ml.trn1.32xlarge", "ml.trn1n.32xlarge")
NEURON_DRA_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(DRA_INSTANCES)},
                          {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn",
                           "values": ["fargate", "hybrid", "auto"]}]}]}}}


def _neuron_values(_: ServingStackSpec) -> dict[str, Any]:
    # neuron-dra.rst "Installation via Helm": --set devicePlugin.enabled=false --set npd.enabled=false
    # --set draDriver.enabled=true (the chart refuses the DRA driver beside the device plugin: _helpers.tpl
    # validateConfig). The image is the chart's default (1.10.0 draDriver.image), named so the pin is ours.
    return {"devicePlugin": {"enabled": False}, "npd": {"enabled": False},
            "draDriver": {"enabled": True,
                          "image": {"repository": "public.ecr.aws/neuron/neuron-dra-driver", "tag": "1.2.0"},
                          "tolerations": [gpu_toleration(NEURON)]}}


NEURON_DRA_DRIVER = Component(
    key="neuron-helm-chart",
    namespace=NEURON_NAMESPACE,
    chart=Chart("neuron-helm-chart", "oci://public.ecr.aws/neuron", "1.10.0"),
    values=_neuron_values,
    dra_drivers=frozenset({D}),
)


def _neuron_driver(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    """templates/dra-driver/dra-driver-daemonset.yaml: the DaemonSet draDriver.fullnameOverride names, in
    draDriver.namespaceOverride, container `neuron-dra-driver`, placed by the chart's affinity."""
    if not (rendered.get("draDriver") or {}).get("enabled"):
        return ()
    plugin = rendered["draDriver"]
    return (Workload("DaemonSet", "neuron-dra-driver-kubelet-plugin", NEURON_NAMESPACE, NEURON_DRA_DRIVER.key,
                     Placement.DRIVERS, node_selector=plugin.get("nodeSelector") or {}, affinity=NEURON_DRA_AFFINITY,
                     tolerations=tolerations_of(plugin.get("tolerations")), container="neuron-dra-driver",
                     publishes_slices_for=D),)


STACK = DriverStack(driver=NEURON, clouds={"EKS": (NEURON_DRA_DRIVER,)},
                    workloads={NEURON_DRA_DRIVER.key: _neuron_driver})
