"""The CPU DRA driver (`dra.cpu`): the devices it publishes in grouped mode, its DeviceClass, and its chart.

Source: kubernetes-sigs/dra-driver-cpu `pkg/device/builder.go` (`createGroupedCPUDeviceSlices`,
GROUP_BY_NUMA_NODE) and `pkg/device/attributes.go` (`addCompatibilityAttributes`), read at the
repository's head (2026-08; the stored history has tags v0.1.0 and v0.2.0 only, not 0.3.0), checked
against the slice a real Civo node running the 0.3.0 chart published (Modelplane PR #556's test, 2026-10-27): exactly these
attributes, `allowMultipleAllocations: true`, capacity `dra.cpu/cpu`.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Mapping

from inferplane.accelerators.component import Chart, Component, DriverStack
from inferplane.accelerators.devices import NUMA_NODE, AttributeSpec, DeviceClassSpec, DeviceModel, DriverSlices, \
    Varies
from inferplane.accelerators.workload import Installed, Placement, Rendered, Values, Workload, dig, helm_merge, \
    tolerations_of
from inferplane.api.cloud import SOURCES
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
# The allocatable CPUs as a DecimalSI quantity, consumable (the device allows multiple allocations):
# the logical CPUs of the NUMA node less reservedCPUs (`CPUsInNUMANodes(id).Difference(reservedCPUs)`, so
# each SMT sibling counts as one), with no requestPolicy: a claim may take any amount up to what is left,
# and one naming no amount takes the whole device (DRA's rule, `scheduling/shares.py`). Read in v0.2.0's
# `pkg/driver/dra_hooks.go` (the grouped devices, `cpuResourceQualifiedName = "dra.cpu/cpu"`,
# `AllowMultipleAllocations: ptr.To(true)`) and at the head's `pkg/device/builder.go`
# (`groupedCPUDeviceInfos`, `createGroupedCPUDeviceSlices`, 2026-08-20): the same in both.
CPU_CAPACITY = f"{D}/cpu"
CAPACITIES = (CPU_CAPACITY,)

# A class that states no `cpu` capacity: a common 8-core machine less the two reserved CPUs.
DEFAULT_CPUS = "6"


def _from_capacity(capacity: Mapping[str, str]) -> DeviceModel:
    """The node's one grouped device: the class's `cpu` capacity is what the driver counts after reservedCPUs."""
    cpus = capacity.get(CPU_CAPACITY, DEFAULT_CPUS)
    try:
        count = int(parse_quantity(cpus))
    except ValueError:
        count = 0  # admission refuses what is not a quantity
    # A DecimalSI quantity of whole CPUs is the number itself.
    return DeviceModel(f"{count} CPUs", {f"{D}/numCPUs": {"int": count}}, {CPU_CAPACITY: str(count)})


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # cpudevnuma<NUMA id, 3 digits>: one device per NUMA node (a class states one: the node's CPUs).
    return f"cpudevnuma{index:03d}", {f"{D}/socketID": {"int": 0}, NUMA_NODE: {"int": index},
                                      f"{D}/numaNodeID": {"int": index}, "dra.net/numaNode": {"int": index}}


# deployment/helm/dra-driver-cpu/templates/deviceclass.yaml
DEVICE_CLASS = DeviceClassSpec(
    CPU.device_class, ('device.driver == "dra.cpu"',),
    "kubernetes-sigs/dra-driver-cpu deployment/helm/dra-driver-cpu/templates/deviceclass.yaml")

SLICES = DriverSlices(
    driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=(_from_capacity({}),),
    identity=_identity, device_classes=(DEVICE_CLASS,), node_defaults={f"{D}/smtEnabled": {"bool": True}},
    qualifies_own_keys=True, allow_multiple_allocations=True, model_from_capacity=_from_capacity)


# ---- what the driver counts on a cloud machine

# The CPUs the driver keeps back (its chart's `driverConfig.reservedCPUs`, a Linux CPU list): cores 0-1
# stay with the OS, kubelet and DaemonSets; the driver hands out the rest.
RESERVED_CPUS = "0-1"


def _cpu_list_size(cpus: str) -> int:
    size = 0
    for part in filter(None, cpus.split(",")):
        low, _, high = part.partition("-")
        size += int(high or low) - int(low) + 1
    return size


RESERVED = _cpu_list_size(RESERVED_CPUS)

def claimable_cpus(vcpus: int) -> int:
    """numCPUs (and the `cpu` capacity) the driver publishes on a node of `vcpus` vCPUs (a cloud module says
    how many a machine has: CloudModule.machine_vcpus)."""
    return vcpus - RESERVED

# ---- what a pod claiming CPUs must state itself

# The CPUs a container's dra.cpu claims pin must also be its `resources.requests.cpu` and `resources.limits.cpu`,
# exactly: "For each container that uses a DRA CPU claim, set spec.containers[].resources.requests.cpu and
# spec.containers[].resources.limits.cpu to be exactly equal to the number of CPUs requested in the
# ResourceClaim" (kubernetes-sigs/dra-driver-cpu docs/user/workload-requirements.md "Before KEP-5517", Option B,
# at the head stored, 2026-08-20; the same rule in v0.2.0's README.md and in
# hack/examples/pod_with_resource_claim_grouped_mode.yaml; the stored history has no 0.3.0 tag). Why: kube-scheduler
# counts only spec requests against the node's allocatable cpu and the kubelet sets the QoS class and cgroups from
# the spec alone, so claimed CPUs stated nowhere overcommit the node. Nothing refuses such a pod: the driver pins
# the container to its claim's CPUs whatever it requests (pkg/driver/nri_hooks.go, CreateContainer reads only the
# claim's DRA_CPUSET_ variable). The rule holds until Kubernetes counts claimed CPUs itself (KEP-5517: the
# DRANodeAllocatableResources feature gate, alpha and off by default, kubernetes/website
# content/en/docs/reference/command-line-tools-reference/feature-gates/DRANodeAllocatableResources.md, the driver's
# docs say 1.37+, and only with the driver's `publishNodeAllocatableResourceMapping`, off by default and not set by
# the catalog above): so on every version inferplane runs. A claim for a whole device pins what the device
# publishes (its `cpu` capacity), a share what it consumes.


def pinned_cpu_resources(cpus: Fraction) -> dict[str, dict[str, str]]:
    """The container resources that state `cpus` CPUs its dra.cpu claims pin, as the driver requires (above)."""
    return {"requests": {"cpu": format_quantity(cpus)}, "limits": {"cpu": format_quantity(cpus)}}


# ==== the serving stack: components with their pins and values, and the workloads they run

# ---- CPU: one chart, the same on every cloud

CPU_DRA_DRIVER = Component(
    key="dra-driver-cpu",
    # The driver's pods run at system-node-critical, which kube-system admits without a quota.
    namespace="kube-system",
    chart=Chart("dra-driver-cpu", "oci://registry.k8s.io/dra-driver-cpu/charts", "0.3.0"),
    values=lambda _: {
        "nodeSelector": dict(CPU.node_labels),
        # The chart's default tolerates every NoSchedule taint, which lands it on GPU and fake
        # nodes too; the CPU pool taint is the only one it should accept.
        "tolerations": [CPU.pool_taint.toleration()],  # type: ignore[union-attr]
        # grouped: one device per NUMA node with consumable `cpu` capacity.
        "driverConfig": {"reservedCPUs": RESERVED_CPUS, "cpuDeviceMode": "grouped"},
    },
    dra_drivers=frozenset({CPU.name}),
)


# ---- CPU: dra-driver-cpu at the pinned chart, release `dra-driver-cpu` in kube-system

CPU_DRIVER_DEFAULTS: Values = {
    "nodeSelector": {},
    # The chart's default: every NoSchedule taint (the catalog replaces it with the CPU pool taint).
    "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
    "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}},
}


def _cpu_driver(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(CPU_DRIVER_DEFAULTS, rendered)
    return (Workload("DaemonSet", CPU_DRA_DRIVER.key, CPU_DRA_DRIVER.namespace or "", CPU_DRA_DRIVER.key,
                     Placement.DRIVERS, node_selector=values.get("nodeSelector") or {},
                     tolerations=tolerations_of(values.get("tolerations")),
                     requests=dig(values, "resources.requests", {}), container="dracpu",
                     publishes_slices_for=CPU.name),)


# One chart, the same on every cloud.
STACK = DriverStack(
    driver=CPU,
    clouds=dict.fromkeys(SOURCES, (CPU_DRA_DRIVER,)),
    workloads={CPU_DRA_DRIVER.key: _cpu_driver},
)
