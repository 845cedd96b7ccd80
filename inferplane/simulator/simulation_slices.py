"""ResourceSlices as each DRA driver publishes them, for the devices a node's class declares.

A driver's kubelet plugin publishes one `resource.k8s.io/v1` ResourceSlice per node: the pool is
named after the node, and every device carries exactly the attributes and capacity that driver
reports for its model (`inferplane.accelerators`, one module per driver, each table cited). The
simulation takes the devices from the pool's InferenceClass: each class device of the driver
becomes `count` slice devices, of the model its machine carries or it names (productName, deviceID), or,
for a model the driver's table lacks, with what the class states, with the node's values the class states (a driver
version) and each device's own identity and placement (uuid, PCI address, NUMA node).

A driver inferplane has no table for (one an Existing cluster's owner runs, such as the DRA example
driver `gpu.example.com`) publishes exactly what the class declares: `count` devices per node, named
`device-<index>`, with the class's attributes and capacity (and, where the class says so,
`allowMultipleAllocations` and each capacity's request policy) and nothing invented beside them.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from inferplane.accelerators.devices import typed_attribute
from inferplane.accelerators.registry import driver_slices
from inferplane.api.cloud import MachineGpu
from inferplane.api.inference_class import DeviceSpec
from inferplane.simulator.simulation_inputs import Pool

Resource = dict[str, Any]


def resource_slice(node: str, driver: str, devices: Sequence[DeviceSpec], machine: MachineGpu | None = None
                   ) -> Resource:
    """The slice a driver's plugin on `node` publishes for the class devices it serves there (as the
    class declares them for a driver without a table), on a node of `machine` (the GPU it carries)."""
    shape = driver_slices(driver)
    if shape is None:
        return _slice(node, driver, _declared(devices))
    out = []
    # Each kind of device (one, unless the driver has several: `DriverSlices.kind_key`) is indexed and counted
    # on its own.
    declared = [({shape.qualified(k): typed_attribute(v) for k, v in spec.attributes.items()},
                 {shape.qualified(k): str(v.value) for k, v in spec.capacity.items()}, spec.count) for spec in devices]
    totals: dict[Any, int] = {}
    for attributes, _, count in declared:
        totals[shape.kind_of(attributes)] = totals.get(shape.kind_of(attributes), 0) + count
    indices: dict[Any, int] = {}
    for declared_attributes, declared_capacity, count in declared:
        kind = shape.kind_of(declared_attributes)
        for _ in range(count):
            index, total = indices.get(kind, 0), totals[kind]
            published = shape.device(node, index, total, declared_attributes, declared_capacity, machine)
            device: Resource = {"name": published.name}
            device["attributes"] = {shape.spelled_key(k): v for k, v in sorted(published.attributes.items())}
            device["capacity"] = {shape.spelled_key(k): {"value": v} for k, v in sorted(published.capacity.items())}
            if shape.allow_multiple_allocations:
                device["allowMultipleAllocations"] = True
            out.append(device)
            indices[kind] = index + 1
    return _slice(node, driver, out)


def _declared(devices: Sequence[DeviceSpec]) -> list[Resource]:
    """An unknown driver's devices: the class's attributes and capacity, keys as the class writes them
    (bare ones in the driver's domain, as a ResourceSlice spells them), nothing more."""
    out = []
    for spec in devices:
        for _ in range(spec.count):
            device = {"name": f"device-{len(out)}",
                      "attributes": {k: typed_attribute(v) for k, v in sorted(spec.attributes.items())},
                      "capacity": {k: {"value": str(v.value), **({"requestPolicy": v.request_policy.model_dump(
                          by_alias=True, exclude_none=True, mode="json")} if v.request_policy else {})}
                          for k, v in sorted(spec.capacity.items())}}
            if spec.allow_multiple_allocations:  # shared by several claims, each taking a share
                device["allowMultipleAllocations"] = True
            out.append(device)
    return out


def _slice(node: str, driver: str, out: list[Resource]) -> Resource:
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
    the device identities derived from the node's name (its driver's `node_identity`, e.g. an NVIDIA GPU's
    uuid). New dicts where it differs; `slice_` is left as it was. None when it is not shaped as
    `resource_slice` makes it."""
    spec, metadata = slice_["spec"], slice_["metadata"]
    old, driver = spec.get("nodeName"), spec.get("driver")
    if old not in nodes or spec["pool"]["name"] != old or metadata["name"] != f"{old}-{driver}":
        return None
    new = nodes[old]
    devices, shape = spec["devices"], driver_slices(driver)
    if shape is not None and shape.node_identity is not None:
        devices = [device if (attributes := shape.renamed_attributes(device["attributes"], old, new, index)) is None
                   else {**device, "attributes": attributes} for index, device in enumerate(devices)]
    return {**slice_, "metadata": {**metadata, "name": f"{new}-{driver}"},
            "spec": {**spec, "nodeName": new, "pool": {**spec["pool"], "name": new}, "devices": devices}}


def pool_slices(node: str, pool: Pool, drivers: Iterable[str]) -> list[Resource]:
    """The ResourceSlices the plugins of `drivers` publish on a node of `pool`. A driver on a node
    whose class declares none of its devices publishes nothing (the audit reports the misplacement)."""
    out = []
    for driver in drivers:
        devices = [d for d in pool.devices if d.claim == "DRA" and d.driver == driver]
        if devices:
            out.append(resource_slice(node, driver, devices, pool.machine_gpu))
    return out
