"""A scoring rule is one plugin plus a registry line, at either level: a test-only Score registered from
here changes where replicas and pods go, and once unregistered the default profile places as before."""

from __future__ import annotations

from inferplane.api.cloud_cluster import PoolRole
from inferplane.scheduling import Cluster, Engine, Member, PlacementRequest, Pool, PoolClass, Replica, Snapshot, schedule
from inferplane.scheduling.framework import State
from inferplane.scheduling.pool_filters import EngineInPass, PoolCandidate
from inferplane.scheduling.predicates import NodeInfo
from inferplane.scheduling.profiles import FLEET, NODE, POOL_ROOM, registered
from inferplane.scheduling.snapshot import ClassDevice, DeviceRequest, ReplicaEngine, ReplicaMember
from inferplane.simulator.simulation import ClusterSimulation
from inferplane.simulator.simulation_inputs import EngineObject
from inferplane.simulator.simulation_inputs import Pool as SimulatedPool

GOLD = {"tier": "gold"}
CLASSES = {"gpu": PoolClass("gpu", (ClassDevice("gpu", "gpu.nvidia.com", 1, "DRA", "gpu.nvidia.com"),))}
ENGINE = Engine("main", (Member("Standalone", (DeviceRequest("gpu"),)),))


class PreferGold:
    """Test-only: a cluster labelled tier=gold scores 1, any other 0."""

    name = "PreferGold"

    def score(self, request: PlacementRequest, cluster: Cluster, state: State) -> int:
        return int(cluster.labels.get("tier") == "gold")


class MostFree:
    """Test-only: the pool with the most free nodes first."""

    name = "MostFree"

    def score(self, subject: EngineInPass, pool: PoolCandidate, state: object) -> int:
        return subject.free[pool.name]


class Packed:
    """Test-only: the node running the most pods first."""

    name = "Packed"

    def score(self, pod: object, node: NodeInfo, state: State) -> int:
        return node.pods


def fleet(*replicas: Replica) -> Snapshot:
    clusters = tuple(Cluster(name, (Pool("gpus", "gpu", node_count=8),), labels=GOLD if name == "c" else {})
                     for name in ("a", "b", "c"))
    return Snapshot(clusters, CLASSES, replicas)


def running(cluster: str) -> Replica:
    member = ReplicaMember("Standalone", "gpus", claims=True)
    return Replica(f"model-{cluster}-0", "default/model", cluster, 0, (ReplicaEngine("main", (member,)),))


def clusters_of(replicas: int, snapshot: Snapshot) -> list[str]:
    return [p.cluster for p in schedule(PlacementRequest("default/model", replicas, (ENGINE,)), snapshot).placements]


def test_a_registered_fleet_score_draws_new_replicas_and_keeps_them_when_scaling_down():
    assert clusters_of(3, fleet()) == ["a", "b", "c"]  # spread, then the name
    spread = fleet(running("a"), running("b"), running("c"))
    assert clusters_of(1, spread) == ["a"]  # the later names go first
    with registered(FLEET, PreferGold(), weight=5):
        # Gold outweighs spread until the gold cluster holds five more replicas than the others.
        assert clusters_of(3, fleet()) == ["c", "c", "c"]
        assert clusters_of(7, fleet()) == ["a", "b", "c", "c", "c", "c", "c"]
        assert clusters_of(1, spread) == ["c"]  # scale-down keeps the best-scored cluster's replica
    assert clusters_of(3, fleet()) == ["a", "b", "c"]
    assert clusters_of(1, spread) == ["a"]


def nodes_of_two_pods() -> list[str]:
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "web"}]}}}}
    simulation = ClusterSimulation("c", [SimulatedPool("system", PoolRole.SYSTEM, 2)], {},
                                   engines=[EngineObject("default", "web", manifest)])
    return sorted(o["spec"]["nodeName"] for o in simulation.simulate() if o["kind"] == "Pod")


def test_a_registered_node_score_packs_pods_the_default_spreads():
    assert nodes_of_two_pods() == ["c-system-0", "c-system-1"]
    with registered(NODE, Packed(), weight=1):
        assert nodes_of_two_pods() == ["c-system-0", "c-system-0"]
    assert nodes_of_two_pods() == ["c-system-0", "c-system-1"]


def test_a_registered_pool_score_picks_among_the_pools_with_room():
    small, large = Pool("small", "gpu", node_count=2), Pool("large", "gpu", node_count=4)
    snapshot = Snapshot((Cluster("a", (small, large)),), CLASSES)

    def pools(replicas: int) -> list[str]:
        placed = schedule(PlacementRequest("default/model", replicas, (ENGINE,)), snapshot).placements
        return [p.engines[0].members[0].pool for p in placed]

    assert pools(3) == ["small", "small", "large"]  # the first pool in the cluster's order with room
    with registered(POOL_ROOM, MostFree()):
        # 4 free against 2, then 3 against 2, then 2 each: a tie goes to the cluster's order.
        assert pools(3) == ["large", "large", "small"]
    assert pools(3) == ["small", "small", "large"]
