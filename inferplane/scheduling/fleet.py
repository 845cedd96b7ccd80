"""The fleet scheduler: a deployment's replicas onto clusters and pools, Modelplane's behaviour.

A pure function of a snapshot (clusters, classes, every existing replica): the same snapshot gives
the same schedule. A replica is (cluster, index); the index only tells co-located replicas apart.
A replica never moves: a move is a delete and a create.

1. Retain. Each of this deployment's replicas stays where it is while its cluster is in the
   snapshot and selected, no NoExecute taint it does not tolerate drains it, and every member's
   pinned pool still matches the member (a changed selector re-places it, as a changed pod template
   rolls a Deployment). A cluster that is not ready keeps its replicas exactly as they run, without
   matching them again: an outage is a condition, not a reason to re-place, and a cluster the gate
   holds (its class now claims what its cloud cannot serve) still runs the devices it ran.
2. Scale down. Past `replicas`, drop from the cluster holding the most, then the later cluster
   name, then the highest index: spread survives and the survivors never move.
3. Fill. Each missing replica goes to the cluster with the fewest of this deployment's replicas
   (spread first, then pack), ties by name, among the clusters the filters admit, against a
   ledger of free nodes per pool charged with every replica kept.

Filters, in order, each one concept: ClusterSelected, ClusterNotExcluded (the caller's exclusions:
where the deployment's ModelCache does not stage), ClusterReady, TaintToleration, then Fit
(every engine on a single pool whose class matches all its members, with free nodes for it). The
first filter that refuses a cluster gives its reason; `Schedule.rejections` holds them when
replicas are missing, for `inferplane why`. The one-line message names, per cluster, a pool
that matched but lacked free nodes before any other pool's mismatch: that is what would change
with capacity.

An engine never spans pools (its members talk over the pool's fabric). A member that claims
devices occupies `pods x copies` nodes of the pool; one that claims nothing rides along at no node
cost. At least one member of each engine must claim a `claim: DRA` device, and a member that can
claim on some pool of the cluster is never placed where it matches only Synthetic devices.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .matching import Matcher, MemberMatch, ResolvedRequest
from .predicates import requirement_matches, untolerated_taint
from .snapshot import Cluster, Engine, PlacementRequest, Pool, Replica, Snapshot

# A NoSchedule or NoExecute taint keeps new replicas off; only NoExecute drains existing ones.
KEEPS_NEW_OFF = ("NoSchedule", "NoExecute")
DRAINS = ("NoExecute",)


@dataclass(frozen=True)
class MemberPlacement:
    role: str
    pool: str
    requests: tuple[ResolvedRequest, ...] = ()


@dataclass(frozen=True)
class EnginePlacement:
    name: str
    members: tuple[MemberPlacement, ...]


@dataclass(frozen=True)
class Placement:
    """One replica: its cluster, its index there, and each engine's pool and claims."""

    cluster: str
    index: int
    engines: tuple[EnginePlacement, ...]
    # Kept on a cluster that is not ready: composed exactly as it runs, not from the classes' specs.
    as_running: bool = False


