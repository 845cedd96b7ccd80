"""The simulated target cluster: what a cluster would hold, given its pools and its serving stack.

`simulate_cluster` is a pure, deterministic function. From the cluster's pools and the Helm
Releases and Kubernetes Objects its serving stack composed, it returns the Kubernetes objects the
cluster would then hold:
- KWOK-shaped Nodes, `<cluster>-<pool>-<i>`, with the pool's labels, taints and allocatable;
- each component's DaemonSets, Deployments and StatefulSets (from `accelerators.workloads`) and
  their Pods, placed by the node-level profile's filters and scores (`scheduling.profiles`): a
  DaemonSet pod on every node the DaemonSet controller selects, replicas on the best-scored feasible
  node (by default a workload's pods spread, then the emptiest node, then the name), and a pod that
  fits nowhere left Pending with the scheduler's message;
- a `resource.k8s.io/v1` ResourceSlice from every running DRA kubelet plugin, listing the devices
  its node's class declares for that driver, shaped like that driver's real slices; a driver the
  cluster's owner runs (an Existing cluster's `preinstalledDrivers`) publishes on every node whose
  class claims it, with no workload of the stack, and the DeviceClass each such class device names
  selects that driver's devices, as the owner's install would have created it;
- the engine workloads of the ModelReplicas pinned to the cluster (their Deployments and
  LeaderWorkerSets) and their Pods, each placed by the same predicates and then by DRA allocation
  (`scheduling.dra`): a pod runs only on a node where every claim of its ResourceClaimTemplates is
  allocated devices from that node's slices, and its ResourceClaims carry the allocation. Each
  workload's readiness is reported with the pods that did not run, their nodes and why;
- the cluster autoscaler's scale-up: a pod left Pending that a new node of an autoscaled pool would
  take (that node's labels, taints, allocatable, DaemonSet pods and ResourceSlices) grows that pool
  by the nodes it needs, never past its maximum, and the cluster is simulated again with them
  (`<cluster>-<pool>-<i>` continues the pool's numbering). A pod that only a pool at its maximum
  would take stays Pending, saying so. Pools are never shrunk.

The audits in `audits.py` read those objects back and report what a real cluster would suffer from.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, Sequence

from inferplane import API_GROUP
from inferplane.accelerators.catalog import COMPONENT_LABEL
from inferplane.accelerators import cpu as cpu_driver
from inferplane.accelerators.registry import driver_slices
from inferplane.accelerators.workloads import Placement, Workload, workloads
from inferplane.api.json_data import json_copy
from inferplane.api.managed import NAME_MAX, composed_name
from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.inference_class import DeviceSpec, claimed_drivers
from inferplane.cel.quantity import format_quantity, parse_quantity
from inferplane.compose.model_replica import REPLICA_LABEL
from inferplane.simulator.simulation_slices import renamed_slice, resource_slice
from inferplane.scheduling.dra import DRIVER_OF_CLASS, DeviceAllocator
from inferplane.scheduling.framework import Filter
from inferplane.scheduling.node_scores import WorkloadPods
from inferplane.scheduling.predicates import (
    DEFAULT_FILTERS,
    NodeAffinity,
    NodeInfo,
    NodeSelector,
    PodRequests,
    TaintToleration,
    filter_nodes,
    unschedulable_message,
)
from inferplane.scheduling.profiles import NODE, profile

Resource = dict[str, Any]

# KWOK's marks of a fake node. The taint KWOK usually adds (kwok.x-k8s.io/node=fake:NoSchedule)
# is left off: these nodes stand in for the cloud's real ones, so placement must be judged by the
# taints the real nodes carry, not by one that no chart tolerates.
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_LABEL = "type"
# What the audit needs to know about a node and a pod, carried on the objects themselves so that
# the audit can run over objects read back from a store.
POOL_ROLE_ANNOTATION = f"{API_GROUP}/pool-role"
POOL_DRIVERS_ANNOTATION = f"{API_GROUP}/pool-drivers"
WORKLOAD_ANNOTATION = f"{API_GROUP}/workload"
PLACEMENT_ANNOTATION = f"{API_GROUP}/placement"
DRIVERS_ANNOTATION = f"{API_GROUP}/drivers"
# On a cluster the gate holds: the drivers a node's class wants that the cluster does not run.
HELD_DRIVERS_ANNOTATION = f"{API_GROUP}/held-drivers"
APP_LABEL = "app.kubernetes.io/name"
# The kubelet's label naming its node: the only label that differs between the nodes of one pool.
HOSTNAME_LABEL = "kubernetes.io/hostname"

# A node without a declared size: a common 8-core general-purpose machine. A CPU pool's cores come
# from its class's `cpu` capacity, which is what the CPU driver hands out, plus the CPUs it keeps back.
DEFAULT_ALLOCATABLE = {"cpu": "8", "memory": "32Gi", "pods": "110"}

# Tolerations the DaemonSet controller adds to every pod it creates, so that node agents survive
# node conditions (DaemonSet util.AddOrUpdateDaemonPodTolerations).
DAEMONSET_TOLERATIONS = tuple(
    {"key": f"node.kubernetes.io/{condition}", "operator": "Exists", "effect": effect}
    for condition, effect in (("not-ready", "NoExecute"), ("unreachable", "NoExecute"),
                              ("disk-pressure", "NoSchedule"), ("memory-pressure", "NoSchedule"),
                              ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule")))
# What the DaemonSet controller checks before it creates a pod for a node: selector, affinity and
# taints, but not resources (the scheduler then binds the pod, or leaves it Pending).
DAEMONSET_PREDICATES = (TaintToleration(), NodeSelector(), NodeAffinity())

KIND_ORDER = {"Node": 0, "DaemonSet": 1, "Deployment": 2, "StatefulSet": 3, "LeaderWorkerSet": 4, "Pod": 5,
              "ResourceSlice": 6, "ResourceClaim": 7, "DeviceClass": 8}
# Where an engine pod belongs: on the device pool its replica pins it to (the audit checks it).
ENGINE_PLACEMENT = "Engine"
# Which of the replica's composed Objects a workload came from, so its readiness reaches that Object.
OBJECT_ANNOTATION = f"{API_GROUP}/object"
# How many nodes' reasons a Pending engine pod's readiness message names (the rest are counted).
NODES_NAMED = 3


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

    @classmethod
    def from_wire(cls, entry: Mapping[str, Any], devices: Iterable[DeviceSpec | Mapping[str, Any]] = (),
                  runs: Iterable[str] | None = None, held_back: Iterable[str] = ()) -> "Pool":
        """A pool from the cloud cluster's nodePools entry ({name, role, nodeCount, maxNodeCount,
        labels, taints}) and its class's devices (DeviceSpec models or spec.devices dicts)."""
        count, maximum = int(entry.get("nodeCount", 1)), entry.get("maxNodeCount")
        return cls(
            name=entry["name"], role=PoolRole(entry["role"]), node_count=count,
            labels=dict(entry.get("labels") or {}), taints=tuple(dict(t) for t in entry.get("taints") or []),
            devices=tuple(d if isinstance(d, DeviceSpec) else DeviceSpec.model_validate(d) for d in devices),
            runs=None if runs is None else tuple(sorted(runs)), held_back=tuple(sorted(held_back)),
            # A maximum below the count is widened to it, as the clouds' own scaling does.
            max_node_count=None if maximum is None else max(int(maximum), count))

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


