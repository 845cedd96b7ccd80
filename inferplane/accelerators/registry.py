"""The DRA drivers inferplane knows, one module each: the ResourceSlices each publishes, the DeviceClasses its
chart installs, and its serving stack (components per cloud, the workloads they run). Adding a driver is a
module, its name in `MODULES` below and its `Driver` in `inferplane/api/drivers.py`; the catalog, the gate and
the simulation read them from here."""

from __future__ import annotations

from inferplane.accelerators import amd, cpu, dranet, gaudi, neuron, nvidia, tpu
from inferplane.accelerators.component import DriverStack
from inferplane.accelerators.class_devices import device_advice
from inferplane.accelerators.devices import Attribute, DeviceClassSpec, DriverSlices, typed_attribute
from inferplane.api.cloud import MachineGpu
from inferplane.api.inference_class import AttributeValue, CapacityValue, DeviceSpec, InferenceClass

# One module per driver, each with its SLICES and its STACK. In install order: a cloud's stack lists the
# neutral components, then each driver's components in this order.
MODULES = (nvidia, amd, cpu, dranet, gaudi, tpu, neuron)

SLICES: dict[str, DriverSlices] = {m.SLICES.driver: m.SLICES for m in MODULES}
STACKS: tuple[DriverStack, ...] = tuple(m.STACK for m in MODULES)

# Every DeviceClass by name, with the selectors its chart gives it.
DEVICE_CLASSES: dict[str, DeviceClassSpec] = {c.name: c for s in SLICES.values() for c in s.device_classes}


def driver_slices(driver: str) -> DriverSlices | None:
    return SLICES.get(driver)


def published_view(klass: InferenceClass, machine: MachineGpu | None = None) -> InferenceClass:
    """The class as its pools' devices are published on `machine` (the GPU the class's provisioned machine
    carries, if the cloud's table knows it): each claimed device of a known driver with what the driver
    reports for its model (and the node's values), or what the class states of a model the driver's table
    lacks, so that the fleet scheduler, reading classes, selects as DRA allocation, reading slices, does.
    What differs per device (a uuid, a PCI address, a NUMA node) is left out: no class-level view can know it."""
    devices = []
    for device in klass.spec.devices:
        shape = SLICES.get(device.driver)
        if shape is None or device.claim != "DRA":
            devices.append(device)
            continue
        attributes, capacity = qualified_statement(shape, device)
        # As many of its kind as the class states per node: what a node's devices say of their number (the TPU
        # driver's chipCount) is the node's.
        published = shape.device("", 0, device.count, attributes, capacity, machine)
        view = {shape.class_key(k): v for k, v in published.attributes.items() if not shape.per_device_or_node(k)}
        devices.append(device.model_copy(update={
            "attributes": {k: AttributeValue.model_validate(v) for k, v in view.items()},
            "capacity": {shape.class_key(k): CapacityValue(value=v) for k, v in published.capacity.items()},
            # What the driver publishes decides whether its devices are shared (dra.cpu's grouped devices are).
            "allow_multiple_allocations": shape.allow_multiple_allocations}))
    return klass.model_copy(update={"spec": klass.spec.model_copy(update={"devices": devices})})


def qualified_statement(shape: DriverSlices, device: DeviceSpec) -> tuple[dict[str, Attribute], dict[str, str]]:
    """A class device's attributes (typed) and capacities, by qualified key."""
    return ({shape.qualified(k): typed_attribute(v) for k, v in device.attributes.items()},
            {shape.qualified(k): str(v.value) for k, v in device.capacity.items()})


def class_advice(klass: InferenceClass, machine: MachineGpu | None = None) -> list[tuple[str, str]]:
    """(field path, message) for what a class states of its devices that their drivers' tables say otherwise
    or cannot check (`class_devices.device_advice`), and a machine whose GPUs number other than the class's."""
    out = []
    for d, device in enumerate(klass.spec.devices):
        shape = SLICES.get(device.driver)
        if shape is None or device.claim != "DRA":
            continue
        attributes, capacity = qualified_statement(shape, device)
        out += device_advice(shape, f"spec.devices[{d}]", attributes, capacity, machine)
    if machine is not None:
        # The machine's devices of the driver's first kind (a Neuron UltraServer's node device is another kind).
        shape = SLICES.get(machine.driver)
        stated = sum(d.count for d in klass.spec.devices if d.claim == "DRA" and d.driver == machine.driver
                     and (shape is None or shape.is_primary(qualified_statement(shape, d)[0])))
        if stated and stated != machine.count:
            out.append(("spec.devices", f"{machine.machine} carries {machine.count} {machine.product} per node, "
                                        f"not {stated} ({machine.table}): the simulation and placement "
                                        f"count the class's {stated}; state count {machine.count}"))
    return out
