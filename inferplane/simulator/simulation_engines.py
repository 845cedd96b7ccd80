"""The engine workloads of the ModelReplicas pinned to a simulated cluster (their Deployments and
LeaderWorkerSets) and their Pods: each pod placed by the node-level filters and scores, then by DRA
allocation (`scheduling.dra`): it runs only on a node where every claim of its ResourceClaimTemplates is
allocated devices from that node's slices, and its ResourceClaims carry the allocation."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from inferplane.accelerators.workloads import Placement
from inferplane.api.json_data import json_copy
from inferplane.compose.model_replica import REPLICA_LABEL
from inferplane.scheduling.dra import DeviceAllocator
from inferplane.scheduling.framework import Profile
from inferplane.scheduling.node_scores import WorkloadPods
from inferplane.scheduling.predicates import NodeInfo, unschedulable_message
from inferplane.simulator.cache_claims import readiness_reason, waiting_message
from inferplane.simulator.cluster_objects import KUBERNETES_READY
from inferplane.simulator.simulation_autoscaler import Unplaced
from inferplane.simulator.simulation_inputs import EngineObject
from inferplane.simulator.simulation_objects import (
    ENGINE_PLACEMENT,
    OBJECT_ANNOTATION,
    PLACEMENT_ANNOTATION,
    WORKLOAD_ANNOTATION,
    allocated_claim,
    engine_pods,
    engine_workload_object,
)

Resource = dict[str, Any]
Claims = list[tuple[str, Mapping[str, Any]]]

# How many nodes' reasons a Pending engine pod's readiness message names (the rest are counted).
NODES_NAMED = 3


class EnginePlacement:
    """The engines' part of `ClusterSimulation`, which it is mixed into: it places the engine pods on the
    simulation's nodes, after the stack's workloads have run and published their slices."""

    engines: list[EngineObject]
    objects: list[Resource]
    nodes: list[NodeInfo]
    node_by_name: dict[str, NodeInfo]
    unplaced: list[Unplaced]
    engine_runs: list[tuple[EngineObject, int, list[Unplaced]]]
    unbound_claims: dict[str, Mapping[str, str]]
    plugins: Profile[Any, Any]
    device_classes: Callable[[], dict[str, tuple[str, ...]]]
    filter_all: Callable[[Resource], tuple[list[str], dict[str, list[str]]]]

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
        waiting = {ref: self.unbound_claims[ref] for v in spec.get("volumes") or []
                   if (ref := f"{namespace}/{(v.get('persistentVolumeClaim') or {}).get('claimName')}")
                   in self.unbound_claims}
        if waiting:
            return self.hold_for_volumes(engine_pod(engine, name, namespace, template), spec, waiting)
        feasible, rejected = self.filter_all(spec)
        chosen, allocation = self.allocate_on_best(spec, claims, feasible, rejected, allocator)
        pod = engine_pod(engine, name, namespace, template)
        if chosen is None:
            return self.leave_engine_pod_pending(pod, spec, claims, rejected)
        allocator.commit(chosen, allocation)
        self.node_by_name[chosen].bind(spec)
        statuses = []
        for claim, claim_spec in claims:
            claim_name = f"{name}-{claim}"
            statuses.append({"name": claim, "resourceClaimName": claim_name})
            self.objects.append(allocated_claim(claim_name, namespace, claim_spec, chosen,
                                                [a.to_dict() for a in allocation.get(claim, [])]))
        pod["spec"] = {"nodeName": chosen, **spec}
        pod["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                            {"type": KUBERNETES_READY, "status": "True"}]}
        if statuses:
            pod["status"]["resourceClaimStatuses"] = statuses
        self.objects.append(pod)
        return None

    def leave_engine_pod_pending(self, pod: Resource, spec: Resource, claims: Claims,
                                 rejected: Mapping[str, list[str]]) -> Unplaced:
        """The pod Pending with the scheduler's message, kept for the autoscaler with why: the first
        nodes by name and their reasons, the others counted."""
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

    def hold_for_volumes(self, pod: Resource, spec: Resource, claims: Mapping[str, Mapping[str, str]]) -> Unplaced:
        """The pod Pending on no node while a claim it mounts is not bound (`cache_claims`). Not kept for
        the autoscaler: no new node binds a claim (cluster-autoscaler runs the same VolumeBinding filter)."""
        reason, message = waiting_message(claims, len(self.nodes))
        pod["spec"] = spec
        pod["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}]}
        self.objects.append(pod)
        return Unplaced(pod, spec, [], readiness_reason(claims), self.plugins.filters)

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


def engine_pod(engine: EngineObject, name: str, namespace: str, template: Mapping[str, Any]) -> Resource:
    """An engine pod's object before it is scheduled: its template's labels, and where it belongs for the
    audit (an engine pod, claiming or not, on its pool; the endpoint picker is a controller)."""
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    annotations = {WORKLOAD_ANNOTATION: f"{engine.manifest['kind']}/{engine.manifest['metadata']['name']}",
                   OBJECT_ANNOTATION: engine.ref,
                   PLACEMENT_ANNOTATION: ENGINE_PLACEMENT if REPLICA_LABEL in labels else Placement.SYSTEM.value}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": annotations}}