@dataclass
class Unplaced:
    """A pod the scheduler left Pending, kept for the cluster autoscaler: its spec, its claims (an
    engine pod's), the Pending message, the filters that refused it (the autoscaler judges a new node
    by them, as cluster-autoscaler runs the scheduler's filter plugins) and, once the autoscaler gave up,
    why no pool grew for it."""

    pod: Resource
    spec: Resource
    claims: list[tuple[str, Mapping[str, Any]]]
    message: str
    filters: tuple[Filter, ...] = DEFAULT_FILTERS
    at_maximum: str | None = None


@dataclass(frozen=True)
class WorkloadReadiness:
    """An engine workload as it runs: ready when every pod runs with its devices allocated."""

    ready: bool
    message: str


def simulate_cluster(cluster_name: str, pools: Sequence[Pool], installed: Iterable[Resource],
                     preinstalled: Iterable[str] = ()) -> list[Resource]:
    """The objects the cluster would hold: Nodes, workloads, Pods, ResourceSlices, in a fixed order.

    `installed` are the serving stack's composed resources (provider-helm Releases and
    provider-kubernetes Objects carrying the component label); resources without the label are not
    serving-stack components and are ignored. A labelled component without a workload description
    raises `UnknownComponent`.
    """
    return ClusterSimulation(cluster_name, pools, installed_components(installed), preinstalled=preinstalled).simulate()


