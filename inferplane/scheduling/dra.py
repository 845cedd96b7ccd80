"""Dynamic Resource Allocation as the scheduler's DRA plugin does it, over one cluster's ResourceSlices.

A pod's claims (each from a ResourceClaimTemplate's `spec`) are allocated on one node at a time: every
`exactly` request takes `count` devices from the slices published for that node, each device
satisfying all of its DeviceClass's selectors (as the driver's chart installs the class) and all of
the request's CEL selectors, as kube-scheduler does (the same CEL library as the fleet scheduler's),
and none already allocated to another claim (unless the driver shares it:
`allowMultipleAllocations`, as the CPU driver's grouped mode does; its consumable capacity is not
tracked). A node that cannot satisfy every request of every claim is rejected with a reason naming
the request and what was missing; the pod's claims are then allocated together or not at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from inferplane.api.drivers import DRIVERS
from inferplane.cel.device import Device, DeviceSelector, selector
from inferplane.cel.env import CelError

Resource = dict[str, Any]

# The driver each DeviceClass is for (its selectors say `device.driver == "<driver>"`, and more).
DRIVER_OF_CLASS = {d.device_class: d.name for d in DRIVERS.values()}


@dataclass(frozen=True)
class Allocated:
    """One allocated device, as a ResourceClaim's `status.allocation.devices.results[]` names it."""

    request: str
    driver: str
    pool: str
    device: str

    def to_dict(self) -> dict[str, str]:
        return {"request": self.request, "driver": self.driver, "pool": self.pool, "device": self.device}


@dataclass(frozen=True)
class SlicedDevice:
    pool: str
    device: Device
    shared: bool


class DeviceAllocator:
    """The devices of one cluster by node, and which of them claims already hold. `device_classes` are the
    cluster's DeviceClasses: name -> the CEL selectors of its spec."""

    def __init__(self, slices: Iterable[Mapping[str, Any]], device_classes: Mapping[str, Sequence[str]]):
        self.device_classes = {name: tuple(selector(e) for e in expressions)
                               for name, expressions in device_classes.items()}
        self.devices: dict[str, list[SlicedDevice]] = {}
        for slice_ in slices:
            spec = slice_["spec"]
            for raw in spec.get("devices") or []:
                self.devices.setdefault(spec["nodeName"], []).append(SlicedDevice(
                    spec["pool"]["name"], Device.from_resource_slice(spec["driver"], raw),
                    bool(raw.get("allowMultipleAllocations"))))
        self.taken: set[tuple[str, str, str]] = set()

    def try_allocate(self, node: str, claims: Sequence[tuple[str, Mapping[str, Any]]]
                     ) -> tuple[dict[str, list[Allocated]] | None, list[str]]:
        """({claim: its devices}, []) when every claim fits on `node`, else (None, [why not]).
        Nothing is taken until `commit`."""
        chosen: dict[str, list[Allocated]] = {}
        held: set[tuple[str, str, str]] = set()
        reasons: list[str] = []
        for claim, spec in claims:
            for request in (spec.get("devices") or {}).get("requests") or []:
                picked, why = self._request(node, request, held)
                if why:
                    reasons.append(f"claim {claim}: {why}")
                    continue
                chosen.setdefault(claim, []).extend(picked)
                held.update((a.driver, a.pool, a.device) for a in picked
                            if not self._shared(node, a))
        return (None, reasons) if reasons else (chosen, [])

    def commit(self, node: str, allocation: Mapping[str, list[Allocated]]) -> None:
        for devices in allocation.values():
            self.taken.update((a.driver, a.pool, a.device) for a in devices if not self._shared(node, a))

    # ---- one request

    def _request(self, node: str, request: Mapping[str, Any], held: set[tuple[str, str, str]]
                 ) -> tuple[list[Allocated], str | None]:
        name, exactly = request["name"], request.get("exactly") or {}
        device_class = exactly.get("deviceClassName", "")
        class_selectors = self.device_classes.get(device_class)
        if class_selectors is None:
            return [], f"request {name}: no DeviceClass {device_class} is installed"
        driver = DRIVER_OF_CLASS.get(device_class, device_class)
        count = int(exactly.get("count", 1))
        on_node = self.devices.get(node, [])
        if not any(d.device.driver == driver for d in on_node) and driver in DRIVERS:
            return [], f"request {name}: the node publishes no {driver} devices"
        offered, refusal = [], None
        for candidate in on_node:
            failed = next((s for s in class_selectors if not _holds(s, candidate.device)), None)
            if failed is None:
                offered.append(candidate)
            elif refusal is None and candidate.device.driver == driver:
                refusal = f"{_why_not(failed, candidate.device)} for device {candidate.device.name}"
        if not offered:
            return [], (f"request {name}: no device on the node satisfies DeviceClass {device_class}'s selectors"
                        + (f" ({refusal})" if refusal else ""))
        selectors = [selector(s["cel"]["expression"]) for s in exactly.get("selectors") or []]
        matching, refusal = [], None
        for candidate in offered:
            failed = next((s for s in selectors if not _holds(s, candidate.device)), None)
            if failed is None:
                matching.append(candidate)
            elif refusal is None:
                refusal = f"{_why_not(failed, candidate.device)} for device {candidate.device.name}"
        if not matching:
            return [], f"request {name}: no {driver} device satisfies its selectors ({refusal})"
        free = [d for d in matching
                if d.shared or (d.device.driver, d.pool, d.device.name) not in self.taken | held]
        if len(free) < count:
            return [], (f"request {name}: needs {count} {driver} device{'s' if count > 1 else ''}, "
                        f"{len(free)} of the {len(matching)} that satisfy its selectors free")
        return [Allocated(name, d.device.driver, d.pool, d.device.name) for d in free[:count]], None

    def _shared(self, node: str, allocated: Allocated) -> bool:
        return any(d.shared for d in self.devices.get(node, [])
                   if d.device.name == allocated.device and d.device.driver == allocated.driver)


def _holds(selector_: DeviceSelector, device: Device) -> bool:
    """A selector that errors, is not boolean, or cannot read the device's data selects nothing, as
    the allocator treats it."""
    try:
        return selector_.matches(device)
    except (CelError, ValueError):
        return False


def _why_not(selector_: DeviceSelector, device: Device) -> str:
    try:
        return selector_.explain(device) or f"selector {selector_.expression!r} holds"
    except ValueError as exc:  # device data CEL cannot read
        return f"selector {selector_.expression!r} cannot read the device: {exc}"
