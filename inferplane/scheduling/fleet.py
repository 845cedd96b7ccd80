"""The fleet scheduler: a deployment's replicas onto clusters and pools, Modelplane's behaviour.

A pure function of a snapshot (clusters, classes, every existing replica): the same snapshot gives
the same schedule. A replica is (cluster, index); the index only tells co-located replicas apart.
A replica never moves: a move is a delete and a create.

1. Retain. Each of this deployment's replicas stays where it is while its cluster is in the
   snapshot and selected, no NoExecute taint it does not tolerate drains it, and every member's
   pinned pool still exists and matches the member (a changed selector re-places it, as a changed
   pod template rolls a Deployment). A cluster that is not ready keeps its replicas exactly as they
   run, without matching them again: an outage is a condition, not a reason to re-place, and a
   cluster the gate holds (its class now claims what its cloud cannot serve) still runs the devices
   it ran. A replica on a ready cluster whose pool vanished or no longer matches is displaced: it is
   not retained, and the fill places it afresh by the same rules as a new replica, its nodes freed
   in the ledger (Modelplane v0.3.1, functions/compose-model-deployment/function/scheduling.py:
   `_retained_member` returns None for a pool the cluster no longer publishes or that no longer
   matches, `_build_ledger` skips our replicas not retained, `_fill` re-places them).
   One departure, for when the fleet is still changing: while a cluster the deployment could use is
   coming up (created, installing or reporting its version: nothing for a person to fix), a displaced replica is kept as it runs and placed
   afresh once that cluster is up, so the replacement goes where the fleet as applied puts it, not
   where a half-provisioned fleet would (a replica never moves once placed). It is deleted when its
   replacement is placed, in one pass, as Modelplane deletes a dropped replica; never earlier.
2. Scale down. Past `replicas`, drop the displaced replicas kept while waiting first (Modelplane
   never retains them), then from the worst-scored cluster, then the later cluster name, then the
   highest index: by default (`profiles.py`) the cluster holding the most, so spread survives and the
   survivors never move (Modelplane v0.3.1 `_scale_down`: max of (load, cluster name, index)).
3. Fill. Each missing replica goes to the best-scored cluster, ties by name, among the clusters the
   filters admit, against a ledger of free nodes per pool charged with every replica kept; by
   default the cluster with the fewest of this deployment's replicas (spread first, then pack;
   Modelplane v0.3.1 `_pick_cluster`: min of (load, cluster name) over ready clusters that fit).

Filters (the fleet profile in `profiles.py`), in order, each one concept: ClusterSelected,
ClusterNotExcluded (the caller's exclusions: where the deployment's ModelCache does not stage),
ClusterReady, TaintToleration, then Fit (every engine on a single pool whose class matches all its
members, with free nodes for it: the pool profiles). The first filter that refuses a cluster gives
its reason; `Schedule.rejections` holds them when replicas are missing, for `inferplane why`. The one-line message names, per cluster, a pool
that matched but lacked free nodes before any other pool's mismatch: that is what would change
with capacity.

An engine never spans pools (its members talk over the pool's fabric). A member that claims
devices occupies `pods x copies` nodes of the pool; one that claims nothing rides along at no node
cost. At least one member of each engine must claim a `claim: DRA` device, and a member that can
claim on some pool of the cluster is never placed where it matches only Synthetic devices.
"""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from .cluster_filters import CLUSTER_NOT_READY
from .cluster_filters import selector_refusal as selector_refusal  # compose.model_cache reads selectors as we do
from .framework import Profile
from .matching import Matcher, ResolvedRequest
from .pool_filters import EngineAsk, EngineInPass, EngineOnClass, PoolCandidate, PoolMatch, after_engine, \
    after_member, rooms, share_lines
from .profiles import FLEET, KEEP_FILTERS, POOL_MATCH, POOL_ROOM, profile
from .snapshot import Cluster, Engine, PlacementRequest, Pool, Replica, Snapshot


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
    # Kept on a cluster that is not ready, or displaced and waiting for a cluster coming up: composed
    # exactly as it runs, not from the classes' specs.
    as_running: bool = False
    # Why a replica kept while waiting must move (its pool is gone or no longer matches); "" otherwise.
    displaced: str = ""


