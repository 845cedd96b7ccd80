"""The fleet scheduler's filters over a cluster's pools for one engine (Fit, in `fleet.py`, runs them).

A pool is judged in two steps. First what depends on its class only, worked out once per layout of
pools and engine: ClassKnown, MembersMatch, NotStrandedOnSynthetic, ClaimsDevices, whose target is the
pool with the engine matched against its class (`PoolMatch`). Then what depends on the nodes left in
the pass: FreeNodes (what kube-scheduler's NodeResourcesFit is to a node), whose target is a matching
pool (`PoolCandidate`) and whose subject carries the cluster's free nodes (`EngineInPass`). A room
refusal is what more capacity would change, so the one-line message names it first. Every reason is
worded for `inferplane why`; Fit prefixes the pool's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from .matching import MemberMatch, ResolvedRequest
from .shares import PodAsk, PoolRoom
from .snapshot import Cluster, Engine, Pool, PoolClass, ReplicaMember

# A pool's room in a pass: free nodes, or for a pool whose class has shared devices its PoolRoom.
Room = int | PoolRoom


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


@dataclass(frozen=True)
class EngineAsk:
    """An engine to place on one cluster, and which of its members can claim on some pool there."""

    engine: Engine
    claimable: tuple[bool, ...]


@dataclass(frozen=True)
class PoolMatch:
    """A pool and the engine matched against its class (None: the class is not known)."""

    pool: Pool
    fit: EngineOnClass | None

    @property
    def name(self) -> str:
        return self.pool.name


class ClassKnown:
    name = "ClassKnown"

    def filter(self, ask: EngineAsk, match: PoolMatch) -> tuple[str, ...]:
        return () if match.fit is not None else (f"class {match.pool.class_name} is not known",)


class MembersMatch:
    """Every member's device requests hold on the class (the first that does not, and why)."""

    name = "MembersMatch"

    def filter(self, ask: EngineAsk, match: PoolMatch) -> tuple[str, ...]:
        return (match.fit.reason,) if match.fit is not None and match.fit.reason is not None else ()


class NotStrandedOnSynthetic:
    """A member that can claim on some pool of the cluster is never placed where it matches only
    Synthetic devices."""

    name = "NotStrandedOnSynthetic"

    def filter(self, ask: EngineAsk, match: PoolMatch) -> tuple[str, ...]:
        if match.fit is None or match.fit.reason is not None:
            return ()
        for member, claims, can_claim in zip(ask.engine.members, match.fit.claims, ask.claimable):
            if can_claim and not claims:
                return (f"{member.role} matches only Synthetic devices here and can claim on another pool",)
        return ()


class ClaimsDevices:
    """At least one member of the engine claims a `claim: DRA` device on the pool."""

    name = "ClaimsDevices"

    def filter(self, ask: EngineAsk, match: PoolMatch) -> tuple[str, ...]:
        if match.fit is None or match.fit.reason is not None or any(match.fit.claims):
            return ()
        return (f"engine {ask.engine.name} matches only Synthetic devices here: nothing to claim",)


@dataclass(frozen=True)
class PoolCandidate:
    """A pool that matches an engine: the members' placements there (fleet.MemberPlacement), the nodes
    they cost, and the pool's position in its cluster (the tie-break among pools)."""

    pool: Pool
    members: tuple[Any, ...]
    cost: int
    position: int

    @property
    def name(self) -> str:
        return self.pool.name


class EngineInPass:
    """An engine to place, with the free nodes of each pool of its cluster as the pass stands (made for
    every fit of every cluster: a plain class, cheaper to make than a frozen dataclass)."""

    __slots__ = ("engine", "free")

    def __init__(self, engine: Engine, free: Mapping[str, int]):
        self.engine = engine
        self.free = free

    def placed(self, target: str) -> int:  # a pool holds no replicas of its own: nothing to spread
        return 0


class FreeNodes:
    name = "FreeNodes"

    def filter(self, subject: EngineInPass, candidate: PoolCandidate) -> tuple[str, ...]:
        free = subject.free[candidate.pool.name]
        if isinstance(free, PoolRoom):
            why = free.refusal(pod_asks(subject.engine, candidate))
            return (why,) if why else ()
        if free >= candidate.cost:
            return ()
        return (f"{max(free, 0)} of {candidate.pool.nodes} nodes free, engine {subject.engine.name} "
                f"needs {candidate.cost}",)


# ---- rooms: the ledger's entries, nodes or shares


def pod_asks(engine: Engine, candidate: PoolCandidate) -> tuple[PodAsk, ...]:
    """One ask per pod the engine runs on the candidate pool (its claiming members' pods, every copy). A
    candidate is made for one engine of one pass: its asks are kept on it, worked out once."""
    kept = candidate.__dict__.get("_asks")
    if kept is not None:
        return kept
    out: list[PodAsk] = []
    for member, placed in zip(engine.members, candidate.members):
        if placed.requests:
            ask = PodAsk(tuple((r.device_class_name, r.count, r.capacity) for r in placed.requests))
            out.extend([ask] * (member.pods * engine.copies))
    object.__setattr__(candidate, "_asks", tuple(out))  # a frozen dataclass: its own cache, as cached_property
    return candidate.__dict__["_asks"]


def after_engine(room: Room, engine: Engine, candidate: PoolCandidate) -> Room:
    """The pool's room once the engine runs there (FreeNodes admitted it)."""
    if isinstance(room, PoolRoom):
        return room.take(pod_asks(engine, candidate)) or room.full()
    return room - candidate.cost


def after_member(room: Room, member: ReplicaMember, copies: int) -> Room:
    """The pool's room once an existing replica's member runs there (what it holds, however it fits)."""
    if isinstance(room, PoolRoom):
        return room.charge([member.ask] * (member.pods * copies))
    return room - member.pods * copies


def rooms(clusters: tuple[Cluster, ...], nodes: Mapping[str, Mapping[str, int]], classes: Mapping[str, PoolClass]
          ) -> dict[str, dict[str, Room]]:
    """Free room per cluster and pool before any replica: nodes, or a PoolRoom where the class shares devices."""
    out: dict[str, dict[str, Room]] = {cluster: dict(pools) for cluster, pools in nodes.items()}
    shared = {name: klass.shared_devices for name, klass in classes.items() if klass.shared_devices}
    if not shared:
        return out
    for cluster in clusters:
        for pool in cluster.pools:
            devices = shared.get(pool.class_name)
            if devices is not None and pool.name in out.get(cluster.name, {}):
                out[cluster.name][pool.name] = PoolRoom(out[cluster.name][pool.name], devices)
    return out


def share_lines(ledger: Mapping[str, Mapping[str, Room]], relevant: Callable[[str, str], bool]
                ) -> dict[str, tuple[str, ...]]:
    """Per cluster, each pool with shared devices that is `relevant` (cluster, pool): its capacity used and
    free (`PoolRoom.describe`)."""
    out = {}
    for cluster, pools in sorted(ledger.items()):
        lines = tuple(f"pool {name}: {line}" for name, room in pools.items()
                      if isinstance(room, PoolRoom) and relevant(cluster, name) for line in room.describe())
        if lines:
            out[cluster] = lines
    return out
