"""`inferplane fleet --html`: the fleet as one self-contained HTML page, for a fleet of thousands.

Problems first (what is down and why), then models and services with where they run, then one
compact row per cluster, filterable by text, each with a card (gate, drivers, stacks, pools, devices,
models) that the page's script builds from the page's own data when it is asked for, so a thousand
cards cost a few hundred KiB, not megabytes of markup. Everything is inline (CSS, the cards' data, the
script; no font, image or request), so it reads the same offline, attached to a ticket or opened years
later.

This module gathers what the page shows from the state; `templates/fleet.html.j2` lays it out
(Jinja2, autoescaped: every name and message comes from users' manifests, and the script sets text,
never markup)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, NamedTuple

from jinja2 import Environment, PackageLoader, StrictUndefined

from inferplane.api.common import taint_text
from inferplane.api.drivers import POOL_LABEL
from inferplane.api.function import READY
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import CLUSTER_READY, InferenceCluster
from inferplane.api.model_deployment import ModelDeployment
from inferplane.api.model_endpoint import CLUSTER_LABEL, ModelEndpoint
from inferplane.api.model_replica import ModelReplica
from inferplane.api.model_service import ModelService
from inferplane.api.serving_stack import ServingStack
from inferplane.cli.views import (cluster_readiness, condition, fleet_rows, held, holding_condition,
                                  replica_placements, service_backends)
from inferplane.compose.inference_cluster import node_pool
from inferplane.runtime.store import controller_of
from inferplane.runtime.store import Resource

# What the page reads from the state: the rest of a big fleet's objects (composed cloud resources,
# releases) is never loaded.
PAGE_KINDS = (InferenceCluster.KIND, InferenceClass.KIND, ServingStack.KIND, ModelDeployment.KIND, ModelReplica.KIND,
              ModelService.KIND, ModelEndpoint.KIND, "HTTPRoute")
# ...and from each simulated cluster: the nodes (a pool's running count) and the devices they publish
# and that claims hold (used and free).
CLUSTER_KINDS = ("Node", "ResourceSlice", "ResourceClaim")


class Problem(NamedTuple):
    """Something not ready, with the condition that says why."""

    kind: str
    name: str
    reason: str
    message: str


class Pool(NamedTuple):
    name: str
    class_name: str
    class_found: bool
    role: str
    devices: list[str]  # per node: "1x gpu.nvidia.com (gpu, DRA)"
    taints: list[str]
    nodes: int  # running
    wanted: int  # spec.nodeCount
    device_count: int  # published by its nodes' ResourceSlices
    devices_used: int  # of those, allocated to a claim
    models: list[str]  # namespace/name of each ModelDeployment with a replica here


class Cluster(NamedTuple):
    name: str
    cloud: str
    ready: str  # True, False, Unknown: the cluster and its stack both ready
    reason: str
    gate: dict[str, str]  # the ClusterReady condition: the supported-drivers gate's verdict
    held_by: str  # the message of the condition that holds it ("" when ready)
    drivers: list[str]
    device_stacks: list[str]
    wanted_drivers: list[str]
    pools: list[Pool]
    replicas: int

    @property
    def device_count(self) -> int:
        return sum(p.device_count for p in self.pools)

    @property
    def devices_used(self) -> int:
        return sum(p.devices_used for p in self.pools)


class Model(NamedTuple):
    name: str  # namespace/name
    wanted: int
    placed: int
    ready: int
    placements: list[str]  # cluster/pool of each replica
    reason: str  # why it is not ready, "" when it is


class Service(NamedTuple):
    name: str
    address: str
    endpoints: list[str]  # the clusters its route's backends run on, one per backend
    ready: str
    reason: str


def _name(obj: Resource) -> str:
    return "/".join(filter(None, (obj["metadata"].get("namespace"), obj["metadata"]["name"])))


def _not_ready(obj: Resource, types: tuple[str, ...]) -> dict[str, str] | None:
    """The first of the conditions `types` that is not True (one missing counts), or None."""
    for type_ in types:
        found = condition(obj, type_)
        if found.get("status") != "True":
            return found or {"type": type_, "reason": "NotReconciled", "message": f"no {type_} condition yet"}
    return None


def problems(objects: list[Resource]) -> list[Problem]:
    """What is down and why: clusters not Ready, stacks the gate holds as they were, ModelDeployments
    not scheduled or not ready, ModelServices not Ready."""
    found = []
    for cluster in (o for o in objects if o["kind"] == InferenceCluster.KIND):
        ready, reason = cluster_readiness(cluster)
        if ready != "True":
            found.append(Problem(InferenceCluster.KIND, _name(cluster), reason or "NotReconciled",
                                 holding_condition(cluster).get("message", "")))
    for stack in (o for o in objects if o["kind"] == ServingStack.KIND and held(o)):
        found.append(Problem(ServingStack.KIND, _name(stack), "Held", held(stack) or ""))
    for kind, types in ((ModelDeployment.KIND, ("Scheduled", READY)), (ModelService.KIND, (READY,))):
        for obj in (o for o in objects if o["kind"] == kind):
            if (failed := _not_ready(obj, types)) is not None:
                found.append(Problem(kind, _name(obj), failed.get("reason", ""), failed.get("message", "")))
    return found


def _planned_pools(cluster: Resource, classes: dict[str, Resource]) -> list[dict[str, Any]]:
    """The pools of a cluster whose status lists none yet (the gate refused it before provisioning, or
    it waits for a class): their role, devices and taints as they would be provisioned."""
    planned = []
    spec = InferenceCluster.model_validate(cluster).spec
    for pool in spec.node_pools:
        entry: dict[str, Any] = {"name": pool.name, "className": pool.class_name, "nodeCount": pool.node_count}
        if pool.class_name in classes:
            klass = InferenceClass.model_validate(classes[pool.class_name])
            shape = node_pool(pool, klass, spec.cluster.source)
            entry.update(role=shape["role"], taints=shape["taints"],
                         devices=[{"name": d.name, "driver": d.driver, "count": d.count, "claim": d.claim}
                                  for d in klass.spec.devices])
        else:
            entry["classMissing"] = True
        planned.append(entry)
    return planned


def _device_use(simulated: list[Resource]) -> tuple[dict[str, list[Resource]], dict[str, tuple[int, int]]]:
    """Of one simulated cluster: its nodes by pool, and per pool (devices published, devices allocated
    to a claim). A device is read as DRA names it: driver, ResourceSlice pool, device."""
    nodes: dict[str, list[Resource]] = defaultdict(list)
    pool_of_node = {}
    for node in (o for o in simulated if o["kind"] == "Node"):
        pool = (node["metadata"].get("labels") or {}).get(POOL_LABEL, "")
        nodes[pool].append(node)
        pool_of_node[node["metadata"]["name"]] = pool
    allocated = {(r.get("driver"), r.get("pool"), r.get("device"))
                 for claim in simulated if claim["kind"] == "ResourceClaim"
                 for r in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
                 or []}
    use: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for slice_ in (o for o in simulated if o["kind"] == "ResourceSlice"):
        spec = slice_["spec"]
        counts = use[pool_of_node.get(spec.get("nodeName", ""), "")]
        for device in spec.get("devices") or []:
            counts[0] += 1
            counts[1] += (spec.get("driver"), spec["pool"]["name"], device["name"]) in allocated
    return nodes, {pool: (total, used) for pool, (total, used) in use.items()}


def _models_by_pool(objects: list[Resource]) -> dict[tuple[str, str], list[str]]:
    """(cluster, pool) -> the ModelDeployments with a replica's member pinned there (Modelplane's
    ModelReplica: `spec.clusterName`, each member's `nodePoolName`), by namespace/name."""
    deployments = {o["metadata"].get("uid"): _name(o) for o in objects if o["kind"] == ModelDeployment.KIND}
    placed: dict[tuple[str, str], set[str]] = defaultdict(set)
    for replica in (o for o in objects if o["kind"] == ModelReplica.KIND):
        spec = replica.get("spec") or {}
        # A replica no deployment controls (left over, or written by hand) shows by its own name.
        model = deployments.get(controller_of(replica)) or _name(replica)
        for engine in spec.get("engines") or []:
            for member in engine.get("members") or []:
                if member.get("nodePoolName"):
                    placed[(spec.get("clusterName", ""), member["nodePoolName"])].add(model)
    return {where: sorted(models) for where, models in placed.items()}


