"""The fleet scheduler's inputs: what a deployment asks for, and the fleet as it stands.

These are the scheduler's own small types, not the API kinds: an adapter maps a ModelDeployment,
the InferenceClusters' status and the ModelReplicas onto them, so the scheduler stays a pure
library and a field rename in a kind touches only that mapping (`pool_class` here, for classes).

Tolerations and taints are Kubernetes-shaped mappings (`key`, `operator`, `value`, `effect`), as
the cluster simulator's predicates read them; a cluster selector is a Kubernetes LabelSelector
(`matchLabels`, `matchExpressions`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.inference_class import InferenceClass
from inferplane.cel import Device, parse_semver
from inferplane.cel.device import AttributeValue

from .shares import PodAsk, SharedDevice, capacities_of

Role = Literal["Standalone", "Leader", "Worker"]
WORKER: Role = "Worker"
DRA = "DRA"

# ---- what a deployment asks for


@dataclass(frozen=True)
class DeviceRequest:
    """One entry of a member's `nodeSelector.devices`: `count` devices per pod, every selector true."""

    name: str
    count: int = 1
    selectors: tuple[str, ...] = ()
    # `capacity.requests`: a share of each device (name, quantity as written); empty: whole devices.
    capacity: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Member:
    """An engine member. No device requests (no nodeSelector) means it claims nothing: it rides on
    its engine's pool and occupies no node of its own."""

    role: Role = "Standalone"
    devices: tuple[DeviceRequest, ...] = ()
    worker_nodes: int = 1

    @property
    def pods(self) -> int:
        """A Worker spans `worker.nodes` pods, one per node; a Standalone or Leader is one pod."""
        return self.worker_nodes if self.role == WORKER else 1


@dataclass(frozen=True)
class Engine:
    """An engine: `copies` of its members, all on one pool of the replica's cluster."""

    name: str
    members: tuple[Member, ...]
    copies: int = 1


@dataclass(frozen=True)
class PlacementRequest:
    """A deployment's placement request. `deployment` identifies it (namespace/name) among the
    fleet's replicas."""

    deployment: str
    replicas: int
    engines: tuple[Engine, ...]
    cluster_selector: Mapping[str, Any] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    # Clusters no new replica may go to, each with why (where the deployment's ModelCache does not
    # stage); replicas already there stay.
    excluded: Mapping[str, str] = field(default_factory=dict)


# ---- the fleet


@dataclass(frozen=True)
class ClassDevice:
    """A device of an InferenceClass: `count` per node; `claim: Synthetic` is described for
    placement only and is never claimed."""

    name: str
    driver: str
    count: int = 1
    claim: str = DRA
    device_class_name: str = ""
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)
    # Several claims may share it (allowMultipleAllocations), each taking a share of its capacities,
    # rounded by each capacity's request policy (as a ResourceSlice writes it, camelCase).
    shared: bool = False
    policies: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @functools.cached_property
    def capacities(self):  # -> dict[str, shares.Capacity] by qualified name
        return capacities_of(self.driver, {name: {"value": value, "requestPolicy": self.policies.get(name)}
                                           for name, value in self.capacity.items()})

    @functools.cached_property
    def device(self) -> Device:
        """The device as a CEL selector sees it (its activation is built once, on first use)."""
        return Device(driver=self.driver, attributes=self.attributes, capacity=self.capacity, name=self.name)


@dataclass(frozen=True)
class PoolClass:
    """An InferenceClass as the scheduler reads it: a name and the devices of each node."""

    name: str
    devices: tuple[ClassDevice, ...]

    @functools.cached_property
    def shared_devices(self) -> tuple[SharedDevice, ...]:
        """The claimed devices several pods may share, each with its capacities: empty for most classes."""
        return tuple(SharedDevice(d.device_class_name, d.driver, d.count, d.capacities)
                     for d in self.devices if d.shared and d.claim == DRA)


