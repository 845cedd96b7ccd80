"""The protocol every cloud module implements, and what the provisioned clouds share.

A cloud module turns a cloud cluster composite (EKSCluster, GKECluster, ...) into that cloud's
Crossplane managed resources: the cluster and one node pool per pool, keyed by stable names. The
provisioned clouds differ in kinds, field names and formats, not in structure, so one base class
builds the structure and each cloud module only fills in its own fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Protocol, get_args

from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.common import SYSTEM_POOL_NAME, taint_text
from inferplane.api.drivers import POOL_LABEL
from inferplane.api.managed import EXTERNAL_NAME_ANNOTATION, MANAGED_NAMESPACE, composed_name
from inferplane.clouds.foundation import Foundation, FoundationPool, Namer, merge
from inferplane.clouds.kubernetes_version import effective_kubernetes_version
from inferplane.clouds.storage import SharedStorage, StorageChart, no_shared_storage

Resource = dict[str, Any]

CLUSTER_KEY = "cluster"
# The System pool runs the stack's own components (NFD, DRA controllers, metrics, routing). Two
# nodes keep them available while one node is drained for an upgrade.
SYSTEM_POOL_NODES = 2


def pool_key(pool_name: str) -> str:
    """The stable key of a pool's composed resource."""
    return f"nodepool-{pool_name}"


def connection_secret_name(cluster_name: str) -> str:
    """The Secret (in MANAGED_NAMESPACE) the cloud cluster writes its connection details to."""
    return f"{cluster_name}-connection"


# The connection-details key holding the kubeconfig, as the upjet providers publish it
# (*unconfirmed* per provider; on EKS a ClusterAuth publishes it, not the cluster).
KUBECONFIG_KEY = "kubeconfig"


# A provider package reference and its version, pinned exactly (`xpkg.upbound.io/upbound/provider-x`,
# `v2.6.0`); None for an API group no published package serves that we know of.
ProviderPackage = tuple[str, str] | None


def upbound_provider(name: str, version: str) -> ProviderPackage:
    """One of Upbound's provider packages; each cloud pins the version Modelplane v0.3.1 ships with (its
    crossplane-project.yaml)."""
    return f"xpkg.upbound.io/upbound/{name}", version


@dataclass(frozen=True)
class SampleFleet:
    """What a sample fleet's clusters on one cloud look like (simulator/synthetic_fleet.py builds the fleet):
    the cluster's settings block; its classes, each (name suffix, device, provisioning machine or None),
    the device named as the sample fleet names its devices (`nvidia`, `amd`, `cpu`); and its pools, each
    (pool name, class suffix)."""

    settings: dict[str, Any]
    classes: tuple[tuple[str, str, dict[str, Any] | None], ...]
    pools: tuple[tuple[str, str], ...]


def provisioned_sample(settings: dict[str, Any], gpu_machine: dict[str, Any],
                       cpu_machine: dict[str, Any]) -> SampleFleet:
    """A provisioned cloud's sample: an NVIDIA GPU class and a CPU class on these machines, two pools of each."""
    return SampleFleet(settings, (("nvidia", "nvidia", gpu_machine), ("cpu", "cpu", cpu_machine)),
                       (("gpu-a", "nvidia"), ("gpu-b", "nvidia"), ("cpu-a", "cpu"), ("cpu-b", "cpu")))


