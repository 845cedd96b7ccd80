"""What a DRA driver publishes: the shape of its ResourceSlice devices and the DeviceClasses its chart installs.

Each driver module (`nvidia`, `amd`, `cpu`, `dranet`) states, with the upstream file and tag beside
each table, every attribute its kubelet plugin writes (name, type, and whether the value is fixed
by the device model, is one per node, or differs per device), the capacities, the values per device
model, and the DeviceClasses. The simulation publishes exactly that (`published_device`); admission
holds a class to it (`class_problems`): a class describes a device model, in the driver's own
names and value forms.

Keys here are fully qualified (`gpu.nvidia.com/productName`, `resource.kubernetes.io/pciBusID`); a
class's bare key is in its driver's domain.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping

from inferplane.cel.quantity import INT64_MAX, parse_quantity

Attribute = dict[str, Any]  # one of {"string": s}, {"version": v}, {"bool": b}, {"int": i}
# The ResourceSlice's standard attributes (k8s.io/dynamic-resource-allocation/deviceattribute).
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
NUMA_NODE = "resource.kubernetes.io/numaNode"


class Varies(str, Enum):
    MODEL = "model"  # fixed by the device model: the model's table says it; a class may state it, equal
    NODE = "node"  # one value per node (the host's driver): a class may state it, else the default
    DEVICE = "device"  # differs per device of a node (identity, placement): never stated by a class


@dataclass(frozen=True)
class AttributeSpec:
    name: str  # qualified
    type: str  # string, version, bool or int
    varies: Varies
    # Published only when the class states it: the driver omits it unless the host provides it.
    optional: bool = False


@dataclass(frozen=True)
class DeviceModel:
    """One device model as the driver reports it."""

    name: str
    attributes: Mapping[str, Attribute]  # the MODEL attributes, qualified
    capacity: Mapping[str, str]  # qualified


@dataclass(frozen=True)
class DeviceClassSpec:
    """A DeviceClass as the driver's chart installs it."""

    name: str
    selectors: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class SliceDevice:
    name: str
    attributes: dict[str, Attribute]  # qualified
    capacity: dict[str, str]  # qualified


# (node, index of the device on the node, devices of its kind on the node, model) ->
# (device name, the DEVICE attributes)
Identity = Callable[[str, int, int, DeviceModel], tuple[str, dict[str, Attribute]]]
# (node, index of the device on the node) -> the DEVICE attributes derived from the node's name (qualified)
NodeIdentity = Callable[[str, int], dict[str, Attribute]]