@dataclass(frozen=True)
class Pool:
    """A schedulable pool. An autoscaled pool can grow to `max_node_count`: that is its capacity."""

    name: str
    class_name: str
    node_count: int
    max_node_count: int | None = None
    role: PoolRole = PoolRole.GPU

    @property
    def nodes(self) -> int:
        """The nodes the pool can offer, never negative (a malformed status reads as none)."""
        nodes = self.node_count if self.max_node_count is None else self.max_node_count
        return max(nodes, 0)


@dataclass(frozen=True)
class Cluster:
    """An InferenceCluster: its labels (for the cluster selector), readiness, fleet-level taints
    (`spec.taints`) and schedulable pools. `coming_up`: not ready only because it is still on its
    way with nobody acting (being created, its stack installed, its version not reported yet: the
    adapter's reading, api/inference_cluster.py COMING_UP_REASONS), not held for a person to fix."""

    name: str
    pools: tuple[Pool, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    ready: bool = True
    taints: tuple[Mapping[str, Any], ...] = ()
    coming_up: bool = False


@dataclass(frozen=True)
class ReplicaMember:
    """A member of an existing replica: the pool it is pinned to, and whether it claims devices
    (a member with device requests occupies its nodes; one without shares its engine's)."""

    role: Role
    pool: str
    claims: bool
    worker_nodes: int = 1
    # What each of its pods claims (for a pool with shared devices, the shares it holds).
    ask: PodAsk = PodAsk(())

    @property
    def pods(self) -> int:
        return self.worker_nodes if self.role == WORKER else 1


@dataclass(frozen=True)
class ReplicaEngine:
    name: str
    members: tuple[ReplicaMember, ...]
    copies: int = 1


@dataclass(frozen=True)
class Replica:
    """An existing ModelReplica: its deployment, its identity (cluster, index) and its object name
    (a tie-break that keeps the schedule a function of state, not of listing order)."""

    name: str
    deployment: str
    cluster: str
    index: int
    engines: tuple[ReplicaEngine, ...]


@dataclass(frozen=True)
class Snapshot:
    """The fleet at one moment: clusters, the classes their pools name, every existing replica.
    `capacity`, nodes per cluster and pool, when the caller already worked it out for these clusters
    (read only: a caller reading an unchanged fleet keeps it, `compose.model_deployment.FleetClusters`);
    otherwise the scheduler counts it."""

    clusters: tuple[Cluster, ...] = ()
    classes: Mapping[str, PoolClass] = field(default_factory=dict)
    replicas: tuple[Replica, ...] = ()
    capacity: Mapping[str, Mapping[str, int]] | None = None


# ---- mapping the kinds


def pool_class(klass: InferenceClass) -> PoolClass:
    """An InferenceClass as the scheduler reads it."""
    devices = []
    for device in klass.spec.devices:
        attributes: dict[str, AttributeValue] = {}
        for key, typed in device.attributes.items():
            value = typed.value()
            attributes[key] = parse_semver(value) if typed.version is not None else value
        devices.append(ClassDevice(
            name=device.name, driver=device.driver, count=device.count, claim=device.claim,
            device_class_name=device.device_class_name or "", attributes=attributes,
            capacity={key: str(capacity.value) for key, capacity in device.capacity.items()},
            shared=bool(device.allow_multiple_allocations),
            policies={key: capacity.request_policy.model_dump(by_alias=True, exclude_none=True, mode="json")
                      for key, capacity in device.capacity.items() if capacity.request_policy is not None}))
    return PoolClass(name=klass.metadata.name, devices=tuple(devices))


def pod_ask(requests: Any) -> PodAsk:
    """What each pod of a stored ModelReplica's member claims (its `deviceRequests`, however written): device
    class, count and `capacity.requests` per request."""
    return PodAsk(tuple((r.get("deviceClassName", ""), int(r.get("count", 1)),
                         tuple((k, str(v)) for k, v in ((r.get("capacity") or {}).get("requests") or {}).items()))
                        for r in requests or () if isinstance(r, dict)))