class ClusterSimulation:
    def __init__(self, cluster_name: str, pools: Sequence[Pool], components: Mapping[str, Resource],
                 engines: Sequence[EngineObject] = (), preinstalled: Iterable[str] = ()):
        """`components`: what `installed_components` reads from the stack's resources; `engines`: the
        Objects of the ModelReplicas pinned to the cluster; `preinstalled`: the drivers the cluster's
        owner runs, which no component serves."""
        self.cluster = cluster_name
        self.preinstalled = tuple(sorted(set(preinstalled)))
        self.engines = sorted(engines, key=lambda e: e.ref)
        # Object ref -> how its workload runs (engine workloads only).
        self.readiness: dict[str, WorkloadReadiness] = {}
        self.pools = sorted(pools, key=lambda p: p.name)
        self.installed = dict(components)
        self.owner_classes = owner_device_classes(self.pools, self.preinstalled)
        # The node-level profile, read once; its filters past the DaemonSet predicates it starts with
        # (which `static_verdicts` answers once per pool) run on every node.
        self.plugins = profile(NODE)
        self.per_node = after_daemonset_predicates(self.plugins.filters)
        # The pods of one workload share their template's containers: read once in a row, by every node.
        self.pod_requests = PodRequests()
        self.reset()

    def reset(self) -> None:
        """Forget a previous run: the autoscaler simulates the cluster again with its grown pools."""
        self.nodes: list[NodeInfo] = []
        self.node_by_name: dict[str, NodeInfo] = {}
        self.pool_of: dict[str, Pool] = {}
        self.workloads: list[Workload] = []
        self.pods: list[tuple[Workload, Resource]] = []
        # How many pods of each workload run on each node, by (id of the workload, node name).
        self.running: dict[tuple[int, str], int] = {}
        self.objects: list[Resource] = []
        # Pods left Pending, in the order they were scheduled; an engine workload's by its Object ref.
        self.unplaced: list[Unplaced] = []
        self.engine_runs: list[tuple[EngineObject, int, list[Unplaced]]] = []

    def simulate(self) -> list[Resource]:
        # A round adds at most one node per Pending pod, and the next round must leave fewer pods
        # Pending, or the autoscaler stops: however high a pool's maximum (the XRD sets none), the
        # nodes added are bounded by the pods that wait for them, and so is the work.
        pending_before: int | None = None
        while True:
            self.run()
            if pending_before is not None and len(self.unplaced) >= pending_before:
                break  # the nodes added last round took none of them: more would not either
            growth = self.scale_up()
            if not growth:
                break
            pending_before = len(self.unplaced)
            self.pools = [replace(p, node_count=p.node_count + growth.get(p.name, 0)) for p in self.pools]
            self.reset()
        self.report_pending()
        return sorted(self.objects, key=_order)

    def run(self) -> None:
        self.make_nodes()
        self.collect_workloads()
        # DaemonSet pods first: they run at node-critical priority and would preempt replicas.
        for workload in self.workloads:
            if workload.kind == "DaemonSet":
                self.place_daemonset(workload)
        for workload in self.workloads:
            if workload.kind != "DaemonSet":
                self.place_replicas(workload)
        self.publish_slices()
        self.objects += [device_class(name, driver) for name, driver in sorted(self.owner_classes.items())]
        self.place_engines()

    # ---- steps

    def make_nodes(self) -> None:
        for pool in self.pools:
            for index in range(pool.node_count):
                node = kwok_node(node_name(self.cluster, pool.name, index), pool)
                self.nodes.append(NodeInfo(node, requests_of=self.pod_requests))
                self.node_by_name[node["metadata"]["name"]] = self.nodes[-1]
                self.pool_of[node["metadata"]["name"]] = pool
                self.objects.append(node)

    def collect_workloads(self) -> None:
        for key, body in sorted(self.installed.items()):
            self.workloads.extend(workloads(key, body, self.installed))
        self.workloads.sort(key=lambda w: (w.namespace, w.name))

    def place_daemonset(self, workload: Workload) -> None:
        template = workload.pod_spec()
        candidate = {**template, "tolerations": with_daemonset_tolerations(template.get("tolerations"))}
        desired = running = 0
        verdict = self.static_verdicts(candidate)
        for info in self.nodes:
            if verdict(info):
                continue  # the DaemonSet controller creates no pod for this node
            desired += 1
            spec = {**candidate, "affinity": pin_to_node(candidate.get("affinity"), info.name)}
            name = daemon_pod_name(workload.name, info.name)
            running += self.schedule(workload, name, spec, pinned=info)
        self.objects.append(workload_object(workload, desired=desired, ready=running))

    def place_replicas(self, workload: Workload) -> None:
        spec = workload.pod_spec()
        template_hash = _suffix(f"{workload.namespace}/{workload.name}", 10)
        running = 0
        for index in range(workload.replicas):
            if workload.kind == "StatefulSet":
                name = f"{workload.name}-{index}"
            else:
                name = f"{workload.name}-{template_hash}-{_suffix(f'{workload.name}/{index}', 5)}"
            running += self.schedule(workload, name, json_copy(spec))
        self.objects.append(workload_object(workload, desired=workload.replicas, ready=running))

    def schedule(self, workload: Workload, name: str, spec: Resource, pinned: NodeInfo | None = None) -> bool:
        """Bind one pod to the best feasible node, or leave it Pending; True when it runs.

        A DaemonSet pod `pinned` to a node by its affinity can only run there, and the DaemonSet
        controller already found that node passes the other predicates: only the resource fit is
        checked there. When it does not fit, every node is filtered, so that the Pending message counts
        every node's reasons as the scheduler's does."""
        # What is left to check on the node a DaemonSet pod is pinned to: the controller checked the rest.
        feasible, rejected = filter_nodes(spec, [pinned], self.per_node) if pinned is not None else ([], {})
        if not feasible:
            feasible, rejected = self.filter_all(spec)
        chosen = None
        if feasible:
            infos, state = self.node_by_name, WorkloadPods(workload, self.running)
            order = self.plugins.order(spec, state)
            chosen = min([infos[n] for n in feasible], key=order).name
            infos[chosen].bind(spec)
            state.bind(chosen)
        message = None if chosen else unschedulable_message(len(self.nodes), rejected)
        pod = pod_object(workload, name, spec, chosen, message)
        self.pods.append((workload, pod))
        self.objects.append(pod)
        if message is not None and pinned is None:  # a DaemonSet pod waits for its own node only
            self.unplaced.append(Unplaced(pod, spec, [], message, self.plugins.filters))
        return chosen is not None and workload.crash is None

    def static_verdicts(self, pod: Resource) -> Callable[[NodeInfo], list[str]]:
        """The reasons the DaemonSet predicates (taints, selector, affinity) give for `pod` on a node,
        each found once per pool: a pool's nodes differ only in their name and the hostname label that
        repeats it, so a pod that names no node gets one answer on all of them (kube-scheduler's
        equivalence cache reused predicate results the same way)."""
        per_pool = not names_a_node(pod)
        verdicts: dict[tuple[str, str], list[str]] = {}

        def reasons(info: NodeInfo) -> list[str]:
            pool = self.pool_of.get(info.name) if per_pool else None
            key = ("pool", pool.name) if pool is not None else ("node", info.name)
            if key not in verdicts:
                verdicts[key] = next((r for p in DAEMONSET_PREDICATES if (r := p.filter(pod, info))), [])
            return verdicts[key]
        return reasons

    def filter_all(self, spec: Resource) -> tuple[list[str], dict[str, list[str]]]:
        """filter_nodes with the default filters over every node, the static ones answered per pool."""
        verdict, per_node = self.static_verdicts(spec), self.per_node
        if len(per_node) == len(self.plugins.filters):  # a profile not led by them: every filter, every node
            verdict = _none
        feasible: list[str] = []
        rejected: dict[str, list[str]] = {}
        for info in self.nodes:
            reasons = verdict(info)
            if not reasons:  # a loop, not a generator: this runs for every node, for every pod
                for plugin in per_node:
                    reasons = plugin.filter(spec, info)
                    if reasons:
                        break
            if reasons:
                rejected[info.name] = list(reasons)
            else:
                feasible.append(info.name)
        return feasible, rejected

    def publish_slices(self) -> None:
        for workload, pod in self.pods:
            node, driver = pod["spec"].get("nodeName"), workload.publishes_slices_for
            if node and driver:
                self.objects.extend(pool_slices(node, self.pool_of[node], [driver]))
        # The owner's drivers run outside the stack: each publishes on every node whose class claims it.
        if self.preinstalled:
            for info in self.nodes:
                self.objects.extend(pool_slices(info.name, self.pool_of[info.name], self.preinstalled))

    # ---- engine workloads

    def place_engines(self) -> None:
        allocator = DeviceAllocator((o for o in self.objects if o["kind"] == "ResourceSlice"), self.device_classes())
        templates = {(e.manifest["metadata"].get("namespace", "default"), e.manifest["metadata"]["name"]):
                     e.manifest["spec"]["spec"] for e in self.engines if e.manifest.get("kind") == "ResourceClaimTemplate"}
        for engine in self.engines:
            kind = engine.manifest.get("kind")
            if kind not in ("Deployment", "LeaderWorkerSet"):
                continue  # Services, claim templates, RBAC: nothing runs
            pods = engine_pods(engine.manifest)
            pending = [p for name, template in pods
                       if (p := self.schedule_engine_pod(engine, name, template, templates, allocator))]
            self.objects.append(engine_workload_object(engine, len(pods), len(pods) - len(pending)))
            self.engine_runs.append((engine, len(pods), pending))

    def schedule_engine_pod(self, engine: EngineObject, name: str, template: Mapping[str, Any],
                            templates: Mapping[tuple[str, str], Mapping[str, Any]], allocator: DeviceAllocator
                            ) -> Unplaced | None:
        """Place one engine pod where the predicates and DRA allocation both admit it; None when it
        runs, else the Pending pod with why (each node and its reason)."""
        namespace = engine.manifest["metadata"].get("namespace", "default")
        spec = json_copy(dict(template.get("spec") or {}))
        claims = [(c["name"], templates.get((namespace, c.get("resourceClaimTemplateName", "")), {}))
                  for c in spec.get("resourceClaims") or []]
        feasible, rejected = self.filter_all(spec)
        infos = self.node_by_name
        chosen, allocation = self.allocate_on_best(spec, claims, feasible, rejected, allocator)
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        annotations = {WORKLOAD_ANNOTATION: f"{engine.manifest['kind']}/{engine.manifest['metadata']['name']}",
                       OBJECT_ANNOTATION: engine.ref,
                       # An engine pod (claiming or not) belongs on its pool; the endpoint picker is a controller.
                       PLACEMENT_ANNOTATION: ENGINE_PLACEMENT if REPLICA_LABEL in labels else Placement.SYSTEM.value}
        pod: Resource = {"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": namespace, "labels": labels,
                                      "annotations": annotations}}
        if chosen is None:
            message = unschedulable_message(len(self.nodes), rejected)
            pod["spec"] = spec
            pod["status"] = {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}
            self.objects.append(pod)
            named = [f"node {n}: {'; '.join(r)}" for n, r in sorted(rejected.items())[:NODES_NAMED]]
            more = len(rejected) - len(named)
            why = (', '.join(named) or 'the cluster has no nodes') + (
                f" (and {more} more node{'s' if more > 1 else ''})" if more > 0 else "")
            self.unplaced.append(Unplaced(pod, spec, claims, why, self.plugins.filters))
            return self.unplaced[-1]
        allocator.commit(chosen, allocation)
        infos[chosen].bind(spec)
        statuses = []
        for claim, claim_spec in claims:
            claim_name = f"{name}-{claim}"
            statuses.append({"name": claim, "resourceClaimName": claim_name})
            self.objects.append(allocated_claim(claim_name, namespace, claim_spec, chosen,
                                                [a.to_dict() for a in allocation.get(claim, [])]))
        pod["spec"] = {"nodeName": chosen, **spec}
        pod["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                            {"type": "Ready", "status": "True"}]}
        if statuses:
            pod["status"]["resourceClaimStatuses"] = statuses
        self.objects.append(pod)
        return None

    def allocate_on_best(self, spec: Resource, claims: list[tuple[str, Mapping[str, Any]]], feasible: list[str],
                         rejected: dict[str, list[str]], allocator: DeviceAllocator
                         ) -> tuple[str | None, dict[str, Any] | None]:
        """(node, its allocation) for the best-scored feasible node where every claim is allocated, each
        node tried in turn (an engine pod's workload is not spread); (None, None) when none takes it,
        each node tried added to `rejected` with why."""
        order = self.plugins.order(spec, WorkloadPods())
        for info in sorted([self.node_by_name[n] for n in feasible], key=order):
            node = info.name
            allocation, reasons = allocator.try_allocate(node, claims)
            if allocation is not None:
                return node, allocation
            rejected[node] = reasons
        return None, None

    # ---- the cluster autoscaler

    def scale_up(self) -> dict[str, int]:
        """{pool: nodes to add} for the Pending pods a new node would take, as the cluster
        autoscaler's binpacking estimates it: each pod in scheduling order goes to a node already
        opened for an earlier pod, else opens one of the first pool (by name) whose new node takes it
        and that is below its maximum. A pod only pools at their maximum would take is marked so."""
        growth: dict[str, int] = {}
        opened: list[tuple[NodeInfo, DeviceAllocator]] = []
        for pending in self.unplaced:
            if any(_take(pending, info, allocator) for info, allocator in opened):
                continue
            full = None
            for pool in self.pools:
                if pool.max_node_count is None:
                    continue
                size = pool.node_count + growth.get(pool.name, 0)
                info, allocator = self.new_node(pool, size)
                if size >= pool.max_node_count:
                    # Only judged when nothing grows for the pod, so that the message names a pool that would take it.
                    full = full or (pool if _fits(pending, info, allocator) is not None else None)
                elif _take(pending, info, allocator):
                    growth[pool.name] = growth.get(pool.name, 0) + 1
                    opened.append((info, allocator))
                    break
            else:
                if full is not None:
                    pending.at_maximum = (f"pool {full.name} is at its maximum "
                                          f"({full.max_node_count} of {full.max_node_count} nodes)")
        return growth

    def new_node(self, pool: Pool, index: int) -> tuple[NodeInfo, DeviceAllocator]:
        """The node the autoscaler would add to `pool` as `index`, as it would run: the DaemonSet pods
        that would land on it bound, and the slices their plugins would publish."""
        info = NodeInfo(kwok_node(node_name(self.cluster, pool.name, index), pool), requests_of=self.pod_requests)
        drivers = list(self.preinstalled)
        for workload in self.workloads:
            if workload.kind != "DaemonSet":
                continue
            template = workload.pod_spec()
            spec = {**template, "tolerations": with_daemonset_tolerations(template.get("tolerations"))}
            if filter_nodes(spec, [info], self.plugins.filters)[0]:
                info.bind(spec)
                if workload.publishes_slices_for:
                    drivers.append(workload.publishes_slices_for)
        return info, DeviceAllocator(pool_slices(info.name, pool, drivers), self.device_classes())

    def device_classes(self) -> dict[str, tuple[str, ...]]:
        """The DeviceClasses the cluster's device stacks install (each driver's chart installs its own), with
        their selectors as the chart writes them."""
        drivers = {w.publishes_slices_for for w in self.workloads if w.publishes_slices_for} | set(self.preinstalled)
        installed = {c.name: c.selectors for d in sorted(drivers) if (shape := driver_slices(d)) is not None
                     for c in shape.device_classes}
        # The owner's install created one for each of its drivers' classes (`device_class` below).
        return {**{name: (owner_selector(driver),) for name, driver in self.owner_classes.items()}, **installed}

    def report_pending(self) -> None:
        """Each Pending pod's message, with the autoscaler's reason where a pool at its maximum would
        have taken it, and each engine workload's readiness."""
        for pending in self.unplaced:
            if pending.at_maximum:
                condition = pending.pod["status"]["conditions"][0]
                condition["message"] = f"{condition['message']} pod didn't trigger scale-up: {pending.at_maximum}."
        for engine, count, unplaced in self.engine_runs:
            problems = [f"pod {p.pod['metadata']['namespace']}/{p.pod['metadata']['name']} is Pending: "
                        + (f"{p.at_maximum}; " if p.at_maximum else "") + p.message for p in unplaced]
            self.readiness[engine.ref] = WorkloadReadiness(
                not problems, "; ".join(problems) if problems else f"{count} of {count} pods running")


def after_daemonset_predicates(filters: Sequence[Filter]) -> tuple[Filter, ...]:
    """The filters after the DaemonSet predicates that lead them, or all of them when they do not."""
    lead = len(DAEMONSET_PREDICATES)
    names = [p.name for p in filters[:lead]]
    return tuple(filters[lead:]) if names == [p.name for p in DAEMONSET_PREDICATES] else tuple(filters)


def _none(info: NodeInfo) -> list[str]:
    return []


def _fits(pending: Unplaced, info: NodeInfo, allocator: DeviceAllocator) -> dict | None:
    """The pod's device allocation on the node (empty without claims) when the node takes it, else None."""
    if not filter_nodes(pending.spec, [info], pending.filters)[0]:
        return None
    return allocator.try_allocate(info.name, pending.claims)[0] if pending.claims else {}


def _take(pending: Unplaced, info: NodeInfo, allocator: DeviceAllocator) -> bool:
    """Bind the pod to the node, with its devices, when the node takes it."""
    allocation = _fits(pending, info, allocator)
    if allocation is None:
        return False
    info.bind(pending.spec)
    allocator.commit(info.name, allocation)
    return True


# ---- objects


def engine_pods(manifest: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(pod name, pod template) of every pod an engine workload runs, named as its controller names
    them: a Deployment's `<name>-<hash>-<suffix>`, a LeaderWorkerSet group's leader `<name>-<group>`
    and workers `<name>-<group>-<index>`."""
    name, spec = manifest["metadata"]["name"], manifest["spec"]
    replicas = int(spec.get("replicas", 1))
    if manifest["kind"] == "Deployment":
        template_hash = _suffix(f"{manifest['metadata'].get('namespace')}/{name}", 10)
        return [(f"{name}-{template_hash}-{_suffix(f'{name}/{i}', 5)}", spec["template"]) for i in range(replicas)]
    group_template = spec["leaderWorkerTemplate"]
    size = int(group_template.get("size", 1))
    out = []
    for group in range(replicas):
        out.append((f"{name}-{group}", group_template.get("leaderTemplate") or group_template["workerTemplate"]))
        out += [(f"{name}-{group}-{index}", group_template["workerTemplate"]) for index in range(1, size)]
    return out


def engine_workload_object(engine: EngineObject, desired: int, running: int) -> Resource:
    """The engine workload as the cluster holds it, with the status its controller would write
    (Available once every pod runs, the condition the Object's readiness query reads)."""
    manifest = json_copy(dict(engine.manifest))
    available = "True" if running == desired else "False"
    conditions = [{"type": "Available", "status": available,
                   "reason": "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable"}]
    if manifest["kind"] == "Deployment":
        manifest["status"] = {"replicas": desired, "readyReplicas": running, "availableReplicas": running,
                              "conditions": conditions}
    else:
        manifest["status"] = {"replicas": int(manifest["spec"].get("replicas", 1)), "conditions": conditions}
    metadata = manifest["metadata"]
    metadata["annotations"] = {**(metadata.get("annotations") or {}), OBJECT_ANNOTATION: engine.ref}
    return manifest


def allocated_claim(name: str, namespace: str, claim_spec: Mapping[str, Any], node: str,
                    results: list[dict[str, str]]) -> Resource:
    """The ResourceClaim a template stamps for one pod, allocated on `node`."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": json_copy(dict(claim_spec)),
        "status": {"allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
    }


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


def pool_slices(node: str, pool: Pool, drivers: Iterable[str]) -> list[Resource]:
    """The ResourceSlices the plugins of `drivers` publish on a node of `pool`. A driver on a node
    whose class declares none of its devices publishes nothing (the audit reports the misplacement)."""
    out = []
    for driver in drivers:
        devices = [d for d in pool.devices if d.claim == "DRA" and d.driver == driver]
        if devices:
            out.append(resource_slice(node, driver, devices))
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


def device_class(name: str, driver: str) -> Resource:
    """A DeviceClass that selects one driver's devices, as drivers' charts create theirs; annotated with
    the driver, so that the audit reads which driver it selects from the object itself."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "annotations": {DRIVERS_ANNOTATION: driver}},
            "spec": {"selectors": [{"cel": {"expression": owner_selector(driver)}}]}}


def owner_selector(driver: str) -> str:
    """The selector of the DeviceClass an owner's driver install creates: that driver's devices."""
    return f"device.driver == '{driver}'"


def node_name(cluster: str, pool: str, index: int) -> str:
    """`<cluster>-<pool>-<index>`; a longer one is cut with a digest, as clouds cut theirs, because the
    name is also the node's kubernetes.io/hostname label value (at most 63 characters)."""
    name = f"{cluster}-{pool}-{index}"
    return name if len(name) <= NAME_MAX else composed_name(cluster, pool, str(index))


def daemon_pod_name(daemonset: str, node: str) -> str:
    """The DaemonSet controller's name for its pod on a node: the DaemonSet's and a suffix of the node's."""
    return f"{daemonset}-{_suffix(node, 5)}"


def node_names(cluster: str, pools: Iterable[tuple[str, int]]) -> list[str] | None:
    """The names of the nodes of `pools` ((name, node count)) as `node_name` gives them, or None if any
    is cut: then a name no longer starts with the cluster's, and `renamed` cannot move it."""
    names = [f"{cluster}-{pool}-{index}" for pool, count in pools for index in range(count)]
    return None if any(len(name) > NAME_MAX for name in names) else names


def renamed(objects: Sequence[Resource], cluster: str, pools: Sequence[tuple[str, int]], to: str
            ) -> list[Resource] | None:
    """The objects a simulation of cluster `to` gives, from those a simulation of `cluster` gave on the
    same inputs; None where that cannot be derived. `pools`: the simulated pools, (name, node count).
    New dicts along every path written here (and each object's metadata, for its caller to stamp); the
    rest is shared with `objects`, which are left as they were.

    The cluster's name reaches a simulation only through its nodes' names, `<cluster>-<pool>-<index>`.
    So when no name is cut (`node_names`), and the inputs name neither cluster (the caller's condition:
    then no selector, affinity or label value of the inputs can equal a node's name, which contains the
    cluster's), both simulations decide alike: predicates see the same labels apart from the hostname
    label no input matches, and orderings by node name compare names that share their cluster's prefix,
    so they order as the `<pool>-<index>` rest does. They then differ only where a node's name is
    printed, which is what this rewrites: a Node's name and hostname label, a pod's node (its nodeName,
    and a DaemonSet pod's pinning and its name), a ResourceSlice's node (see `renamed_slice`). Engine
    workloads are not covered (their manifests and messages name nodes): the caller leaves them out."""
    old, new = node_names(cluster, pools), node_names(to, pools)
    if old is None or new is None:
        return None
    nodes = dict(zip(old, new))
    out = []
    for obj in objects:
        kind = obj["kind"]
        obj = {**obj, "metadata": dict(obj["metadata"])}
        metadata = obj["metadata"]
        if kind == "Node":
            metadata["name"] = nodes[metadata["name"]]
            labels = metadata["labels"] = dict(metadata["labels"])
            labels[HOSTNAME_LABEL] = nodes.get(labels[HOSTNAME_LABEL], labels[HOSTNAME_LABEL])
        elif kind == "Pod":
            spec = obj["spec"] = dict(obj["spec"])
            if "nodeName" in spec:
                spec["nodeName"] = nodes[spec["nodeName"]]
            pinned = _repin(spec, nodes)
            if pinned is not None:
                workload_kind, daemonset = metadata["annotations"][WORKLOAD_ANNOTATION].split("/", 1)
                if workload_kind != "DaemonSet" or metadata["name"] != daemon_pod_name(daemonset, pinned):
                    return None
                metadata["name"] = daemon_pod_name(daemonset, nodes[pinned])
        elif kind == "ResourceSlice":
            obj = renamed_slice(obj, nodes)
            if obj is None:
                return None
        elif kind not in KIND_ORDER:
            return None  # a kind this does not know where names go in
        out.append(obj)
    return sorted(out, key=_order)


def _repin(spec: Resource, nodes: Mapping[str, str]) -> str | None:
    """The node a DaemonSet pod is pinned to (`pin_to_node`), if `nodes` maps it; the pod spec's
    affinity (new dicts) is then pinned to the node it maps to."""
    affinity = spec.get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    pinned = next((f["values"][0] for t in terms for f in t.get("matchFields") or []
                   if f.get("key") == "metadata.name" and f.get("values") and f["values"][0] in nodes), None)
    if pinned is None:
        return None
    moved = [{**t, "matchFields": [{**f, "values": [nodes.get(v, v) for v in f.get("values") or []]}
                                   if f.get("key") == "metadata.name" else f for f in t["matchFields"]]}
             if t.get("matchFields") else t for t in terms]
    spec["affinity"] = {**affinity, "nodeAffinity": {
        **affinity["nodeAffinity"], "requiredDuringSchedulingIgnoredDuringExecution": {
            **required, "nodeSelectorTerms": moved}}}
    return pinned


def kwok_node(name: str, pool: Pool) -> Resource:
    allocatable = node_allocatable(pool)
    annotations = {KWOK_ANNOTATION: "fake", POOL_ROLE_ANNOTATION: pool.role}
    if pool.drivers:
        annotations[POOL_DRIVERS_ANNOTATION] = ",".join(pool.drivers)
    if pool.held_back:
        annotations[HELD_DRIVERS_ANNOTATION] = ",".join(pool.held_back)
    node: Resource = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": annotations,
            # The kubelet's well-known labels first; the pool's own labels may not override `type`.
            "labels": {"kubernetes.io/arch": "amd64", HOSTNAME_LABEL: name, "kubernetes.io/os": "linux",
                       **pool.labels, KWOK_LABEL: "kwok"},
        },
        "spec": {},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
        },
    }
    if pool.taints:
        node["spec"]["taints"] = [_taint(t) for t in pool.taints]
    return node


