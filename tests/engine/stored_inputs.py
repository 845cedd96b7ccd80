"""Every stored cluster with its simulation inputs, read from a store: what the engine's tests simulate
(the reconciler reads the same inputs from its cache)."""

from __future__ import annotations

from typing import Any

from inferplane.runtime.store import Resource, Store, controller_of
from inferplane.simulator.fleet import simulation_inputs


def fleet_inputs(store: Store) -> list[tuple[Resource, dict[str, Any] | None]]:
    """Every stored cluster with its simulation inputs (None: nothing to simulate)."""
    everything = store.list()
    objects = {(o["kind"], o["metadata"]["name"]): o for o in everything if not o["metadata"].get("namespace")}
    owned: dict[str, list[Resource]] = {}
    pinned: dict[str, list[Resource]] = {}
    for obj in everything:
        owner = controller_of(obj)
        if owner:
            owned.setdefault(owner, []).append(obj)
        if obj["kind"] == "ModelReplica":
            pinned.setdefault((obj.get("spec") or {}).get("clusterName", ""), []).append(obj)
    return [(cluster, simulation_inputs(cluster, lambda kind, name: objects.get((kind, name)),
                                        lambda uid: owned.get(uid, []), lambda name: pinned.get(name, [])))
            for cluster in everything if cluster["kind"] == "InferenceCluster"]
