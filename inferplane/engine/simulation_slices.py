"""ResourceSlices as each DRA driver publishes them, for the devices a node's class declares.

A driver's kubelet plugin publishes one `resource.k8s.io/v1` ResourceSlice per node: the pool is
named after the node, and every device carries the attributes and capacity that driver reports.
The simulation takes the devices from the pool's InferenceClass: each class device of the driver
becomes `count` slice devices, named as the driver names them, with the driver's usual attributes
as defaults and the class's own attributes and capacity over them. Keys are compared fully
qualified (a bare key is in the driver's domain; a qualified one such as
`resource.kubernetes.io/numaNode` keeps its own), so a class's `numCPUs` overrides the CPU
driver's `dra.cpu/numCPUs`.

The defaults stand in for hardware the class does not describe. They are plausible values of real
parts, not measurements: a class that matters for placement should state what it selects on.

A driver inferplane knows nothing about (one an Existing cluster's owner runs, such as the DRA example
driver `gpu.example.com`) publishes exactly what the class declares: `count` devices per node, named
`device-<index>`, with the class's attributes and capacity and nothing invented beside them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from inferplane.api.drivers import AMD_GPU, CPU, DRANET, NVIDIA_GPU
from inferplane.api.inference_class import DeviceSpec
from inferplane.cel.quantity import parse_quantity

Resource = dict[str, Any]
Attribute = dict[str, Any]  # one of {"string": s}, {"version": v}, {"bool": b}, {"int": i}


@dataclass(frozen=True)
class SliceDevice:
    name: str
    attributes: dict[str, Attribute]  # fully qualified keys
    capacity: dict[str, str]  # fully qualified keys


# (node name, index of the device on the node, the class's attributes and capacity by qualified
# key) -> defaults
Defaults = Callable[[str, int, Mapping[str, Attribute], Mapping[str, str]], SliceDevice]


@dataclass(frozen=True)
class DriverShape:
    defaults: Defaults
    # Whether the driver spells its own attributes qualified (dra.cpu/numCPUs) rather than bare.
    qualifies_own_keys: bool = False
    # Consumable capacity: one device is shared by many claims (the CPU driver's grouped mode).
    allow_multiple_allocations: bool = False


def qualified(key: str, driver: str) -> str:
    return key if "/" in key else f"{driver}/{key}"


def _uuid(node: str, index: int) -> str:
    """A stable UUID-shaped identity for a simulated device."""
    h = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


@dataclass(frozen=True)
class Part:
    """What a driver reports for one product beyond its name: the facts a class may not state."""

    attributes: dict[str, Attribute]  # bare keys, in the driver's domain
    memory: str


# NVIDIA parts by the productName the driver reports (NVML's name): architecture as go-nvlib's
# device table names it, CUDA compute capability, memory as the plugin reports it.
NVIDIA_PARTS: dict[str, Part] = {
    "NVIDIA H100 80GB HBM3": Part({"architecture": {"string": "Hopper"},
                                   "cudaComputeCapability": {"version": "9.0.0"}}, "80Gi"),
    "NVIDIA L4": Part({"architecture": {"string": "Ada Lovelace"},
                       "cudaComputeCapability": {"version": "8.9.0"}}, "23034Mi"),
    "NVIDIA L40S": Part({"architecture": {"string": "Ada Lovelace"},
                         "cudaComputeCapability": {"version": "8.9.0"}}, "46068Mi"),
    "NVIDIA A100-SXM4-40GB": Part({"architecture": {"string": "Ampere"},
                                   "cudaComputeCapability": {"version": "8.0.0"}}, "40Gi"),
    "NVIDIA A100-SXM4-80GB": Part({"architecture": {"string": "Ampere"},
                                   "cudaComputeCapability": {"version": "8.0.0"}}, "80Gi"),
    "NVIDIA A10G": Part({"architecture": {"string": "Ampere"},
                         "cudaComputeCapability": {"version": "8.6.0"}}, "23028Mi"),
}
# AMD parts by productName: PCI device id as NFD's gpu-nfd-default-rule.yaml lists it.
AMD_PARTS: dict[str, Part] = {
    "AMD Instinct MI300X": Part({"deviceID": {"string": "0x74a1"}}, "192Gi"),
    "AMD Instinct MI325X": Part({"deviceID": {"string": "0x74a5"}}, "256Gi"),
}
# A device whose class names no known product is simulated as the first part of its table.
DEFAULT_NVIDIA_PART = "NVIDIA H100 80GB HBM3"
DEFAULT_AMD_PART = "AMD Instinct MI300X"


def _part(driver: str, parts: Mapping[str, Part], default: str,
          attributes: Mapping[str, Attribute]) -> tuple[str, Part]:
    """The product the class names (its productName attribute), if known; else the default part."""
    named = (attributes.get(f"{driver}/productName") or {}).get("string")
    return (named, parts[named]) if named in parts else (default, parts[default])


def _nvidia(node: str, index: int, attributes: Mapping[str, Attribute], _: Mapping[str, str]) -> SliceDevice:
    d = NVIDIA_GPU.name
    product, part = _part(d, NVIDIA_PARTS, DEFAULT_NVIDIA_PART, attributes)
    return SliceDevice(f"gpu-{index}", {
        f"{d}/type": {"string": "gpu"},
        f"{d}/uuid": {"string": f"GPU-{_uuid(node, index)}"},
        f"{d}/productName": {"string": product},
        f"{d}/brand": {"string": "Nvidia"},
        **{f"{d}/{k}": v for k, v in part.attributes.items()},
        f"{d}/driverVersion": {"version": "570.133.20"},
        f"{d}/cudaDriverVersion": {"version": "12.8.0"},
    }, {f"{d}/memory": part.memory})


def _amd(node: str, index: int, attributes: Mapping[str, Attribute], _: Mapping[str, str]) -> SliceDevice:
    d = AMD_GPU.name
    product, part = _part(d, AMD_PARTS, DEFAULT_AMD_PART, attributes)
    # Devices as the AMD DRA driver names them: `gpu-<card>-<render node>`.
    return SliceDevice(f"gpu-{index}-{128 + index}", {
        f"{d}/type": {"string": "amdgpu"},
        f"{d}/productName": {"string": product},
        f"{d}/family": {"string": "AI"},
        **{f"{d}/{k}": v for k, v in part.attributes.items()},
        f"{d}/driverVersion": {"version": "6.12.12"},
    }, {f"{d}/memory": part.memory, f"{d}/computeUnits": "304", f"{d}/simdUnits": "1216"})


def _cpu(node: str, index: int, _: Mapping[str, Attribute], capacity: Mapping[str, str]) -> SliceDevice:
    d = CPU.name
    # Grouped mode: one device per NUMA node, its cores as consumable `cpu` capacity.
    cpu = capacity.get(f"{d}/cpu", "32")
    return SliceDevice(f"cpudevnuma{index:03d}", {
        f"{d}/numCPUs": {"int": int(parse_quantity(cpu))},
        f"{d}/smtEnabled": {"bool": True},
        f"{d}/socketID": {"int": 0},
        "resource.kubernetes.io/numaNode": {"int": index},
    }, {f"{d}/cpu": cpu})


def _dranet(node: str, index: int, _: Mapping[str, Attribute], __: Mapping[str, str]) -> SliceDevice:
    d = DRANET.name
    # A secondary network interface as DRANET reports it (on EKS an EFA interface, which aws-dranet
    # publishes): one device per interface, named after it.
    return SliceDevice(f"eth{index + 1}", {
        f"{d}/ifName": {"string": f"eth{index + 1}"},
        f"{d}/kind": {"string": "network"},
        f"{d}/rdma": {"bool": True},
        f"{d}/virtual": {"bool": False},
        "resource.kubernetes.io/numaNode": {"int": index % 2},
    }, {})


def _declared(node: str, index: int, _: Mapping[str, Attribute], __: Mapping[str, str]) -> SliceDevice:
    # Nothing is known of the driver beyond the class: no defaults, a neutral name.
    return SliceDevice(f"device-{index}", {}, {})


# How an unknown driver's slices are shaped: as the class declares its devices, nothing more.
DECLARED = DriverShape(_declared)

SHAPES: dict[str, DriverShape] = {
    DRANET.name: DriverShape(_dranet),
    NVIDIA_GPU.name: DriverShape(_nvidia),
    AMD_GPU.name: DriverShape(_amd),
    CPU.name: DriverShape(_cpu, qualifies_own_keys=True, allow_multiple_allocations=True),
}


def resource_slice(node: str, driver: str, devices: Sequence[DeviceSpec]) -> Resource:
    """The slice a driver's plugin on `node` publishes for the class devices it serves there (shaped as
    the class declares them, `DECLARED`, for a driver without a shape of its own)."""
    shape = SHAPES.get(driver, DECLARED)
    out = []
    index = 0
    for spec in devices:
        declared_capacity = {qualified(k, driver): str(v.value) for k, v in spec.capacity.items()}
        declared_attributes = {qualified(k, driver): _attribute(v) for k, v in spec.attributes.items()}
        for _ in range(spec.count):
            default = shape.defaults(node, index, declared_attributes, declared_capacity)
            device: Resource = {"name": default.name}
            attributes = {**default.attributes, **declared_attributes}
            capacity = {**default.capacity, **declared_capacity}
            device["attributes"] = {_spelled(k, driver, shape): v for k, v in sorted(attributes.items())}
            device["capacity"] = {_spelled(k, driver, shape): {"value": v} for k, v in sorted(capacity.items())}
            if shape.allow_multiple_allocations:
                device["allowMultipleAllocations"] = True
            out.append(device)
            index += 1
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            # One slice per node: the pool is the node's, complete in this one slice.
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": out,
        },
    }


def renamed_slice(slice_: Resource, nodes: Mapping[str, str]) -> Resource | None:
    """A slice `resource_slice` made, moved to the node `nodes` maps its node to: its name, node, pool and
    the device identities derived from the node's name (an NVIDIA GPU's uuid, unless its class declares
    one). New dicts where it differs; `slice_` is left as it was. None when it is not shaped as
    `resource_slice` makes it."""
    spec, metadata = slice_["spec"], slice_["metadata"]
    old, driver = spec.get("nodeName"), spec.get("driver")
    if old not in nodes or spec["pool"]["name"] != old or metadata["name"] != f"{old}-{driver}":
        return None
    new = nodes[old]
    devices = spec["devices"]
    if driver == NVIDIA_GPU.name:
        key = _spelled(f"{driver}/uuid", driver, SHAPES[driver])
        devices = [{**device, "attributes": {**device["attributes"], key: {"string": f"GPU-{_uuid(new, index)}"}}}
                   if device["attributes"].get(key) == {"string": f"GPU-{_uuid(old, index)}"} else device
                   for index, device in enumerate(devices)]
    return {**slice_, "metadata": {**metadata, "name": f"{new}-{driver}"},
            "spec": {**spec, "nodeName": new, "pool": {**spec["pool"], "name": new}, "devices": devices}}


def _attribute(value: Any) -> Attribute:
    """A class attribute (AttributeValue) in the ResourceSlice's typed form."""
    for field_name, key in (("string", "string"), ("version", "version"), ("bool_", "bool"), ("int_", "int")):
        v = getattr(value, field_name)
        if v is not None:
            return {key: v}
    raise ValueError("attribute has no value")


def _spelled(key: str, driver: str, shape: DriverShape) -> str:
    """A qualified key as the driver writes it: bare within its own domain, unless it qualifies."""
    domain, _, name = key.rpartition("/")
    return name if domain == driver and not shape.qualifies_own_keys else key