def node_allocatable(pool: Pool) -> dict[str, str]:
    """The pool's node size: declared, else a CPU pool's class `cpu` capacity (what the CPU driver counts)
    with the CPUs the driver keeps back (reservedCPUs), else the default."""
    out = dict(DEFAULT_ALLOCATABLE)
    if pool.role == PoolRole.CPU:
        cpu = sum((parse_quantity(d.capacity["cpu"].value) * d.count for d in pool.devices
                   if d.claim == "DRA" and "cpu" in d.capacity), Fraction(0))
        if cpu > 0:
            out["cpu"] = format_quantity(cpu + cpu_driver.RESERVED)
    out.update(pool.allocatable or {})
    return out


def _taint(taint: Mapping[str, str]) -> dict[str, str]:
    out = {"key": taint["key"]}
    if taint.get("value"):
        out["value"] = taint["value"]
    out["effect"] = taint.get("effect", "NoSchedule")
    return out


def pod_object(workload: Workload, name: str, spec: Resource, node: str | None, pending: str | None) -> Resource:
    annotations = {WORKLOAD_ANNOTATION: _owner_of(workload), **_placement(workload)}
    if node is not None and workload.crash:
        # Scheduled and started, but its container exits at start-up: the kubelet restarts it.
        spec = {"nodeName": node, **spec}
        status = {"phase": "Running",
                  "conditions": [{"type": "PodScheduled", "status": "True"},
                                 {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
                  "containerStatuses": [{"name": workload.container, "ready": False, "restartCount": 5,
                                         "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                               "message": workload.crash}}}]}
    elif node is not None:
        spec = {"nodeName": node, **spec}
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                     {"type": "Ready", "status": "True"}]}
    else:
        status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                      "reason": "Unschedulable", "message": pending}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": workload.namespace, "labels": _labels(workload),
                     "annotations": annotations},
        "spec": spec,
        "status": status,
    }


