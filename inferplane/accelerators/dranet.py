"""DRANET (`dra.net`) as aws-dranet runs it on EKS: the EFA devices it publishes, the DeviceClass it installs,
and the chart.

Source: google/dranet v1.0.1 `pkg/apis/attributes.go` (names) and `pkg/inventory/db.go`
(`discoverPCIDevices`, `addLinkAttributes`, `discoverRDMADevices`): a network-class PCI device is
named `pci-<address>` and carries its PCI facts; an interface with a netdev adds ifName, mac, mtu,
encapsulation, alias, state, type, ebpf, sriov and virtual. aws-dranet 1.0.0 ships AWS's build of it
(appVersion v1.2.0-eksbuild.2), whose source is not public here: the v1.0.1 names are assumed.
There is no `kind` attribute.
"""

from __future__ import annotations

from typing import Any

from inferplane.api.cloud import EKS
from inferplane.accelerators.component import Chart, Component, DriverStack
from inferplane.accelerators.devices import PCIE_ROOT, AttributeSpec, DeviceClassSpec, DeviceModel, DriverSlices, \
    Varies, numa_of, pcie_root
from inferplane.accelerators.workload import Installed, Placement, Rendered, Values, Workload, \
    dig, helm_merge, tolerations_of
from inferplane.api.drivers import DRANET, INSTANCE_TYPE_LABEL, Taint
from inferplane.api.serving_stack import ServingStackSpec

D = DRANET.name
SOURCE = "google/dranet v1.0.1 pkg/apis/attributes.go, pkg/inventory/db.go"

ATTRIBUTES = (
    AttributeSpec(f"{D}/pciAddress", "string", Varies.DEVICE),
    AttributeSpec(f"{D}/pciVendor", "string", Varies.MODEL),  # ghw's PCI database names
    AttributeSpec(f"{D}/pciDevice", "string", Varies.MODEL),
    AttributeSpec(f"{D}/pciSubsystem", "string", Varies.MODEL),
    AttributeSpec(f"{D}/numaNode", "int", Varies.DEVICE),
    AttributeSpec(PCIE_ROOT, "string", Varies.DEVICE),
    AttributeSpec(f"{D}/rdma", "bool", Varies.MODEL),
    # With a netdev (not an EFA device's: EFA is RDMA only), addLinkAttributes writes these too.
    *(AttributeSpec(f"{D}/{name}", kind, Varies.DEVICE, optional=True) for name, kind in (
        ("ifName", "string"), ("mac", "string"), ("mtu", "int"), ("encapsulation", "string"),
        ("alias", "string"), ("state", "string"), ("type", "string"), ("ipv4", "string"),
        ("ipv6", "string"), ("ebpf", "bool"), ("sriov", "bool"), ("sriovVfs", "int"), ("virtual", "bool"))),
)

# An EFA device: Amazon's PCI vendor 1d0f, device efa1, named as the PCI ids database (and so ghw)
# names them; aws-dranet's DeviceClass selects exactly that pciDevice. The subsystem id is
# *unconfirmed* (taken to repeat the device id, as Amazon's devices do).
EFA = DeviceModel("EFA", {
    f"{D}/pciVendor": {"string": "Amazon.com, Inc."},
    f"{D}/pciDevice": {"string": "Elastic Fabric Adapter (EFA)"},
    f"{D}/pciSubsystem": {"string": "efa1"},
    f"{D}/rdma": {"bool": True},
}, {})


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    bus = 0x30 + 0x10 * index
    address = f"0000:{bus:02x}:00.0"
    return f"pci-0000-{bus:02x}-00-0", {f"{D}/pciAddress": {"string": address},
                                        f"{D}/numaNode": {"int": numa_of(index, count)},
                                        PCIE_ROOT: {"string": pcie_root(bus)}}


