"""Placement by shares of a device (DRA consumable capacity): a CPU pool's NUMA-node devices serve as
many engines as their published capacity holds, a device that is not shared is taken whole, and the
next replica is refused naming the capacity left."""

from __future__ import annotations

from fractions import Fraction

import pytest

from inferplane.scheduling import (ClassDevice, Cluster, DeviceRequest, Engine, Member, PlacementRequest, Pool,
                                   PoolClass, Replica, ReplicaEngine, ReplicaMember, Snapshot, schedule)
from inferplane.scheduling.shares import Capacity, PodAsk, RequestPolicy, share

CPU = 'device.driver == "dra.cpu"'


def cpu_class(cpus, shared=True, name="cpu"):
    return PoolClass(name, (ClassDevice("cpu", "dra.cpu", device_class_name="dra.cpu", capacity={"cpu": str(cpus)},
                                        shared=shared),))


def request(replicas, cpus="4", deployment="ml/qwen"):
    capacity = (("dra.cpu/cpu", cpus),) if cpus else ()
    return PlacementRequest(deployment, replicas, (Engine("vllm", (Member("Standalone", (
        DeviceRequest("cpu", 1, (CPU,), capacity),)),)),))


def fleet(cpus, shared=True, nodes=3, replicas=()):
    return Snapshot((Cluster("c", (Pool("cpu", "cpu", nodes),)),), {"cpu": cpu_class(cpus, shared)}, tuple(replicas))


@pytest.mark.parametrize("cpus, placed, left", [
    (32, 24, "dra.cpu/cpu 0 of 96 free over the pool (at most 0 on one device)"),
    # reservedCPUs 0-1 on each node: the driver publishes 30, seven shares of 4 a node, 2 CPUs stranded on each.
    (30, 21, "dra.cpu/cpu 6 of 90 free over the pool (at most 2 on one device)"),
    # An 8-vCPU EKS node (m6i.2xlarge) whose driver published 6: one share of 4 a node.
    (6, 3, "dra.cpu/cpu 6 of 18 free over the pool (at most 2 on one device)"),
])
def test_a_cpu_pool_serves_as_many_shares_as_its_published_capacity_holds(cpus, placed, left):
    placed_ = schedule(request(30), fleet(cpus))
    assert len(placed_.placements) == placed
    assert placed_.rejections["c"] == (f"pool cpu: a pod asking dra.cpu/cpu 4 of one dra.cpu device does not fit: "
                                       f"{left}; 0 of 3 nodes unused",)
    assert f"{30 - placed} fit nowhere" in placed_.message()


def test_without_a_capacity_request_a_pod_takes_the_whole_device():
    assert len(schedule(request(5, cpus=None), fleet(32)).placements) == 3


def test_a_device_without_allow_multiple_allocations_is_taken_whole_only():
    assert len(schedule(request(5, cpus=None), fleet(32, shared=False)).placements) == 3
    placed = schedule(request(5), fleet(32, shared=False))
    assert placed.placements == ()
    assert placed.rejections["c"] == ("pool cpu: Standalone: request cpu: class cpu's device cpu does not allow "
                                      "multiple allocations: it is claimed whole, never shared (remove the "
                                      "request's capacity)",)


def test_shares_other_deployments_hold_are_counted():
    held = tuple(Replica(f"other-{i}", "ml/other", "c", i, (ReplicaEngine("vllm", (ReplicaMember(
        "Standalone", "cpu", True, ask=PodAsk((("dra.cpu", 1, (("dra.cpu/cpu", "16"),)),))),)),)) for i in range(4))
    # Four shares of 16 fill two of the three 32-CPU devices: 8 shares of 4 are left.
    assert len(schedule(request(30), fleet(32, replicas=held)).placements) == 8


def test_a_share_larger_than_any_device_is_refused_by_the_class():
    placed = schedule(request(1, cpus="33"), fleet(32))
    assert placed.rejections["c"] == ("pool cpu: Standalone: request cpu: class cpu's device cpu dra.cpu/cpu: 33 "
                                      "asked, more than the device has (32)",)