@dataclass(frozen=True)
class DriverSlices:
    """The ResourceSlice devices one DRA driver publishes."""

    driver: str
    source: str  # the upstream file and tag the attribute list is read from
    attributes: tuple[AttributeSpec, ...]
    capacities: tuple[str, ...]  # qualified
    models: tuple[DeviceModel, ...]  # the first is simulated when a class names none
    identity: Identity
    device_classes: tuple[DeviceClassSpec, ...]
    # Attributes that name a model (productName, deviceID): a class naming one is that model.
    model_keys: tuple[str, ...] = ()
    node_defaults: Mapping[str, Attribute] = field(default_factory=dict)
    # Whether the driver writes its own attributes qualified (dra.cpu/numCPUs) rather than bare.
    qualifies_own_keys: bool = False
    allow_multiple_allocations: bool = False
    # A model made from the class's capacities (the CPU driver's device is the node's CPUs), when
    # the driver has no fixed table.
    model_from_capacity: Callable[[Mapping[str, str]], DeviceModel] | None = None
    # The driver's spelling of a model-naming value a class wrote another way, if there is one.
    spelled: Callable[[str, str], str | None] = lambda key, value: None
    # The part of `identity` derived from the node's name (an NVIDIA GPU's uuid), which a simulation moved
    # to another node's name derives again (`renamed_attributes`).
    node_identity: NodeIdentity | None = None

    def spec(self, key: str) -> AttributeSpec | None:
        return next((a for a in self.attributes if a.name == key), None)

    def qualified(self, key: str) -> str:
        return key if "/" in key else f"{self.driver}/{key}"

    def class_key(self, key: str) -> str:
        """A qualified key as a class writes it: bare within the driver's domain."""
        domain, _, name = key.rpartition("/")
        return name if domain == self.driver else key

    def spelled_key(self, key: str) -> str:
        """A qualified key as the driver writes it in a slice: bare within its own domain, unless it qualifies."""
        domain, _, name = key.rpartition("/")
        return name if domain == self.driver and not self.qualifies_own_keys else key

    def model(self, attributes: Mapping[str, Attribute], capacity: Mapping[str, str]) -> DeviceModel | None:
        """The model a class's (qualified) attributes and capacities describe: the one its model-naming
        attributes name, else the first whose values are all the class states (the first model when it
        states none); None when there is no such model."""
        if self.model_from_capacity is not None:
            return self.model_from_capacity(capacity)
        named = [(k, attributes[k]) for k in self.model_keys if k in attributes]
        candidates = [m for m in self.models if all(m.attributes.get(k) == v for k, v in named)]
        if named:
            return candidates[0] if candidates else None
        agreeing = [m for m in candidates if self._agrees(m, attributes, capacity)]
        exact = [m for m in agreeing if all(_quantity(m.capacity[k]) == _quantity(v) for k, v in capacity.items())]
        if exact or not agreeing:
            return exact[0] if exact else None
        # Stated below what the driver reports (a floor): the model that reports the least above it.
        return min(agreeing, key=lambda m: tuple(_quantity(m.capacity[k]) for k in sorted(capacity)))

    def _agrees(self, model: DeviceModel, attributes: Mapping[str, Attribute], capacity: Mapping[str, str]) -> bool:
        """The model has every per-model attribute the class states, and at least every capacity: a class
        may advertise a capacity below what the driver reports, as Modelplane's H200 classes state memory
        140Gi "below the ~141 GiB the driver reports" (its docs/manifests/examples/kimi-k2)."""
        model_attributes = {k: v for k, v in attributes.items()
                            if (s := self.spec(k)) is not None and s.varies is Varies.MODEL}
        return (all(model.attributes.get(k) == v for k, v in model_attributes.items())
                and all(k in model.capacity and not isinstance(_quantity(v), str)
                        and _quantity(model.capacity[k]) >= _quantity(v) for k, v in capacity.items()))

    def device(self, node: str, index: int, count: int, attributes: Mapping[str, Attribute],
               capacity: Mapping[str, str]) -> SliceDevice:
        """The device the driver publishes for the `index`th of `count` devices of a class on `node`
        (the class's qualified attributes and capacities, as admission let them through)."""
        model = self.model(attributes, capacity) or self.models[0]
        name, identity = self.identity(node, index, count, model)
        node_level = {k: v for k, v in self.node_defaults.items()}
        node_level.update({k: v for k, v in attributes.items()
                           if (s := self.spec(k)) is not None and s.varies is Varies.NODE})
        return SliceDevice(name, {**model.attributes, **node_level, **identity}, dict(model.capacity))

    def renamed_attributes(self, attributes: Mapping[str, Attribute], old: str, new: str,
                           index: int) -> dict[str, Attribute] | None:
        """A published device's attributes (as spelled in a slice) with what `node_identity` derived from node
        `old` derived from `new` instead; None when there is nothing to change."""
        if self.node_identity is None:
            return None
        before, after = self.node_identity(old, index), self.node_identity(new, index)
        changed = {self.spelled_key(k): after[k] for k, v in before.items()
                   if attributes.get(self.spelled_key(k)) == v and after.get(k) != v}
        return {**attributes, **changed} if changed else None

    def device_class_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.device_classes)

    # ---- a class held to the driver

    def class_problems(self, path: str, attributes: Mapping[str, Attribute],
                       capacity: Mapping[str, str]) -> list[tuple[str, str]]:
        """Every way a class device's attributes (`{key: {type: value}}`, keys as written) and capacities
        (`{key: quantity}`) differ from what this driver publishes: (field path, message)."""
        problems, typed, written, unnamed = self._attribute_problems(path, attributes)
        capacity_problems, capacities, capacity_written = self._capacity_problems(path, capacity)
        problems += capacity_problems
        written.update(capacity_written)
        if unnamed:
            return problems  # a model-naming attribute was refused: the model is unknown, so is what it publishes
        model = self.model(typed, capacities)
        if model is None:
            return problems + [self._no_such_model(path, typed, capacities)]
        return problems + self._model_mismatches(path, model, typed, capacities, written)

    def _attribute_problems(self, path: str, attributes: Mapping[str, Attribute]
                            ) -> tuple[list[tuple[str, str]], dict[str, Attribute], dict[str, str], bool]:
        """(problems, the attributes the driver publishes by qualified key, the key each was written as,
        whether a model-naming attribute was refused) of a class device's attributes."""
        problems: list[tuple[str, str]] = []
        unnamed = False
        typed: dict[str, Attribute] = {}
        written: dict[str, str] = {}  # qualified key -> the key as the class wrote it
        published = ", ".join(sorted(a.name for a in self.attributes))
        for key, value in attributes.items():
            q, at = self.qualified(key), f"{path}.attributes.{key}"
            spec = self.spec(q)
            if spec is None:
                problems.append((at, f"the {self.driver} driver publishes no attribute {q}: it publishes {published} "
                                     f"({self.source})"))
                continue
            ((kind, raw),) = value.items() if len(value) == 1 else ((None, None),)
            if kind != spec.type:
                problems.append((at, f"the {self.driver} driver publishes {q} as {spec.type}: write "
                                     f"{{{spec.type}: ...}}"))
                continue
            if spec.varies is Varies.DEVICE:
                problems.append((at, f"{q} differs from device to device on a node, so a class cannot state it: "
                                     "select on it in a deployment's device selectors instead"))
                continue
            if q in self.model_keys:
                spelled = self.spelled(q, raw)
                if spelled is not None and spelled != raw:
                    problems.append((at, f"the {self.driver} driver publishes {q} as {spelled!r}, not {raw!r}: "
                                         f"use {spelled}"))
                    unnamed = True
                    continue
            typed[q], written[q] = {kind: raw}, key
        return problems, typed, written, unnamed

    def _capacity_problems(self, path: str, capacity: Mapping[str, str]
                           ) -> tuple[list[tuple[str, str]], dict[str, str], dict[str, str]]:
        """(problems, the countable capacities the driver publishes by qualified key, the key each was
        written as) of a class device's capacities."""
        problems: list[tuple[str, str]] = []
        capacities: dict[str, str] = {}
        written: dict[str, str] = {}
        for key, value in capacity.items():
            q, at = self.qualified(key), f"{path}.capacity.{key}.value"
            if q not in self.capacities:
                problems.append((at, f"the {self.driver} driver publishes no capacity {q}: it publishes "
                                     f"{', '.join(self.capacities) or 'none'} ({self.source})"))
            elif isinstance(_quantity(str(value)), str) or not 0 <= _quantity(str(value)) <= INT64_MAX:
                continue  # not a quantity the engine can count: the capacity checks say so
            else:
                capacities[q], written[q] = str(value), key
        return problems, capacities, written

    def _no_such_model(self, path: str, typed: Mapping[str, Attribute], capacities: Mapping[str, str]
                       ) -> tuple[str, str]:
        """The class states a model the driver has none of: what it stated, and every model's."""
        stated = [f"{k.rpartition('/')[2]} {next(iter(v.values()))!r}" for k, v in typed.items()
                  if (s := self.spec(k)) is not None and s.varies is Varies.MODEL]
        stated += [f"{k.rpartition('/')[2]} {v}" for k, v in capacities.items()]
        known = "; ".join(f"{m.name} (" + ", ".join(
            f"{k.rpartition('/')[2]} {next(iter(v.values()))!r}" for k, v in m.attributes.items()
            if k in self.model_keys or k.endswith("/architecture")) +
            "".join(f", {k.rpartition('/')[2]} {v}" for k, v in m.capacity.items()) + ")" for m in self.models)
        return (f"{path}.attributes", f"no {self.driver} model inferplane knows has {', '.join(stated)}: the driver "
                                      f"publishes, per model, {known} ({self.source}); state one of these")

    def _model_mismatches(self, path: str, model: DeviceModel, typed: Mapping[str, Attribute], capacities: Mapping[str, str],
                          written: Mapping[str, str]) -> list[tuple[str, str]]:
        """What the class states of its model that the driver publishes otherwise."""
        problems: list[tuple[str, str]] = []
        for q, value in typed.items():
            spec = self.spec(q)
            if spec is not None and spec.varies is Varies.MODEL and model.attributes.get(q) != value:
                want = model.attributes.get(q)
                problems.append((f"{path}.attributes.{written[q]}",
                                 f"the {self.driver} driver publishes {q} = {_shown(want)} for {model.name}, "
                                 f"not {_shown(value)}: write {_shown(want)} or leave it out"
                                 if want is not None else
                                 f"the {self.driver} driver publishes no {q} for {model.name}: leave it out"))
        for q, value in capacities.items():
            want, key = model.capacity.get(q), written[q]
            if want is None:
                problems.append((f"{path}.capacity.{key}.value",
                                 f"the {self.driver} driver publishes no {q} for {model.name}: leave it out"))
            elif _quantity(value) > _quantity(want):
                problems.append((f"{path}.capacity.{key}.value",
                                 f"the {self.driver} driver reports {q} as {want} for {model.name}, not {value}: "
                                 f"write {want}, or leave it out"))
        return problems

    def understated(self, attributes: Mapping[str, Attribute], capacity: Mapping[str, str]
                    ) -> list[tuple[str, str, str, str]]:
        """The capacities a class states below what the driver reports for its model, which placement and
        the simulation read as reported: (qualified key, stated, reported, model)."""
        model = self.model(attributes, capacity)
        if model is None:
            return []
        return [(q, value, model.capacity[q], model.name) for q, value in sorted(capacity.items())
                if q in model.capacity and not isinstance(_quantity(value), str)
                and _quantity(value) < _quantity(model.capacity[q])]


