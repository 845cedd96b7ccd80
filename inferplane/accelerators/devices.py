"""What a DRA driver publishes: the shape of its ResourceSlice devices and the DeviceClasses its chart installs.

Each driver module (`nvidia`, `amd`, `cpu`, `dranet`, `gaudi`, `tpu`, `neuron`) states, with the upstream file and tag beside
each table, every attribute its kubelet plugin writes (name, type, and whether the value is fixed
by the device model, is one per node, or differs per device), the capacities, the values per device
model (each value cited, or marked unconfirmed), and the DeviceClasses. The simulation publishes a known
model as the driver reports it and a model the table lacks as the class states it (`DriverSlices.device`);
admission refuses only what the driver never publishes and advises on the rest (`class_devices`).

Keys here are fully qualified (`gpu.nvidia.com/productName`, `resource.kubernetes.io/pciBusID`); a
class's bare key is in its driver's domain.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Callable, Mapping

from inferplane.api.cloud import MachineGpu
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
    # One value per node that the driver derives from the node itself (the TPU driver's uuid, seeded by the
    # node's name; EC2's network-topology ids of a Neuron instance): never stated by a class, and every device
    # of the node carries the same one.
    NODE_IDENTITY = "node identity"


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
    # The keys (qualified) whose value here no source confirms: a class stating another value is believed,
    # published and never warned of.
    unconfirmed: frozenset[str] = frozenset()


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


@dataclass(frozen=True)
class Identified:
    """What a class's device is, as far as its driver's table knows: the model (None: one the table lacks),
    how it was told, and the model-naming attributes the machine gives it (a model the table lacks)."""

    model: DeviceModel | None
    by: str
    named: Mapping[str, Attribute] = field(default_factory=dict)


# (node, index of the device on the node, devices of its kind on the node, model) ->
# (device name, the DEVICE attributes)
Identity = Callable[[str, int, int, DeviceModel], tuple[str, dict[str, Attribute]]]
# (node, index of the device on the node) -> the DEVICE attributes derived from the node's name (qualified)
NodeIdentity = Callable[[str, int], dict[str, Attribute]]
# (qualified key, value as written) -> why the driver never publishes that value there; None: it may
ValueProblem = Callable[[str, Any], str | None]


@dataclass(frozen=True)
class DriverSlices:
    """The ResourceSlice devices one DRA driver publishes.

    A class's device is open: it may state any attribute the driver publishes, in the driver's type, with
    any value, and any capacity the driver publishes. Its model is known from the machine the class
    provisions (the cloud's table), else from the model-naming attributes it states; a known model is
    published as the driver reports it, a model the table lacks as the class states it. Only what the
    driver never publishes is refused (a name, a type, a value form, a value its DeviceClass excludes)."""

    driver: str
    source: str  # the upstream file and tag the attribute list is read from
    attributes: tuple[AttributeSpec, ...]
    capacities: tuple[str, ...]  # qualified
    models: tuple[DeviceModel, ...]  # the models inferplane knows, each cited
    identity: Identity
    device_classes: tuple[DeviceClassSpec, ...]
    # Attributes that name a model (productName, deviceID), in the order a model is looked up by them.
    model_keys: tuple[str, ...] = ()
    # The attribute a cloud machine's GPU is named by (its productName), for a GPU driver.
    product_key: str | None = None
    node_defaults: Mapping[str, Attribute] = field(default_factory=dict)
    # What every device of the driver's DeviceClass has, whatever its model (its `type`), published for a
    # model the table lacks too; `pinned` are those the DeviceClass's selector requires, so a class stating
    # another value can never be allocated through it and is refused.
    common: Mapping[str, Attribute] = field(default_factory=dict)
    pinned: Mapping[str, Attribute] = field(default_factory=dict)
    # The one model the driver's DeviceClass admits, where it admits one (DRANET's EFA).
    class_model: DeviceModel | None = None
    # Whether the driver writes its own attributes qualified (dra.cpu/numCPUs) rather than bare.
    qualifies_own_keys: bool = False
    allow_multiple_allocations: bool = False
    # A model made from the class's capacities (the CPU driver's device is the node's CPUs), when
    # the driver has no fixed table.
    model_from_capacity: Callable[[Mapping[str, str]], DeviceModel] | None = None
    # A value form the driver never produces (AMD's productName with a space), with the form it does.
    value_problem: ValueProblem = lambda key, value: None
    # The part of `identity` derived from the node's name (an NVIDIA GPU's uuid), which a simulation moved
    # to another node's name derives again (`renamed_attributes`).
    node_identity: NodeIdentity | None = None
    # The attribute that tells a driver's kinds of device on one node apart (Neuron's resourceType:
    # `neuron_device` and an UltraServer's `neuron_node`): each kind is named and counted on its own
    # (`index`/`count` in `identity` are within the kind). None: one kind.
    kind_key: str | None = None
    # The kind a device that states none is (Neuron's `neuron_device`): the machine's devices, counted by its table.
    primary_kind: str | None = None
    # The node-level values that follow from how many devices of its kind a node has (the TPU driver's chipCount
    # and single-host topology), under what the class states.
    count_defaults: Callable[[int], Mapping[str, Attribute]] | None = None

    def kind_of(self, attributes: Mapping[str, Attribute]) -> Any:
        """The kind a class device's (qualified) attributes state (None: the driver's first, or only, kind)."""
        if self.kind_key is None:
            return None
        value = attributes.get(self.kind_key)
        return self.primary_kind if value is None else next(iter(value.values()))

    def is_primary(self, attributes: Mapping[str, Attribute]) -> bool:
        return self.kind_of(attributes) == self.primary_kind

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

    def varies(self, key: str, how: Varies) -> bool:
        spec = self.spec(key)
        return spec is not None and spec.varies is how

    def per_device_or_node(self, key: str) -> bool:
        """Whether no class can state the key: it differs per device, or the node derives it itself."""
        return self.varies(key, Varies.DEVICE) or self.varies(key, Varies.NODE_IDENTITY)

    # ---- which model a class's device is

    def identify(self, attributes: Mapping[str, Attribute], machine: MachineGpu | None = None) -> Identified:
        """The model of a class device with these (qualified) attributes on `machine`: the machine's GPU first
        (where it is this driver's), then the first model-naming attribute stated that names a model; never
        a model guessed from other values. A DeviceClass that admits one model makes it that model."""
        if self.class_model is not None:
            return Identified(self.class_model, f"the only model DeviceClass {self.device_classes[0].name} admits")
        if machine is not None and machine.driver == self.driver and self.product_key:
            product = {"string": machine.product}
            model = next((m for m in self.models if m.attributes.get(self.product_key) == product), None)
            return Identified(model, f"the GPU of {machine.machine}", {} if model else {self.product_key: product})
        stated = [(k, attributes[k]) for k in self.model_keys if k in attributes]
        for key, value in stated:
            model = next((m for m in self.models if m.attributes.get(key) == value), None)
            if model is not None:
                return Identified(model, f"{short(key)} {shown(value)}")
        return Identified(None, ", ".join(f"{short(k)} {shown(v)}" for k, v in stated))

    def model(self, attributes: Mapping[str, Attribute], capacity: Mapping[str, str],
              machine: MachineGpu | None = None) -> DeviceModel:
        """The model published for a class device: the known one, with what the class states where the table's
        value is unconfirmed; else the class's own statement (the driver's common values, the model-naming
        attributes its machine gives, its model attributes and countable capacities)."""
        if self.model_from_capacity is not None:
            return self.model_from_capacity(capacity)
        identified = self.identify(attributes, machine)
        counted = {k: v for k, v in capacity.items() if k in self.capacities and countable(v)}
        known = identified.model
        if known is not None:
            if not known.unconfirmed:
                return known
            return replace(known, attributes={**known.attributes, **{
                k: v for k, v in attributes.items() if k in known.unconfirmed and self.varies(k, Varies.MODEL)}},
                capacity={**known.capacity, **{k: v for k, v in counted.items() if k in known.unconfirmed}})
        stated = {k: v for k, v in attributes.items() if self.varies(k, Varies.MODEL)}
        named = next((shown(v) for k in self.model_keys
                      if (v := identified.named.get(k) or stated.get(k)) is not None), "")
        return DeviceModel(named.strip("'"), {**self.common, **self.pinned, **stated, **identified.named}, counted)

    def device(self, node: str, index: int, count: int, attributes: Mapping[str, Attribute],
               capacity: Mapping[str, str], machine: MachineGpu | None = None) -> SliceDevice:
        """The device the driver publishes for the `index`th of `count` devices of a class on `node`
        (the class's qualified attributes and capacities, as admission let them through) on `machine`."""
        model = self.model(attributes, capacity, machine)
        name, identity = self.identity(node, index, count, model)
        node_level = dict(self.node_defaults)
        if self.count_defaults is not None:
            node_level.update(self.count_defaults(count))
        node_level.update({k: v for k, v in attributes.items() if self.varies(k, Varies.NODE)})
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


def short(key: str) -> str:
    """A qualified key's name, as messages say it."""
    return key.rpartition("/")[2]


def countable(value: str) -> bool:
    """A quantity the engine can count (an int64 of its base unit)."""
    quantity = quantity_or_text(str(value))
    return not isinstance(quantity, str) and 0 <= quantity <= INT64_MAX


def shown(value: Attribute | None) -> str:
    """A typed attribute's value as messages quote it."""
    return "nothing" if not value else repr(next(iter(value.values())))


def quantity_or_text(value: str) -> Any:
    """The quantity's value, or the text itself where it is not one (the capacity checks say so)."""
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