class CloudModule(Protocol):
    """Everything the rest of inferplane knows of a cloud, each cloud's module implementing all of it."""

    source: str
    # Whether inferplane provisions the cluster (False: its owner runs it, and the InferenceCluster's
    # settings say where its kubeconfig, drivers and storage are).
    provisioned: bool
    # Whether the cloud runs a cluster autoscaler that grows a pool up to its maxNodeCount.
    autoscales_pools: bool
    # The provider's apiVersion and the kinds of its cluster and pool resources, and the pool field
    # referencing its cluster; None where nothing is provisioned.
    api_version: str | None
    cluster_kind: str | None
    pool_kind: str | None
    cluster_ref: str | None
    # The field of a pool's machine block naming the machine, and what the cloud calls a machine in
    # messages; None where nothing is provisioned (clouds/offerings checks them against the cloud's table).
    machine_field: str | None
    machine_word: str | None
    # The provider package serving each API group the module composes, for the Configuration.
    provider_packages: dict[str, ProviderPackage]
    # The clusters and classes a sample fleet has on this cloud.
    sample: SampleFleet
    # The charts whose CSI drivers serve its shared storage, where the cloud runs none itself (the
    # simulated clusters bind a cache's claim only once the chart's release runs there).
    storage_charts: tuple[StorageChart, ...]

    def system_pool(self) -> dict[str, Any] | None:
        """The System pool in the cloud cluster kind's nodePools wire format; None: nothing to provision."""

    def resources(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, Resource]:
        """The cloud's managed resources for a parsed cloud cluster composite, by stable key;
        `observed` holds them as the provider last reported them (some fields are known only then)."""

    def held_pools(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, str]:
        """Pools `resources` leaves out for now, by name, with what each waits for."""

    def endpoint(self, observed_cluster: Resource | None) -> str | None:
        """The API server endpoint the observed cluster resource reports, if any."""

    def nodes_created(self, node_count: int, zones: list[str]) -> int:
        """How many nodes a pool of `node_count` over `zones` gets."""

    def node_labels(self, machine: dict[str, Any]) -> dict[str, str]:
        """Labels the cloud itself puts on the nodes of a pool of this machine block (where a chart reads them)."""

    def machine_vcpus(self, machine: dict[str, Any]) -> tuple[str, int] | None:
        """The machine a class's machine block names and its vCPUs, where the cloud module knows them."""

    def offered_names(self, resource: Resource) -> dict[str, list[str]]:
        """What a composed cluster or pool resource names from the cloud's table of offerings."""

    def shared_storage(self, cluster: Any, observed: dict[str, Resource] | None = None) -> SharedStorage:
        """The ReadWriteMany storage ModelCache volumes use on a cluster of this cloud (clouds/storage.py)."""

    def storage_refusal(self, cluster_name: str) -> str | None:
        """What a ModelCache is told of a cluster that reports no ReadWriteMany StorageClass when none will
        come, with the fix; None while one is on its way."""


def at_provider(observed: Resource | None) -> dict[str, Any]:
    """What the provider reports of an observed resource (status.atProvider); empty until it does."""
    return ((observed or {}).get("status") or {}).get("atProvider") or {}


# ---- labels, taints and node counts, in each provider's format