# aws/eks-charts stable/aws-dranet/templates/deviceclass.yaml (chart 1.0.0), named as the catalog sets it.
DEVICE_CLASS = DeviceClassSpec(
    DRANET.device_class,
    ('device.driver == "dra.net" &&\ndevice.attributes["dra.net"].pciDevice == \'Elastic Fabric Adapter (EFA)\'\n',),
    "aws/eks-charts stable/aws-dranet/templates/deviceclass.yaml (1.0.0)")

SLICES = DriverSlices(
    driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=(), models=(EFA,), identity=_identity,
    device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/pciDevice",), qualifies_own_keys=True,
    # The DeviceClass selects pciDevice EFA: every device it allocates is one.
    pinned={f"{D}/pciDevice": EFA.attributes[f"{D}/pciDevice"]}, class_model=EFA)

# ==== the serving stack: components with their pins and values, and the workloads they run

# ---- DRANET on EKS: AWS's chart, which publishes each node's EFA interfaces as dra.net devices


def _aws_dranet_values(spec: ServingStackSpec) -> dict[str, Any]:
    return {
        # The chart's required affinity keeps it to EFA-capable instance types (and off EKS Auto
        # Mode nodes); the selector keeps it to the pools whose classes claim DRANET.
        "nodeSelector": dict(DRANET.node_labels),
        # Its default tolerates nothing but CriticalAddonsOnly (built into the template, no pool of
        # ours carries it); it must reach those pools, which are GPU or CPU pools by their other devices.
        "tolerations": [Taint(t.key, t.value, t.effect).toleration() for t in spec.pool_taints.get(DRANET.name, [])],
        # The chart's own default, named here because classes claim it by this name.
        "deviceClass": {"create": True, "name": DRANET.device_class},
    }


AWS_DRANET = Component(
    key="aws-dranet",
    # Where AWS's EKS guide and Modelplane install it; its pods run at system-node-critical, which
    # kube-system admits without a quota.
    namespace="kube-system",
    chart=Chart("aws-dranet", "https://aws.github.io/eks-charts", "1.0.0"),
    values=_aws_dranet_values,
    dra_drivers=frozenset({DRANET.name}),
)


# ---- DRANET on EKS: aws-dranet 1.0.0, release `aws-dranet` in kube-system

