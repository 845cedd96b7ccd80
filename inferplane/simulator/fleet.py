"""Each target cluster simulated, and its placement audited; rerun only when its inputs changed.

A cluster's simulation depends on its pools (from the cloud cluster's node pools, or an Existing
cluster's own spec), the devices of the classes those pools use, the components its serving
stack installs, the Objects of the ModelReplicas pinned to it, and (only while one is unbound) the
ModelCache claims their engine pods mount. Those inputs are fingerprinted; a cluster whose fingerprint is the one it was last
simulated from keeps its objects. A cluster whose inputs equal another's, as most clusters of one cloud in a
fleet do, is derived from that one's simulation by renaming its nodes (`Templates`).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any, Callable

import orjson

from inferplane.api.function import READY, RECONCILE_SUCCESS, SYNCED
from inferplane.accelerators.catalog import supported_drivers
from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS, PoolRole
from inferplane.api.common import SYSTEM_POOL_NAME
from inferplane.api.drivers import DRIVERS
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.json_data import json_copy
from inferplane.api.serving_stack import ServingStack
from inferplane.clouds import CLOUD_MODULES, provisioned_gpu
from inferplane.clouds.base import SYSTEM_POOL_NODES, CloudModule, scaling_of
from inferplane.api.managed import composed_name
from inferplane.compose.base import refused_by_provider
from inferplane.compose.inference_cluster import HELD_ANNOTATION, node_pool
from inferplane.simulator.audits import audit
from inferplane.simulator.cache_claims import IMMEDIATE, binding_modes, unbound_claims
from inferplane.simulator.simulation import ClusterSimulation
from inferplane.simulator.simulation_inputs import EngineObject, Pool, installed_components
from inferplane.simulator.simulation_rename import node_names, renamed
from inferplane.runtime.store import Key, Resource, Store
from inferplane.simulator.cluster_objects import replace_cluster_objects, simulated_objects

# An existing cluster's own untainted nodes, where its controllers run (inferplane does not
# provision them, so the simulation stands them in with a small System pool).
EXISTING_SYSTEM_POOL = {"name": SYSTEM_POOL_NAME, "role": PoolRole.SYSTEM, "nodeCount": SYSTEM_POOL_NODES,
                        "labels": {}, "taints": []}

# (kind, name) -> the cluster-scoped object, or None.
Lookup = Callable[[str, str], Resource | None]
# A composite's uid -> the objects it controls.
Children = Callable[[str], list[Resource]]
# A cluster's name -> the ModelReplicas pinned to it.
Pinned = Callable[[str], list[Resource]]
# A key -> the object, or None.
Get = Callable[[Key], Resource | None]
OBJECT_GROUP = "kubernetes.m.crossplane.io"


def simulation_inputs(cluster: Resource, lookup: Lookup, children: Children,
                      pinned: Pinned = lambda name: [], get: Get = lambda key: None) -> dict[str, Any] | None:
    """Everything the cluster's simulation reads, as plain data; None when nothing is provisioned (yet).
    `get` reads a namespaced object (a replica's ModelCache, whose claims its engine pods mount)."""
    name = cluster["metadata"]["name"]
    stack = lookup(ServingStack.KIND, name)
    if stack is None:
        return None
    source = cluster["spec"]["cluster"]["source"]
    pool_classes = {p["name"]: p["className"] for p in cluster["spec"].get("nodePools") or []}
    classes = {c: lookup(InferenceClass.KIND, c) for c in set(pool_classes.values())}
    cloud = CLOUD_MODULES[source]
    entries = (pool_entries(cluster, cloud, classes) if not cloud.provisioned
               else cloud_pool_entries(name, cloud, lookup, children))
    if entries is None:
        return None
    held = HELD_ANNOTATION in (stack["metadata"].get("annotations") or {})
    # A held cluster's pools run the devices they were composed with, which its status keeps.
    composed_with = {p["name"]: p.get("devices") or [] for p in (cluster.get("status") or {}).get("schedulablePools") or []}
    pools = []
    for entry in entries:
        entry = {**entry, "labels": {**(entry.get("labels") or {}), **cloud.node_labels(entry.get("machine") or {})}}
        klass = classes.get(pool_classes.get(entry["name"], ""))
        devices = klass["spec"]["devices"] if klass and entry["role"] != PoolRole.SYSTEM else []
        pool: dict[str, Any] = {"entry": entry, "devices": devices}
        # The GPU the class's machine carries, which its devices are (the cloud's table of offerings).
        if devices and (gpu := provisioned_gpu(klass["spec"].get("provisioning"))) is not None:
            pool["machineGpu"] = asdict(gpu)
        if held:
            pool.update(held_pool(entry, composed_with.get(entry["name"], devices), devices,
                                  served_drivers(stack)))
        pools.append(pool)
    # The uid too: an Object deleted and created again (it reports Creating) is simulated again.
    engines = [{"namespace": o["metadata"]["namespace"], "name": o["metadata"]["name"],
                "uid": o["metadata"].get("uid"), "manifest": o["spec"]["forProvider"]["manifest"]}
               for replica in pinned(name) for o in children(replica["metadata"]["uid"])
               if o["kind"] == "Object" and (o["spec"].get("providerConfigRef") or {}).get("name") == name]
    inputs = {"pools": pools, "installed": installed_components(children(stack["metadata"]["uid"])),
              "preinstalled": sorted(preinstalled_drivers(stack)),
              "engines": sorted(engines, key=lambda e: (e["namespace"], e["name"]))}
    # Only while a claim is unbound: a cluster whose engines' volumes are all Bound reads as it did.
    if engines and (unbound := unbound_claims(name, pinned(name), get, children)):
        modes = binding_modes(cluster_storage(name, cloud, lookup, children))
        inputs["unboundClaims"] = {ref: {**claim, "bindingMode": modes.get(claim["storageClassName"], IMMEDIATE)}
                                   for ref, claim in unbound.items()}
    return inputs


def cluster_storage(name: str, cloud: CloudModule, lookup: Lookup, children: Children) -> list[Resource]:
    """What the cloud cluster composes on the workload cluster (its StorageClass among them); none on a
    cluster inferplane does not provision."""
    cloud_cluster = lookup(CLOUD_CLUSTER_KINDS[cloud.source].KIND, name) if cloud.provisioned else None
    return children(cloud_cluster["metadata"]["uid"]) if cloud_cluster is not None else []


def pool_entries(cluster: Resource, cloud: CloudModule, classes: dict[str, Resource | None]
                 ) -> list[dict[str, Any]] | None:
    """The pools of a cluster inferplane does not provision, from its own spec (with a System pool standing
    in for its owner's untainted nodes); None until every class its pools name exists."""
    if any(klass is None for klass in classes.values()):
        return None
    typed = InferenceCluster.model_validate(cluster)
    entries = [EXISTING_SYSTEM_POOL]
    entries += [node_pool(pool, InferenceClass.model_validate(classes[pool.class_name]), cloud.source)
                for pool in typed.spec.node_pools]
    return entries if cloud.autoscales_pools else [without_maximum(e) for e in entries]


def cloud_pool_entries(name: str, cloud: CloudModule, lookup: Lookup, children: Children
                       ) -> list[dict[str, Any]] | None:
    """The pools of a provisioned cluster as its cloud cluster composes them, sized as the cloud creates
    them; None until the cloud cluster exists, or when the cloud refused to create it."""
    cloud_cluster = lookup(CLOUD_CLUSTER_KINDS[cloud.source].KIND, name)
    if cloud_cluster is None:
        return None
    # What the cloud refused to create has no nodes: a cluster never created, a pool never created.
    refused = {o["metadata"]["name"] for o in children(cloud_cluster["metadata"]["uid"]) if refused_by_provider(o)}
    if name in refused:
        return None
    return [simulated_size(cloud, e) for e in cloud_cluster["spec"]["nodePools"]
            if composed_name(name, e["name"]) not in refused]


def served_drivers(stack: Resource) -> set[str]:
    """The drivers that run on a stack's cluster as it stands: its stamped ones (or while unstamped the
    cloud's list) and the owner's."""
    stamped = stack["spec"].get("draDrivers")
    return set(supported_drivers(stack["spec"]["source"]) if stamped is None else stamped) | preinstalled_drivers(stack)


def preinstalled_drivers(stack: Resource) -> set[str]:
    """The drivers the cluster's owner runs, as stamped on its stack (a held stack keeps what it had)."""
    return set(stack["spec"].get("preinstalledDrivers") or ())


def held_pool(entry: dict[str, Any], running: list[dict[str, Any]], wanted: list[dict[str, Any]],
              served: set[str]) -> dict[str, Any]:
    """A pool of a cluster the gate holds, judged on what runs: the drivers the held stack serves that
    the devices it was composed with claim or its nodes were provisioned for (their driver's pool
    taint), and apart, the drivers its class now wants that the stack does not serve."""
    def claimed(devices: list[dict[str, Any]]) -> set[str]:
        return {d["driver"] for d in devices if d.get("claim", "DRA") == "DRA"}

    taints = {t["key"] for t in entry.get("taints") or []}
    marked = {d.name for d in DRIVERS.values() if d.pool_taint is not None and d.pool_taint.key in taints}
    runs = {d for d in served if d in claimed(running) or d in marked}
    # Only the devices of drivers that run are published; a held-back driver's are not.
    return {"devices": [d for d in running if d.get("driver") in runs or d.get("claim") == "Synthetic"],
            "runs": sorted(runs), "heldBack": sorted(claimed(wanted) - served)}


def simulated_size(module: CloudModule, entry: dict[str, Any]) -> dict[str, Any]:
    """A cloud pool's entry with the nodes the cloud creates for it, and the maximum its cluster
    autoscaler may grow it to, only where the cloud autoscales it (GKE counts both per zone)."""
    zones = entry.get("zones") or []
    count = module.nodes_created(int(entry.get("nodeCount", 1)), zones)
    out = {**without_maximum(entry), "nodeCount": count}
    bounds = scaling_of(int(entry.get("nodeCount", 1)), entry.get("minNodeCount"), entry.get("maxNodeCount"))
    if module.autoscales_pools and bounds.autoscaled:
        out["maxNodeCount"] = module.nodes_created(bounds.maximum, zones)
    return out


def without_maximum(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "maxNodeCount"}


def encoded(inputs: dict[str, Any] | None) -> bytes:
    """Simulation inputs as canonical JSON: equal inputs, equal bytes."""
    return orjson.dumps(inputs, option=orjson.OPT_SORT_KEYS)


def fingerprint(inputs: dict[str, Any] | None, encoding: bytes | None = None) -> str:
    return hashlib.sha256(encoded(inputs) if encoding is None else encoding).hexdigest()


@dataclass(frozen=True)
class Template:
    """A simulation kept for clusters with equal inputs: the cluster it ran for, its pools as simulated
    ((name, node count), after any growth), and its objects before creation times were stamped (a copy:
    nothing modifies them after, `renamed` included)."""

    cluster: str
    pools: tuple[tuple[str, int], ...]
    objects: list[Resource]


class Templates:
    """Simulations kept by their inputs' fingerprint, so that a cluster whose inputs equal another's (in a
    fleet, most clusters of one cloud share their classes, pools and stack) is derived from that one's
    objects by renaming its nodes (`renamed`) instead of being simulated again. Kept only where that is
    sound: no engine workloads, no audit findings (they would name nodes), and inputs that name neither
    cluster. Bounded: the least recently used goes first."""

    LIMIT = 64

    def __init__(self) -> None:
        self.kept: dict[str, Template] = {}
        self.reused = 0  # clusters derived from a template rather than simulated

    def derive(self, name: str, encoding: bytes, print_: str) -> list[Resource] | None:
        """The objects cluster `name` simulates to, from a template of equal inputs (`encoding`, and its
        fingerprint `print_`); None without one."""
        template = self.kept.pop(print_, None)
        if template is None:
            return None
        self.kept[print_] = template  # used most recently
        if name.encode() in encoding:
            return None
        objects = renamed(template.objects, template.cluster, template.pools, name)
        if objects is None or _names_a_node_of(objects, template):
            return None
        self.reused += 1
        return objects

    def keep(self, name: str, inputs: dict[str, Any], encoding: bytes, print_: str, simulation: ClusterSimulation,
             objects: list[Resource], findings: list[Any]) -> None:
        """Keep a simulation just run (its objects before stamping) for clusters of equal inputs, where sound."""
        if inputs["engines"] or findings or name.encode() in encoding or print_ in self.kept:
            return
        pools = tuple((p.name, p.node_count) for p in simulation.pools)
        if node_names(name, pools) is None:
            return
        while self.kept and len(self.kept) >= self.LIMIT:
            del self.kept[next(iter(self.kept))]
        self.kept[print_] = Template(name, pools, json_copy(objects))


def _names_a_node_of(objects: list[Resource], template: Template) -> bool:
    """Whether renamed objects still hold a value that starts as the template's nodes' names do (a place
    `renamed` does not know of; the inputs hold no such value): then the cluster is simulated instead."""
    return f'"{template.cluster}-'.encode() in orjson.dumps(objects)


def cluster_simulation(name: str, inputs: dict[str, Any]) -> ClusterSimulation:
    """The simulation of cluster `name` from its inputs, not yet run."""
    # The inputs are the reconciler's cache's own objects, uncopied: the simulation never modifies
    # them (checked in the tests), and a copy of every chart's values was a tenth of a simulation.
    pools = [Pool.from_wire(p["entry"], p["devices"], p.get("runs"), p.get("heldBack", ()), p.get("machineGpu"))
             for p in inputs["pools"]]
    return ClusterSimulation(name, pools, inputs["installed"],
                             [EngineObject(e["namespace"], e["name"], e["manifest"]) for e in inputs["engines"]],
                             preinstalled=inputs.get("preinstalled", ()), unbound_claims=inputs.get("unboundClaims"))


def simulate(store: Store, cluster: Resource, inputs: dict[str, Any] | None, templates: Templates | None = None
             ) -> tuple[list[dict[str, Any]], dict[Key, dict[str, Any]]]:
    """Simulate one cluster from its inputs (or derive it from `templates`) and keep its objects. Returns
    the audit's findings (also recorded as Warning events on the InferenceCluster) and, for every engine
    workload's Object, the status its provider would report (`engine_object_status`) for the caller to
    write."""
    name = cluster["metadata"]["name"]
    encoding = encoded(inputs)
    print_ = fingerprint(inputs, encoding)
    if inputs is None:
        replace_cluster_objects(store, name, [], print_)
        return [], {}
    statuses: dict[Key, dict[str, Any]] = {}
    findings: list[dict[str, Any]] = []
    simulated = templates.derive(name, encoding, print_) if templates is not None else None
    if simulated is None:
        simulation = cluster_simulation(name, inputs)
        simulated = simulation.simulate()
        findings = [f.to_dict() for f in audit(simulated)]
        if templates is not None:
            templates.keep(name, inputs, encoding, print_, simulation, simulated, findings)
        statuses = {Key(OBJECT_GROUP, "Object", *ref.split("/", 1)):
                    engine_object_status(readiness.ready, readiness.message)
                    for ref, readiness in simulation.readiness.items()}
    _keep_creation_times(simulated, simulated_objects(store, name).get(name, []), store.clock())
    with store.transaction():
        replace_cluster_objects(store, name, simulated, print_)
        for finding in findings:
            store.event_log.record(Key.of(cluster), "Warning", f"PlacementAudit{finding['reason']}", finding["message"])
    return findings, statuses


def engine_object_status(ready: bool, message: str) -> dict[str, Any]:
    """What provider-kubernetes reports for a workload Object whose readiness derives from the
    workload's Available condition: Ready, or not with the pods that do not run and why."""
    ready_condition = ({"type": READY, "status": "True", "reason": "Available", "message": message} if ready else
                       {"type": READY, "status": "False", "reason": "Unschedulable", "message": message})
    return {"atProvider": {}, "conditions": [
        ready_condition, {"type": SYNCED, "status": "True", "reason": RECONCILE_SUCCESS, "message": ""}]}


def _keep_creation_times(simulated: list[Resource], previous: list[Resource], now: str) -> None:
    """An object that was already there keeps its creation time (its AGE); a new one is created now."""
    def identity(o: Resource) -> tuple[str, str, str]:
        return o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]

    created = {identity(o): o["metadata"].get("creationTimestamp") for o in previous}
    for obj in simulated:
        stamp = created.get(identity(obj)) or now
        if stamp:
            obj["metadata"]["creationTimestamp"] = stamp
