"""Fleet-wide steps after composition: each target cluster simulated, and its placement audited."""

from __future__ import annotations

from typing import Any

from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS, PoolRole
from inferplane.api.common import SYSTEM_POOL_NAME
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.clouds.base import SYSTEM_POOL_NODES
from inferplane.compose.inference_cluster import node_pool
from inferplane.engine.reconciler import controller_of
from inferplane.engine.simulation import Pool, simulate_cluster
from inferplane.engine.simulation_audit import audit
from inferplane.engine.store import Key, Resource, Store

# An existing cluster's own untainted nodes, where its controllers run (inferplane does not
# provision them, so the simulation stands them in with a small System pool).
EXISTING_SYSTEM_POOL = {"name": SYSTEM_POOL_NAME, "role": PoolRole.SYSTEM, "nodeCount": SYSTEM_POOL_NODES,
                        "labels": {}, "taints": []}


def _pools(cluster: Resource, objects: dict[tuple[str, str], Resource],
           classes: dict[str, InferenceClass]) -> list[Pool] | None:
    """The cluster's pools with their class devices; None when nothing is provisioned (yet)."""
    source = cluster["spec"]["cluster"]["source"]
    name = cluster["metadata"]["name"]
    pool_classes = {p["name"]: p["className"] for p in cluster["spec"]["nodePools"]}
    if source == "Existing":
        typed = InferenceCluster.model_validate(cluster)
        if any(p.class_name not in classes for p in typed.spec.node_pools):
            return None
        entries = [EXISTING_SYSTEM_POOL]
        entries += [node_pool(pool, classes[pool.class_name]) for pool in typed.spec.node_pools]
    else:
        cloud_cluster = objects.get((CLOUD_CLUSTER_KINDS[source].KIND, name))
        if cloud_cluster is None:
            return None
        entries = cloud_cluster["spec"]["nodePools"]
    pools = []
    for entry in entries:
        klass = classes.get(pool_classes.get(entry["name"], ""))
        pools.append(Pool.from_wire(entry, klass.spec.devices if klass and entry["role"] != PoolRole.SYSTEM else ()))
    return pools


def simulate_fleet(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Recompute every target cluster's objects (nodes, workloads, ResourceSlices); returns the
    placement audit's findings by cluster, also recorded as Warning events on the InferenceCluster."""
    everything = store.list()
    objects = {(o["kind"], o["metadata"]["name"]): o for o in everything if not o["metadata"].get("namespace")}
    classes = {o["metadata"]["name"]: InferenceClass.model_validate(o)
               for o in everything if o["kind"] == "InferenceClass"}
    owned: dict[str, list[Resource]] = {}
    for obj in everything:
        owner = controller_of(obj)
        if owner:
            owned.setdefault(owner, []).append(obj)
    findings: dict[str, list[dict[str, Any]]] = {}
    with store.transaction():
        for cluster in (o for o in everything if o["kind"] == "InferenceCluster"):
            name = cluster["metadata"]["name"]
            pools = _pools(cluster, objects, classes)
            stack = objects.get(("ServingStack", name))
            if pools is None or stack is None:
                store.replace_cluster_objects(name, [])
                continue
            simulated = simulate_cluster(name, pools, owned.get(stack["metadata"]["uid"], []))
            store.replace_cluster_objects(name, simulated)
            findings[name] = [f.to_dict() for f in audit(simulated)]
            for finding in findings[name]:
                store.record_event(Key.of(cluster), "Warning", f"PlacementAudit{finding['reason']}",
                                   finding["message"])
    return findings