@dataclass(frozen=True)
class Schedule:
    placements: tuple[Placement, ...]
    wanted: int
    # Cluster -> why it cannot take another replica (in pool order); filled only when replicas are missing.
    rejections: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Cluster -> the one reason the one-line message gives: a matching pool's lack of free nodes first.
    headlines: Mapping[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> int:
        return max(self.wanted - len(self.placements), 0)

    @property
    def waiting(self) -> bool:
        """Missing replicas only wait for clusters to come up: nothing for a person to fix yet."""
        return bool(self.rejections) and all(set(reasons) == {CLUSTER_NOT_READY} for reasons in self.rejections.values())

    def message(self) -> str:
        """One line for the deployment's condition."""
        clusters = sorted({p.cluster for p in self.placements})
        line = f"{len(self.placements)} of {self.wanted} replicas placed"
        if clusters:
            line += f" on {', '.join(clusters)}"
        if not self.missing:
            return line
        why = "; ".join(f"{name}: {self.headlines.get(name, reasons[0])}" for name, reasons in self.rejections.items())
        return f"{line}; {self.missing} fit nowhere ({why})" if why else f"{line}; no clusters"


# A pool (by name) that matches an engine: the members' placements there and the nodes they cost.
Candidate = tuple[str, tuple[MemberPlacement, ...], int]


# ---- filters over a cluster


def selector_refusal(selector: Mapping[str, Any], labels: Mapping[str, str]) -> str | None:
    """Why a Kubernetes LabelSelector does not select these labels, or None when it does."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            has = f"{key}={labels[key]}" if key in labels else f"no label {key}"
            return f"not selected: clusterSelector wants {key}={value}, the cluster has {has}"
    for requirement in selector.get("matchExpressions") or []:
        if not requirement_matches(requirement, labels):
            values = ",".join(requirement.get("values") or [])
            return (f"not selected: clusterSelector wants {requirement.get('key')} {requirement.get('operator')}"
                    + (f" ({values})" if values else ""))
    return None


def taint_text(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key', '')}{'=' + value if value else ''}:{taint.get('effect', '')}"


class ClusterSelected:
    name = "ClusterSelected"

    def refuse(self, request: PlacementRequest, cluster: Cluster) -> str | None:
        return selector_refusal(request.cluster_selector, cluster.labels)


# Why a cluster still coming up takes no replica: a wait, not a mismatch.
CLUSTER_NOT_READY = "cluster is not ready"


class ClusterReady:
    name = "ClusterReady"

    def refuse(self, request: PlacementRequest, cluster: Cluster) -> str | None:
        return None if cluster.ready else CLUSTER_NOT_READY


class TaintToleration:
    name = "TaintToleration"

    def __init__(self, effects: Sequence[str] = KEEPS_NEW_OFF):
        self.effects = tuple(effects)

    def refuse(self, request: PlacementRequest, cluster: Cluster) -> str | None:
        taint = untolerated_taint(request.tolerations, cluster.taints, self.effects)
        return None if taint is None else f"taint {taint_text(taint)} is not tolerated"


class ClusterNotExcluded:
    name = "ClusterNotExcluded"

    def refuse(self, request: PlacementRequest, cluster: Cluster) -> str | None:
        return request.excluded.get(cluster.name)


NEW_REPLICA_FILTERS = (ClusterSelected(), ClusterNotExcluded(), ClusterReady(), TaintToleration())


# ---- the scheduler


class _FleetScheduler:
    def __init__(self, request: PlacementRequest, snapshot: Snapshot):
        self.request = request
        self.snapshot = snapshot
        self.matcher = Matcher(request.engines, snapshot.classes)
        self.clusters = {cluster.name: cluster for cluster in snapshot.clusters}
        # Sorted by object name: the schedule must not depend on listing order.
        self.replicas = sorted(snapshot.replicas, key=lambda r: r.name)
        self._candidates: dict[tuple[tuple[tuple[str, str], ...], int], list[Candidate]] = {}
        self._on_class: dict[tuple[str, int], EngineOnClass | None] = {}
        self._placed_members: dict[tuple[str, str, int], tuple[MemberPlacement, ...]] = {}

    def schedule(self) -> Schedule:
        retained = self.retain()
        if len(retained) > self.request.replicas:
            retained = scale_down(retained, self.request.replicas)
        ledger = self.ledger({(p.cluster, p.index) for p in retained})
        placed = self.fill(retained, ledger, self.request.replicas - len(retained))
        placements = tuple(sorted(retained + placed, key=lambda p: (p.cluster, p.index)))
        rejections, headlines = self.explain(ledger) if len(placements) < self.request.replicas else ({}, {})
        return Schedule(placements, self.request.replicas, rejections, headlines)

    # -- retain

    def retain(self) -> list[Placement]:
        drains = TaintToleration(DRAINS)
        kept: list[Placement] = []
        seen: set[tuple[str, int]] = set()
        for replica in self.replicas:
            cluster = self.clusters.get(replica.cluster)
            identity = (replica.cluster, replica.index)
            if (replica.deployment != self.request.deployment or cluster is None or identity in seen
                    or ClusterSelected().refuse(self.request, cluster) or drains.refuse(self.request, cluster)):
                continue
            if not cluster.ready:
                seen.add(identity)
                kept.append(Placement(replica.cluster, replica.index, tuple(
                    EnginePlacement(engine.name, tuple(MemberPlacement(m.role, m.pool) for m in engine.members))
                    for engine in replica.engines), as_running=True))
                continue
            engines = self.still_matching(replica, cluster)
            if engines is not None:
                seen.add(identity)
                kept.append(Placement(replica.cluster, replica.index, engines))
        return kept

    def still_matching(self, replica: Replica, cluster: Cluster) -> tuple[EnginePlacement, ...] | None:
        """The replica's placement re-resolved on its pinned pools, or None to re-place it."""
        pools = {pool.name: pool for pool in cluster.pools}
        engines = {engine.name: e for e, engine in enumerate(self.request.engines)}
        if len(replica.engines) != len(engines):
            return None
        out = []
        for observed in replica.engines:
            e = engines.get(observed.name)
            if e is None or len(observed.members) != len(self.request.engines[e].members):
                return None
            members = []
            for m, (got, member) in enumerate(zip(observed.members, self.request.engines[e].members)):
                pool = pools.get(got.pool)
                matches = self.matcher.for_class(pool.class_name) if pool else None
                if got.role != member.role or matches is None or not matches[e][m].matched:
                    return None
                members.append(MemberPlacement(member.role, got.pool, matches[e][m].requests))
            if not any(member.requests for member in members):
                return None
            out.append(EnginePlacement(observed.name, tuple(members)))
        return tuple(out)

    # -- the ledger of free nodes

    def ledger(self, kept: set[tuple[str, int]]) -> dict[str, dict[str, int]]:
        """Free nodes per cluster and pool: capacity minus every other deployment's replicas and
        ours that stay. Ours that are dropped free their nodes for the refill. A member pinned to a
        pool that no longer exists occupies nothing (its pods cannot be scheduled)."""
        free = {cluster: dict(pools) for cluster, pools in capacity(self.snapshot.clusters).items()}
        for replica in self.replicas:
            if replica.deployment == self.request.deployment and (replica.cluster, replica.index) not in kept:
                continue
            pools = free.get(replica.cluster, {})
            for engine in replica.engines:
                for member in engine.members:
                    if member.claims and member.pool in pools:
                        pools[member.pool] -= member.pods * engine.copies
        return free

    # -- fill

    def fill(self, retained: list[Placement], ledger: dict[str, dict[str, int]], wanted: int) -> list[Placement]:
        if wanted <= 0:
            return []
        load: dict[str, int] = {}
        indices: dict[str, set[int]] = {}
        for placement in retained:
            load[placement.cluster] = load.get(placement.cluster, 0) + 1
            indices.setdefault(placement.cluster, set()).add(placement.index)
        # Score: fewest of this deployment's replicas, then name. A cluster that cannot fit a
        # replica never can later in this pass (free nodes only shrink), so each cluster is fitted
        # once, and again only after it takes a replica.
        fits: dict[str, tuple[tuple[EnginePlacement, ...], dict[str, int]]] = {}
        heap = []
        for cluster in self.snapshot.clusters:
            if any(f.refuse(self.request, cluster) for f in NEW_REPLICA_FILTERS):
                continue
            fit = self.fit(cluster, ledger[cluster.name])
            if fit is not None:
                fits[cluster.name] = fit
                heap.append((load.get(cluster.name, 0), cluster.name))
        heapq.heapify(heap)
        placed = []
        while heap and len(placed) < wanted:
            count, name = heapq.heappop(heap)
            engines, free = fits.pop(name)
            ledger[name] = free
            used = indices.setdefault(name, set())
            index = next(i for i in range(len(used) + 1) if i not in used)
            used.add(index)
            placed.append(Placement(name, index, engines))
            fit = self.fit(self.clusters[name], free)
            if fit is not None:
                fits[name] = fit
                heapq.heappush(heap, (count + 1, name))
        return placed

    def fit(self, cluster: Cluster, free: Mapping[str, int], reasons: list[str] | None = None,
            short: list[str] | None = None) -> tuple[tuple[EnginePlacement, ...], dict[str, int]] | None:
        """Every engine on one pool of the cluster, against a trial copy of its free nodes:
        (placements, free nodes after), or None. With `reasons`, says why each pool refused; `short`
        gets the reasons of pools that matched but lacked free nodes."""
        trial = dict(free)
        out = []
        for e, engine in enumerate(self.request.engines):
            for pool, members, cost in self.candidates(cluster, e, reasons):
                if trial[pool] >= cost:
                    trial[pool] -= cost
                    out.append(EnginePlacement(engine.name, members))
                    break
                if reasons is not None:
                    nodes = next(p.nodes for p in cluster.pools if p.name == pool)
                    reasons.append(f"pool {pool}: {max(trial[pool], 0)} of {nodes} nodes free, "
                                   f"engine {engine.name} needs {cost}")
                    if short is not None:
                        short.append(reasons[-1])
            else:
                if reasons is not None and not cluster.pools:
                    reasons.append("no schedulable pools")
                return None
        return tuple(out), trial

    def candidates(self, cluster: Cluster, e: int, reasons: list[str] | None = None) -> list[Candidate]:
        """The cluster's pools that match engine `e`, in pool order, with the members' placements and
        the nodes they cost. This depends on the pools' names and classes only, never on free nodes,
        so it is worked out once per layout of pools and engine (again only to collect reasons)."""
        key = (tuple((pool.name, pool.class_name) for pool in cluster.pools), e)
        if reasons is None and key in self._candidates:
            return self._candidates[key]
        engine = self.request.engines[e]
        fits = [(pool, self.on_class(pool.class_name, e)) for pool in cluster.pools]
        # A member that can claim on some pool of this cluster is never stranded on a Synthetic match.
        claimable = [any(fit is not None and fit.claims[m] for _, fit in fits) for m in range(len(engine.members))]
        out = []
        for pool, fit in fits:
            reason = _refusal(engine, pool, fit, claimable)
            if reason is None:
                out.append((pool.name, self.placed_members(pool, e, fit), fit.cost))
            elif reasons is not None:
                reasons.append(f"pool {pool.name}: {reason}")
        if reasons is None:
            self._candidates[key] = out
        return out

    def on_class(self, class_name: str, e: int) -> EngineOnClass | None:
        """Engine `e` against a class (None: the class is not known), once per class."""
        key = (class_name, e)
        if key not in self._on_class:
            matches = self.matcher.for_class(class_name)
            self._on_class[key] = None if matches is None else EngineOnClass.of(self.request.engines[e], matches[e])
        return self._on_class[key]

    def placed_members(self, pool: Pool, e: int, fit: EngineOnClass) -> tuple[MemberPlacement, ...]:
        key = (pool.name, pool.class_name, e)
        if key not in self._placed_members:
            self._placed_members[key] = tuple(MemberPlacement(member.role, pool.name, requests)
                                              for member, requests in zip(self.request.engines[e].members,
                                                                          fit.requests))
        return self._placed_members[key]

    # -- explain

    def explain(self, ledger: dict[str, dict[str, int]]) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
        """For every cluster of the snapshot, why it takes no further replica; and the one reason to
        give in a line: a matching pool short of free nodes before another pool's mismatch."""
        out, headlines = {}, {}
        for cluster in sorted(self.snapshot.clusters, key=lambda c: c.name):
            refusal = next((r for f in NEW_REPLICA_FILTERS if (r := f.refuse(self.request, cluster))), None)
            if refusal:
                out[cluster.name] = (refusal,)
                continue
            reasons: list[str] = []
            short: list[str] = []
            if self.fit(cluster, ledger[cluster.name], reasons, short) is None:
                out[cluster.name] = tuple(dict.fromkeys(reasons))
                if short:
                    headlines[cluster.name] = short[0]
        return out, headlines


@dataclass(frozen=True)
class EngineOnClass:
    """An engine against one class: why a member does not match, or what each member claims and the
    nodes the engine costs (`pods x copies` for each member that claims)."""

    reason: str | None
    claims: tuple[bool, ...] = ()
    requests: tuple[tuple[ResolvedRequest, ...], ...] = ()
    cost: int = 0

    @classmethod
    def of(cls, engine: Engine, matches: Sequence[MemberMatch]) -> EngineOnClass:
        for member, match in zip(engine.members, matches):
            if not match.matched:
                return cls(f"{member.role}: {match.reason}", (False,) * len(engine.members))
        return cls(None, tuple(match.claims for match in matches), tuple(match.requests for match in matches),
                   sum(member.pods * engine.copies for member, match in zip(engine.members, matches)
                       if match.claims))


def _refusal(engine: Engine, pool: Pool, fit: EngineOnClass | None, claimable: list[bool]) -> str | None:
    """Why the engine cannot go on this pool whatever its free nodes, or None."""
    if fit is None:
        return f"class {pool.class_name} is not known"
    if fit.reason is not None:
        return fit.reason
    for member, claims, can_claim in zip(engine.members, fit.claims, claimable):
        if can_claim and not claims:
            return f"{member.role} matches only Synthetic devices here and can claim on another pool"
    if not any(fit.claims):
        return f"engine {engine.name} matches only Synthetic devices here: nothing to claim"
    return None


_last_capacity: tuple[tuple[Cluster, ...], dict[str, dict[str, int]]] | None = None


def capacity(clusters: tuple[Cluster, ...]) -> dict[str, dict[str, int]]:
    """Nodes per cluster and pool (read only). Kept for the last clusters, by identity: callers that read
    an unchanged fleet pass the same tuple (compose.model_deployment.fleet_clusters_of), which this holds."""
    global _last_capacity
    last = _last_capacity  # read once: the function server schedules from several threads
    if last is None or last[0] is not clusters:
        last = _last_capacity = (clusters, {c.name: {p.name: p.nodes for p in c.pools} for c in clusters})
    return last[1]


def scale_down(kept: list[Placement], wanted: int) -> list[Placement]:
    """Drop from the cluster holding the most, then the later name, then the highest index."""
    survivors = list(kept)
    while len(survivors) > max(wanted, 0):
        load: dict[str, int] = {}
        for placement in survivors:
            load[placement.cluster] = load.get(placement.cluster, 0) + 1
        survivors.remove(max(survivors, key=lambda p: (load[p.cluster], p.cluster, p.index)))
    return survivors


def schedule(request: PlacementRequest, snapshot: Snapshot) -> Schedule:
    """Place the deployment's replicas (InvalidSelectors if a selector does not compile: the caller
    then keeps every running replica as it is)."""
    return _FleetScheduler(request, snapshot).schedule()