def workload_object(workload: Workload, *, desired: int, ready: int) -> Resource:
    spec: Resource = {
        "selector": {"matchLabels": {APP_LABEL: workload.name}},
        "template": {"metadata": {"labels": _labels(workload)}, "spec": workload.pod_spec()},
    }
    if workload.kind == "DaemonSet":
        status = {"currentNumberScheduled": desired, "desiredNumberScheduled": desired, "numberMisscheduled": 0,
                  "numberReady": ready, "numberAvailable": ready}
        if desired > ready:
            status["numberUnavailable"] = desired - ready
    else:
        spec = {"replicas": workload.replicas, **spec}
        if workload.kind == "StatefulSet":
            # The Prometheus operator's governing Services are `prometheus-operated` and
            # `alertmanager-operated`, the first word of the StatefulSet's name.
            spec["serviceName"] = f"{workload.name.split('-')[0]}-operated"
        status = {"replicas": desired, "readyReplicas": ready, "availableReplicas": ready}
    return {
        "apiVersion": "apps/v1",
        "kind": workload.kind,
        "metadata": {"name": workload.name, "namespace": workload.namespace,
                     "labels": {COMPONENT_LABEL: workload.component}, "annotations": _placement(workload)},
        "spec": spec,
        "status": status,
    }


def names_a_node(pod: Mapping[str, Any]) -> bool:
    """Whether a pod's nodeSelector or required node affinity reads a node's name or hostname label."""
    if HOSTNAME_LABEL in (pod.get("nodeSelector") or {}):
        return True
    required = (((pod.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    return any(term.get("matchFields") or any(e.get("key") == HOSTNAME_LABEL for e in term.get("matchExpressions") or [])
               for term in required.get("nodeSelectorTerms") or [])


def pin_to_node(affinity: Mapping[str, Any] | None, node: str) -> Resource:
    """The DaemonSet controller's node pinning: each required term also has to match the node's
    name (an existing term keeps its expressions; a pod without required terms gets one)."""
    # New dicts along the path written here only: the rest is shared with the template, as nothing
    # modifies a pod spec once built (a copy per pod was a tenth of a fleet's simulation).
    node_affinity = dict((affinity or {}).get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    field_term = [{"key": "metadata.name", "operator": "In", "values": [node]}]
    terms = required.get("nodeSelectorTerms") or []
    required["nodeSelectorTerms"] = [{**t, "matchFields": field_term} for t in terms] or [{"matchFields": field_term}]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    return {**(affinity or {}), "nodeAffinity": node_affinity}


def with_daemonset_tolerations(tolerations: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    out = [dict(t) for t in tolerations or []]
    out += [dict(t) for t in DAEMONSET_TOLERATIONS if t not in out]
    return out


def _placement(workload: Workload) -> dict[str, str]:
    """Where the workload belongs, for the audit: its placement and the drivers it serves."""
    out = {PLACEMENT_ANNOTATION: workload.placement.value}
    if workload.drivers:
        out[DRIVERS_ANNOTATION] = ",".join(sorted(workload.drivers))
    return out


def _labels(workload: Workload) -> dict[str, str]:
    return {APP_LABEL: workload.name, COMPONENT_LABEL: workload.component}


def _owner_of(workload: Workload) -> str:
    return f"{workload.kind}/{workload.name}"


# Kubernetes' generated-name alphabet: no vowels (no words) and no look-alike characters.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@functools.lru_cache(maxsize=16384)
def _suffix(text: str, length: int) -> str:
    """A stable generated-name suffix: the same text always gives the same characters (cached: every
    cluster names the same workloads, and every DaemonSet the same nodes)."""
    digest = hashlib.sha256(text.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def _order(obj: Resource) -> tuple:
    metadata = obj["metadata"]
    return KIND_ORDER.get(obj["kind"], 9), metadata.get("namespace", ""), metadata["name"]