def clusters(objects: list[Resource], cluster_objects: dict[str, list[Resource]]) -> list[Cluster]:
    """Every InferenceCluster, by name: the fleet table's row, and its pools as provisioned (or, when
    none is yet, as they would be)."""
    by_name = {o["metadata"]["name"]: o for o in objects if o["kind"] == InferenceCluster.KIND}
    classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == InferenceClass.KIND}
    models = _models_by_pool(objects)
    replicas: dict[str, int] = defaultdict(int)
    for replica in (o for o in objects if o["kind"] == ModelReplica.KIND):
        replicas[(replica.get("spec") or {}).get("clusterName", "")] += 1
    out = []
    for row in sorted(fleet_rows(objects), key=lambda r: r.cluster):
        cluster = by_name[row.cluster]
        nodes, use = _device_use(cluster_objects.get(row.cluster, []))
        pools = []
        for pool in (cluster.get("status") or {}).get("schedulablePools") or _planned_pools(cluster, classes):
            running = nodes.get(pool["name"], [])
            # What the running nodes carry; for a pool not provisioned, the taint it would get.
            taints = sorted({taint_text(t["key"], t.get("value"), t["effect"])
                             for t in ([t for n in running for t in n["spec"].get("taints", [])]
                                       or pool.get("taints", []))})
            total, used = use.get(pool["name"], (0, 0))
            devices = [f"{d['count']}x {d['driver']} ({d['name']}, {d['claim']})" for d in pool.get("devices", [])]
            pools.append(Pool(pool["name"], str(pool.get("className")), not pool.get("classMissing"),
                              str(pool.get("role", "unknown")), devices,
                              taints, len(running), int(pool.get("nodeCount") or 0), total, used,
                              models.get((row.cluster, pool["name"]), [])))
        out.append(Cluster(row.cluster, row.cloud, row.ready, row.reason, condition(cluster, CLUSTER_READY),
                           "" if row.ready == "True" else holding_condition(cluster).get("message", ""),
                           row.drivers, row.device_stacks, row.wanted_drivers, pools, replicas[row.cluster]))
    return out


