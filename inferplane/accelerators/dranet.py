"""DRANET (`dra.net`) as aws-dranet runs it on EKS: the EFA devices it publishes and the DeviceClass it installs.

Source: google/dranet v1.0.1 `pkg/apis/attributes.go` (names) and `pkg/inventory/db.go`
(`discoverPCIDevices`, `addLinkAttributes`, `discoverRDMADevices`): a network-class PCI device is
named `pci-<address>` and carries its PCI facts; an interface with a netdev adds ifName, mac, mtu,
encapsulation, alias, state, type, ebpf, sriov and virtual. aws-dranet 1.0.0 ships AWS's build of it
(appVersion v1.2.0-eksbuild.2), whose source is not public here: the v1.0.1 names are assumed.
There is no `kind` attribute.
"""

from __future__ import annotations

from inferplane.accelerators.devices import PCIE_ROOT, AttributeSpec, DeviceClassSpec, DeviceModel, DriverSlices, \
    Varies, numa_of, pcie_root
from inferplane.api.drivers import DRANET

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
    device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/pciDevice",), qualifies_own_keys=True)