@dataclass(frozen=True)
class Schedule:
    placements: tuple[Placement, ...]
    wanted: int
    # Cluster -> why it cannot take another replica (in pool order); filled only when replicas are missing.
    rejections: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Cluster -> the one reason the one-line message gives: a matching pool's lack of free nodes first.
    headlines: Mapping[str, str] = field(default_factory=dict)
    # The clusters coming up that could take a replica: displaced replicas and a scale down wait for them.
    awaited: tuple[str, ...] = ()
    # The pass's rooms once every replica is placed, and which pools the deployment's engines match:
    # `shares` reads them only when asked (`why`, `describe`).
    rooms: Mapping[str, Mapping[str, object]] = field(default_factory=dict, repr=False, compare=False)
    matches: Callable[[str, str], bool] | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def shares(self) -> dict[str, tuple[str, ...]]:
        """Cluster -> the shared devices' capacity, used and free per pool the deployment matches."""
        return share_lines(self.rooms, self.matches) if self.matches is not None else {}

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
        waiting = sum(1 for p in self.placements if p.displaced)
        if waiting:
            line += (f"; {waiting} whose pool is gone or no longer matches kept as "
                     f"{'it runs' if waiting == 1 else 'they run'} until {awaited_text(self.awaited)} up")
        if self.awaited and len(self.placements) > self.wanted:
            line += f"; scaled to {self.wanted} once {awaited_text(self.awaited)} up"
        if not self.missing:
            return line
        why = "; ".join(f"{name}: {self.headlines.get(name, reasons[0])}" for name, reasons in self.rejections.items())
        return f"{line}; {self.missing} fit nowhere ({why})" if why else f"{line}; no clusters"


# ---- the scheduler


@dataclass
class FleetState:
    """The pass as a fleet score reads it: this deployment's replicas per cluster, and free nodes per
    cluster and pool (every replica kept charged)."""

    load: dict[str, int]
    free: Mapping[str, Mapping[str, int]]

    def placed(self, target: str) -> int:
        return self.load.get(target, 0)


def awaited_text(clusters: Sequence[str]) -> str:
    return f"{', '.join(clusters)} {'is' if len(clusters) == 1 else 'are'}"


def as_running(replica: Replica, displaced: str = "") -> Placement:
    """The replica kept exactly as it runs, on the pools it is pinned to."""
    return Placement(replica.cluster, replica.index, tuple(
        EnginePlacement(engine.name, tuple(MemberPlacement(m.role, m.pool) for m in engine.members))
        for engine in replica.engines), as_running=True, displaced=displaced)


def load_of(placements: Sequence[Placement]) -> dict[str, int]:
    load: dict[str, int] = {}
    for placement in placements:
        load[placement.cluster] = load.get(placement.cluster, 0) + 1
    return load