def _shown(value: Attribute | None) -> str:
    return "nothing" if not value else repr(next(iter(value.values())))


def _quantity(value: str) -> Any:
    try:
        return parse_quantity(value)
    except ValueError:
        return value


def pci_address(bus: int) -> str:
    """A PCI address in extended BDF notation, as deviceattribute.GetPCIBusIDAttribute writes it."""
    return f"0000:{bus:02x}:00.0"


def pcie_root(bus: int) -> str:
    """The PCIe root complex a device on `bus` sits under, as deviceattribute writes it (pci<domain>:<bus>)."""
    return f"pci0000:{bus:02x}"


def stable_uuid(node: str, index: int) -> str:
    """A stable UUID-shaped identity for a simulated device."""
    h = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def numa_of(index: int, count: int) -> int:
    """The NUMA node of the `index`th of `count` like devices on a two-socket server (one socket: 0)."""
    return 0 if count < 2 else index * 2 // count


def typed_attribute(value: Any) -> Attribute:
    """A class attribute (an AttributeValue) in the ResourceSlice's typed form."""
    for field_name, key in (("string", "string"), ("version", "version"), ("bool_", "bool"), ("int_", "int")):
        v = getattr(value, field_name)
        if v is not None:
            return {key: v}
    raise ValueError("attribute has no value")
