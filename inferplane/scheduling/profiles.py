"""Which plugins each level runs, in which order, and every score's weight: the one place to add one.

kube-scheduler keeps a registry of plugins (pkg/scheduler/framework/plugins/registry.go) and profiles
that enable them with weights (pkg/scheduler/apis/config/v1/default_plugins.go); here the profiles
are the registry. Adding a scoring rule is its module plus a line below; a test registers a plugin
for its own duration with `registered`.

The default profiles reproduce the schedulers as they were written before plugins: the fleet places
on the cluster holding the fewest of the deployment's replicas, then by name, and scales down from
the most loaded, then the later name; within a cluster an engine takes the pool whose shared devices
are fullest, then the first in the cluster's order with room; the simulation spreads a workload's pods
over nodes, then takes the node with the fewest pods, then by name.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from .cluster_filters import (DRAINS, KEEPS_NEW_OFF, ClusterNotExcluded, ClusterReady, ClusterSelected,
                              cluster_taint_reason)
from .framework import Profile, Score, Spread, Weighted
from .node_scores import LeastPods
from .pool_filters import ClaimsDevices, ClassKnown, FreeNodes, MembersMatch, NotStrandedOnSynthetic
from .predicates import DEFAULT_FILTERS, TaintToleration
from .share_scores import SharePacking

FLEET = "fleet"
POOL_MATCH = "pool-match"
POOL_ROOM = "pool-room"
NODE = "node"

_PROFILES: dict[str, Profile[Any, Any]] = {
    # A new replica: the clusters a deployment may use, then Fit (in fleet.py); spread, then pack shares
    # of devices (weight -1 spreads them), then the name.
    FLEET: Profile(
        filters=(ClusterSelected(), ClusterNotExcluded(), ClusterReady(),
                 TaintToleration(KEEPS_NEW_OFF, cluster_taint_reason)),
        scores=((Weighted(Spread(), 1),), (Weighted(SharePacking(), 1),))),
    # Fit: an engine on one pool of the cluster. What the pool's class decides, once per layout of pools...
    POOL_MATCH: Profile(filters=(ClassKnown(), MembersMatch(), NotStrandedOnSynthetic(), ClaimsDevices())),
    # ...then the nodes left; pack shares onto the fullest pool (a pool without shared devices scores 0), then
    # the cluster's order: without shares, the first pool with room.
    POOL_ROOM: Profile(filters=(FreeNodes(),), scores=((Weighted(SharePacking(), 1),),)),
    # A pod on a node, kube-scheduler's default filter order; spread the workload, then the emptiest node.
    NODE: Profile(
        filters=DEFAULT_FILTERS,
        scores=((Weighted(Spread(), 1),), (Weighted(LeastPods(), 1),))),
}

# A running replica stays while its cluster is selected and no NoExecute taint it does not tolerate
# drains it (kube's taint eviction: pkg/controller/tainteviction); it is never scored.
KEEP_FILTERS = (ClusterSelected(), TaintToleration(DRAINS, cluster_taint_reason))


def profile(level: str) -> Profile[Any, Any]:
    """The level's profile as registered now (read once per scheduling pass)."""
    return _PROFILES[level]


@contextmanager
def registered(level: str, plugin: Score[Any, Any, Any], weight: int = 1, tier: int = 0) -> Iterator[None]:
    """`plugin` scores at `level` with `weight`, last in `tier`, until the block ends."""
    _PROFILES[level] = _PROFILES[level].with_score(Weighted(plugin, weight), tier)
    try:
        yield
    finally:
        _PROFILES[level] = _PROFILES[level].without_score(plugin)
