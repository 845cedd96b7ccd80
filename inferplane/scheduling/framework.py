"""The scheduler framework both levels share: Filter and Score plugins, and a profile that runs them.

As kube-scheduler's framework (pkg/scheduler/framework/interface.go): a Filter says why a target
cannot take the subject, and the first filter of the profile that rejects a target gives its reasons;
a Score rates a feasible target, higher is better, and the profile sums each score times its weight
(RunScorePlugins in pkg/scheduler/framework/runtime/framework.go). The levels differ only in what
subject and target are: the fleet scheduler places a deployment's replica (a PlacementRequest) on a
Cluster, the cluster simulation a pod (its spec) on a node (a NodeInfo).

Two departures, both so that a placement is a function of its inputs: kube-scheduler picks at random
among the targets with the best total (selectHost in pkg/scheduler/schedule_one.go); here scores come
in tiers, a later tier only orders the targets an earlier one leaves tied, and the target's name
orders what is still tied. A score reads the subject, the target and the target's own state in the
pass (`State`), never another target's: placing on one target changes no other target's score, so a
scheduler rescoring only the target it just placed on stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Protocol, Sequence, TypeVar

S = TypeVar("S", contravariant=True)
T = TypeVar("T", contravariant=True)
C = TypeVar("C", contravariant=True)


class Filter(Protocol[S, T]):
    """A predicate: the reasons `target` cannot take `subject`, worded for the user (empty: it can)."""

    name: str

    def filter(self, subject: S, target: T) -> Sequence[str]: ...


class State(Protocol):
    """What a pass has placed so far, as a score may read it (kube-scheduler's CycleState)."""

    def placed(self, target: str) -> int:
        """How many of the subject's replicas (or its workload's pods) the target already holds."""
        ...


class Score(Protocol[S, T, C]):
    """A rating of a feasible target for the subject: higher is better, any integer."""

    name: str

    def score(self, subject: S, target: T, state: C) -> int: ...


@dataclass(frozen=True)
class Weighted:
    plugin: Score[Any, Any, Any]
    weight: int = 1


Named = Any  # a target: anything with a `name` (a Cluster, a NodeInfo, a pool)


def _name(target: Named) -> str:
    return target.name


def _never(subject: Any, targets: Sequence[Any]) -> bool:
    return False


@dataclass(frozen=True)
class Profile(Generic[S, T]):
    """The filters a level runs, in order, and its scores in tiers with their weights
    (kube-scheduler's profile: KubeSchedulerConfiguration's `plugins.filter` and `plugins.score`)."""

    filters: tuple[Filter[S, T], ...] = ()
    scores: tuple[tuple[Weighted, ...], ...] = ()

    def ranks(self, subject: S, targets: Sequence[T]) -> bool:
        """Whether any score may tell these targets apart for the subject: False for one target, with no scores, or
        when each one says it scores them alike (a plugin's optional `indifferent(subject, targets)`, as
        kube-scheduler's PreScore may Skip), so that the first target admitted is the best and the rest need not be
        looked at."""
        return len(targets) > 1 and any(not getattr(w.plugin, "indifferent", _never)(subject, targets)
                                        for tier in self.scores for w in tier)

    def rejection(self, subject: S, target: T) -> Sequence[str]:
        """The reasons of the first filter that rejects the target, or () when every one admits it."""
        for plugin in self.filters:
            reasons = plugin.filter(subject, target)
            if reasons:
                return reasons
        return ()

    def order(self, subject: Any, state: Any, tie: Callable[[Named], Any] = _name) -> Callable[[Named], tuple]:
        """A sort key over targets: the best first (each tier's weighted total, highest first), then
        `tie` (the name). Built once per subject and state: the tiers are read here, not per target."""
        tiers = tuple(tuple((w.plugin.score, w.weight) for w in tier) for tier in self.scores)
        if all(len(tier) == 1 for tier in tiers):  # the common case: one score a tier, no sums
            single = tuple(tier[0] for tier in tiers)
            if len(single) == 1 and tie is _name:  # the fleet's: a key per cluster, made often
                (score, weight), = single
                return lambda target: (-weight * score(subject, target, state), target.name)
            if len(single) == 2 and tie is _name:  # the simulation's: a key per node, per pod
                (first, w1), (second, w2) = single
                return lambda target: (-w1 * first(subject, target, state), -w2 * second(subject, target, state),
                                       target.name)
            return lambda target: (*[-weight * score(subject, target, state) for score, weight in single],
                                   tie(target))
        return lambda target: (*(-sum(weight * score(subject, target, state) for score, weight in tier)
                                 for tier in tiers), tie(target))

    def with_score(self, weighted: Weighted, tier: int = 0) -> Profile[S, T]:
        """This profile with one more score, last in `tier` (a new last tier when `tier` is past the end)."""
        tiers = list(self.scores)
        if tier >= len(tiers):
            tiers.append(())
            tier = len(tiers) - 1
        tiers[tier] = (*tiers[tier], weighted)
        return Profile(self.filters, tuple(tiers))

    def without_score(self, plugin: Score[Any, Any, Any]) -> Profile[S, T]:
        tiers = tuple(tuple(w for w in tier if w.plugin is not plugin) for tier in self.scores)
        return Profile(self.filters, tuple(tier for tier in tiers if tier))


class Spread:
    """Fewest of the subject's own on the target first: a deployment's replicas over clusters, a
    workload's pods over nodes (kube-scheduler spreads a workload with PodTopologySpread's default
    constraints, pkg/scheduler/framework/plugins/podtopologyspread)."""

    name = "Spread"

    def score(self, subject: object, target: Named, state: State) -> int:
        return -state.placed(target.name)
