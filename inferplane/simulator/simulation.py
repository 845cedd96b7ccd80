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
  allocated devices from that node's slices, and its ResourceClaims carry the allocation; a pod mounting
  a ModelCache claim not bound yet stays Pending on no node (`cache_claims`). Each
  workload's readiness is reported with the pods that did not run, their nodes and why;
- the cluster autoscaler's scale-up: a pod left Pending that a new node of an autoscaled pool would
  take (that node's labels, taints, allocatable, DaemonSet pods and ResourceSlices) grows that pool
  by the nodes it needs, never past its maximum, and the cluster is simulated again with them
  (`<cluster>-<pool>-<i>` continues the pool's numbering). A pod that only a pool at its maximum
  would take stays Pending, saying so. Pools are never shrunk.

This module runs the simulation and places the stack's pods; each other part has its module:
`simulation_inputs` (pools, engine Objects, the stack's components), `simulation_objects` (the objects
as their controllers write them), `simulation_slices` (each driver's ResourceSlices),
`simulation_engines` (the engine pods and their claims), `simulation_autoscaler` (the scale-up) and
`simulation_rename` (one simulation's objects moved to another cluster's name).
The audits in `audits.py` read those objects back and report what a real cluster would suffer from.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from inferplane.accelerators.registry import driver_slices
from inferplane.accelerators.workloads import Workload, workloads
from inferplane.api.json_data import json_copy
from inferplane.scheduling.framework import Filter
from inferplane.scheduling.node_scores import WorkloadPods
from inferplane.scheduling.predicates import (
    NodeAffinity,
    NodeInfo,
    NodeSelector,
    PodRequests,
    TaintToleration,
    filter_nodes,
    unschedulable_message,
)
from inferplane.scheduling.profiles import NODE, profile
from inferplane.simulator.simulation_autoscaler import ClusterAutoscaler, Unplaced
from inferplane.simulator.simulation_engines import EnginePlacement
from inferplane.simulator.simulation_inputs import EngineObject, Pool, installed_components, owner_device_classes
from inferplane.simulator.simulation_objects import (
    HOSTNAME_LABEL,
    daemon_pod_name,
    device_class,
    generated_suffix,
    kwok_node,
    node_name,
    object_order,
    owner_selector,
    pin_to_node,
    pod_object,
    with_daemonset_tolerations,
    workload_object,
)
from inferplane.simulator.simulation_slices import pool_slices

Resource = dict[str, Any]

# What the DaemonSet controller checks before it creates a pod for a node: selector, affinity and
# taints, but not resources (the scheduler then binds the pod, or leaves it Pending).
DAEMONSET_PREDICATES = (TaintToleration(), NodeSelector(), NodeAffinity())


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


class ClusterSimulation(EnginePlacement, ClusterAutoscaler):
    """One simulated cluster: its nodes, the stack's workloads and pods, its slices, then the engines;
    again with the pools the autoscaler grew, until it grows none."""

    def __init__(self, cluster_name: str, pools: Sequence[Pool], components: Mapping[str, Resource],
                 engines: Sequence[EngineObject] = (), preinstalled: Iterable[str] = (),
                 unbound_claims: Mapping[str, Mapping[str, str]] | None = None):
        """`components`: what `installed_components` reads from the stack's resources; `engines`: the
        Objects of the ModelReplicas pinned to the cluster; `preinstalled`: the drivers the cluster's
        owner runs, which no component serves; `unbound_claims`: the ModelCache claims engine pods mount
        that are not bound yet ({namespace/name: {phase, storageClassName, bindingMode}})."""
        self.cluster = cluster_name
        self.unbound_claims = dict(unbound_claims or {})
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
        return sorted(self.objects, key=object_order)

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
        template_hash = generated_suffix(f"{workload.namespace}/{workload.name}", 10)
        running = 0
        for index in range(workload.replicas):
            if workload.kind == "StatefulSet":
                name = f"{workload.name}-{index}"
            else:
                name = f"{workload.name}-{template_hash}-{generated_suffix(f'{workload.name}/{index}', 5)}"
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

    def device_classes(self) -> dict[str, tuple[str, ...]]:
        """The DeviceClasses the cluster's device stacks install (each driver's chart installs its own), with
        their selectors as the chart writes them."""
        drivers = {w.publishes_slices_for for w in self.workloads if w.publishes_slices_for} | set(self.preinstalled)
        installed = {c.name: c.selectors for d in sorted(drivers) if (shape := driver_slices(d)) is not None
                     for c in shape.device_classes}
        # The owner's install created one for each of its drivers' classes (`simulation_objects.device_class`).
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


def names_a_node(pod: Mapping[str, Any]) -> bool:
    """Whether a pod's nodeSelector or required node affinity reads a node's name or hostname label."""
    if HOSTNAME_LABEL in (pod.get("nodeSelector") or {}):
        return True
    required = (((pod.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    return any(term.get("matchFields") or any(e.get("key") == HOSTNAME_LABEL for e in term.get("matchExpressions") or [])
               for term in required.get("nodeSelectorTerms") or [])
