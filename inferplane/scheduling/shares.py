"""Shares of a device: DRA consumable capacity, as kube-scheduler's allocator counts it.

Kubernetes 1.34 added consumable capacity to `resource.k8s.io/v1` (KEP-5075, feature
`DRAConsumableCapacity`, beta and on by default from 1.36). What follows is read from
kubernetes/kubernetes `staging/src/k8s.io/api/resource/v1/types.go` (Device.AllowMultipleAllocations,
DeviceCapacity, CapacityRequestPolicy, CapacityRequirements) and the allocator's
`staging/src/k8s.io/dynamic-resource-allocation/structured/internal/experimental/consumable_capacity.go`
(master as stored, commit 0c8a1b07; the functions named below):

- A device with `allowMultipleAllocations: true` may be allocated to several claims at once; each
  takes a share of every capacity it publishes. A device without it is allocated whole, to one claim.
- What a request consumes of one capacity (`calculateConsumedQuantity`): when the request names no
  amount, the policy's `default`, or without one the whole capacity (`fillEmptyRequestQuantity`);
  an amount without a policy, as asked; with `validRange`, `min` when below it, else rounded up to
  `min + k * step` (`roundUpRange`); with `validValues`, the smallest valid value at least the amount
  (`roundUpValidValues`).
- The rounded amount violates the policy (`violatesPolicy`) unless it equals the default, when it is
  over `validRange.max`, off the step, or not one of `validValues`; then the device does not fit.
- The device fits when, for every capacity it publishes, what claims already consume plus this
  share is at most its value (`cmpRequestOverCapacity`). A request naming a capacity the device does
  not publish does not fit it (`resolveCapacityRequests`). A bare name is in the driver's domain, and
  `cpu` and `dra.cpu/cpu` name the same capacity (`resolveCapacityName`).

The fleet scheduler counts a pool's room with `PoolRoom`, the cluster simulation a node's devices with
`consume`; admission says why a request cannot be served with `share_refusal`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence

from inferplane.cel.quantity import NANO, format_quantity, parse_quantity

# ---- one capacity of one device


@dataclass(frozen=True)
class RequestPolicy:
    """DRA's CapacityRequestPolicy, its quantities parsed."""

    default: Fraction | None = None
    min: Fraction | None = None
    max: Fraction | None = None
    step: Fraction | None = None
    valid_values: tuple[Fraction, ...] = ()

    @classmethod
    def of(cls, spec: Mapping[str, Any] | None) -> RequestPolicy | None:
        """A policy as a ResourceSlice (or a class) writes it, camelCase; None for none."""
        if not spec:
            return None
        valid_range = spec.get("validRange") or {}

        def amount(value: Any) -> Fraction | None:
            return None if value is None else parse_quantity(value)

        return cls(amount(spec.get("default")), amount(valid_range.get("min")), amount(valid_range.get("max")),
                   amount(valid_range.get("step")), tuple(parse_quantity(v) for v in spec.get("validValues") or ()))

    def rounded(self, asked: Fraction) -> Fraction:
        """`asked` rounded up as the allocator rounds it (roundUpRange, roundUpValidValues)."""
        if self.min is not None:
            if asked < self.min:
                return self.min
            if self.step:
                steps = -((self.min - asked) // self.step)  # ceil((asked - min) / step)
                return self.min + steps * self.step
            return asked
        return next((v for v in self.valid_values if asked <= v), asked)

    def refusal(self, amount: Fraction) -> str | None:
        """Why the (rounded) amount violates the policy (violatesPolicy), or None."""
        if self.default is not None and amount == self.default:
            return None
        if self.min is not None:
            if self.max is not None and amount > self.max:
                return f"more than the policy's maximum {format_quantity(self.max)}"
            if self.step and (amount - self.min) % self.step:
                return f"not {format_quantity(self.min)} plus a whole number of steps of {format_quantity(self.step)}"
        elif self.valid_values and amount not in self.valid_values:
            return f"more than the largest of the policy's values {', '.join(map(format_quantity, self.valid_values))}"
        return None


@dataclass(frozen=True)
class Capacity:
    value: Fraction
    policy: RequestPolicy | None = None

    def consumed(self, asked: Fraction | None) -> Fraction:
        """What a request takes of this capacity (calculateConsumedQuantity)."""
        if asked is None:
            return self.policy.default if self.policy and self.policy.default is not None else self.value
        return asked if self.policy is None else self.policy.rounded(asked)


def qualified(name: str, driver: str) -> str:
    """A capacity's fully qualified name: a bare one is in the driver's domain."""
    return name if "/" in name else f"{driver}/{name}"


def capacities_of(driver: str, published: Mapping[str, Mapping[str, Any]]) -> dict[str, Capacity]:
    """A device's capacities as a ResourceSlice or a class writes them ({name: {value, requestPolicy}}),
    by qualified name."""
    return {qualified(name, driver): Capacity(parse_quantity(c["value"]), RequestPolicy.of(c.get("requestPolicy")))
            for name, c in published.items()}


def share(asked: Mapping[str, Fraction], driver: str, capacities: Mapping[str, Capacity]
          ) -> tuple[dict[str, Fraction] | None, str]:
    """What a request asking `asked` (by any spelling of the capacities' names) takes of each capacity
    of one device, or None and why the device cannot serve it whatever is free."""
    wanted = {qualified(name, driver): amount for name, amount in asked.items()}
    unknown = sorted(set(wanted) - set(capacities))
    if unknown:
        offered = ", ".join(sorted(capacities)) or "none"
        return None, f"publishes no capacity {', '.join(unknown)} (it has {offered})"
    taken = {}
    for name, capacity in sorted(capacities.items()):
        amount = capacity.consumed(wanted.get(name))
        why = capacity.policy.refusal(amount) if capacity.policy else None
        if why:
            return None, f"{name}: {format_quantity(wanted[name])} rounds to {format_quantity(amount)}, {why}"
        if amount > capacity.value:
            return None, (f"{name}: {format_quantity(amount)} asked, more than the device has "
                          f"({format_quantity(capacity.value)})")
        taken[name] = amount
    return taken, ""


def amounts(requests: Iterable[tuple[str, str]]) -> dict[str, Fraction]:
    """A request's `capacity.requests`, parsed."""
    return {name: parse_quantity(value) for name, value in requests}


# ---- devices in use: what is left of each


def left_after(capacities: Mapping[str, Capacity], used: Mapping[str, Fraction]) -> dict[str, Fraction]:
    return {name: c.value - used.get(name, 0) for name, c in capacities.items()}


def fits(taken: Mapping[str, Fraction], left: Mapping[str, Fraction]) -> bool:
    return all(amount <= left[name] for name, amount in taken.items())


def describe_left(left: Mapping[str, Fraction], capacities: Mapping[str, Capacity]) -> str:
    """`dra.cpu/cpu 2 of 32 free`."""
    return ", ".join(f"{name} {format_quantity(max(left[name], 0))} of {format_quantity(c.value)} free"
                     for name, c in sorted(capacities.items()))


# ---- a pool's room in the fleet scheduler


@dataclass(frozen=True)
class SharedDevice:
    """A class device that allows multiple allocations, as the pool's every node has it: `count`
    instances, each with these capacities (qualified names)."""

    device_class_name: str
    driver: str
    count: int
    capacities: Mapping[str, Capacity]
    # What each distinct ask takes of one instance (`share`), worked out once per class.
    taken: dict[tuple[tuple[str, str], ...], dict[str, int] | None] = field(
        default_factory=dict, compare=False, hash=False, repr=False)
    # The first shared device of a class keeps, over all of them, the pods' plans (`PoolRoom._plan`) and what
    # pods leave of a pool nothing runs on yet (`PoolRoom.take`): equal rooms of one class answer alike.
    plans: dict[PodAsk, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    fresh_after: dict[tuple[int, tuple[PodAsk, ...]], Any] = field(default_factory=dict, compare=False, hash=False,
                                                                   repr=False)

    @functools.cached_property
    def units(self) -> dict[str, int]:
        """Each capacity of one instance in nano units: a room counts in integers (quantities are exact to 1n)."""
        return {name: _units(c.value) for name, c in self.capacities.items()}

    @functools.cached_property
    def whole(self) -> int:
        """Every capacity of every instance on one node, summed: a fresh node's share of the pool's total."""
        return sum(self.units.values()) * self.count

    def share_of(self, asked: tuple[tuple[str, str], ...]) -> dict[str, int] | None:
        """What the ask takes of one instance, in nano units; None when no instance can give it."""
        if asked not in self.taken:
            taken = share(amounts(asked), self.driver, self.capacities)[0]
            self.taken[asked] = None if taken is None else {name: _units(v) for name, v in taken.items()}
        return self.taken[asked]


def _units(amount: Fraction) -> int:
    return int(amount * NANO)


def _amount(units: int) -> str:
    return format_quantity(Fraction(units, NANO))


@dataclass(frozen=True)
class PodAsk:
    """What one pod of a member claims on a pool: each request (device class, devices, capacity asked)."""

    requests: tuple[tuple[str, int, tuple[tuple[str, str], ...]], ...]


class PoolRoom:
    """The room left on a pool whose class has shared devices: nodes nothing runs on, and what is left
    of every shared device on the nodes shares use. A pod claiming a device that is not shared takes a
    node of its own (as on any pool); one claiming only shared devices takes its shares from the first
    node where they fit (packing, as the allocator fills a device before the next), else a fresh node.
    Taking returns a new room: a trial never changes the room it started from."""

    __slots__ = ("fresh", "nodes", "devices", "_after", "_free")

    def __init__(self, fresh: int, devices: tuple[SharedDevice, ...],
                 nodes: tuple[tuple[tuple[dict[str, int], ...], ...], ...] = ()):
        self.fresh = fresh  # nodes nothing runs on
        self.devices = devices
        # Per node in use by shares: per shared device, per instance, what is left of each capacity (nano units).
        self.nodes = nodes
        # A room never changes: what taking pods leaves, and what is free, are kept once worked out
        # (a pass asks both several times: the filter, the charge, the score).
        self._after: dict[tuple[PodAsk, ...], PoolRoom | None] = {}
        self._free: tuple[int, int] | None = None

    def take(self, pods: Iterable[PodAsk]) -> PoolRoom | None:
        """The room after these pods, or None when one does not fit."""
        key = tuple(pods)
        if key not in self._after:
            shared = self.devices[0].fresh_after if not self.nodes else None
            if shared is not None and (self.fresh, key) in shared:
                self._after[key] = shared[self.fresh, key]
                return self._after[key]
            room: PoolRoom | None = self
            for pod in key:
                room = room._take_pod(pod) if room is not None else None
            self._after[key] = room
            if shared is not None:
                shared[self.fresh, key] = room
        return self._after[key]

    def _take_pod(self, pod: PodAsk) -> PoolRoom | None:
        plan = self._plan(pod)
        if plan is None:  # a device that is not shared: a node of its own
            return PoolRoom(self.fresh - 1, self.devices, self.nodes) if self.fresh > 0 else None
        for n, node in enumerate(self.nodes):
            after = _take_on_node(node, plan)
            if after is not None:
                return PoolRoom(self.fresh, self.devices, self.nodes[:n] + (after,) + self.nodes[n + 1:])
        if self.fresh <= 0:
            return None
        after = _take_on_node(self._fresh_node(), plan)
        return None if after is None else PoolRoom(self.fresh - 1, self.devices, self.nodes + (after,))

    def _plan(self, pod: PodAsk) -> list[tuple[int, int, dict[str, int]]] | None:
        """(shared device, instances, what each takes) per request; None when a request is not on a shared
        device, or asks what no device of it can give (the caller then finds no room)."""
        plans = self.devices[0].plans
        if pod in plans:
            return plans[pod]
        plans[pod] = plan = self._planned(pod)
        return plan

    def _planned(self, pod: PodAsk) -> list[tuple[int, int, dict[str, int]]] | None:
        plan = []
        for device_class, count, asked in pod.requests:
            d = next((i for i, s in enumerate(self.devices) if s.device_class_name == device_class), None)
            if d is None:
                return None
            taken = self.devices[d].share_of(asked)
            plan.append((d, count, taken if taken is not None else {"": 1}))
        return plan

    def _fresh_node(self) -> tuple[tuple[dict[str, int], ...], ...]:
        return tuple(tuple(dict(s.units) for _ in range(s.count)) for s in self.devices)

    def charge(self, pods: Iterable[PodAsk]) -> PoolRoom:
        """The room after pods that already run here, each as it fits; one that fits nowhere (a pool
        changed under it) takes a fresh node, or nothing when none is left."""
        room = self
        for pod in pods:
            room = room._take_pod(pod) or (PoolRoom(room.fresh - 1, room.devices, room.nodes) if room.fresh > 0
                                           else room)
        return room

    def full(self) -> PoolRoom:
        """This pool with nothing left."""
        return PoolRoom(0, self.devices, tuple(tuple(tuple({name: 0 for name in left} for left in device)
                                                     for device in node) for node in self.nodes))

    def free(self) -> tuple[int, int]:
        """(left, total) of every shared capacity over the pool's nodes, in nano units: what a packing score reads."""
        if self._free is None:
            whole = sum(s.whole for s in self.devices)
            left = whole * self.fresh + sum(sum(instance.values()) for node in self.nodes
                                            for device in node for instance in device)
            self._free = (left, whole * (self.fresh + len(self.nodes)))
        return self._free

    def left(self, d: int) -> dict[str, tuple[int, int, int]]:
        """Per capacity of shared device `d`, in nano units: (left over the pool, the pool's total, the most
        left on one device), the pool's fresh nodes counted whole."""
        s = self.devices[d]
        nodes = self.fresh + len(self.nodes)
        out = {}
        for name, value in s.units.items():
            lefts = [instance[name] for node in self.nodes for instance in node[d]]
            most = value if self.fresh else max(lefts, default=0)
            out[name] = (value * s.count * self.fresh + sum(lefts), value * s.count * nodes, most)
        return out

    def describe(self) -> list[str]:
        """Used and free per shared device kind of the pool, and how much each device has left (fresh nodes'
        devices unused): what `why` and `describe` show."""
        lines = []
        for d, s in enumerate(self.devices):
            for name, (left, total, _) in sorted(self.left(d).items()):
                devices = s.count * (self.fresh + len(self.nodes))
                spread: dict[int, int] = {}
                for node in self.nodes:
                    for instance in node[d]:
                        spread[instance[name]] = spread.get(instance[name], 0) + 1
                if self.fresh:
                    spread[s.units[name]] = spread.get(s.units[name], 0) + s.count * self.fresh
                each = ", ".join(f"{count} with {_amount(free)} free" for free, count in sorted(spread.items()))
                lines.append(f"{s.device_class_name} {name}: {_amount(total - left)} used, "
                             f"{_amount(left)} free of {_amount(total)} over {devices} "
                             f"device{'s' if devices != 1 else ''} ({each})")
        return lines

    def refusal(self, pods: Sequence[PodAsk]) -> str | None:
        """Why these pods do not fit, naming the capacity left; None when they do."""
        if not pods or self.take(pods) is not None:
            return None
        asked = "; ".join(f"{', '.join(f'{k} {v}' for k, v in req) or 'the whole'} of "
                          f"{'one' if count == 1 else count} {device_class} device{'s' if count != 1 else ''}"
                          for device_class, count, req in pods[0].requests)
        left = "; ".join(f"{name} {_amount(free)} of {_amount(total)} free over the pool "
                         f"(at most {_amount(most)} on one device)"
                         for d in range(len(self.devices)) for name, (free, total, most) in sorted(self.left(d).items()))
        nodes = self.fresh + len(self.nodes)
        pods_asking = "a pod asking" if len(pods) == 1 else f"{len(pods)} pods each asking"
        return (f"{pods_asking} {asked} {'does' if len(pods) == 1 else 'do'} not fit: {left}; "
                f"{self.fresh} of {nodes} nodes unused")


def _take_on_node(node: tuple[tuple[dict[str, int], ...], ...], plan: list[tuple[int, int, dict[str, int]]]
                  ) -> tuple[tuple[dict[str, int], ...], ...] | None:
    devices = [list(instances) for instances in node]
    for d, count, taken in plan:
        if "" in taken:
            return None
        for _ in range(count):
            i = next((i for i, left in enumerate(devices[d]) if fits(taken, left)), None)
            if i is None:
                return None
            devices[d][i] = {name: left - taken.get(name, 0) for name, left in devices[d][i].items()}
    return tuple(tuple(instances) for instances in devices)
