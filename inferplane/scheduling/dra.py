"""Dynamic Resource Allocation as the scheduler's DRA plugin does it, over one cluster's ResourceSlices.

A pod's claims (each from a ResourceClaimTemplate's `spec`) are allocated on one node at a time: every
`exactly` request takes `count` devices from the slices published for that node, each device
satisfying all of its DeviceClass's selectors (as the driver's chart installs the class) and all of
the request's CEL selectors, as kube-scheduler does (the same CEL library as the fleet scheduler's),
and none already allocated to another claim (unless the driver shares it:
`allowMultipleAllocations`, as the CPU driver's grouped mode does; then each claim takes a share of
its capacities, rounded by their request policies, while what is left holds it: `shares.py`). A node that cannot satisfy every request of every claim is rejected with a reason naming
the request and what was missing; the pod's claims are then allocated together or not at all.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

from inferplane import API_GROUP
from inferplane.api.drivers import DRIVERS
from inferplane.cel.device import Device, DeviceSelector, selector
from inferplane.cel.env import CelError
from inferplane.cel.quantity import format_quantity

from .shares import Capacity, capacities_of, describe_left, fits, left_after, share, amounts

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
    # A share of a device that allows multiple allocations: what it consumes, by qualified capacity name.
    consumed: tuple[tuple[str, Fraction], ...] = ()
    share_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request, "driver": self.driver, "pool": self.pool,
                               "device": self.device}
        if self.share_id:  # DeviceRequestAllocationResult.shareID and .consumedCapacity
            out["shareID"] = self.share_id
            out["consumedCapacity"] = {name: format_quantity(amount) for name, amount in self.consumed}
        return out


@dataclass(frozen=True)
class SlicedDevice:
    pool: str
    device: Device
    shared: bool
    capacities: Mapping[str, Capacity]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.device.driver, self.pool, self.device.name)


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
                    bool(raw.get("allowMultipleAllocations")), capacities_of(spec["driver"], raw.get("capacity") or {})))
        self.taken: set[tuple[str, str, str]] = set()
        # What the claims allocated so far consume of each shared device, by qualified capacity name.
        self.consumed: dict[tuple[str, str, str], dict[str, Fraction]] = {}
        self.shares = 0  # shares handed out: numbers each one's shareID

    def try_allocate(self, node: str, claims: Sequence[tuple[str, Mapping[str, Any]]]
                     ) -> tuple[dict[str, list[Allocated]] | None, list[str]]:
        """({claim: its devices}, []) when every claim fits on `node`, else (None, [why not]).
        Nothing is taken until `commit`."""
        chosen: dict[str, list[Allocated]] = {}
        held: set[tuple[str, str, str]] = set()
        holding: dict[tuple[str, str, str], dict[str, Fraction]] = {}  # shares this pod's claims take
        reasons: list[str] = []
        for claim, spec in claims:
            for request in (spec.get("devices") or {}).get("requests") or []:
                picked, why = self._request(node, request, held, holding)
                if why:
                    reasons.append(f"claim {claim}: {why}")
                    continue
                chosen.setdefault(claim, []).extend(picked)
                held.update((a.driver, a.pool, a.device) for a in picked if not a.consumed)
        return (None, reasons) if reasons else (chosen, [])

    def commit(self, node: str, allocation: Mapping[str, list[Allocated]]) -> None:
        for claim, devices in allocation.items():
            for i, a in enumerate(devices):
                key = (a.driver, a.pool, a.device)
                if not a.consumed:
                    self.taken.add(key)
                    continue
                used = self.consumed.setdefault(key, {})
                for name, amount in a.consumed:
                    used[name] = used.get(name, 0) + amount
                self.shares += 1
                devices[i] = replace(a, share_id=share_id(node, claim, self.shares))

    # ---- one request

    def _request(self, node: str, request: Mapping[str, Any], held: set[tuple[str, str, str]],
                 holding: dict[tuple[str, str, str], dict[str, Fraction]]) -> tuple[list[Allocated], str | None]:
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
        asked = amounts((k, str(v)) for k, v in ((exactly.get("capacity") or {}).get("requests") or {}).items())
        if asked:
            matching = [d for d in matching if d.shared]
            if not matching:
                return [], (f"request {name}: asks a share (capacity {_spelled(asked)}) but no {driver} device that "
                            "satisfies its selectors allows multiple allocations")
        picked, refusals = self._pick(name, count, matching, asked, held, holding)
        if len(picked) < count:
            shared = f" ({_spelled(asked) or 'the whole capacity'} asked; {'; '.join(refusals)})" if refusals else ""
            return [], (f"request {name}: needs {count} {driver} device{'s' if count > 1 else ''}, "
                        f"{len(picked)} of the {len(matching)} that satisfy its selectors free{shared}")
        return picked, None

    def _pick(self, name: str, count: int, matching: list[SlicedDevice], asked: Mapping[str, Fraction],
              held: set[tuple[str, str, str]], holding: dict[tuple[str, str, str], dict[str, Fraction]]
              ) -> tuple[list[Allocated], list[str]]:
        """Up to `count` devices for the request: a whole device no claim holds, or a share of a shared one
        with room for it (what it takes is added to `holding`); and why each shared one had none."""
        picked: list[Allocated] = []
        refusals: list[str] = []
        for d in matching:
            if len(picked) == count:
                break
            if not d.shared:
                if d.key not in self.taken and d.key not in held:
                    picked.append(Allocated(name, d.device.driver, d.pool, d.device.name))
                continue
            taken, why = share(asked, d.device.driver, d.capacities)
            used = {n: self.consumed.get(d.key, {}).get(n, 0) + holding.get(d.key, {}).get(n, 0)
                    for n in d.capacities}
            left = left_after(d.capacities, used)
            if taken is None or not fits(taken, left):
                refusals.append(f"device {d.device.name}: {why or describe_left(left, d.capacities)}")
                continue
            for n, amount in taken.items():
                holding.setdefault(d.key, {})[n] = holding.get(d.key, {}).get(n, 0) + amount
            picked.append(Allocated(name, d.device.driver, d.pool, d.device.name, tuple(sorted(taken.items()))))
        return picked, refusals


def share_id(node: str, claim: str, n: int) -> str:
    """A share's ID, as the allocator gives each allocation of a shared device one (a UUID in form; here
    derived from where it was made, so a simulation is the same every time)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{API_GROUP}/share/{node}/{claim}/{n}"))


def _spelled(asked: Mapping[str, Fraction]) -> str:
    return ", ".join(f"{k} {format_quantity(v)}" for k, v in sorted(asked.items()))


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
