"""Replicas whose pool vanished or no longer matches (issue 29, item 5), and the placement cases of Modelplane
v0.3.1's scheduler tests (functions/compose-model-deployment/tests/test_scheduling.py, TestSchedule and
TestScheduleNodeSelector) that `test_fleet.py` ports only in a variant, here with Modelplane's own inputs and
expected results."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inferplane.scheduling import Cluster
from test_fleet import IB, as_replicas, cluster, deployment, engine, pool, replica, request, run, where

MAINTENANCE = {"key": "inferplane.dev/maintenance", "value": "on", "effect": "NoSchedule"}


def coming_up(name, *pools, **settings):
    """A cluster still being created or installed: not ready, nothing failed."""
    return Cluster(name=name, pools=tuple(pools), ready=False, coming_up=True, **settings)


# ---- the reproduction: cluster-b loses pool `old`, cluster-a joins, then a scale to 2


def test_the_vanished_pools_replicas_go_to_the_least_loaded_cluster_and_scale_down_leaves_one_on_each():
    first = run(deployment(4), [cluster("cluster-b", pool("old", nodes=3), pool("default", nodes=4))])
    assert where(first) == [("cluster-b", 0, "old"), ("cluster-b", 1, "old"), ("cluster-b", 2, "old"),
                            ("cluster-b", 3, "default")]
    fleet = [cluster("cluster-a", pool(nodes=4)), cluster("cluster-b", pool(nodes=4))]
    # Modelplane keeps b/3, whose pool survived, and fills two afresh: cluster-a holds none, then a tie goes by name.
    second = run(deployment(3), fleet, as_replicas(first))
    assert where(second) == [("cluster-a", 0, "default"), ("cluster-a", 1, "default"), ("cluster-b", 3, "default")]
    assert not any(p.as_running or p.displaced for p in second.placements)
    # Scaling down drops from the most loaded cluster: one replica on each.
    assert where(run(deployment(2), fleet, as_replicas(second))) == [("cluster-a", 0, "default"),
                                                                     ("cluster-b", 3, "default")]


OLD_AND_DEFAULT = [replica("cluster-b", 0, "old"), replica("cluster-b", 1, "old"), replica("cluster-b", 2, "old"),
                   replica("cluster-b", 3)]


@pytest.mark.parametrize("published", [(), (pool(nodes=4),)], ids=["no pools published yet", "pools published"])
def test_while_a_cluster_comes_up_the_displaced_replicas_are_kept_as_they_run_then_placed_afresh(published):
    waiting = run(deployment(3), [coming_up("cluster-a", *published), cluster("cluster-b", pool(nodes=4))],
                  OLD_AND_DEFAULT)
    # Past 3, a displaced replica goes first (b/2); the two others wait where they run, b/3 stays.
    assert where(waiting) == [("cluster-b", 0, "old"), ("cluster-b", 1, "old"), ("cluster-b", 3, "default")]
    assert [(p.as_running, p.displaced) for p in waiting.placements] == [
        (True, "pool old is gone"), (True, "pool old is gone"), (False, "")]
    assert waiting.awaited == ("cluster-a",)
    assert waiting.message() == ("3 of 3 replicas placed on cluster-b; 2 whose pool is gone or no longer matches "
                                 "kept as they run until cluster-a is up")
    # Once cluster-a is up, the two are placed afresh as Modelplane places them on the settled fleet.
    up = run(deployment(3), [cluster("cluster-a", pool(nodes=4)), cluster("cluster-b", pool(nodes=4))],
             OLD_AND_DEFAULT[:2] + OLD_AND_DEFAULT[3:])
    assert where(up) == [("cluster-a", 0, "default"), ("cluster-a", 1, "default"), ("cluster-b", 3, "default")]
    assert up.awaited == ()


NOT_AWAITED = [
    ("a cluster that failed", Cluster("cluster-a", (pool(nodes=4),), ready=False), {}),
    ("a cluster whose taint the deployment does not tolerate", coming_up("cluster-a", taints=(MAINTENANCE,)), {}),
    ("a cluster the selector leaves out", coming_up("cluster-a", labels={"env": "dev"}),
     {"selector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}}),
    ("a cluster whose published pools match no engine", coming_up("cluster-a", pool(cls="l4", nodes=4)), {}),
]


@pytest.mark.parametrize("cluster_a, settings", [c[1:] for c in NOT_AWAITED], ids=[c[0] for c in NOT_AWAITED])
def test_displaced_replicas_wait_only_for_a_cluster_coming_up_that_could_take_them(cluster_a, settings):
    result = run(deployment(3, **settings), [cluster_a, cluster("cluster-b", pool(nodes=4))], OLD_AND_DEFAULT)
    assert where(result) == [("cluster-b", 0, "default"), ("cluster-b", 1, "default"), ("cluster-b", 3, "default")]
    assert result.awaited == ()


def test_a_cluster_the_deployments_cache_does_not_stage_on_is_not_waited_for():
    md = replace(deployment(3), excluded={"cluster-a": "ModelCache weights does not stage here"})
    result = run(md, [coming_up("cluster-a"), cluster("cluster-b", pool(nodes=4))], OLD_AND_DEFAULT)
    assert where(result) == [("cluster-b", 0, "default"), ("cluster-b", 1, "default"), ("cluster-b", 3, "default")]


def test_scale_down_drops_the_waiting_replicas_before_any_that_stays_then_the_highest_index():
    fleet = [coming_up("cluster-a"), cluster("cluster-b", pool(nodes=4))]
    replicas = [replica("cluster-b", 0, "old"), replica("cluster-b", 1, "old"), replica("cluster-b", 2),
                replica("cluster-b", 3)]
    assert where(run(deployment(3), fleet, replicas)) == [("cluster-b", 0, "old"), ("cluster-b", 2, "default"),
                                                          ("cluster-b", 3, "default")]
    two = run(deployment(2), fleet, replicas)
    assert where(two) == [("cluster-b", 2, "default"), ("cluster-b", 3, "default")]
    assert two.awaited == () and "kept as" not in two.message()


def test_a_waiting_replica_on_a_pool_that_still_exists_keeps_its_node_from_new_replicas():
    # The eth pool no longer matches the deployment's InfiniBand request, but the replica there still runs.
    md = deployment(2, engine(requests=[request(), request(IB, name="nic")]))
    b = cluster("cluster-b", pool("eth", "h200-eth", nodes=1), pool("ib", "h200-ib", nodes=1))
    result = run(md, [coming_up("cluster-a"), b], [replica("cluster-b", 0, "eth")])
    assert where(result) == [("cluster-b", 0, "eth"), ("cluster-b", 1, "ib")]
    assert result.placements[0].displaced == "its pools no longer match the deployment"
    # With cluster-a up, b/0 is placed afresh: on cluster-a, which holds none.
    up = run(md, [cluster("cluster-a", pool("ib", "h200-ib")), b], [replica("cluster-b", 0, "eth")])
    assert where(up) == [("cluster-a", 0, "ib"), ("cluster-b", 0, "ib")]


# ---- Modelplane v0.3.1's cases with their own inputs (test_fleet.py has variants of these)

A4, B4 = cluster("cluster-a", pool(nodes=4)), cluster("cluster-b", pool(nodes=4))
IB_REQUESTS = [request(), request(IB, name="nic")]
EVERY_CLUSTER_EXCLUDED = {"cluster-a": "excluded", "cluster-b": "excluded"}

MODELPLANE = [
    ("capacity forces packing past the spread preference", deployment(3),
     [A4, cluster("cluster-b", pool(nodes=1))], [],
     [("cluster-a", 0, "default"), ("cluster-a", 1, "default"), ("cluster-b", 0, "default")]),
    ("scale down drops from the most-loaded cluster to preserve spread", deployment(2), [A4, B4],
     [replica("cluster-a", 0), replica("cluster-a", 1), replica("cluster-b", 3)],
     [("cluster-a", 0, "default"), ("cluster-b", 3, "default")]),
    ("retained replica is charged at its own node cost, not the new shape", deployment(2, engine(pipeline=4)),
     [cluster("cluster-a", pool(nodes=6))], [replica("cluster-a", pipeline=2)],
     [("cluster-a", 0, "default", "default"), ("cluster-a", 1, "default", "default")]),
    ("new placement is alphabetical for determinism", deployment(2),
     [cluster("cluster-c"), cluster("cluster-a"), cluster("cluster-b")], [],
     [("cluster-a", 0, "default"), ("cluster-b", 0, "default")]),
    ("other deployment's replicas consume node capacity", deployment(1), [cluster("cluster-a", pool(nodes=1))],
     [replica("cluster-a", deployment_name="ml-team/other-model")], []),
    ("replica with no pool pin is re-placed when a selector now applies", deployment(1, engine(requests=IB_REQUESTS)),
     [cluster("cluster-a", pool("frontier", "h200-ib"))], [replica("cluster-a")], [("cluster-a", 0, "frontier")]),
    ("dropping a non-matching replica frees its node for the refill", deployment(2),
     [cluster("cluster-a", pool("frontier", nodes=2))],
     [replica("cluster-a", 0, "frontier"), replica("cluster-a", 1, "gone")],
     [("cluster-a", 0, "frontier"), ("cluster-a", 1, "frontier")]),
    # fill=False in Modelplane (its cache unresolved); here the cache's exclusions keep every cluster from new ones.
    ("existing replica is retained despite fill=False", replace(deployment(1), excluded=EVERY_CLUSTER_EXCLUDED),
     [cluster("cluster-a")], [replica("cluster-a")], [("cluster-a", 0, "default")]),
    ("scale-up shortfall is not filled, only the retained replica remains",
     replace(deployment(3), excluded=EVERY_CLUSTER_EXCLUDED), [cluster("cluster-a"), cluster("cluster-b")],
     [replica("cluster-a")], [("cluster-a", 0, "default")]),
]


@pytest.mark.parametrize("md, clusters, replicas, want", [c[1:] for c in MODELPLANE], ids=[c[0] for c in MODELPLANE])
def test_modelplane_placement(md, clusters, replicas, want):
    assert where(run(md, clusters, replicas)) == want
