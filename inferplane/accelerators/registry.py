"""The DRA drivers inferplane knows, one module each: the ResourceSlices each publishes, the DeviceClasses its
chart installs, and its serving stack (components per cloud, the workloads they run). Adding a driver is a
module, its name in `MODULES` below and its `Driver` in `inferplane/api/drivers.py`; the catalog, the gate and
the simulation read them from here."""

from __future__ import annotations

from inferplane.accelerators import amd, cpu, dranet, gaudi, nvidia
from inferplane.accelerators.component import DriverStack
from inferplane.accelerators.devices import DeviceClassSpec, DriverSlices, Varies, typed_attribute
from inferplane.api.inference_class import AttributeValue, CapacityValue, InferenceClass

# One module per driver, each with its SLICES and its STACK. In install order: a cloud's stack lists the
# neutral components, then each driver's components in this order.
MODULES = (nvidia, amd, cpu, dranet, gaudi)

SLICES: dict[str, DriverSlices] = {m.SLICES.driver: m.SLICES for m in MODULES}
STACKS: tuple[DriverStack, ...] = tuple(m.STACK for m in MODULES)

# Every DeviceClass by name, with the selectors its chart gives it.
DEVICE_CLASSES: dict[str, DeviceClassSpec] = {c.name: c for s in SLICES.values() for c in s.device_classes}


def driver_slices(driver: str) -> DriverSlices | None:
    return SLICES.get(driver)


def published_view(klass: InferenceClass) -> InferenceClass:
    """The class as its pools' devices are published: each claimed device of a known driver with what the driver
    reports for its model (and the node's values) beside what the class states, so that the fleet scheduler,
    reading classes, selects as DRA allocation, reading slices, does. What differs per device (a uuid, a PCI
    address, a NUMA node) is left out: no class-level view can know it."""
    devices = []
    for device in klass.spec.devices:
        shape = SLICES.get(device.driver)
        if shape is None or device.claim != "DRA":
            devices.append(device)
            continue
        attributes = {shape.qualified(k): typed_attribute(v) for k, v in device.attributes.items()}
        capacity = {shape.qualified(k): str(v.value) for k, v in device.capacity.items()}
        published = shape.device("", 0, 1, attributes, capacity)
        view = {shape.class_key(k): v for k, v in published.attributes.items()
                if (s := shape.spec(k)) is not None and s.varies is not Varies.DEVICE}
        devices.append(device.model_copy(update={
            "attributes": {k: AttributeValue.model_validate(v) for k, v in view.items()},
            "capacity": {shape.class_key(k): CapacityValue(value=v) for k, v in published.capacity.items()},
            # What the driver publishes decides whether its devices are shared (dra.cpu's grouped devices are).
            "allow_multiple_allocations": shape.allow_multiple_allocations}))
    return klass.model_copy(update={"spec": klass.spec.model_copy(update={"devices": devices})})


def understated_capacities(klass: InferenceClass) -> list[tuple[str, str]]:
    """(field path, message) for each capacity a class states below what its device's driver reports for
    the model: admitted (a floor), and said, since placement and allocation read what the driver reports."""
    out = []
    for d, device in enumerate(klass.spec.devices):
        shape = SLICES.get(device.driver)
        if shape is None or device.claim != "DRA":
            continue
        attributes = {shape.qualified(k): typed_attribute(v) for k, v in device.attributes.items()}
        capacity = {shape.qualified(k): str(v.value) for k, v in device.capacity.items()}
        written = {shape.qualified(k): k for k in device.capacity}
        for q, stated, reported, model in shape.understated(attributes, capacity):
            out.append((f"spec.devices[{d}].capacity.{written[q]}.value",
                        f"the {shape.driver} driver reports {q} as {reported} for {model}, more than the {stated} "
                        f"stated: admitted as a floor; placement and allocation read {reported} (write it to "
                        "say so)"))
    return out
