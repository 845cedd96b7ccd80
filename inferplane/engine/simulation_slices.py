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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from inferplane.api.drivers import AMD_GPU, CPU, NVIDIA_GPU
from inferplane.api.inference_class import DeviceSpec
from inferplane.cel.quantity import parse_quantity

Resource = dict[str, Any]
Attribute = dict[str, Any]  # one of {"string": s}, {"version": v}, {"bool": b}, {"int": i}


@dataclass(frozen=True)
class SliceDevice:
    name: str
    attributes: dict[str, Attribute]  # fully qualified keys
    capacity: dict[str, str]  # fully qualified keys


# (node name, index of the device on the node, the class's capacity by qualified key) -> defaults
Defaults = Callable[[str, int, Mapping[str, str]], SliceDevice]


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


def _nvidia(node: str, index: int, _: Mapping[str, str]) -> SliceDevice:
    d = NVIDIA_GPU.name
    # An H100 SXM as the dra-driver-nvidia-gpu plugin reports it; memory in the class overrides.
    return SliceDevice(f"gpu-{index}", {
        f"{d}/type": {"string": "gpu"},
        f"{d}/uuid": {"string": f"GPU-{_uuid(node, index)}"},
        f"{d}/productName": {"string": "NVIDIA H100 80GB HBM3"},
        f"{d}/brand": {"string": "Nvidia"},
        f"{d}/architecture": {"string": "Hopper"},
        f"{d}/cudaComputeCapability": {"version": "9.0.0"},
        f"{d}/driverVersion": {"version": "570.133.20"},
        f"{d}/cudaDriverVersion": {"version": "12.8.0"},
    }, {f"{d}/memory": "80Gi"})


def _amd(node: str, index: int, _: Mapping[str, str]) -> SliceDevice:
    d = AMD_GPU.name
    # An Instinct MI300X as the AMD DRA driver reports it: devices `gpu-<card>-<render node>`.
    return SliceDevice(f"gpu-{index}-{128 + index}", {
        f"{d}/type": {"string": "amdgpu"},
        f"{d}/productName": {"string": "AMD Instinct MI300X"},
        f"{d}/family": {"string": "AI"},
        f"{d}/deviceID": {"string": "0x74a1"},
        f"{d}/driverVersion": {"version": "6.12.12"},
    }, {f"{d}/memory": "192Gi", f"{d}/computeUnits": "304", f"{d}/simdUnits": "1216"})


def _cpu(node: str, index: int, capacity: Mapping[str, str]) -> SliceDevice:
    d = CPU.name
    # Grouped mode: one device per NUMA node, its cores as consumable `cpu` capacity.
    cpu = capacity.get(f"{d}/cpu", "32")
    return SliceDevice(f"cpudevnuma{index:03d}", {
        f"{d}/numCPUs": {"int": int(parse_quantity(cpu))},
        f"{d}/smtEnabled": {"bool": True},
        f"{d}/socketID": {"int": 0},
        "resource.kubernetes.io/numaNode": {"int": index},
    }, {f"{d}/cpu": cpu})


SHAPES: dict[str, DriverShape] = {
    NVIDIA_GPU.name: DriverShape(_nvidia),
    AMD_GPU.name: DriverShape(_amd),
    CPU.name: DriverShape(_cpu, qualifies_own_keys=True, allow_multiple_allocations=True),
}


def resource_slice(node: str, driver: str, devices: Sequence[DeviceSpec]) -> Resource | None:
    """The slice a driver's plugin on `node` publishes for the class devices it serves there;
    None for a driver whose slices are not simulated (e.g. dra.net, provided outside the stack)."""
    shape = SHAPES.get(driver)
    if shape is None:
        return None
    out = []
    index = 0
    for spec in devices:
        declared_capacity = {qualified(k, driver): v for k, v in spec.capacity.items()}
        declared_attributes = {qualified(k, driver): _attribute(v) for k, v in spec.attributes.items()}
        for _ in range(spec.count):
            default = shape.defaults(node, index, declared_capacity)
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
