"""The simulator as the second controller the reconciler hosts: like a fleet of kubelets and
schedulers, it watches each InferenceCluster, the ModelReplicas pinned to it and the ModelCaches whose
claims are applied on it, and simulates the cluster again whenever what it reads of them changed
(fleet.simulation_inputs): its nodes, its stack's workloads and the engines, whose provider-kubernetes
Objects then report how they run (an engine pod waits for its cache's claim to be bound)."""

from __future__ import annotations

from typing import Iterable

from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.model_cache import ModelCache
from inferplane.api.model_replica import ModelReplica
from inferplane.runtime.controller import HOSTED_PRIORITY, View
from inferplane.runtime.store import Key
from inferplane.simulator.fleet import Templates, fingerprint, simulate, simulation_inputs
from inferplane.simulator.cluster_objects import replace_cluster_objects, simulated_inputs

SIMULATE = "simulate"
# After every reconcile: a cluster is simulated once its fleet settled, not at every step on the way.
SIMULATE_PRIORITY = HOSTED_PRIORITY
# The field a ModelReplica names its cluster by: the cache indexes replicas by it.
PINNED_TO = "spec.clusterName"


def pinned_cluster(replica: dict) -> str:
    spec = replica.get("spec")
    return str(spec.get("clusterName", "")) if isinstance(spec, dict) else ""


class Simulator:
    work = SIMULATE
    priority = SIMULATE_PRIORITY
    field_indexes = ((ModelReplica.KIND, PINNED_TO),)

    def __init__(self) -> None:
        # Simulations kept for clusters whose inputs equal theirs (fleet.Templates).
        self.templates = Templates()

    @staticmethod
    def target(view: View, key: Key) -> Key | None:
        """The target cluster whose simulation a change to this object can change: the cluster it is
        composed under, or the one a ModelReplica is pinned to."""
        if key.kind == ModelReplica.KIND:
            replica = view.get(key)
            cluster = view.lookup(InferenceCluster.KIND, pinned_cluster(replica)) if replica else None
            return Key.of(cluster) if cluster else None
        root = view.root(key)
        return root if root.kind == InferenceCluster.KIND else None

    def due_after_reconcile(self, view: View, key: Key) -> Iterable[Key]:
        if key.kind == ModelCache.KIND:
            return self.claim_clusters(view, key)
        target = self.target(view, key)
        return [target] if target is not None else []

    @staticmethod
    def claim_clusters(view: View, key: Key) -> list[Key]:
        """The clusters a ModelCache's claims are applied on: their engine pods wait for those claims to
        be bound (simulator.cache_claims), so a claim's reported phase is an input of their simulation."""
        cache = view.get(key)
        names = {((o.get("spec") or {}).get("providerConfigRef") or {}).get("name")
                 for o in (view.children(cache["metadata"]["uid"]) if cache is not None else [])
                 if o.get("kind") == "Object"}
        return sorted(Key.of(c) for n in names if n and (c := view.lookup(InferenceCluster.KIND, n)) is not None)

    def due_on_delete(self, view: View, key: Key) -> Iterable[Key]:
        """A deleted replica's engines stop on its cluster, a deleted cache's claims hold none of its engine
        pods; a deleted cluster's simulation goes."""
        if key.kind == InferenceCluster.KIND:
            return [key]
        return self.due_after_reconcile(view, key) if key.kind in (ModelReplica.KIND, ModelCache.KIND) else []

    def run(self, view: View, key: Key) -> bool:
        """Simulate a target cluster again if its inputs changed since it last was."""
        store = view.store
        cluster = view.get(key)
        if cluster is None:
            replace_cluster_objects(store, key.name, [], None)  # the cluster is gone
            return False
        inputs = simulation_inputs(cluster, view.lookup, view.children,
                                   lambda name: view.by_field(ModelReplica.KIND, PINNED_TO, name), view.get)
        if simulated_inputs(store, key.name) == fingerprint(inputs):
            return False
        _, statuses = simulate(store, cluster, inputs, self.templates)
        # The engine workloads' Objects report how they run, as their provider would; each change
        # reconciles the replica that composed it.
        for object_key, status in sorted(statuses.items()):
            view.report_status(object_key, status)
        return True