def models(objects: list[Resource]) -> list[Model]:
    """Every ModelDeployment: replicas wanted (spec), placed and ready (status), and the cluster/pool of
    each replica."""
    where = replica_placements(objects)
    out = []
    for deployment in sorted((o for o in objects if o["kind"] == ModelDeployment.KIND), key=_name):
        counts = (deployment.get("status") or {}).get("replicas") or {}
        failed = _not_ready(deployment, ("Scheduled", READY))
        out.append(Model(_name(deployment), int(deployment["spec"].get("replicas", 1)), int(counts.get("total", 0)),
                         int(counts.get("ready", 0)), where.get(deployment["metadata"].get("uid", ""), []),
                         failed.get("reason", "") if failed else ""))
    return out


def services(objects: list[Resource]) -> list[Service]:
    """Every ModelService: its address, the cluster of each endpoint its route reaches, its readiness."""
    cluster_of_backend = {(e.get("status") or {}).get("routing", {}).get("backendName"):
                          (e["metadata"].get("labels") or {}).get(CLUSTER_LABEL, "?")
                          for e in objects if e["kind"] == ModelEndpoint.KIND}
    backends = service_backends(objects)
    out = []
    for service in sorted((o for o in objects if o["kind"] == ModelService.KIND), key=_name):
        ready = condition(service, READY)
        reached = backends.get(service["metadata"].get("uid"), [])
        out.append(Service(_name(service), (service.get("status") or {}).get("address") or "",
                           sorted(cluster_of_backend.get(b, "?") for b in reached),
                           ready.get("status", "Unknown"), ready.get("reason", "")))
    return out


