"""The fleet scheduler, case by case: Modelplane v0.3.1's scheduling cases (compose-model-deployment)
re-expressed over our snapshot types, then the issue's own (vendor selectors, Synthetic-only, capacity
exhausted, stability, multi-node sizing, PrefillDecode) and the reasons `explain` prints."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inferplane.api.inference_class import InferenceClass
from inferplane.cel import parse_semver
from inferplane.cel.device import DeviceSelector
from inferplane.scheduling import (ClassDevice, Cluster, DeviceRequest, Engine, InvalidSelectors, Member,
                                   PlacementRequest, Pool, PoolClass, Replica, ReplicaEngine, ReplicaMember,
                                   ResolvedRequest, Snapshot, pool_class, schedule)

RECIPES = Path(__file__).resolve().parents[2] / "recipes"

MEM_141 = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("141Gi")) >= 0'
MEM_200 = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("200Gi")) >= 0'
IB = 'device.attributes["nic.nvidia.com"].linkType == "infiniband"'
DEPLOYMENT = "ml-team/my-model"


def gpu(name="gpu", memory="141Gi", count=1, claim="DRA", driver="gpu.nvidia.com", **attributes):
    return ClassDevice(name=name, driver=driver, count=count, claim=claim,
                       device_class_name=driver if claim == "DRA" else "", attributes=attributes,
                       capacity={"memory": memory})


def nic(link_type="infiniband"):
    return ClassDevice(name="nic", driver="nic.nvidia.com", claim="Synthetic", attributes={"linkType": link_type})


CLASSES = {c.name: c for c in [
    PoolClass("h200", (gpu(),)),
    PoolClass("h200-ib", (gpu(), nic())),
    PoolClass("h200-eth", (gpu(), nic("ethernet"))),
    PoolClass("h200-x8", (gpu(count=8),)),
    PoolClass("h200-none", (gpu(count=0),)),
    PoolClass("l4", (gpu(memory="24Gi", driverVersion=parse_semver("550.54.15")),)),
    PoolClass("h100", (gpu(memory="80Gi", driverVersion=parse_semver("570.124.6")),)),
    PoolClass("mi325x", (gpu(driver="gpu.amd.com", memory="256Gi", productName="AMD_Instinct_MI325X_OAM"),)),
    PoolClass("mi300x", (gpu(driver="gpu.amd.com", memory="192Gi", productName="AMD_Instinct_MI300X_OAM"),)),
    PoolClass("epyc", (ClassDevice("cpu", "dra.cpu", device_class_name="dra.cpu", capacity={"cpu": "64"}),)),
    PoolClass("syn-200", (gpu(memory="141Gi"), gpu(name="syn", claim="Synthetic", memory="200Gi"))),
    PoolClass("nic-only", (nic(),)),
]}


def pool(name="default", cls="h200", nodes=2, max_nodes=None):
    return Pool(name=name, class_name=cls, node_count=nodes, max_node_count=max_nodes)


def cluster(name, *pools, ready=True, labels=None, taints=()):
    return Cluster(name=name, pools=tuple(pools) or (pool(),), labels=labels or {}, ready=ready,
                   taints=tuple(taints))


def request(*selectors, name="gpu", count=1):
    return DeviceRequest(name, count, tuple(selectors) or (MEM_141,))


def engine(name="main", *, pipeline=1, copies=1, requests=None):
    """pipeline 1: one Standalone; more: a Leader and a Worker over (pipeline - 1) nodes."""
    devices = tuple(requests) if requests is not None else (request(),)
    if pipeline == 1:
        return Engine(name, (Member("Standalone", devices),), copies)
    return Engine(name, (Member("Leader", devices), Member("Worker", devices, pipeline - 1)), copies)


def gang(leader, worker, workers=1):
    return Engine("main", (Member("Leader", tuple(leader or ())), Member("Worker", tuple(worker or ()), workers)))


def deployment(replicas=1, *engines, tolerations=(), selector=None, name=DEPLOYMENT):
    return PlacementRequest(name, replicas, tuple(engines) or (engine(),), selector or {}, tuple(tolerations))


def replica(cluster_name, index=0, pool_name="default", *, pipeline=1, copies=1, deployment_name=DEPLOYMENT,
            name=None, engines=None):
    if engines is None:
        members = ((ReplicaMember("Standalone", pool_name, True),) if pipeline == 1 else
                   (ReplicaMember("Leader", pool_name, True), ReplicaMember("Worker", pool_name, True, pipeline - 1)))
        engines = (ReplicaEngine("main", members, copies),)
    return Replica(name or f"{deployment_name.split('/')[1]}-{cluster_name}-{index}", deployment_name,
                   cluster_name, index, tuple(engines))


def run(md, clusters, replicas=(), classes=None):
    return schedule(md, Snapshot(tuple(clusters), CLASSES if classes is None else classes, tuple(replicas)))


def where(result):
    """(cluster, index, the pool of each member, in engine order)."""
    return [(p.cluster, p.index, *[m.pool for e in p.engines for m in e.members]) for p in result.placements]


# ---- Modelplane's placement cases: retain, spread, pack, scale, capacity

PLACEMENT = [
    ("no clusters returns no candidates", deployment(), [], [], []),
    ("single ready cluster is picked", deployment(), [cluster("cluster-a")], [], [("cluster-a", 0, "default")]),
    ("not-ready cluster is not picked for a new replica", deployment(), [cluster("cluster-a", ready=False)], [], []),
    ("multi-node deployment needs enough nodes", deployment(1, engine(pipeline=3)), [cluster("cluster-a")], [], []),
    ("existing replica is retained on its pinned cluster", deployment(),
     [cluster("cluster-a"), cluster("cluster-b")], [replica("cluster-a")], [("cluster-a", 0, "default")]),
    ("degraded pinned cluster is retained", deployment(), [cluster("cluster-a", ready=False)],
     [replica("cluster-a")], [("cluster-a", 0, "default")]),
    ("deleted pinned cluster triggers re-placement", deployment(), [cluster("cluster-b")],
     [replica("cluster-a")], [("cluster-b", 0, "default")]),
    ("scale up places new replicas on additional clusters", deployment(2),
     [cluster("cluster-a"), cluster("cluster-b")], [replica("cluster-a")],
     [("cluster-a", 0, "default"), ("cluster-b", 0, "default")]),
    ("scale up with no extra capacity returns only retained", deployment(2),
     [cluster("cluster-a", pool(nodes=1))], [replica("cluster-a")], [("cluster-a", 0, "default")]),
    ("two replicas pack onto one cluster when it is the only option", deployment(2), [cluster("cluster-a")], [],
     [("cluster-a", 0, "default"), ("cluster-a", 1, "default")]),
    ("two replicas spread across two clusters before packing", deployment(2),
     [cluster("cluster-a"), cluster("cluster-b")], [],
     [("cluster-a", 0, "default"), ("cluster-b", 0, "default")]),
    ("three replicas spread first then pack the remainder", deployment(3),
     [cluster("cluster-a"), cluster("cluster-b")], [],
     [("cluster-a", 0, "default"), ("cluster-a", 1, "default"), ("cluster-b", 0, "default")]),
    ("capacity forces packing past the spread preference", deployment(3),
     [cluster("cluster-a", pool(nodes=1)), cluster("cluster-b", pool(nodes=3))], [],
     [("cluster-a", 0, "default"), ("cluster-b", 0, "default"), ("cluster-b", 1, "default")]),
    ("new replica spreads onto an empty cluster before doubling up", deployment(2),
     [cluster("cluster-a"), cluster("cluster-b")], [replica("cluster-a")],
     [("cluster-a", 0, "default"), ("cluster-b", 0, "default")]),
    ("new replica takes the lowest free index on a packed cluster", deployment(3),
     [cluster("cluster-a", pool(nodes=3))], [replica("cluster-a", 0), replica("cluster-a", 2)],
     [("cluster-a", 0, "default"), ("cluster-a", 1, "default"), ("cluster-a", 2, "default")]),
    ("scale down drops the highest index of the most loaded cluster", deployment(2),
     [cluster("cluster-a"), cluster("cluster-b")],
     [replica("cluster-a", 0), replica("cluster-a", 1), replica("cluster-b", 0)],
     [("cluster-a", 0, "default"), ("cluster-b", 0, "default")]),
    ("scale down keeps spread: a cluster never loses its sole replica while another has two", deployment(2),
     [cluster("cluster-a"), cluster("cluster-b", pool(nodes=4))],
     [replica("cluster-a", 0), replica("cluster-b", 1), replica("cluster-b", 3)],
     [("cluster-a", 0, "default"), ("cluster-b", 1, "default")]),
    ("scale down at equal load drops the later cluster name", deployment(1),
     [cluster("cluster-a"), cluster("cluster-b")], [replica("cluster-a"), replica("cluster-b")],
     [("cluster-a", 0, "default")]),
    ("scale to zero removes every replica", deployment(0), [cluster("cluster-a")],
     [replica("cluster-a", 0), replica("cluster-a", 1)], []),
    ("co-located replicas are both retained", deployment(2), [cluster("cluster-a"), cluster("cluster-b")],
     [replica("cluster-a", 0), replica("cluster-a", 1)], [("cluster-a", 0, "default"), ("cluster-a", 1, "default")]),
    ("new placement is alphabetical, whatever the listing order", deployment(1),
     [cluster("cluster-b"), cluster("cluster-a")], [], [("cluster-a", 0, "default")]),
    ("other deployments' replicas consume node capacity", deployment(1),
     [cluster("cluster-a", pool(nodes=1)), cluster("cluster-b")],
     [replica("cluster-a", deployment_name="ml-team/other")], [("cluster-b", 0, "default")]),
    ("our own observed replicas do not double-count against us", deployment(1),
     [cluster("cluster-a", pool(nodes=1))], [replica("cluster-a")], [("cluster-a", 0, "default")]),
    ("our replica pinned to an unknown cluster is ignored", deployment(1), [cluster("cluster-b")],
     [replica("cluster-x")], [("cluster-b", 0, "default")]),
    ("another deployment pinned to a deleted pool consumes no capacity", deployment(1),
     [cluster("cluster-a", pool(nodes=1))], [replica("cluster-a", pool_name="gone", deployment_name="ml-team/other")],
     [("cluster-a", 0, "default")]),
    ("a colliding (cluster, index) keeps the replica with the first object name", deployment(1),
     [cluster("cluster-a", pool("default"), pool("second"))],
     [replica("cluster-a", pool_name="second", name="my-model-b"), replica("cluster-a", name="my-model-a")],
     [("cluster-a", 0, "default")]),
    ("a retained replica is charged at its own node cost", deployment(2, engine(pipeline=2)),
     [cluster("cluster-a", pool(nodes=4))], [replica("cluster-a", pipeline=2, copies=2)],
     [("cluster-a", 0, "default", "default")]),
]


@pytest.mark.parametrize("md, clusters, replicas, want", [c[1:] for c in PLACEMENT], ids=[c[0] for c in PLACEMENT])
def test_placement(md, clusters, replicas, want):
    assert where(run(md, clusters, replicas)) == want


# ---- Modelplane's node selector cases: a pool matches when every request finds a device


def test_a_match_records_the_pool_and_the_request_to_claim():
    result = run(deployment(1, engine(requests=[request(MEM_141), request(IB, name="nic")])),
                 [cluster("cluster-a", pool("eth", "h200-eth"), pool("ib", "h200-ib"))])
    (placement,) = result.placements
    (member,) = placement.engines[0].members
    assert (placement.cluster, member.role, member.pool) == ("cluster-a", "Standalone", "ib")
    # The Synthetic NIC placed the member but is not claimed.
    assert member.requests == (ResolvedRequest("gpu", "gpu.nvidia.com", 1, (MEM_141,)),)


SELECTOR = [
    ("non-matching request filters the cluster out", [request(MEM_200)], "h200", []),
    ("device count not covered filters out", [request(count=2)], "h200", []),
    ("a published device count of zero satisfies no request", [request()], "h200-none", []),
    ("two requests cannot both claim one single-count device", [request(name="a"), request(name="b")], "h200", []),
    ("two requests must fit within one device's count", [request(name="a", count=5), request(name="b", count=5)],
     "h200-x8", []),
    ("two requests share a device when its count covers both", [request(name="a", count=4),
                                                                request(name="b", count=4)], "h200-x8",
     [("cluster-a", 0, "default")]),
    ("a missing NIC filters the pool out", [request(), request(IB, name="nic")], "h200", []),
    ("a NIC of the wrong link type filters the pool out", [request(), request(IB, name="nic")], "h200-eth", []),
    ("a Synthetic-only match leaves nothing to claim", [request(IB, name="nic")], "nic-only", []),
    ("a Synthetic device satisfies a selector but is never claimed alone", [request(MEM_200)], "syn-200", []),
]


@pytest.mark.parametrize("requests, cls, want", [c[1:] for c in SELECTOR], ids=[c[0] for c in SELECTOR])
def test_node_selector(requests, cls, want):
    assert where(run(deployment(1, engine(requests=requests)), [cluster("cluster-a", pool(cls=cls))])) == want


def test_a_pool_of_zero_nodes_hosts_nothing():
    assert where(run(deployment(), [cluster("cluster-a", pool(nodes=0))])) == []


def test_first_matching_pool_wins():
    result = run(deployment(), [cluster("cluster-a", pool("small", "l4"), pool("x", "h200"), pool("y", "h200"))])
    assert where(result) == [("cluster-a", 0, "x")]


RETAIN = [
    ("a retained replica keeps its pinned pool", [request()], [pool("x"), pool("y")], "y", [("cluster-a", 0, "y")]),
    ("a changed selector re-places the replica onto a now-matching pool",
     [request(), request(IB, name="nic")], [pool("eth", "h200-eth"), pool("ib", "h200-ib")], "eth",
     [("cluster-a", 0, "ib")]),
    ("a pinned pool that still matches stays pinned", [request(), request(IB, name="nic")],
     [pool("ib1", "h200-ib"), pool("ib2", "h200-ib")], "ib2", [("cluster-a", 0, "ib2")]),
    ("no matching pool anywhere drops the replica", [request(), request(IB, name="nic")],
     [pool("eth", "h200-eth")], "eth", []),
    ("a deleted pinned pool re-places the replica", [request()], [pool("x")], "gone", [("cluster-a", 0, "x")]),
]


@pytest.mark.parametrize("requests, pools, pinned, want", [c[1:] for c in RETAIN], ids=[c[0] for c in RETAIN])
def test_retained_replicas_are_rematched_on_their_pinned_pool(requests, pools, pinned, want):
    result = run(deployment(1, engine(requests=requests)), [cluster("cluster-a", *pools)],
                 [replica("cluster-a", pool_name=pinned)])
    assert where(result) == want


def test_dropping_a_replica_that_no_longer_matches_frees_its_node_for_the_refill():
    # One node, held by a replica on the ethernet pool; the ib pool has its own single node.
    result = run(deployment(2, engine(requests=[request(), request(IB, name="nic")])),
                 [cluster("cluster-a", pool("eth", "h200-eth", nodes=1), pool("ib", "h200-ib", nodes=2))],
                 [replica("cluster-a", 0, "eth"), replica("cluster-a", 1, "ib")])
    assert where(result) == [("cluster-a", 0, "ib"), ("cluster-a", 1, "ib")]


# ---- Modelplane's member cases: one pool per engine


def test_members_no_single_pool_satisfies_are_not_scheduled():
    md = deployment(1, gang([request(MEM_141)], [request(IB, MEM_141.replace("141", "1"))]))
    assert where(run(md, [cluster("cluster-a", pool("gpu", "h200"), pool("nic", "nic-only"))])) == []


def test_a_gang_too_big_for_one_clusters_pool_lands_whole_on_another():
    md = deployment(1, engine(pipeline=3))
    result = run(md, [cluster("cluster-a", pool(nodes=2)), cluster("cluster-b", pool("big", nodes=3))])
    assert where(result) == [("cluster-b", 0, "big", "big")]


def test_a_member_claimable_elsewhere_is_not_stranded_on_a_synthetic_match():
    # On pool "syn" the worker's selector matches only the Synthetic 200Gi device; pool "big" has a real one.
    md = deployment(1, gang([request(MEM_141)], [request(MEM_200)]))
    big = PoolClass("big", (gpu(memory="256Gi"),))
    result = run(md, [cluster("cluster-a", pool("syn", "syn-200"), pool("big", "big"))],
                 classes={**CLASSES, "big": big})
    assert where(result) == [("cluster-a", 0, "big", "big")]


def test_a_member_synthetic_only_everywhere_rides_claimless_with_its_gang():
    md = deployment(1, gang([request(MEM_141)], [request(IB, name="nic")]))
    result = run(md, [cluster("cluster-a", pool("ib", "h200-ib", nodes=1))])
    (placement,) = result.placements
    leader, worker = placement.engines[0].members
    assert (leader.pool, len(leader.requests), worker.pool, worker.requests) == ("ib", 1, "ib", ())


def test_a_claimless_leader_rides_along_at_zero_node_cost():
    # Only the worker occupies a node, so a one-node pool hosts the whole gang.
    result = run(deployment(1, gang(None, [request()])), [cluster("cluster-a", pool("frontier", nodes=1))])
    assert where(result) == [("cluster-a", 0, "frontier", "frontier")]
    assert result.placements[0].engines[0].members[0].requests == ()


def test_another_deployments_claimless_member_consumes_no_capacity():
    other = replica("cluster-a", deployment_name="ml-team/other", engines=[ReplicaEngine("main", (
        ReplicaMember("Leader", "default", False), ReplicaMember("Worker", "default", True, 1)))])
    assert where(run(deployment(), [cluster("cluster-a")], [other])) == [("cluster-a", 0, "default")]


def test_a_member_shape_change_re_places_the_replica():
    md = deployment(1, engine(pipeline=2))
    result = run(md, [cluster("cluster-a", pool(nodes=4))], [replica("cluster-a")])
    assert where(result) == [("cluster-a", 0, "default", "default")]


# ---- Modelplane's taint cases: NoSchedule keeps new replicas off, NoExecute drains

MAINTENANCE = {"key": "inferplane.dev/maintenance", "value": "on", "effect": "NoSchedule"}
DECOMMISSION = {"key": "inferplane.dev/decommission", "effect": "NoExecute"}
TWO = [cluster("cluster-a", taints=[MAINTENANCE]), cluster("cluster-b")]
DRAINING = [cluster("cluster-a", taints=[DECOMMISSION]), cluster("cluster-b")]

TAINTS = [
    ("NoSchedule keeps new replicas off", TWO, [], [], ["cluster-b"]),
    ("NoSchedule leaves an existing replica in place", TWO[:1], [], [replica("cluster-a")], ["cluster-a"]),
    ("a toleration allows placement on the tainted cluster", TWO[:1],
     [{"key": "inferplane.dev/maintenance", "operator": "Exists"}], [], ["cluster-a"]),
    ("NoExecute drains and reschedules", DRAINING, [], [replica("cluster-a")], ["cluster-b"]),
    ("a NoExecute toleration keeps the replica in place", DRAINING[:1],
     [{"key": "inferplane.dev/decommission", "operator": "Exists"}], [replica("cluster-a")], ["cluster-a"]),
    ("a drain with nowhere to go leaves the count unmet", DRAINING[:1], [], [replica("cluster-a")], []),
    ("tolerating NoSchedule does not cover a NoExecute taint", DRAINING,
     [{"key": "inferplane.dev/decommission", "operator": "Exists", "effect": "NoSchedule"}],
     [replica("cluster-a")], ["cluster-b"]),
    ("an untolerated second taint still repels",
     [cluster("cluster-a", taints=[MAINTENANCE, {"key": "inferplane.dev/reserved", "effect": "NoSchedule"}]),
      cluster("cluster-b")], [{"key": "inferplane.dev/maintenance", "operator": "Exists"}], [], ["cluster-b"]),
    ("Equal tolerates when the value matches", TWO[:1],
     [{"key": "inferplane.dev/maintenance", "operator": "Equal", "value": "on"}], [], ["cluster-a"]),
    ("Equal with another value does not tolerate", TWO[:1],
     [{"key": "inferplane.dev/maintenance", "operator": "Equal", "value": "off"}], [], []),
    ("a keyless Exists tolerates every taint", [cluster("cluster-a", taints=[MAINTENANCE, DECOMMISSION])],
     [{"operator": "Exists"}], [], ["cluster-a"]),
    ("PreferNoSchedule never keeps a replica off",
     [cluster("cluster-a", taints=[{"key": "k", "effect": "PreferNoSchedule"}])], [], [], ["cluster-a"]),
]


@pytest.mark.parametrize("clusters, tolerations, replicas, want", [c[1:] for c in TAINTS], ids=[c[0] for c in TAINTS])
def test_cluster_taints(clusters, tolerations, replicas, want):
    result = run(deployment(1, tolerations=tolerations), clusters, replicas)
    assert [p.cluster for p in result.placements] == want


# ---- cluster selector


def test_the_cluster_selector_picks_clusters_by_label_and_a_deselected_cluster_loses_its_replica():
    clusters = [cluster("cluster-a", labels={"env": "dev"}), cluster("cluster-b", labels={"env": "prod"}),
                cluster("cluster-c", labels={"env": "prod", "region": "eu"})]
    assert where(run(deployment(2, selector={"matchLabels": {"env": "prod"}}), clusters, [replica("cluster-a")])) == [
        ("cluster-b", 0, "default"), ("cluster-c", 0, "default")]
    eu_only = {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}
    assert [p.cluster for p in run(deployment(2, selector=eu_only), clusters).placements] == ["cluster-c"] * 2


# ---- the cases: vendor selectors on their classes


VENDOR = [
    ("NVIDIA memory", 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0', "h100"),
    ("AMD productName", 'device.attributes["gpu.amd.com"].productName == "AMD_Instinct_MI325X_OAM"', "mi325x"),
    ("CPU capacity", 'device.capacity["dra.cpu"].cpu.compareTo(quantity("32")) >= 0', "epyc"),
    ("semver driverVersion", 'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("560.0.0"))',
     "h100"),
    ("driver name", 'device.driver == "gpu.amd.com" && device.capacity["gpu.amd.com"].memory.isLessThan('
                    'quantity("200Gi"))', "mi300x"),
]


@pytest.mark.parametrize("expression, pool_name", [c[1:] for c in VENDOR], ids=[c[0] for c in VENDOR])
def test_vendor_selectors_find_their_pool(expression, pool_name):
    mixed = cluster("mixed", *(pool(name, name) for name in ("l4", "mi300x", "epyc", "h100", "mi325x")))
    result = run(deployment(1, engine(requests=[request(expression)])), [mixed])
    assert where(result) == [("mixed", 0, pool_name)]


def test_recipe_classes_map_onto_the_scheduler():
    classes = {}
    for path in ("qwen2.5-0.5b-amd/class.yaml", "qwen2.5-0.5b-cpu/class.yaml"):
        klass = pool_class(InferenceClass.model_validate(yaml.safe_load((RECIPES / path).read_text())))
        classes[klass.name] = klass
    lab = cluster("lab", pool("cpu", "civo-cpu-medium"), pool("mi325x", "amd-mi325x"))
    amd = deployment(1, engine(requests=[request('device.driver == "gpu.amd.com"',
                                                 'device.attributes["gpu.amd.com"].productName == '
                                                 '"AMD_Instinct_MI325X_OAM"')]))
    cpu = deployment(1, engine(requests=[request('device.capacity["dra.cpu"].cpu.compareTo(quantity("4")) >= 0',
                                                 name="cpu")]))
    assert where(run(amd, [lab], classes=classes)) == [("lab", 0, "mi325x")]
    assert where(run(cpu, [lab], classes=classes)) == [("lab", 0, "cpu")]
    assert run(cpu, [lab], classes=classes).placements[0].engines[0].members[0].requests == (
        ResolvedRequest("cpu", "dra.cpu", 1, ('device.capacity["dra.cpu"].cpu.compareTo(quantity("4")) >= 0',)),)


# ---- capacity, stability, multi-node sizing, PrefillDecode


def test_capacity_exhausted_across_clusters_places_what_fits_and_says_why_the_rest_does_not():
    clusters = [cluster(f"c{i}", pool(nodes=1)) for i in range(3)]
    result = run(deployment(5), clusters, [replica("c1", deployment_name="ml-team/other")])
    assert where(result) == [("c0", 0, "default"), ("c2", 0, "default")]
    assert result.missing == 3
    assert dict(result.rejections) == {name: ("pool default: 0 of 1 nodes free, engine main needs 1",)
                                       for name in ("c0", "c1", "c2")}
    assert result.message() == ("2 of 5 replicas placed on c0, c2; 3 fit nowhere "
                                "(c0: pool default: 0 of 1 nodes free, engine main needs 1; "
                                "c1: pool default: 0 of 1 nodes free, engine main needs 1; "
                                "c2: pool default: 0 of 1 nodes free, engine main needs 1)")


def as_replicas(result, deployment_name=DEPLOYMENT):
    return [Replica(f"r-{p.cluster}-{p.index}", deployment_name, p.cluster, p.index, tuple(
        ReplicaEngine(e.name, tuple(ReplicaMember(m.role, m.pool, bool(m.requests)) for m in e.members))
        for e in p.engines)) for p in result.placements]


def test_placements_are_stable_across_reconciles_and_when_the_fleet_grows():
    clusters = [cluster("cluster-b", pool(nodes=3)), cluster("cluster-c", pool(nodes=3))]
    first = run(deployment(3), clusters)
    assert where(first) == [("cluster-b", 0, "default"), ("cluster-b", 1, "default"), ("cluster-c", 0, "default")]
    assert run(deployment(3), clusters, as_replicas(first)) == first
    # A new, empty cluster first in name order takes nothing that is already placed ...
    grown = [cluster("cluster-a", pool(nodes=3)), *clusters]
    assert run(deployment(3), grown, as_replicas(first)).placements == first.placements
    # ... and gets the next replica, since it holds the fewest.
    assert where(run(deployment(4), grown, as_replicas(first)))[0] == ("cluster-a", 0, "default")


def test_scale_down_then_up_returns_to_the_same_spread():
    clusters = [cluster("cluster-a"), cluster("cluster-b")]
    four = run(deployment(4), clusters)
    two = run(deployment(2), clusters, as_replicas(four))
    assert where(two) == [("cluster-a", 0, "default"), ("cluster-b", 0, "default")]
    assert run(deployment(4), clusters, as_replicas(two)) == four


MULTI_NODE = [
    ("Leader + 3 workers need 4 nodes of one pool: 3 are too few", 3, None, []),
    ("4 nodes fit", 4, None, [("cluster-a", 0, "p", "p")]),
    ("an autoscaled pool offers its maximum", 1, 4, [("cluster-a", 0, "p", "p")]),
    ("an autoscaled pool's maximum is its limit", 8, 3, []),
]


@pytest.mark.parametrize("nodes, max_nodes, want", [c[1:] for c in MULTI_NODE], ids=[c[0] for c in MULTI_NODE])
def test_multi_node_pool_sizing(nodes, max_nodes, want):
    md = deployment(1, engine(pipeline=4))
    assert where(run(md, [cluster("cluster-a", pool("p", nodes=nodes, max_nodes=max_nodes))])) == want


def test_multi_node_copies_multiply_the_node_cost():
    md = deployment(2, engine(pipeline=2, copies=2))  # 4 nodes per replica
    result = run(md, [cluster("cluster-a", pool("p", nodes=6)), cluster("cluster-b", pool("p", nodes=4))])
    assert where(result) == [("cluster-a", 0, "p", "p"), ("cluster-b", 0, "p", "p")]
    assert where(run(deployment(2, engine(pipeline=2, copies=2)), [cluster("cluster-a", pool("p", nodes=7))])) == [
        ("cluster-a", 0, "p", "p")]


def test_prefill_decode_engines_land_on_their_own_pools_of_one_cluster():
    prefill = engine("prefill", requests=[request('device.capacity["gpu.nvidia.com"].memory.compareTo('
                                                  'quantity("80Gi")) == 0')])
    decode = engine("decode", requests=[request(MEM_141)])
    md = deployment(2, prefill, decode)
    clusters = [cluster("cluster-a", pool("h100", "h100", nodes=1), pool("l4", "l4")),  # no decode pool
                cluster("cluster-b", pool("h200", "h200"), pool("h100", "h100")),
                cluster("cluster-c", pool("h100", "h100", nodes=1), pool("h200", "h200", nodes=1))]
    result = run(md, clusters)
    assert where(result) == [("cluster-b", 0, "h100", "h200"), ("cluster-c", 0, "h100", "h200")]
    assert [e.name for e in result.placements[0].engines] == ["prefill", "decode"]
    assert result.rejections == {}


def test_prefill_decode_needs_both_pools_free_on_the_same_cluster():
    prefill = engine("prefill", requests=[request('device.capacity["gpu.nvidia.com"].memory.compareTo('
                                                  'quantity("80Gi")) == 0')])
    md = deployment(2, prefill, engine("decode"))
    result = run(md, [cluster("cluster-b", pool("h200", "h200", nodes=2), pool("h100", "h100", nodes=1))])
    assert where(result) == [("cluster-b", 0, "h100", "h200")]
    # In the cluster's pool order.
    assert result.rejections == {"cluster-b": ("pool h200: Standalone: request gpu: selector 'device.capacity[\"gpu."
                                               "nvidia.com\"].memory.compareTo(quantity(\"80Gi\")) == 0' is false for "
                                               "class h200's device gpu (capacity memory = 141Gi)",
                                               "pool h100: 0 of 1 nodes free, engine prefill needs 1")}
    # The one line names the pool that matched but is full, not the other pool's mismatch.
    assert result.message() == ("1 of 2 replicas placed on cluster-b; 1 fit nowhere "
                                "(cluster-b: pool h100: 0 of 1 nodes free, engine prefill needs 1)")


# ---- what `explain` prints


def test_every_refusal_names_its_step():
    clusters = [
        cluster("dev", labels={"env": "dev"}),
        cluster("down", labels={"env": "prod"}, ready=False),
        cluster("maint", labels={"env": "prod"}, taints=[MAINTENANCE]),
        cluster("small", pool("l4", "l4"), labels={"env": "prod"}),
        cluster("amd", pool("mi", "mi325x"), labels={"env": "prod"}),
        cluster("synthetic", pool("nics", "nic-only"), labels={"env": "prod"}),
        cluster("unknown", pool("x", "no-such-class"), labels={"env": "prod"}),
        cluster("busy", pool("busy", nodes=1), labels={"env": "prod"}),
    ]
    result = run(deployment(1, selector={"matchLabels": {"env": "prod"}}), clusters,
                 [replica("busy", pool_name="busy", deployment_name="ml-team/other")])
    assert result.placements == ()
    assert dict(result.rejections) == {
        "amd": ("pool mi: Standalone: request gpu: selector 'device.capacity[\"gpu.nvidia.com\"].memory.compareTo("
                "quantity(\"141Gi\")) >= 0' failed for class mi325x's device gpu: no such key: memory "
                "(no capacity gpu.nvidia.com/memory)",),
        "busy": ("pool busy: 0 of 1 nodes free, engine main needs 1",),
        "dev": ("not selected: clusterSelector wants env=prod, the cluster has env=dev",),
        "down": ("cluster is not ready",),
        "maint": ("taint inferplane.dev/maintenance=on:NoSchedule is not tolerated",),
        "small": ("pool l4: Standalone: request gpu: selector 'device.capacity[\"gpu.nvidia.com\"].memory.compareTo("
                  "quantity(\"141Gi\")) >= 0' is false for class l4's device gpu (capacity memory = 24Gi)",),
        "synthetic": ("pool nics: Standalone: request gpu: selector 'device.capacity[\"gpu.nvidia.com\"].memory."
                      "compareTo(quantity(\"141Gi\")) >= 0' failed for class nic-only's device nic: no such key: "
                      "memory (no capacity gpu.nvidia.com/memory)",),
        "unknown": ("pool x: class no-such-class is not known",),
    }


def test_a_synthetic_only_match_is_explained():
    result = run(deployment(1, engine(requests=[request(IB, name="nic")])), [cluster("a", pool("ib", "nic-only"))])
    assert result.rejections == {"a": ("pool ib: engine main matches only Synthetic devices here: nothing to claim",)}


def test_a_selector_that_errors_at_evaluation_matches_nothing_and_says_why():
    not_bool = 'device.attributes["gpu.nvidia.com"].productName'
    result = run(deployment(1, engine(requests=[request(not_bool)])), [cluster("a", pool("l4", "l4"))])
    assert result.placements == ()
    assert result.rejections == {"a": (f"pool l4: Standalone: request gpu: selector {not_bool!r} failed for class "
                                       "l4's device gpu: no such key: productName (no attribute productName)",)}


def test_a_selector_that_does_not_compile_is_refused_with_its_path():
    md = deployment(1, engine("a"), engine("b", requests=[request(MEM_141, 'device.attributes["x"].(')]))
    with pytest.raises(InvalidSelectors) as caught:
        run(md, [cluster("cluster-a")])
    (error,) = caught.value.errors
    assert error.startswith("engines[1].members[0].nodeSelector.devices[0].selectors[1].cel: ")


def test_each_selector_is_evaluated_once_per_class_never_per_cluster(monkeypatch):
    calls = []
    original = DeviceSelector.evaluate
    monkeypatch.setattr(DeviceSelector, "evaluate", lambda self, device: calls.append(1) or original(self, device))
    clusters = [cluster(f"c{i:02}", pool("a", "h200"), pool("b", "l4"), pool("c", "h100")) for i in range(50)]
    result = run(deployment(10), clusters)
    assert len(result.placements) == 10
    assert len(calls) == 3  # one selector, three classes of one device each


def test_schedules_over_one_snapshot_start_from_its_full_capacity_and_another_fleet_from_its_own():
    """The fleet's capacity is worked out once per clusters tuple: each schedule takes its free nodes from
    a copy (one deployment's placements never leave fewer nodes for the next), and a new tuple, with a
    pool grown, is read again."""
    clusters = (cluster("cluster-a", pool(nodes=2)),)
    snapshot = Snapshot(clusters, CLASSES, (replica("cluster-a", 0, deployment_name="default/other"),))
    first = schedule(deployment(2), snapshot)
    assert where(first) == [("cluster-a", 0, "default")] and where(schedule(deployment(2), snapshot)) == where(first)
    grown = Snapshot((cluster("cluster-a", pool(nodes=3)),), CLASSES, snapshot.replicas)
    assert where(schedule(deployment(2), grown)) == [("cluster-a", 0, "default"), ("cluster-a", 1, "default")]
    assert where(schedule(deployment(2), snapshot)) == where(first)