# The chart's required affinity: one term per key of `supportedInstanceLabels.keys`, each matching
# `supportedInstanceLabels.values` (EC2's EFA-capable instance types), and the last term also keeping
# off EKS Auto Mode nodes (`eks.amazonaws.com/compute-type NotIn [auto]`).
AWS_DRANET_EFA_INSTANCE_TYPES = (
    "c5n.18xlarge", "c5n.9xlarge", "c5n.metal", "c6a.48xlarge", "c6a.metal", "c6gn.16xlarge", "c6i.32xlarge",
    "c6i.metal", "c6id.32xlarge", "c6id.metal", "c6in.32xlarge", "c6in.metal", "c7a.48xlarge", "c7a.metal-48xl",
    "c7g.16xlarge", "c7g.metal", "c7gd.16xlarge", "c7gd.metal", "c7gn.16xlarge", "c7gn.metal", "c7i.48xlarge",
    "c7i.metal-48xl", "c8a.48xlarge", "c8a.metal-48xl", "c8g.24xlarge", "c8g.48xlarge", "c8g.metal-24xl",
    "c8g.metal-48xl", "c8gb.16xlarge", "c8gb.24xlarge", "c8gb.48xlarge", "c8gb.metal-24xl", "c8gb.metal-48xl",
    "c8gd.24xlarge", "c8gd.48xlarge", "c8gd.metal-24xl", "c8gd.metal-48xl", "c8gn.16xlarge", "c8gn.24xlarge",
    "c8gn.48xlarge", "c8gn.metal-24xl", "c8gn.metal-48xl", "c8i.48xlarge", "c8i.96xlarge", "c8i.metal-48xl",
    "c8i.metal-96xl", "c8id.48xlarge", "c8id.96xlarge", "c8id.metal-48xl", "c8id.metal-96xl", "dl1.24xlarge",
    "dl2q.24xlarge", "f2.48xlarge", "g4dn.12xlarge", "g4dn.16xlarge", "g4dn.8xlarge", "g4dn.metal", "g5.12xlarge",
    "g5.16xlarge", "g5.24xlarge", "g5.48xlarge", "g5.8xlarge", "g6.12xlarge", "g6.16xlarge", "g6.24xlarge",
    "g6.48xlarge", "g6.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge", "g6e.8xlarge",
    "g7e.12xlarge", "g7e.24xlarge", "g7e.48xlarge", "g7e.8xlarge", "gr6.8xlarge", "hpc6a.48xlarge",
    "hpc6id.32xlarge", "hpc7a.12xlarge", "hpc7a.24xlarge", "hpc7a.48xlarge", "hpc7a.96xlarge", "hpc7g.16xlarge",
    "hpc7g.4xlarge", "hpc7g.8xlarge", "hpc8a.96xlarge", "i3en.12xlarge", "i3en.24xlarge", "i3en.metal",
    "i4g.16xlarge", "i4i.32xlarge", "i4i.metal", "i7i.24xlarge", "i7i.48xlarge", "i7i.metal-48xl", "i7ie.48xlarge",
    "i7ie.metal-48xl", "i8g.48xlarge", "i8g.metal-48xl", "i8ge.48xlarge", "i8ge.metal-48xl", "im4gn.16xlarge",
    "inf1.24xlarge", "m5dn.24xlarge", "m5dn.metal", "m5n.24xlarge", "m5n.metal", "m5zn.12xlarge", "m5zn.metal",
    "m6a.48xlarge", "m6a.metal", "m6i.32xlarge", "m6i.metal", "m6id.32xlarge", "m6id.metal", "m6idn.32xlarge",
    "m6idn.metal", "m6in.32xlarge", "m6in.metal", "m7a.48xlarge", "m7a.metal-48xl", "m7g.16xlarge", "m7g.metal",
    "m7gd.16xlarge", "m7gd.metal", "m7i.48xlarge", "m7i.metal-48xl", "m8a.48xlarge", "m8a.metal-48xl",
    "m8azn.24xlarge", "m8azn.metal-24xl", "m8g.24xlarge", "m8g.48xlarge", "m8g.metal-24xl", "m8g.metal-48xl",
    "m8gb.16xlarge", "m8gb.24xlarge", "m8gb.48xlarge", "m8gb.metal-24xl", "m8gb.metal-48xl", "m8gd.24xlarge",
    "m8gd.48xlarge", "m8gd.metal-24xl", "m8gd.metal-48xl", "m8gn.16xlarge", "m8gn.24xlarge", "m8gn.48xlarge",
    "m8gn.metal-24xl", "m8gn.metal-48xl", "m8i.48xlarge", "m8i.96xlarge", "m8i.metal-48xl", "m8i.metal-96xl",
    "m8id.48xlarge", "m8id.96xlarge", "m8id.metal-48xl", "m8id.metal-96xl", "p3dn.24xlarge", "p4d.24xlarge",
    "p4de.24xlarge", "p5.48xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
    "p6-b300.48xlarge", "p6e-gb200.36xlarge", "p6e-gb300.36xlarge", "r5dn.24xlarge", "r5dn.metal", "r5n.24xlarge",
    "r5n.metal", "r6a.48xlarge", "r6a.metal", "r6i.32xlarge", "r6i.metal", "r6id.32xlarge", "r6id.metal",
    "r6idn.32xlarge", "r6idn.metal", "r6in.32xlarge", "r6in.metal", "r7a.48xlarge", "r7a.metal-48xl",
    "r7g.16xlarge", "r7g.metal", "r7gd.16xlarge", "r7gd.metal", "r7i.48xlarge", "r7i.metal-48xl", "r7iz.32xlarge",
    "r7iz.metal-32xl", "r8a.48xlarge", "r8a.metal-48xl", "r8g.24xlarge", "r8g.48xlarge", "r8g.metal-24xl",
    "r8g.metal-48xl", "r8gb.16xlarge", "r8gb.24xlarge", "r8gb.48xlarge", "r8gb.metal-24xl", "r8gb.metal-48xl",
    "r8gd.24xlarge", "r8gd.48xlarge", "r8gd.metal-24xl", "r8gd.metal-48xl", "r8gn.16xlarge", "r8gn.24xlarge",
    "r8gn.48xlarge", "r8gn.metal-24xl", "r8gn.metal-48xl", "r8i.48xlarge", "r8i.96xlarge", "r8i.metal-48xl",
    "r8i.metal-96xl", "r8id.48xlarge", "r8id.96xlarge", "r8id.metal-48xl", "r8id.metal-96xl", "trn1.32xlarge",
    "trn1n.32xlarge", "trn2-ac.24xlarge", "trn2.3xlarge", "trn2.48xlarge", "trn2u-ac.24xlarge", "trn2u.48xlarge",
    "trn3.48xlarge", "trn3-dev0.48xlarge", "trn3-dev1.48xlarge", "trn3p.48xlarge", "trn3pd98.48xlarge",
    "trn3s.48xlarge", "u7i-12tb.224xlarge", "u7i-6tb.112xlarge", "u7i-8tb.112xlarge", "u7in-16tb.224xlarge",
    "u7in-24tb.224xlarge", "u7in-32tb.224xlarge", "vt1.24xlarge", "x2idn.32xlarge", "x2idn.metal",
    "x2iedn.32xlarge", "x2iedn.metal", "x2iezn.12xlarge", "x2iezn.metal", "x8aedz.24xlarge", "x8aedz.metal-24xl",
    "x8g.24xlarge", "x8g.48xlarge", "x8g.metal-24xl", "x8g.metal-48xl", "x8i.48xlarge", "x8i.64xlarge",
    "x8i.96xlarge", "x8i.metal-48xl", "x8i.metal-96xl",
)
AWS_DRANET_DEFAULTS: Values = {
    "nodeSelector": {}, "tolerations": [],
    "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL],
                                "values": list(AWS_DRANET_EFA_INSTANCE_TYPES)},
    "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}},
}
# Built into the DaemonSet's template ahead of the `tolerations` value.
AWS_DRANET_TEMPLATE_TOLERATIONS = ({"key": "CriticalAddonsOnly", "operator": "Exists"},)


def _aws_dranet(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(AWS_DRANET_DEFAULTS, rendered)
    labels = values["supportedInstanceLabels"]
    terms: list[dict[str, Any]] = [
        {"matchExpressions": [{"key": key, "operator": "In", "values": list(labels["values"])}]}
        for key in labels.get("keys") or []]
    if terms:
        terms[-1]["matchExpressions"].append(
            {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]})
    # The release's name contains the chart's, so its objects are named after the release.
    return (Workload("DaemonSet", AWS_DRANET.key, AWS_DRANET.namespace or "", AWS_DRANET.key, Placement.DRIVERS,
                     node_selector=values.get("nodeSelector") or {},
                     affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": terms}}},
                     tolerations=AWS_DRANET_TEMPLATE_TOLERATIONS + tolerations_of(values.get("tolerations")),
                     requests=dig(values, "resources.requests", {}), container="dranet",
                     publishes_slices_for=DRANET.name),)


# DRANET (EFA) is served on EKS only: aws-dranet is AWS's chart for EC2's EFA interfaces.
STACK = DriverStack(driver=DRANET, clouds={EKS: (AWS_DRANET,)}, workloads={AWS_DRANET.key: _aws_dranet})
