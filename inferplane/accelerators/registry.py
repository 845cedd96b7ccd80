"""The DRA drivers whose ResourceSlices inferplane knows, by driver name, and the DeviceClasses their charts install."""

from __future__ import annotations

from inferplane.accelerators import amd, cpu, dranet, nvidia
from inferplane.accelerators.devices import DeviceClassSpec, DriverSlices

SLICES: dict[str, DriverSlices] = {s.driver: s for s in (nvidia.SLICES, amd.SLICES, cpu.SLICES, dranet.SLICES)}

# Every DeviceClass by name, with the selectors its chart gives it.
DEVICE_CLASSES: dict[str, DeviceClassSpec] = {c.name: c for s in SLICES.values() for c in s.device_classes}


def driver_slices(driver: str) -> DriverSlices | None:
    return SLICES.get(driver)