def upper_snake(effect: str) -> str:
    """NoSchedule -> NO_SCHEDULE: the Google, AWS and Nebius APIs' enum spelling."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", effect).upper()


def taint_objects(taints: Iterable[Any], effect: Callable[[str], str] = str) -> list[dict[str, str]]:
    """Taints as {key, value, effect} objects; `effect` maps Kubernetes' spelling to the provider's."""
    out = []
    for taint in taints:
        entry = {"key": taint.key}
        if taint.value:
            entry["value"] = taint.value
        entry["effect"] = effect(taint.effect)
        out.append(entry)
    return out


def taint_strings(taints: Iterable[Any]) -> list[str]:
    """Taints as kubectl spells them: key=value:Effect (key:Effect without a value)."""
    return [taint_text(t.key, t.value, t.effect) for t in taints]


def label_list(labels: dict[str, str]) -> list[dict[str, str]]:
    """Labels as a list of {key, value}, sorted by key so the output is stable."""
    return [{"key": k, "value": v} for k, v in sorted(labels.items())]


def values_at(obj: Any, path: str) -> list[str]:
    """The strings at a dotted path, stepping into every item of a list on the way."""
    found = [obj]
    for step in path.split("."):
        found = [item for value in found for item in (value if isinstance(value, list) else [value])]
        found = [value[step] for value in found if isinstance(value, dict) and step in value]
    return [v for value in found for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]


def present(**fields: Any) -> dict[str, Any]:
    """The fields that carry a value: empty labels, taints and zones are left out, not sent empty."""
    return {k: v for k, v in fields.items() if v not in (None, [], {})}


@dataclass(frozen=True)
class Scaling:
    count: int
    minimum: int
    maximum: int

    @property
    def autoscaled(self) -> bool:
        return self.maximum > self.minimum


def scaling(pool: Any) -> Scaling:
    """A pool's node count and bounds; it autoscales when its bounds leave room.

    InferenceCluster's rules keep min <= count <= max; a hand-written cloud cluster that breaks them
    gets its bounds widened to include the count rather than a pool the cloud would refuse.
    """
    return scaling_of(pool.node_count, pool.min_node_count, pool.max_node_count)


def scaling_of(count: int, minimum: int | None, maximum: int | None) -> Scaling:
    """`scaling` of a pool given by its fields (a cloud cluster's nodePools entry)."""
    low = count if minimum is None else min(minimum, count)
    high = count if maximum is None else max(maximum, count)
    return Scaling(count, low, high)


def scaling_fields(s: Scaling, *, count: str, minimum: str, maximum: str, enabled: str | None = None,
                   group: str | None = None, initial: str | None = None) -> tuple[dict, dict]:
    """(forProvider, initProvider) fields of a pool's size, for clouds whose fields differ in name only.

    A fixed pool sets `count`. An autoscaled pool sets its bounds (under `group` when the cloud nests
    them, with the `enabled` flag when it has one), and its starting size goes to initProvider as
    `initial`: used when the pool is created, then left to the autoscaler instead of being reset.
    """
    if not s.autoscaled:
        return {count: s.count}, {}
    bounds: dict[str, Any] = {enabled: True} if enabled else {}
    bounds.update({minimum: s.minimum, maximum: s.maximum})
    return ({group: bounds} if group else bounds), ({initial: s.count} if initial else {})


# ---- the provisioned clouds


class ProvisionedCloud:
    """A cloud whose clusters inferplane provisions: a cluster resource and one resource per pool."""

    source: ClassVar[str]
    provisioned: ClassVar[bool] = True
    api_version: ClassVar[str]
    cluster_kind: ClassVar[str]
    pool_kind: ClassVar[str]
    provider_packages: ClassVar[dict[str, ProviderPackage]]
    sample: ClassVar[SampleFleet]
    # Whether the cloud composes ReadWriteMany storage for ModelCache volumes (shared_storage says how).
    offers_shared_storage: ClassVar[bool] = True
    storage_charts: ClassVar[tuple[StorageChart, ...]] = ()
    machine_field: ClassVar[str]
    machine_word: ClassVar[str]
    # The machine block's field (as written) whose value tells a machine's vCPUs, and those vCPUs by its value,
    # or a pattern reading them from it (the first group). Only single-NUMA-node machines are listed: one with
    # more NUMA nodes (e.g. c6in.32xlarge) gets a CPU device per node, which a class's one device cannot
    # describe, so a class on one is not checked.
    vcpus_field: ClassVar[str]
    vcpus: ClassVar[dict[str, int]] = {}
    vcpus_pattern: ClassVar[re.Pattern[str] | None] = None
    # The pool field that references its cluster by the composed cluster's name.
    cluster_ref: ClassVar[str]
    # The cluster field that must hold one pool inline (AKS, Vultr, Civo cannot create a cluster
    # without one); None when every pool is its own resource.
    inline_pool: ClassVar[str | None] = None
    # The machine block of the default System pool: a small general-purpose machine.
    system_machine: ClassVar[dict[str, Any]]
    # The field of the cluster's status.atProvider holding its API server endpoint.
    endpoint_field: ClassVar[str | None] = None
    # Whether the cluster resource writes the kubeconfig to its connection Secret (on EKS the
    # foundation's ClusterAuth does).
    publishes_kubeconfig: ClassVar[bool] = True
    # Whether a pool whose bounds leave room is provisioned with the cloud's cluster autoscaler.
    autoscales_pools: ClassVar[bool] = True
    # Where the cluster and pool resources name what the cloud's table of offerings lists (`region`,
    # `zone`, `machine`, `preset`, `accelerator`), as forProvider paths: the simulated provider refuses to
    # create a resource naming what the table lacks (clouds/offerings).
    offered_on_cluster: ClassVar[dict[str, str]] = {}
    offered_on_pool: ClassVar[dict[str, str]] = {}

    # ---- what each cloud fills in

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        raise NotImplementedError

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """(forProvider, initProvider) fields of a pool, inline or standalone."""
        raise NotImplementedError

    def standalone_fields(self, spec: Any, pool: Any) -> dict[str, Any]:
        """Fields a pool resource needs beyond pool_fields and the cluster reference (its region...)."""
        return {}

    def inline_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The pool held inline by the cluster resource."""
        return self.pool_fields(spec, pool)

    def nodes_created(self, node_count: int, zones: list[str]) -> int:
        """How many nodes a pool of `node_count` over `zones` gets: the count is the pool's total on
        most clouds."""
        return node_count

    def node_labels(self, machine: dict[str, Any]) -> dict[str, str]:
        """None but the pool's own on most clouds."""
        return {}

    def machine_vcpus(self, machine: dict[str, Any]) -> tuple[str, int] | None:
        name = str(machine.get(self.vcpus_field) or "")
        if name in self.vcpus:
            return name, self.vcpus[name]
        found = self.vcpus_pattern.search(name) if self.vcpus_pattern else None
        return (name, int(found.group(1))) if found else None

    def foundation(self, name: str, spec: Any, observed: dict[str, Resource]) -> Foundation:
        """What the cluster stands on (network, identities, addons), with the fields the cluster
        and its pools need to reach it; nothing unless the cloud composes some."""
        return Foundation()

    def external_name(self, pool: Any) -> str | None:
        """The pool's name on the cloud, where the cloud shows it to people and it is unique within its
        cluster (metadata.name, unique across clusters, ends in a hash); None: the cloud takes its name
        from a field instead (Nebius `name`, Vultr and Civo `label`)."""
        return None

    # ---- the protocol

    def system_pool(self) -> dict[str, Any]:
        return {"name": SYSTEM_POOL_NAME, "role": PoolRole.SYSTEM, "nodeCount": SYSTEM_POOL_NODES,
                "labels": {POOL_LABEL: SYSTEM_POOL_NAME}, "machine": dict(self.system_machine)}

    def resources(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, Resource]:
        name, spec = cluster.metadata.name, cluster.spec
        foundation = self.foundation(name, spec, observed or {})
        version, _ = effective_kubernetes_version(self.source, spec.kubernetes_version)
        for_provider, init_provider = self.cluster_fields(name, spec, version), {}
        inlined = self.inlined_pool(spec)
        if inlined is not None:
            pool_for, pool_init = self.inline_fields(spec, inlined)
            for_provider[self.inline_pool] = pool_for
            if pool_init:
                init_provider[self.inline_pool] = pool_init
        for_provider = merge(for_provider, foundation.cluster_fields)
        out = {CLUSTER_KEY: self.managed(self.cluster_kind, name, spec, for_provider, init_provider)}
        if self.publishes_kubeconfig:
            out[CLUSTER_KEY]["spec"]["writeConnectionSecretToRef"] = {"name": connection_secret_name(name)}
        for pool in spec.node_pools:
            if pool is inlined or pool.name in foundation.held_pools:
                continue
            pool_for, pool_init = self.pool_fields(spec, pool)
            body = {self.cluster_ref: {"name": name}, **self.standalone_fields(spec, pool),
                    **merge(pool_for, foundation.pool_fields.get(pool.name, {}))}
            resource = self.managed(self.pool_kind, composed_name(name, pool.name), spec, body, pool_init)
            external = self.external_name(pool)
            if external:
                resource["metadata"]["annotations"] = {EXTERNAL_NAME_ANNOTATION: external}
            out[pool_key(pool.name)] = resource
        out.update(foundation.resources)
        return out

    def held_pools(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, str]:
        return self.foundation(cluster.metadata.name, cluster.spec, observed or {}).held_pools

    def offered_names(self, resource: Resource) -> dict[str, list[str]]:
        """What a composed cluster or pool resource names from the cloud's table of offerings."""
        paths = {self.cluster_kind: self.offered_on_cluster, self.pool_kind: self.offered_on_pool}.get(
            resource.get("kind"), {})
        for_provider = (resource.get("spec") or {}).get("forProvider") or {}
        return {name: values_at(for_provider, path) for name, path in paths.items()}

    def shared_storage(self, cluster: Any, observed: dict[str, Resource] | None = None) -> SharedStorage:
        """None composed unless the cloud module says otherwise."""
        return no_shared_storage(self.source, f"inferplane composes none on {self.source} yet")

    def storage_refusal(self, cluster_name: str) -> str | None:
        if self.offers_shared_storage:
            return None
        return f"InferenceCluster {cluster_name}: {self.shared_storage(None).refusal}"

    def endpoint(self, observed_cluster: Resource | None) -> str | None:
        if not observed_cluster or not self.endpoint_field:
            return None
        return at_provider(observed_cluster).get(self.endpoint_field) or None

    # ---- helpers

    def inlined_pool(self, spec: Any) -> Any | None:
        """The pool the cluster holds inline: its first System pool, else the default System pool."""
        if not self.inline_pool:
            return None
        system = next((p for p in spec.node_pools if p.role == PoolRole.SYSTEM), None)
        if system is None:
            # The kind's pool model, from its spec's nodePools: list[<Provider>NodePool].
            pool_type = get_args(type(spec).model_fields["node_pools"].annotation)[0]
            system = pool_type.model_validate(self.system_pool())
        return system

    def managed(self, kind: str, name: str, spec: Any, for_provider: dict[str, Any],
                init_provider: dict[str, Any]) -> Resource:
        """A namespaced managed resource of this cloud's provider."""
        body: dict[str, Any] = {"forProvider": for_provider}
        if init_provider:
            body["initProvider"] = init_provider
        body["providerConfigRef"] = self.provider_config(spec)
        return {"apiVersion": self.api_version, "kind": kind,
                "metadata": {"name": name, "namespace": MANAGED_NAMESPACE}, "spec": body}

    def provider_config(self, spec: Any) -> dict[str, str]:
        return {"kind": spec.credentials.type, "name": spec.credentials.name}

    @staticmethod
    def namer(name: str) -> Namer:
        """Names a cluster's foundation resources by key: collision-free, as its pools are named."""
        return lambda key: name if key == CLUSTER_KEY else composed_name(name, key)

    @staticmethod
    def foundation_pool(pool: Any) -> FoundationPool:
        """What a pool tells a foundation: its zones, the machine it needs, its Capacity Block and fabric."""
        fabric = pool.fabric.type if pool.fabric and pool.fabric.type != "None" else None
        return FoundationPool(
            name=pool.name, zones=tuple(pool.zones), machine_type=getattr(pool.machine, "instance_type", None),
            disk_size_gb=getattr(pool.machine, "disk_size_gb", None),
            capacity_reservation_id=pool.capacity_block.capacity_reservation_id if pool.capacity_block else None,
            fabric=fabric,
            infiniband_fabric=pool.fabric.infiniband.fabric if fabric == "InfiniBand" and pool.fabric.infiniband
            else None)

    def foundation_pools(self, spec: Any) -> list[FoundationPool]:
        return [self.foundation_pool(pool) for pool in spec.node_pools]