def state_time(objects: Iterable[Resource], cluster_objects: dict[str, list[Resource]],
               events: Iterable[dict[str, Any]]) -> str:
    """The newest timestamp in the state of what the page shows: its objects' creation and the events'
    last sighting (RFC 3339 to the second, so the strings order as the times do). Not the clock's: the
    same state writes the same page. "" for a state reconciled in memory, which stamps nothing."""
    stamps = [o["metadata"].get("creationTimestamp") or "" for o in objects]
    stamps += [o["metadata"].get("creationTimestamp") or "" for objs in cluster_objects.values() for o in objs]
    stamps += [e.get("lastTimestamp") or "" for e in events]
    return max(stamps, default="")


def _listed(values: Iterable[str]) -> str:
    return ", ".join(values) or "none"


def cards(fleet: list[Cluster]) -> dict[str, Any]:
    """Each cluster's card as the page's script fills it in when asked for, in the table's order: every
    text once in `strings`, each card's fields as indexes into it (a fleet of thousands repeats its
    classes, drivers, stacks and messages: the page stays small). A card: gate status, reason and
    message, what holds it, drivers, device stacks, wanted drivers, and per pool its name, role,
    class, devices per node, taint, nodes, devices used/free and models, and whether it runs no node."""
    strings: dict[str, int] = {}

    def text(value: str) -> int:
        return strings.setdefault(value, len(strings))

    out = []
    for c in fleet:
        pools = [[text(p.name), text(p.role), text(p.class_name + ("" if p.class_found else " (not found)")),
                  text(_listed(p.devices)), text(_listed(p.taints)),
                  text(f"{p.nodes} running" if p.nodes else f"0 running of {p.wanted} wanted (not provisioned)"),
                  text(f"{p.devices_used}/{p.device_count - p.devices_used}"), text(_listed(p.models)),
                  0 if p.nodes else 1]
                 for p in c.pools]
        out.append([text(c.gate.get("status", "Unknown")), text(c.gate.get("reason", "not reconciled")),
                    text(c.gate.get("message", "")), text("" if c.held_by == c.gate.get("message", "") else c.held_by),
                    text(_listed(c.drivers)), text(_listed(c.device_stacks)), text(_listed(c.wanted_drivers)), pools])
    return {"strings": list(strings), "cards": out}


_ENVIRONMENT = Environment(loader=PackageLoader("inferplane.cli", "templates"), autoescape=True,
                           undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
# Compact JSON in the page (Jinja's tojson still escapes <, >, & and ' for a <script> element).
_ENVIRONMENT.policies["json.dumps_kwargs"] = {"separators": (",", ":"), "sort_keys": False}


def card_texts(cluster: Cluster) -> list[Any]:
    """One cluster's card as `cards` gives it, each index replaced by its text: what the console sends
    for a cluster that changed (the static page's script resolves its cards so at load)."""
    packed = cards([cluster])
    strings, card = packed["strings"], packed["cards"][0]
    return [strings[i] for i in card[:7]] + [[[strings[i] for i in pool[:8]] + [pool[8]] for pool in card[7]]]


def page_data(objects: list[Resource], cluster_objects: dict[str, list[Resource]],
              events: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """What the page shows, as the template reads it: from the state's objects (PAGE_KINDS are enough),
    each simulated cluster's objects (CLUSTER_KINDS are enough) and the state's events (only their
    times are read)."""
    fleet = clusters(objects, cluster_objects)
    return dict(problems=problems(objects), models=models(objects), services=services(objects), clusters=fleet,
                clouds=sorted({c.cloud for c in fleet}), state_time=state_time(objects, cluster_objects, events))


def render_page(data: dict[str, Any], console: dict[str, str] | None = None) -> str:
    """The page of `page_data`: self-contained, or with `console` (its resourceVersion, its script's
    path) the live console `inferplane serve` serves, which follows the fleet from that version."""
    return _ENVIRONMENT.get_template("fleet.html.j2").render(cards=cards(data["clusters"]), console=console, **data)


def parts():
    """The template's parts (fleet_parts.html.j2's macros), to render one section or row again."""
    return _ENVIRONMENT.get_template("fleet_parts.html.j2").module


def fleet_page(objects: list[Resource], cluster_objects: dict[str, list[Resource]],
               events: Iterable[dict[str, Any]] = ()) -> str:
    """The self-contained page, from the state's objects (see `page_data`)."""
    return render_page(page_data(objects, cluster_objects, events))
