"""ModelDeployment: the fleet scheduler's placements, one ModelReplica each; status and explanations.

The function asks for every InferenceCluster and every ModelReplica of the fleet (a replica of any
deployment takes nodes from the ledger), then for the classes the clusters' pools name (the
published `schedulablePools` carry no device attributes). The adapter below maps those stored
kinds onto the scheduler's own inputs; the scheduler decides; each placement becomes a ModelReplica
pinned to its cluster, each member to its pool with the DRA requests the pool's class resolved.

It never destroys what runs: a deployment it cannot read, or a selector the scheduler cannot compile
(admission refuses both; a stored object from an older inferplane could still carry one), keeps
every observed replica exactly as it is and says why. Replicas that fit nowhere leave the others
placed, and the Scheduled condition says in one line which clusters refused and why.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

import orjson
from pydantic import ValidationError

from inferplane import API_GROUP
from inferplane.kept import MIB, kept, size_of
from inferplane.api.inference_class import InferenceClass, class_from_json
from inferplane.api.inference_cluster import COMING_UP_REASONS, InferenceCluster
from inferplane.api.model_cache import CACHE_MOUNT_PATH, ModelCache
from inferplane.api.model_deployment import ModelDeployment
from inferplane.api.model_endpoint import CLUSTER_LABEL, DEPLOYMENT_LABEL, ModelEndpoint
from inferplane.api.model_replica import ModelReplica
from inferplane.compose.base import READY, ByVersion, ByVersions, Composer, Event, Request, Requirement, Response, \
    composite_name, condition_of, is_ready, validation_problems
from inferplane.compose.model_cache import rwx_storage_class, selection_refusal
from inferplane.compose.pool_views import pool_view
from inferplane.scheduling.fleet import Placement, Schedule, awaited_text, capacity, schedule
from inferplane.scheduling.matching import InvalidSelectors
from inferplane.routing.gateway import replica_prefix
from inferplane.scheduling.snapshot import Cluster, DeviceRequest, Engine, Member, PlacementRequest, Pool, \
    PoolClass, Replica, ReplicaEngine, ReplicaMember, Snapshot, pod_ask

# A composed ModelReplica and its ModelEndpoint carry the deployment's name, the cluster and this
# index (Modelplane's `modelplane.ai/` labels, under our group), so that the scheduler recognises a
# replica as one of this deployment's at its index on its cluster, whoever reads the fleet next.
REPLICA_INDEX_LABEL = f"{API_GROUP}/replica-index"
CLUSTERS_REQUIREMENT = "clusters"
REPLICAS_REQUIREMENT = "replicas"
CACHE_REQUIREMENT = "cache"
# Whether the ModelCache the template references could be read (Modelplane's condition).
CACHE_RESOLVED = "ModelCacheResolved"
SCHEDULED = "Scheduled"
# Kubernetes object names are DNS subdomains; the workloads 12d names after a replica are DNS labels.
MAX_REPLICA_NAME = 63


def class_requirement_key(name: str) -> str:
    return f"class-{name}"


def replica_key(cluster: str, index: int) -> str:
    """The stable composition key of the replica at `index` on `cluster`."""
    return f"replica-{cluster}-{index}"


def endpoint_key(cluster: str, index: int) -> str:
    """The stable composition key of the ModelEndpoint of the replica at `index` on `cluster`."""
    return f"endpoint-{cluster}-{index}"


def replica_name(deployment: str, cluster: str, index: int) -> str:
    """`<deployment>-<cluster>-<index>`, shortened with a digest when it would not fit a DNS label."""
    name = f"{deployment}-{cluster}-{index}"
    if len(name) <= MAX_REPLICA_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:MAX_REPLICA_NAME - 9].rstrip('-')}-{digest}"


def deployment_id(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


# ---- the adapter: stored kinds onto the scheduler's inputs


def placement_request(deployment: ModelDeployment, excluded: dict[str, str] | None = None) -> PlacementRequest:
    """The deployment as the scheduler reads it; `excluded`: clusters no new replica may go to, and why."""
    spec = deployment.spec.template.spec
    engines = []
    for engine in spec.engines:
        members = []
        for member in engine.members:
            devices = tuple(
                DeviceRequest(d.name, d.count, tuple(s.cel for s in d.selectors if s.cel is not None),
                              tuple((k, str(v)) for k, v in d.capacity.requests.items()) if d.capacity else ())
                for d in (member.node_selector.devices if member.node_selector else ()))
            members.append(Member(member.role, devices, member.worker.nodes if member.worker else 1))
        engines.append(Engine(engine.name, tuple(members), engine.copies))
    selector = spec.cluster_selector.model_dump(by_alias=True, exclude_none=True) if spec.cluster_selector else {}
    tolerations = tuple(t.model_dump(by_alias=True, exclude_none=True) for t in spec.tolerations or ())
    return PlacementRequest(deployment_id(deployment.metadata.namespace or "default", deployment.metadata.name),
                            deployment.spec.replicas, tuple(engines), selector, tolerations, dict(excluded or {}))


def snapshot_cluster(obj: dict[str, Any]) -> Cluster:
    """An InferenceCluster as the scheduler reads it: its labels, Ready condition (and whether it is
    only coming up: none yet, or a reason of COMING_UP_REASONS), fleet taints and the pools its status
    publishes (with the maximum where the cloud autoscales a pool)."""
    metadata, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    pools = tuple(Pool(p["name"], p["className"], int(p.get("nodeCount") or 0), p.get("maxNodeCount"),
                       p.get("role") or "GPU")
                  for p in status.get("schedulablePools") or [])
    ready = is_ready(obj)
    coming_up = not ready and condition_of(obj, READY).get("reason") in COMING_UP_REASONS
    # Pools the spec adds, removes or moves to another class that the status does not publish yet: until the
    # cluster's next reconcile the pools read here are its old ones, so it is read as coming up (its replicas
    # kept as they run, none placed) rather than placed on as it was.
    if (ready or coming_up) and "schedulablePools" in status and [
            (p.get("name"), p.get("className")) for p in spec.get("nodePools") or []] != [
            (p.name, p.class_name) for p in pools]:
        ready, coming_up = False, True
    return Cluster(metadata["name"], pools, dict(metadata.get("labels") or {}), ready,
                   tuple(spec.get("taints") or ()), coming_up)


def snapshot_replica(obj: dict[str, Any]) -> Replica:
    """A stored ModelReplica, however it was written: one without our labels still takes its nodes."""
    metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    labels = metadata.get("labels") or {}
    owner = labels.get(DEPLOYMENT_LABEL)
    index = labels.get(REPLICA_INDEX_LABEL, "0")
    engines = tuple(
        ReplicaEngine(e.get("name", ""), tuple(
            ReplicaMember(m.get("role", "Standalone"), m.get("nodePoolName", ""), bool(m.get("deviceRequests")),
                          (m.get("worker") or {}).get("nodes", 1), pod_ask(m.get("deviceRequests")))
            for m in e.get("members") or ()), e.get("copies", 1))
        for e in spec.get("engines") or ())
    return Replica(metadata.get("name", ""), deployment_id(metadata.get("namespace") or "default", owner) if owner
                   else "", spec.get("clusterName", ""), int(index) if str(index).isdigit() else 0, engines)


# Every call reads the whole fleet: only the clusters and replicas that changed since are read again.
snapshot_cluster_of = ByVersion(snapshot_cluster)
snapshot_replica_of = ByVersion(snapshot_replica)


def required_class_names(clusters: Iterable[Cluster]) -> list[str]:
    return sorted({pool.class_name for cluster in clusters for pool in cluster.pools})


@dataclass(frozen=True)
class FleetClusters:
    """Every cluster as the scheduler reads it, the classes their pools name, each pool's class, and
    the nodes of each pool (the scheduler's capacity, read only: kept with the fleet it counts)."""

    clusters: tuple[Cluster, ...]
    class_names: tuple[str, ...]
    pool_classes: Mapping[tuple[str, str], str]
    capacity: Mapping[str, Mapping[str, int]]


def fleet_clusters(objects: list[dict[str, Any]]) -> FleetClusters:
    clusters = tuple(snapshot_cluster_of(c) for c in objects)
    return FleetClusters(clusters, tuple(required_class_names(clusters)),
                         {(c.name, p.name): p.class_name for c in clusters for p in c.pools}, capacity(clusters))


# Each deployment reads the whole fleet, and its reconciles come in runs over an unchanged fleet.
fleet_clusters_of = ByVersions(fleet_clusters)


def snapshot_classes(required: dict[str, Any], names: Iterable[str]) -> dict[str, PoolClass]:
    """The classes that exist and read; a pool on any other is refused as `class X is not known`."""
    classes = {}
    for name in names:
        found = required.get(class_requirement_key(name))
        if found:
            klass = read_pool_class(orjson.dumps(found))
            if klass is not None:  # an unreadable class's own status says what is wrong with it
                classes[name] = klass
    return classes


def _pool_class_bytes(content: bytes, result: Any) -> int:
    # The class's model and its devices' CEL contexts: about 1.3 times the bytes of the class's data
    # as Python holds it (measured with tracemalloc), and the contexts' own memory, outside Python's.
    return 3 * size_of(orjson.loads(content))


@kept(32 * MIB, _pool_class_bytes)
def read_pool_class(content: bytes) -> PoolClass | None:
    """The class in this JSON as the scheduler reads it, None when it does not validate. Kept by
    content with its devices' CEL contexts (PoolClass is frozen, so sharing it is safe)."""
    klass = class_from_json(content)
    return None if isinstance(klass, ValidationError) else pool_view(klass)


class ModelDeploymentComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.name = composite_name(request.composite)

    def compose(self) -> Response:
        if not self.read_deployment():
            return self.response
        snapshot = self.require_fleet()
        if snapshot is None:
            return self.response
        excluded = self.cache_exclusions()
        if excluded is None:
            return self.response
        self.warn_multi_node_without_cache()
        try:
            placed = schedule(placement_request(self.deployment, excluded), snapshot)
        except InvalidSelectors as error:
            self.hold("InvalidSelectors", f"ModelDeployment {self.name}: {error}: fix the selectors; "
                                          "the running replicas are kept as they are")
            return self.response
        for placement in placed.placements:
            self.compose_replica(placement)
            self.compose_endpoint(placement)
        self.compose_status(placed)
        if not placed.missing:
            self.watch_only_its_own(placed, snapshot)
        return self.response

    # ---- steps

    def read_deployment(self) -> bool:
        try:
            self.deployment = ModelDeployment.model_validate(self.request.composite)
        except ValidationError as error:
            self.hold("InvalidSpec", f"ModelDeployment {self.name} is invalid: {validation_problems(error)}: "
                                     "fix the spec; the running replicas are kept as they are")
            return False
        self.namespace = self.deployment.metadata.namespace or "default"
        return True

    def require_fleet(self) -> Snapshot | None:
        """Every cluster, every replica, then the classes the clusters' pools name; None while asking."""
        requirements = self.response.requirements
        requirements[CLUSTERS_REQUIREMENT] = Requirement(InferenceCluster.api_version_string(), InferenceCluster.KIND)
        requirements[REPLICAS_REQUIREMENT] = Requirement(ModelReplica.api_version_string(), ModelReplica.KIND)
        required = self.request.required
        if CLUSTERS_REQUIREMENT not in required or REPLICAS_REQUIREMENT not in required:
            self.keep_observed()  # first call: the runtime fetches them and calls again
            return None
        fleet = fleet_clusters_of(required[CLUSTERS_REQUIREMENT])
        clusters, names = fleet.clusters, fleet.class_names
        for name in names:
            requirements[class_requirement_key(name)] = Requirement(
                InferenceClass.api_version_string(), InferenceClass.KIND, name)
        if any(class_requirement_key(n) not in required for n in names):
            self.keep_observed()
            return None
        replicas = tuple(snapshot_replica_of(r) for r in required[REPLICAS_REQUIREMENT])
        classes = snapshot_classes(required, names)
        if not self.pinned_classes_known(fleet.pool_classes, classes, replicas):
            return None
        return Snapshot(clusters, classes, replicas, fleet.capacity)

    def cache_exclusions(self) -> dict[str, str] | None:
        """Where the referenced ModelCache does not stage, no new replica goes (its pods would wait on
        a volume that is not there): clusters its clusterSelector leaves out, and those it cannot stage
        on. A cache that does not exist excludes every cluster, and the running replicas stay, as
        Modelplane holds placement. None while the cache is being fetched."""
        ref = self.deployment.spec.template.spec.model_cache_ref
        if ref is None:
            return {}
        self.response.requirements[CACHE_REQUIREMENT] = Requirement(
            ModelCache.api_version_string(), ModelCache.KIND, ref.name, self.namespace)
        if CACHE_REQUIREMENT not in self.request.required:
            self.keep_observed()
            return None
        clusters = self.request.required[CLUSTERS_REQUIREMENT]
        try:
            cache = ModelCache.model_validate(self.request.required[CACHE_REQUIREMENT]) \
                if self.request.required[CACHE_REQUIREMENT] is not None else None
        except ValidationError:
            cache = None
        if cache is None:
            message = (f"ModelCache {self.namespace}/{ref.name} does not exist or is invalid: create it, or remove "
                       "spec.template.spec.modelCacheRef; no new replica is placed, running ones are kept")
            self.condition(CACHE_RESOLVED, "False", "ModelCacheNotFound", message)
            return {c["metadata"]["name"]: f"ModelCache {ref.name} does not exist" for c in clusters}
        self.condition(CACHE_RESOLVED, "True", "ModelCacheResolved",
                       f"ModelDeployment {self.name} mounts ModelCache {ref.name} at {CACHE_MOUNT_PATH}")
        failed = {c.name: c.message for c in (cache.status.clusters or [] if cache.status else [])
                  if c.phase == "Failed"}
        excluded = {}
        for obj in clusters:
            name = obj["metadata"]["name"]
            refusal = selection_refusal(cache, obj)
            if refusal is not None:
                excluded[name] = f"ModelCache {ref.name} does not stage here: {refusal.removeprefix('not selected: ')}"
                continue
            if rwx_storage_class(obj) is None or name in failed:
                excluded[name] = f"ModelCache {ref.name} cannot stage here: " + (
                    failed.get(name) or "the cluster has no ReadWriteMany StorageClass")
        return excluded

    def warn_multi_node_without_cache(self) -> None:
        """A multi-node engine (a Leader and Workers, each on its own node) without a ModelCache downloads
        the weights on every node: say so, once per reconcile (events are counted)."""
        spec = self.deployment.spec.template.spec
        if spec.model_cache_ref is not None:
            return
        multi = [e.name for e in spec.engines if any(m.role == "Worker" for m in e.members)]
        if multi:
            self.response.events.append(Event(
                "Warning", "NoModelCache",
                f"ModelDeployment {self.name}: " + (f"engines {', '.join(multi)} span several nodes and mount"
                                                    if len(multi) > 1 else
                                                    f"engine {multi[0]} spans several nodes and mounts") +
                " no ModelCache, so every node downloads the weights itself: stage them once per cluster with a "
                "ModelCache and set spec.template.spec.modelCacheRef"))

    def pinned_classes_known(self, pools: Mapping[tuple[str, str], str], classes: dict[str, PoolClass],
                             replicas: tuple[Replica, ...]) -> bool:
        """A class under one of this deployment's running replicas that is gone or unreadable says
        nothing about whether the replica still fits: keep it rather than re-place it (fail closed).
        `pools`: (cluster, pool) -> the pool's class."""
        ours = deployment_id(self.namespace, self.deployment.metadata.name)
        unknown = sorted({pools[(r.cluster, m.pool)] for r in replicas if r.deployment == ours
                          for e in r.engines for m in e.members
                          if (r.cluster, m.pool) in pools and pools[(r.cluster, m.pool)] not in classes})
        if unknown:
            self.hold("WaitingForClasses", f"ModelDeployment {self.name} runs replicas on pools of InferenceClass "
                      f"{', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} missing or invalid: "
                      "restore the class; the running replicas are kept as they are")
            return False
        return True

    def compose_replica(self, placement: Placement) -> None:
        if placement.as_running and replica_key(placement.cluster, placement.index) in self.request.observed:
            self.keep(replica_key(placement.cluster, placement.index))
            return
        template = self.deployment.spec.template
        spec = template.spec
        by_name = {engine.name: engine for engine in spec.engines}
        engines = []
        for engine_placement in placement.engines:
            engine = by_name[engine_placement.name]
            members = []
            for member, placed in zip(engine.members, engine_placement.members):
                out: dict[str, Any] = {"role": member.role, "nodePoolName": placed.pool}
                if placed.requests:
                    out["deviceRequests"] = [
                        {"name": r.name, "deviceClassName": r.device_class_name, "count": r.count,
                         "selectors": [{"cel": s} for s in r.selectors],
                         **({"capacity": {"requests": dict(r.capacity)}} if r.capacity else {})}
                        for r in placed.requests]
                if member.worker is not None:
                    out["worker"] = member.worker.model_dump(by_alias=True, exclude_none=True)
                out["template"] = member.template.model_dump(by_alias=True, exclude_none=True)
                members.append(out)
            entry: dict[str, Any] = {"name": engine.name, "copies": engine.copies}
            if engine.phase is not None:
                entry["phase"] = engine.phase
            entry["members"] = members
            engines.append(entry)
        replica_spec: dict[str, Any] = {"clusterName": placement.cluster}
        if spec.model_cache_ref is not None:
            replica_spec["modelCacheRef"] = spec.model_cache_ref.model_dump(by_alias=True)
        replica_spec["serving"] = {"mode": spec.serving.mode if spec.serving else "Unified"}
        if spec.tolerations:
            replica_spec["tolerations"] = [t.model_dump(by_alias=True, exclude_none=True) for t in spec.tolerations]
        replica_spec["engines"] = engines
        labels = dict(template.metadata.labels or {}) if template.metadata else {}
        labels.update(self.serving_labels(placement))
        self.desire(replica_key(placement.cluster, placement.index), {
            "apiVersion": ModelReplica.api_version_string(), "kind": ModelReplica.KIND,
            "metadata": {"name": replica_name(self.deployment.metadata.name, placement.cluster, placement.index),
                         "namespace": self.namespace, "labels": labels},
            "spec": replica_spec})

    def serving_labels(self, placement: Placement) -> dict[str, str]:
        return {DEPLOYMENT_LABEL: self.deployment.metadata.name, CLUSTER_LABEL: placement.cluster,
                REPLICA_INDEX_LABEL: str(placement.index)}

    def watch_only_its_own(self, placed: Schedule, snapshot: Snapshot) -> None:
        """With every replica placed, the schedule depends only on the clusters that host them and on
        its own replicas (kept replicas never count free nodes, and nothing is left to fill): other
        clusters' and deployments' changes need not call it again, which keeps a one-cluster change
        from reconciling every deployment in the fleet. Short of replicas, it watches everything; with
        displaced replicas waiting, the clusters they wait for too."""
        requirements = self.response.requirements
        hosts = frozenset(("", name) for name in {p.cluster for p in placed.placements} | set(placed.awaited))
        ours = deployment_id(self.namespace, self.deployment.metadata.name)
        replicas = frozenset((self.namespace, r.name) for r in snapshot.replicas if r.deployment == ours) | {
            (self.namespace, replica_name(self.deployment.metadata.name, p.cluster, p.index))
            for p in placed.placements}
        requirements[CLUSTERS_REQUIREMENT] = replace(requirements[CLUSTERS_REQUIREMENT], watch=hosts)
        requirements[REPLICAS_REQUIREMENT] = replace(requirements[REPLICAS_REQUIREMENT], watch=replicas)

    def compose_endpoint(self, placement: Placement) -> None:
        """The replica's ModelEndpoint, once it is Ready and its cluster's gateway has an address: its
        URL is the replica's path there. A replica that is not (yet, or any more) gets none, so no
        ModelService routes to an engine that does not serve."""
        cluster = next((c for c in self.request.required[CLUSTERS_REQUIREMENT]
                        if c["metadata"]["name"] == placement.cluster), None)
        address = (((cluster or {}).get("status") or {}).get("gateway") or {}).get("address")
        if not address or not is_ready(self.request.observed.get(replica_key(placement.cluster, placement.index))):
            return
        name = replica_name(self.deployment.metadata.name, placement.cluster, placement.index)
        path = replica_prefix(self.namespace, name)
        template = self.deployment.spec.template
        labels = dict(template.metadata.labels or {}) if template.metadata else {}
        labels.update(self.serving_labels(placement))
        self.desire(endpoint_key(placement.cluster, placement.index), {
            "apiVersion": ModelEndpoint.api_version_string(), "kind": ModelEndpoint.KIND,
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
            "spec": {"url": f"http://{address}{path}v1", "rewritePath": path}})

    def compose_status(self, placed: Schedule) -> None:
        observed = self.request.observed
        ready = sum(1 for p in placed.placements if is_ready(observed.get(replica_key(p.cluster, p.index))))
        clusters = sorted({p.cluster for p in placed.placements})
        self.response.status = {"replicas": {"total": len(placed.placements), "ready": ready}, "clusters": clusters}
        if placed.missing:
            message = f"ModelDeployment {self.name}: {placed.message()}"
            if placed.waiting:
                self.condition(SCHEDULED, "False", "Unschedulable", message)
            else:  # a Warning too, as kube-scheduler's FailedScheduling, for what a person must change
                self.warn(SCHEDULED, "Unschedulable", message)
        else:
            self.condition(SCHEDULED, "True", "Scheduled", f"ModelDeployment {self.name}: {placed.message()}")

    def hold(self, reason: str, message: str) -> None:
        """Keep every replica as it is and say why (the replica counts stay what they were)."""
        self.keep_observed()
        self.condition(SCHEDULED, "False", reason, message)


def _schedule(request: Request) -> tuple[str, Schedule | list[str]]:
    """The deployment's name and its schedule over the fleet `request` carries (see `require_fleet`),
    or the lines that say why there is none."""
    composer = ModelDeploymentComposer(request)
    if not composer.read_deployment():
        return composer.name, [c.message for c in composer.response.conditions]
    snapshot = composer.require_fleet()
    if snapshot is None:
        return composer.name, [f"ModelDeployment {composer.name}: the fleet has not been read yet"]
    excluded = composer.cache_exclusions()
    if excluded is None:
        return composer.name, [f"ModelDeployment {composer.name}: its ModelCache has not been read yet"]
    try:
        return composer.name, schedule(placement_request(composer.deployment, excluded), snapshot)
    except InvalidSelectors as error:
        return composer.name, [f"ModelDeployment {composer.name}: {error}"]


def _replica_lines(placed: Schedule) -> list[str]:
    lines = []
    for placement in placed.placements:
        pools = ", ".join(f"{e.name} on pool {e.members[0].pool}" for e in placement.engines)
        kept = " (kept as it runs: the cluster is not ready)" if placement.as_running else ""
        if placement.displaced:
            kept = (f" (kept as it runs: {placement.displaced}; placed afresh once "
                    f"{awaited_text(placed.awaited)} up)")
        lines.append(f"replica {placement.index} on {placement.cluster}: {pools}{kept}")
    return lines


def explain(request: Request) -> list[str]:
    """For `inferplane why md`: the placement, then each cluster and the step that refused it
    when replicas fit nowhere."""
    name, placed = _schedule(request)
    if isinstance(placed, list):
        return placed
    lines = [f"ModelDeployment {name}: {placed.message()}"] if not placed.missing else [
        f"ModelDeployment {name}: {len(placed.placements)} of {placed.wanted} replicas placed, "
        f"{placed.missing} fit nowhere"]
    lines += [f"  {line}" for line in _replica_lines(placed)]
    for cluster, reasons in placed.rejections.items():
        lines.append(f"  {cluster}:")
        lines.extend(f"    {reason}" for reason in reasons)
    return lines + _share_lines(placed, "  ")


def _share_lines(placed: Schedule, indent: str = "") -> list[str]:
    """The shared devices' capacity per cluster and pool this deployment matches, with its replicas placed."""
    if not placed.shares:
        return []
    return [f"{indent}shared devices:"] + [f"{indent}  {cluster}: {line}" for cluster, lines in placed.shares.items()
                                           for line in lines]


def verdict(request: Request) -> list[str]:
    """For `inferplane describe md`: the condition's line (each cluster's first reason when replicas fit
    nowhere), then where each replica runs."""
    name, placed = _schedule(request)
    if isinstance(placed, list):
        return placed
    return [placed.message(), *_replica_lines(placed), *_share_lines(placed)]


def compose_model_deployment(request: Request) -> Response:
    return ModelDeploymentComposer(request).compose()