class _FleetScheduler:
    def __init__(self, request: PlacementRequest, snapshot: Snapshot):
        self.request = request
        self.snapshot = snapshot
        # The profiles as registered now, read once for the pass.
        self.plugins: Profile[PlacementRequest, Cluster] = profile(FLEET)
        self.pool_match: Profile[EngineAsk, PoolMatch] = profile(POOL_MATCH)
        self.pool_room: Profile[EngineInPass, PoolCandidate] = profile(POOL_ROOM)
        self.matcher = Matcher(request.engines, snapshot.classes)
        self.clusters = {cluster.name: cluster for cluster in snapshot.clusters}
        # Sorted by object name: the schedule must not depend on listing order.
        self.replicas = sorted(snapshot.replicas, key=lambda r: r.name)
        self._candidates: dict[tuple[tuple[tuple[str, str], ...], int], list[PoolCandidate]] = {}
        self._on_class: dict[tuple[str, int], EngineOnClass | None] = {}
        self._placed_members: dict[tuple[str, str, int], tuple[MemberPlacement, ...]] = {}

    def schedule(self) -> Schedule:
        retained, displaced = self.retain()
        awaited = self.awaited()
        # While a cluster that could take a replica comes up (or publishes pools its spec no longer has), what
        # runs stays as it runs: displaced replicas are kept, and a scale down drops only those until then.
        # Decided now, a move or a drop would stay, and where replicas run once the fleet settles would depend
        # on which cluster became ready first. New replicas do not wait: they serve at once where clusters are up.
        wanted = self.request.replicas
        if awaited:
            retained += [as_running(replica, why) for replica, why in displaced]
            # Only replicas that move anyway are dropped now (scale_down takes them first).
            wanted = max(wanted, len(retained) - len(displaced))
        if len(retained) > wanted:
            retained = self.scale_down(retained, wanted)
        ledger = self.ledger({(p.cluster, p.index) for p in retained})
        placed = self.fill(retained, ledger, self.request.replicas - len(retained))
        placements = tuple(sorted(retained + placed, key=lambda p: (p.cluster, p.index)))
        short = len(placements) < self.request.replicas
        rejections, headlines = self.explain(ledger) if short else ({}, {})
        waits = any(p.displaced for p in placements) or len(placements) > self.request.replicas
        return Schedule(placements, self.request.replicas, rejections, headlines, awaited if waits else (),
                        rooms=ledger, matches=self.matches)

    # -- retain

    def retain(self) -> tuple[list[Placement], list[tuple[Replica, str]]]:
        """The replicas that stay, and the displaced ones (on a ready cluster that keeps them, but a
        pool that is gone or no longer matches), each with why; the first by object name holds an
        identity."""
        keep = Profile(KEEP_FILTERS)
        kept: list[Placement] = []
        displaced: dict[tuple[str, int], tuple[Replica, str]] = {}
        seen: set[tuple[str, int]] = set()
        for replica in self.replicas:
            cluster = self.clusters.get(replica.cluster)
            identity = (replica.cluster, replica.index)
            if (replica.deployment != self.request.deployment or cluster is None or identity in seen
                    or keep.rejection(self.request, cluster)):
                continue
            if not cluster.ready:
                seen.add(identity)
                kept.append(as_running(replica))
                continue
            engines = self.still_matching(replica, cluster)
            if engines is not None:
                seen.add(identity)
                kept.append(Placement(replica.cluster, replica.index, engines))
            else:
                displaced.setdefault(identity, (replica, displacement(replica, cluster)))
        return kept, [entry for identity, entry in displaced.items() if identity not in seen]

    def awaited(self) -> tuple[str, ...]:
        """The clusters coming up that would admit a replica of this deployment once ready: the
        filters new replicas pass, readiness aside, and (where they publish pools yet) a pool that
        matches every engine. A failed cluster, or one that could never take it, is not waited for."""
        out = []
        for cluster in self.snapshot.clusters:
            if not cluster.coming_up or self.plugins.rejection(self.request, replace(cluster, ready=True)):
                continue
            if cluster.pools and not all(self.candidates(cluster, e) for e in range(len(self.request.engines))):
                continue
            out.append(cluster.name)
        return tuple(sorted(out))

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
        full = self.snapshot.capacity if self.snapshot.capacity is not None else capacity(self.snapshot.clusters)
        free = rooms(self.snapshot.clusters, full, self.snapshot.classes)
        for replica in self.replicas:
            if replica.deployment == self.request.deployment and (replica.cluster, replica.index) not in kept:
                continue
            pools = free.get(replica.cluster, {})
            for engine in replica.engines:
                for member in engine.members:
                    if member.claims and member.pool in pools:
                        pools[member.pool] = after_member(pools[member.pool], member, engine.copies)
        return free

    # -- fill

    def fill(self, retained: list[Placement], ledger: dict[str, dict[str, int]], wanted: int) -> list[Placement]:
        """Each missing replica to the best-scored cluster the filters admit that fits one. A cluster
        that cannot fit a replica never can later in this pass (free nodes only shrink), so each cluster
        is fitted once, and fitted and scored again only after it takes a replica (a score reads its
        own cluster's state only)."""
        if wanted <= 0:
            return []
        indices: dict[str, set[int]] = {}
        for placement in retained:
            indices.setdefault(placement.cluster, set()).add(placement.index)
        state = FleetState(load_of(retained), ledger)
        order = self.plugins.order(self.request, state)
        fits: dict[str, tuple[tuple[EnginePlacement, ...], dict[str, int]]] = {}
        heap = []
        for cluster in self.snapshot.clusters:
            if self.plugins.rejection(self.request, cluster):
                continue
            fit = self.fit(cluster, ledger[cluster.name])
            if fit is not None:
                fits[cluster.name] = fit
                heap.append(order(cluster))
        heapq.heapify(heap)
        placed = []
        while heap and len(placed) < wanted:
            name = heapq.heappop(heap)[-1]
            engines, free = fits.pop(name)
            ledger[name] = free
            state.load[name] = state.load.get(name, 0) + 1
            used = indices.setdefault(name, set())
            index = next(i for i in range(len(used) + 1) if i not in used)
            used.add(index)
            placed.append(Placement(name, index, engines))
            fit = self.fit(self.clusters[name], free)
            if fit is not None:
                fits[name] = fit
                heapq.heappush(heap, order(self.clusters[name]))
        return placed

    def scale_down(self, kept: list[Placement], wanted: int) -> list[Placement]:
        """Drop a displaced replica kept while waiting first, then the replica on the worst-scored
        cluster, then the later name, then the highest index: the reverse of the order fill places in,
        so spread survives and the survivors never move."""
        survivors = list(kept)
        state = FleetState({}, self.ledger({(p.cluster, p.index) for p in kept}))
        order = self.plugins.order(self.request, state)
        while len(survivors) > max(wanted, 0):
            state.load = load_of(survivors)
            survivors.remove(max(survivors, key=lambda p: (bool(p.displaced), *order(self.clusters[p.cluster]),
                                                           p.index)))
        return survivors

    def fit(self, cluster: Cluster, free: Mapping[str, int], reasons: list[str] | None = None,
            short: list[str] | None = None) -> tuple[tuple[EnginePlacement, ...], dict[str, int]] | None:
        """Every engine on one pool of the cluster, against a trial copy of its free nodes:
        (placements, free nodes after), or None. With `reasons`, says why each pool refused; `short`
        gets the reasons of pools that matched but lacked free nodes."""
        trial = dict(free)
        out = []
        for e, engine in enumerate(self.request.engines):
            chosen = self.best_pool(EngineInPass(engine, trial), self.candidates(cluster, e, reasons), reasons, short)
            if chosen is None:
                if reasons is not None and not cluster.pools:
                    reasons.append("no schedulable pools")
                return None
            trial[chosen.name] = after_engine(trial[chosen.name], engine, chosen)
            out.append(EnginePlacement(engine.name, chosen.members))
        return tuple(out), trial

    def best_pool(self, subject: EngineInPass, candidates: list[PoolCandidate], reasons: list[str] | None,
                  short: list[str] | None) -> PoolCandidate | None:
        """The best-scored candidate with room, ties by pool order. Where no pool score ranks the engine (none
        registered, or none that tells these pools apart) the first with room is the best: the pools after it are
        not looked at (nor named in `reasons`)."""
        room, ranked, admitted = self.pool_room, self.pool_room.ranks(subject, candidates), []
        for candidate in candidates:
            refusal = room.rejection(subject, candidate)
            if not refusal:
                if not ranked:
                    return candidate
                admitted.append(candidate)
            elif reasons is not None:
                reasons.append(f"pool {candidate.name}: {'; '.join(refusal)}")
                if short is not None:
                    short.append(reasons[-1])
        if not admitted:
            return None
        return min(admitted, key=room.order(subject, subject, tie=lambda c: c.position))

    def candidates(self, cluster: Cluster, e: int, reasons: list[str] | None = None) -> list[PoolCandidate]:
        """The cluster's pools that match engine `e`, in pool order, with the members' placements and
        the nodes they cost. This depends on the pools' names and classes only, never on free nodes,
        so it is worked out once per layout of pools and engine (again only to collect reasons)."""
        key = (tuple((pool.name, pool.class_name) for pool in cluster.pools), e)
        if reasons is None and key in self._candidates:
            return self._candidates[key]
        engine = self.request.engines[e]
        fits = [(pool, self.on_class(pool.class_name, e)) for pool in cluster.pools]
        # A member that can claim on some pool of this cluster is never stranded on a Synthetic match.
        ask = EngineAsk(engine, tuple(any(fit is not None and fit.claims[m] for _, fit in fits)
                                      for m in range(len(engine.members))))
        out = []
        for position, (pool, fit) in enumerate(fits):
            refusal = self.pool_match.rejection(ask, PoolMatch(pool, fit))
            if not refusal and fit is not None:
                out.append(PoolCandidate(pool, self.placed_members(pool, e, fit), fit.cost, position))
            elif reasons is not None:
                reasons.append(f"pool {pool.name}: {'; '.join(refusal)}")
        if reasons is None:
            self._candidates[key] = out
        return out

    def matches(self, cluster: str, pool: str) -> bool:
        """Whether some engine of the deployment matches the pool's class (its shares are the deployment's concern)."""
        found = next((p for p in self.clusters[cluster].pools if p.name == pool), None) if cluster in self.clusters else None
        return found is not None and any((fit := self.on_class(found.class_name, e)) is not None and fit.reason is None
                                         for e in range(len(self.request.engines)))

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
            refusal = self.plugins.rejection(self.request, cluster)
            if refusal:
                out[cluster.name] = tuple(refusal)
                continue
            reasons: list[str] = []
            short: list[str] = []
            if self.fit(cluster, ledger[cluster.name], reasons, short) is None:
                out[cluster.name] = tuple(dict.fromkeys(reasons))
                if short:
                    headlines[cluster.name] = short[0]
        return out, headlines


def displacement(replica: Replica, cluster: Cluster) -> str:
    """Why a replica on a cluster that keeps it must move: the first pinned pool that is gone, else
    that its pools no longer match the deployment."""
    pools = {pool.name for pool in cluster.pools}
    gone = next((m.pool for e in replica.engines for m in e.members if m.pool not in pools), None)
    return f"pool {gone} is gone" if gone is not None else "its pools no longer match the deployment"


def capacity(clusters: Sequence[Cluster]) -> dict[str, dict[str, int]]:
    """Nodes per cluster and pool."""
    return {c.name: {p.name: p.nodes for p in c.pools} for c in clusters}


def schedule(request: PlacementRequest, snapshot: Snapshot) -> Schedule:
    """Place the deployment's replicas (InvalidSelectors if a selector does not compile: the caller
    then keeps every running replica as it is)."""
    return _FleetScheduler(request, snapshot).schedule()
