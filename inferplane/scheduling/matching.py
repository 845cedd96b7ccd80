"""Which engine members a class's devices satisfy, with the reason when they do not.

Matching depends only on the class, never on the cluster or pool that names it, so a Matcher
matches each member against each class once and evaluates each (class device, selector) pair once,
however many pools across the fleet use the class. Selectors are compiled once per distinct text
(`inferplane.cel.selector` caches them).

A member's device requests are matched greedily in order, as Modelplane does: each request takes
the first device of the class with enough of its per-node `count` left whose selectors all hold.
Greedy can only refuse a fit that a cleverer assignment would find, never overcommit a device.
Only `claim: DRA` devices become requests to claim; a Synthetic match places but claims nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping, Sequence

from inferplane.api.drivers import DRIVERS
from inferplane.cel import CelError, selector
from inferplane.cel.device import split_qualified
from inferplane.cel.source import device_fields

from .shares import amounts, share
from .snapshot import DRA, ClassDevice, DeviceRequest, Engine, Member, PoolClass


@dataclass(frozen=True)
class ResolvedRequest:
    """A device request resolved against a `claim: DRA` device: what the replica's
    ResourceClaimTemplate asks for (`exactly`: device class, count, the member's selectors)."""

    name: str
    device_class_name: str
    count: int
    selectors: tuple[str, ...]
    # The request's `capacity.requests` (a share of each device), as written.
    capacity: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class MemberMatch:
    """A member against one class: the requests it claims there, or None and why not."""

    requests: tuple[ResolvedRequest, ...] | None
    reason: str = ""

    @property
    def matched(self) -> bool:
        return self.requests is not None

    @property
    def claims(self) -> bool:
        return bool(self.requests)


class InvalidSelectors(ValueError):
    """Selectors that do not compile, each with its field path. Admission refuses these; a
    scheduler handed one places nothing and the caller keeps what is running."""

    def __init__(self, errors: Sequence[str]):
        super().__init__("; ".join(errors))
        self.errors = tuple(errors)


def compile_selectors(engines: Sequence[Engine]) -> None:
    """Compile every selector once, up front; InvalidSelectors lists every one that fails."""
    errors = []
    for e, engine in enumerate(engines):
        for m, member in enumerate(engine.members):
            for d, request in enumerate(member.devices):
                for s, expression in enumerate(request.selectors):
                    try:
                        selector(expression)
                    except CelError as exc:
                        errors.append(f"engines[{e}].members[{m}].nodeSelector.devices[{d}].selectors[{s}].cel: "
                                      f"{exc.message}")
    if errors:
        raise InvalidSelectors(errors)


class Matcher:
    """Matches a deployment's members against classes, once per class."""

    def __init__(self, engines: Sequence[Engine], classes: Mapping[str, PoolClass]):
        compile_selectors(engines)
        self.engines = tuple(engines)
        self.classes = classes
        self._by_class: dict[str, tuple[tuple[MemberMatch, ...], ...] | None] = {}
        self._verdicts: dict[tuple[str, int, str], str | None] = {}
        self.evaluations = 0  # selector evaluations so far: what "once per class" is measured by

    def for_class(self, class_name: str) -> tuple[tuple[MemberMatch, ...], ...] | None:
        """[engine][member] matches against the class, or None when no such class is known."""
        try:
            return self._by_class[class_name]
        except KeyError:
            pass
        klass = self.classes.get(class_name)
        result = None if klass is None else tuple(
            tuple(self._match_member(klass, member) for member in engine.members) for engine in self.engines)
        self._by_class[class_name] = result
        return result

    def _match_member(self, klass: PoolClass, member: Member) -> MemberMatch:
        remaining = [max(device.count, 0) for device in klass.devices]
        resolved: list[ResolvedRequest] = []
        for request in member.devices:
            misses = []
            for i, device in enumerate(klass.devices):
                miss = self._miss(klass, i, device, request, remaining[i])
                if miss:
                    misses.append(miss)
                    continue
                remaining[i] -= request.count
                if device.claim == DRA:
                    resolved.append(ResolvedRequest(request.name, device.device_class_name, request.count,
                                                    request.selectors, request.capacity))
                break
            else:
                found = "; ".join(misses) if misses else f"class {klass.name} has no devices"
                return MemberMatch(None, f"request {request.name}: {found}")
        return MemberMatch(tuple(resolved))

    def _miss(self, klass: PoolClass, index: int, device: ClassDevice, request: DeviceRequest,
              remaining: int) -> str | None:
        """Why this device cannot serve the request, or None when it can."""
        driver = DRIVERS.get(device.driver)
        if device.claim == DRA and driver is not None and driver.claims_whole_node and request.count != device.count:
            return (f"class {klass.name}'s device {device.name}: the {device.driver} driver allocates every device of "
                    f"a node, {device.count} here, and refuses any other count: ask for {device.count}")
        if remaining < request.count:
            left = f"{remaining} left of {device.count}" if remaining < device.count else f"{device.count}"
            return f"class {klass.name}'s device {device.name} has {left} per node, the request asks {request.count}"
        for expression in request.selectors:
            miss = self._verdict(klass, index, device, expression)
            if miss:
                return miss
        return share_miss(klass.name, device, request.capacity) if request.capacity else None

    def _verdict(self, klass: PoolClass, index: int, device: ClassDevice, expression: str) -> str | None:
        key = (klass.name, index, expression)
        try:
            return self._verdicts[key]
        except KeyError:
            pass
        self.evaluations += 1
        try:
            holds = selector(expression).evaluate(device.device)
            verdict = None if holds else (f"selector {expression!r} is false for class {klass.name}'s device "
                                          f"{device.name}{_values_read(device, expression)}")
        except (CelError, ValueError) as exc:  # an evaluation error, or device data CEL cannot read
            message = exc.message if isinstance(exc, CelError) else str(exc)
            verdict = (f"selector {expression!r} failed for class {klass.name}'s device {device.name}: {message}"
                       f"{_values_read(device, expression)}")
        self._verdicts[key] = verdict
        return verdict


def consumed(klass: PoolClass, device_class: str, count: int, selectors: Sequence[str],
             asked: tuple[tuple[str, str], ...]) -> dict[str, Fraction]:
    """What one pod's request (`count` devices of `device_class`, its selectors, its `capacity.requests`) takes of
    each capacity, by qualified name, over all its devices: on the first of the class's claimed devices it may take
    (greedy, as `Matcher`), a share as the allocator rounds it, or a whole device's every capacity. Empty when no
    device of the class serves it."""
    for device in klass.devices:
        if device.claim != DRA or device.device_class_name != device_class:
            continue
        try:
            if not all(selector(s).evaluate(device.device) for s in selectors):
                continue
        except (CelError, ValueError):
            continue
        if device.shared:  # a share, or with no amount asked what the allocator takes (all, or the default)
            taken = share(amounts(asked), device.driver, device.capacities)[0] or {}
        else:  # claimed whole: a share of it is no request (`share_miss`)
            taken = {} if asked else {name: c.value for name, c in device.capacities.items()}
        return {name: amount * count for name, amount in taken.items()}
    return {}


def share_miss(class_name: str, device: ClassDevice, asked: tuple[tuple[str, str], ...]) -> str | None:
    """Why a share cannot be taken of the class's device whatever is free, or None."""
    if not device.shared:
        return (f"class {class_name}'s device {device.name} does not allow multiple allocations: it is claimed whole, "
                "never shared (remove the request's capacity)")
    _, why = share(amounts(asked), device.driver, device.capacities)
    return f"class {class_name}'s device {device.name} {why}" if why else None


def _values_read(device: ClassDevice, expression: str) -> str:
    """` (capacity memory = 24Gi, attribute productName = NVIDIA L4)`: the values the selector read."""
    shown = []
    for kind, domain, name in device_fields(expression):
        values = device.attributes if kind == "attributes" else device.capacity
        label = "attribute" if kind == "attributes" else "capacity"
        key = next((k for k in values if split_qualified(k, device.driver) == (domain, name)), None)
        qualified = name if domain == device.driver else f"{domain}/{name}"
        shown.append(f"{label} {qualified} = {values[key]}" if key is not None else f"no {label} {qualified}")
    return f" ({', '.join(shown)})" if shown else ""
