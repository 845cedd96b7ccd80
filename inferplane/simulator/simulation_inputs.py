"""What a simulation is given: the cluster's node pools, the Objects its ModelReplicas composed, and the
serving stack's components as its composed resources carry them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from inferplane.accelerators.catalog import COMPONENT_LABEL
from inferplane.api.cloud import MachineGpu
from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.inference_class import DeviceSpec, claimed_drivers
from inferplane.scheduling.dra import DRIVER_OF_CLASS

Resource = dict[str, Any]


@dataclass(frozen=True)
class Pool:
    """One node pool as the simulation sees it.

    `devices` are the pool's class devices (InferenceClass spec.devices); the System pool has none.
    `allocatable` overrides the derived node size. On a cluster the gate holds, `runs` are the drivers
    the pool runs as it was provisioned (what its devices claim otherwise) and `held_back` the drivers
    its class now wants that the held stack does not serve. `max_node_count`, set only where the
    cloud runs a cluster autoscaler for the pool, is how far that autoscaler may grow it.
    """

    name: str
    role: PoolRole
    node_count: int
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    devices: tuple[DeviceSpec, ...] = ()
    allocatable: Mapping[str, str] | None = None
    runs: tuple[str, ...] | None = None
    held_back: tuple[str, ...] = ()
    max_node_count: int | None = None
    machine_gpu: MachineGpu | None = None

    @classmethod
    def from_wire(cls, entry: Mapping[str, Any], devices: Iterable[DeviceSpec | Mapping[str, Any]] = (),
                  runs: Iterable[str] | None = None, held_back: Iterable[str] = (),
                  machine_gpu: Mapping[str, Any] | None = None) -> "Pool":
        """A pool from the cloud cluster's nodePools entry ({name, role, nodeCount, maxNodeCount,
        labels, taints}), its class's devices (DeviceSpec models or spec.devices dicts) and the GPU its
        class's machine carries (MachineGpu's fields)."""
        count, maximum = int(entry.get("nodeCount", 1)), entry.get("maxNodeCount")
        return cls(
            name=entry["name"], role=PoolRole(entry["role"]), node_count=count,
            labels=dict(entry.get("labels") or {}), taints=tuple(dict(t) for t in entry.get("taints") or []),
            devices=tuple(d if isinstance(d, DeviceSpec) else DeviceSpec.model_validate(d) for d in devices),
            runs=None if runs is None else tuple(sorted(runs)), held_back=tuple(sorted(held_back)),
            # A maximum below the count is widened to it, as the clouds' own scaling does.
            max_node_count=None if maximum is None else max(int(maximum), count),
            machine_gpu=MachineGpu(**machine_gpu) if machine_gpu else None)

    @property
    def drivers(self) -> tuple[str, ...]:
        """The drivers whose stacks run for this pool: what its DRA devices claim, sorted (on a held
        cluster, what it was provisioned for)."""
        return tuple(claimed_drivers(self.devices)) if self.runs is None else self.runs


@dataclass(frozen=True)
class EngineObject:
    """A provider-kubernetes Object a ModelReplica composed for this cluster: where it is on the
    control plane, and the manifest it applies."""

    namespace: str
    name: str
    manifest: Mapping[str, Any]

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def installed_components(resources: Iterable[Resource]) -> dict[str, Resource]:
    """{component key: rendered values (Release) or manifest (Object)} of the labelled resources."""
    out: dict[str, Resource] = {}
    for resource in resources:
        labels = (resource.get("metadata") or {}).get("labels") or {}
        key = labels.get(COMPONENT_LABEL)
        if not key:
            continue
        for_provider = (resource.get("spec") or {}).get("forProvider") or {}
        if resource.get("kind") == "Release":
            out[key] = for_provider.get("values") or {}
        else:
            out[key] = for_provider.get("manifest") or {}
            if out[key].get("kind") == "CustomResourceDefinition":
                # API, not a workload: the simulation reads only that it is installed, not its schema (tens
                # of KB of prose, which the inputs' fingerprint and the templates' name check would read).
                out[key] = {k: out[key].get(k) for k in ("apiVersion", "kind")} | {
                    "metadata": {"name": (out[key].get("metadata") or {}).get("name")}}
    return out


def owner_device_classes(pools: Iterable[Pool], preinstalled: Iterable[str]) -> dict[str, str]:
    """{DeviceClass: driver} for the owner's drivers: each class device claiming one names the DeviceClass
    the owner's install created for it. A name a known driver's DeviceClass has stays that driver's."""
    owned = set(preinstalled)
    out: dict[str, str] = {}
    for pool in pools:
        for device in pool.devices:
            if device.claim == "DRA" and device.driver in owned and device.device_class_name \
                    and device.device_class_name not in DRIVER_OF_CLASS:
                out.setdefault(device.device_class_name, device.driver)
    return out