@pytest.mark.parametrize("policy, asked, taken, why", [
    (None, None, 32, ""),  # no amount named, no policy: the whole capacity
    ({"default": "2"}, None, 2, ""),  # no amount named: the policy's default
    ({"default": "2", "validRange": {"min": "2", "step": "2"}}, "3", 4, ""),  # rounded up to the next step
    ({"default": "2", "validRange": {"min": "2"}}, "1", 2, ""),  # below the minimum: the minimum
    ({"default": "8", "validValues": ["8", "16"]}, "9", 16, ""),  # the smallest valid value at least asked
    ({"default": "8", "validValues": ["8", "16"]}, "17", None, "dra.cpu/cpu: 17 rounds to 17, more than the largest "
                                                              "of the policy's values 8, 16"),
    ({"default": "2", "validRange": {"min": "2", "max": "8"}}, "9", None, "dra.cpu/cpu: 9 rounds to 9, more than "
                                                                         "the policy's maximum 8"),
])
def test_a_share_is_what_kube_schedulers_allocator_consumes(policy, asked, taken, why):
    capacities = {"dra.cpu/cpu": Capacity(Fraction(32), RequestPolicy.of(policy))}
    got, reason = share({"cpu": Fraction(asked)} if asked else {}, "dra.cpu", capacities)
    assert (got and got["dra.cpu/cpu"], reason) == (taken and Fraction(taken), why)


def test_a_capacity_the_device_does_not_publish_is_refused():
    _, why = share({"dra.cpu/memory": Fraction(1)}, "dra.cpu", {"dra.cpu/cpu": Capacity(Fraction(32))})
    assert why == "publishes no capacity dra.cpu/memory (it has dra.cpu/cpu)"


def two_clusters(held_on_b):
    held = tuple(Replica(f"other-{i}", "ml/other", "b", i, (ReplicaEngine("vllm", (ReplicaMember(
        "Standalone", "cpu", True, ask=PodAsk((("dra.cpu", 1, (("dra.cpu/cpu", "8"),)),))),)),))
        for i in range(held_on_b))
    clusters = tuple(Cluster(name, (Pool("cpu", "cpu", 2),)) for name in ("a", "b"))
    return Snapshot(clusters, {"cpu": cpu_class(32)}, held)


def test_shares_pack_onto_the_fuller_cluster_by_default_and_spread_with_a_negative_weight(monkeypatch):
    from inferplane.scheduling import profiles
    from inferplane.scheduling.framework import Weighted
    from inferplane.scheduling.share_scores import SharePacking

    # Spread first (neither cluster holds a replica of ours), then pack: a is empty, b holds shares.
    (placement,) = schedule(request(1), two_clusters(3)).placements
    assert placement.cluster == "b"
    fleet_profile = profiles.profile(profiles.FLEET)
    packing = next(w.plugin for tier in fleet_profile.scores for w in tier if isinstance(w.plugin, SharePacking))
    spreading = fleet_profile.without_score(packing).with_score(Weighted(packing, -1), tier=1)
    monkeypatch.setitem(profiles._PROFILES, profiles.FLEET, spreading)
    (placement,) = schedule(request(1), two_clusters(3)).placements
    assert placement.cluster == "a"


def test_the_schedule_says_what_each_shared_pool_has_used_and_left():
    placed = schedule(request(5), fleet(32))
    assert placed.shares == {"c": ("pool cpu: dra.cpu dra.cpu/cpu: 20 used, 76 free of 96 over 3 devices "
                                   "(1 with 12 free, 2 with 32 free)",)}
    # A pool whose class no engine matches is not the deployment's concern; nor is a pool without shares.
    gpu = PoolClass("gpu", (ClassDevice("gpu", "gpu.nvidia.com", device_class_name="gpu.nvidia.com"),))
    snapshot = Snapshot((Cluster("c", (Pool("cpu", "cpu", 3), Pool("gpu", "gpu", 1))),),
                        {"cpu": cpu_class(32), "gpu": gpu})
    gpu_request = PlacementRequest("ml/llm", 1, (Engine("vllm", (Member("Standalone", (
        DeviceRequest("gpu", 1, ('device.driver == "gpu.nvidia.com"',)),)),)),))
    assert schedule(gpu_request, snapshot).shares == {}


def test_within_a_cluster_shares_pack_onto_the_fuller_pool():
    """Two CPU pools of one cluster, the second holding three shares of 8 of another deployment: a new share goes
    there (the first pool in the cluster's order would otherwise take it), keeping the other pool's devices whole."""
    held = tuple(Replica(f"other-{i}", "ml/other", "c", i, (ReplicaEngine("vllm", (ReplicaMember(
        "Standalone", "late", True, ask=PodAsk((("dra.cpu", 1, (("dra.cpu/cpu", "8"),)),))),)),)) for i in range(3))
    pools = (Pool("early", "cpu", 2), Pool("late", "cpu", 2))
    snapshot = Snapshot((Cluster("c", pools),), {"cpu": cpu_class(32)}, held)
    assert [p.engines[0].members[0].pool for p in schedule(request(2), snapshot).placements] == ["late", "late"]
    # Without shares held anywhere, the cluster's order decides, as before.
    empty = Snapshot((Cluster("c", pools),), {"cpu": cpu_class(32)})
    assert [p.engines[0].members[0].pool for p in schedule(request(1), empty).placements] == ["early"]
