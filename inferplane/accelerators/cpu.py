"""The CPU DRA driver (`dra.cpu`): the devices it publishes in grouped mode, and its DeviceClass.

Source: kubernetes-sigs/dra-driver-cpu `pkg/device/builder.go` (`createGroupedCPUDeviceSlices`,
GROUP_BY_NUMA_NODE) and `pkg/device/attributes.go` (`addCompatibilityAttributes`), read at the
repository's head (2026-08; the stored history has tags v0.1.0 and v0.2.0 only, not 0.3.0), checked
against the slice a real Civo node running the 0.3.0 chart published (FACTS.md): exactly these
attributes, `allowMultipleAllocations: true`, capacity `dra.cpu/cpu`.
"""

from __future__ import annotations

from typing import Mapping

from inferplane.accelerators.devices import NUMA_NODE, AttributeSpec, DeviceClassSpec, DeviceModel, DriverSlices, \
    Varies
from inferplane.api.drivers import CPU
from inferplane.cel.quantity import format_quantity, parse_quantity

D = CPU.name
SOURCE = "kubernetes-sigs/dra-driver-cpu pkg/device/builder.go (0.3.0 chart as a Civo node ran it)"

ATTRIBUTES = (
    # The CPUs of the NUMA node less the reserved ones (reservedCPUs, "0-1" in the catalog).
    AttributeSpec(f"{D}/numCPUs", "int", Varies.MODEL),
    AttributeSpec(f"{D}/smtEnabled", "bool", Varies.NODE),
    AttributeSpec(f"{D}/socketID", "int", Varies.DEVICE),
    AttributeSpec(NUMA_NODE, "int", Varies.DEVICE),
    # addCompatibilityAttributes: the NUMA node again, under the names other drivers align on.
    AttributeSpec(f"{D}/numaNodeID", "int", Varies.DEVICE),
    AttributeSpec("dra.net/numaNode", "int", Varies.DEVICE),
    # The head of the repository also writes resource.kubernetes.io/pcieRoot (a list) where the kernel
    # reports PCIe roots local to the CPUs; the real 0.3.0 node's slice has none, so it is not simulated.
)
# The allocatable CPUs as a DecimalSI quantity, consumable (the device allows multiple allocations).
CAPACITIES = (f"{D}/cpu",)

# A class that states no `cpu` capacity: a common 8-core machine less the two reserved CPUs.
DEFAULT_CPUS = "6"


def _from_capacity(capacity: Mapping[str, str]) -> DeviceModel:
    """The node's one grouped device: the class's `cpu` capacity is what the driver counts after reservedCPUs."""
    cpus = capacity.get(f"{D}/cpu", DEFAULT_CPUS)
    try:
        count = int(parse_quantity(cpus))
    except (ValueError, OverflowError):
        count = 0
    return DeviceModel(f"{count} CPUs", {f"{D}/numCPUs": {"int": count}},
                       {f"{D}/cpu": format_quantity(parse_quantity(str(count)))})


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # cpudevnuma<NUMA id, 3 digits>: one device per NUMA node (a class states one: the node's CPUs).
    return f"cpudevnuma{index:03d}", {f"{D}/socketID": {"int": 0}, NUMA_NODE: {"int": index},
                                      f"{D}/numaNodeID": {"int": index}, "dra.net/numaNode": {"int": index}}


# deployment/helm/dra-driver-cpu/templates/deviceclass.yaml
DEVICE_CLASS = DeviceClassSpec(CPU.device_class, ('device.driver == "dra.cpu"',),
                               "kubernetes-sigs/dra-driver-cpu deployment/helm/dra-driver-cpu/templates/deviceclass.yaml")

SLICES = DriverSlices(
    driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=(_from_capacity({}),),
    identity=_identity, device_classes=(DEVICE_CLASS,), node_defaults={f"{D}/smtEnabled": {"bool": True}},
    qualifies_own_keys=True, allow_multiple_allocations=True, model_from_capacity=_from_capacity)
