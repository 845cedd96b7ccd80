"""Figures for the fleet scheduler (inferplane.scheduling.fleet).  Run: python bench/scheduler_bench.py

1. 10 replicas over 100 clusters x 4 pools with a GPU-memory selector, next to a straightforward
   per-(cluster, pool) evaluation of the same selectors: for each replica, every pool of every cluster
   builds its devices' CEL activation and evaluates the selectors (compiled once), as Modelplane
   v0.3.1's scheduler does. Target: under 3 ms.
2. 1,000 clusters x 8 pools, 100 replicas (the baseline would take minutes; it is not run).
3. The same 100 replicas once their pools vanished (issue 29, item 5), next to 2 as the baseline: with a
   cluster still coming up they are kept as they run (the scheduler checks which clusters it waits for),
   and once it is up they are placed afresh.
4. Shares of a device (DRA consumable capacity) at 1,000 clusters, each with a 3-node CPU pool of one
   32-CPU NUMA-node device per node beside 7 GPU pools: 100 replicas claiming whole CPU devices next to
   100 claiming shares of 4 CPUs, each with the fleet empty and with every CPU pool already holding
   other deployments' replicas (6 shares of 4 per cluster; the ledger charges each).

Every timed run gets a fresh snapshot (device activations and their CEL contexts are built inside
the timing, as they would be for a snapshot read from the store). "cold" also clears the
compiled-selector caches. Figures are the best run, then the median (the machine is shared: the
median carries other processes' load); the garbage collector is off while timing, as in timeit.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inferplane.cel import Device, compile_expression, selector  # noqa: E402
from inferplane.scheduling import (ClassDevice, Cluster, DeviceRequest, Engine, Member, PlacementRequest,  # noqa: E402
                                   Pool, PoolClass, Replica, ReplicaEngine, ReplicaMember, Snapshot, schedule)
from inferplane.scheduling.shares import PodAsk  # noqa: E402

MEMORY_SELECTOR = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
# (class, memory): a quarter of the pools hold 40Gi or more.
GPU_CLASSES = [("t4", "16Gi"), ("l4", "24Gi"), ("a10g", "24Gi"), ("h100", "80Gi"),
               ("l40s", "48Gi"), ("a100-40", "40Gi"), ("rtx", "24Gi"), ("v100", "32Gi")]


def snapshot(clusters: int, pools: int) -> Snapshot:
    classes = {name: PoolClass(name, (ClassDevice("gpu", "gpu.nvidia.com", 1, "DRA", "gpu.nvidia.com",
                                                  {"productName": f"NVIDIA {name.upper()}"}, {"memory": memory}),))
               for name, memory in GPU_CLASSES}
    fleet = []
    for c in range(clusters):
        # Each cluster has `pools` of the classes, rotated so the matching pool's position varies.
        chosen = [GPU_CLASSES[(c + p) % len(GPU_CLASSES)][0] for p in range(pools)]
        fleet.append(Cluster(f"cluster-{c:04}", tuple(Pool(f"{name}-pool", name, node_count=2) for name in chosen),
                             labels={"env": "prod"}))
    return Snapshot(tuple(fleet), classes)


def request(replicas: int) -> PlacementRequest:
    member = Member("Standalone", (DeviceRequest("gpu", 1, (MEMORY_SELECTOR,)),))
    return PlacementRequest("bench/model", replicas, (Engine("main", (member,)),),
                            {"matchLabels": {"env": "prod"}})


def baseline(md: PlacementRequest, snap: Snapshot) -> list[tuple[str, str]]:
    """Per replica, per cluster, per pool: build the devices, evaluate every selector, check nodes."""
    programs = [selector(s) for member in md.engines[0].members for r in member.devices for s in r.selectors]
    free = {(c.name, p.name): p.nodes for c in snap.clusters for p in c.pools}
    load: dict[str, int] = {}
    placed = []
    for _ in range(md.replicas):
        best = None
        for cluster in snap.clusters:
            for pool in cluster.pools:
                devices = [Device(d.driver, d.attributes, d.capacity, name=d.name)
                           for d in snap.classes[pool.class_name].devices]
                if free[(cluster.name, pool.name)] >= 1 and any(all(p.matches(d) for p in programs) for d in devices):
                    key = (load.get(cluster.name, 0), cluster.name)
                    if best is None or key < best[0]:
                        best = (key, cluster.name, pool.name)
                    break
        if best is None:
            break
        _, name, pool_name = best
        free[(name, pool_name)] -= 1
        load[name] = load.get(name, 0) + 1
        placed.append((name, pool_name))
    return placed


def timed_ms(run, make_snapshot, runs: int, cold: bool = False) -> tuple[float, float]:
    """(best, median) milliseconds."""
    times = []
    for _ in range(runs):
        snap = make_snapshot()
        if cold:
            selector.cache_clear()
            compile_expression.cache_clear()
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        run(snap)
        times.append((time.perf_counter() - start) * 1000)
        gc.enable()
    return min(times), statistics.median(times)


def main() -> None:
    small = request(10)
    ours = schedule(small, snapshot(100, 4))
    theirs = baseline(small, snapshot(100, 4))
    assert [(p.cluster, p.engines[0].members[0].pool) for p in ours.placements] == sorted(theirs), "disagree"
    warm = timed_ms(lambda s: schedule(small, s), lambda: snapshot(100, 4), 40)
    cold = timed_ms(lambda s: schedule(small, s), lambda: snapshot(100, 4), 40, cold=True)
    base = timed_ms(lambda s: baseline(small, s), lambda: snapshot(100, 4), 5)
    print("10 replicas, 100 clusters x 4 pools, memory selector (target < 3 ms)      best    median")
    print(f"  scheduler                                                       {warm[0]:8.2f} {warm[1]:8.2f} ms")
    print(f"  scheduler, selector caches cleared                              {cold[0]:8.2f} {cold[1]:8.2f} ms")
    print(f"  per-(cluster, pool) evaluation                                  {base[0]:8.2f} {base[1]:8.2f} ms"
          f"   ({base[0] / warm[0]:.0f}x the scheduler)")

    big = request(100)
    result = schedule(big, snapshot(1000, 8))
    took = timed_ms(lambda s: schedule(big, s), lambda: snapshot(1000, 8), 10)
    print("100 replicas, 1,000 clusters x 8 pools")
    print(f"  scheduler                                                       {took[0]:8.2f} {took[1]:8.2f} ms"
          f"   ({len(result.placements)} placed on {len({p.cluster for p in result.placements})} clusters)")
    displaced(big, result, took)
    shares_section()


def displaced(md: PlacementRequest, placed, fresh: tuple[float, float]) -> None:
    """Section 3: every replica of `placed` pinned to a pool that is gone, with a cluster coming up, then up."""
    replicas = tuple(Replica(f"r-{p.cluster}-{p.index}", md.deployment, p.cluster, p.index,
                             (ReplicaEngine("main", (ReplicaMember("Standalone", "gone", True),)),))
                     for p in placed.placements)

    def fleet(up: bool) -> Snapshot:
        base = snapshot(1000, 8)
        joining = Cluster("cluster-new", (Pool("h100-pool", "h100", node_count=2),), {"env": "prod"},
                          ready=up, coming_up=not up)
        return Snapshot((*base.clusters, joining), base.classes, replicas)

    waiting = schedule(md, fleet(False))
    assert waiting.awaited == ("cluster-new",) and all(p.displaced for p in waiting.placements)
    assert not any(p.displaced for p in schedule(md, fleet(True)).placements)
    wait = timed_ms(lambda s: schedule(md, s), lambda: fleet(False), 10)
    afresh = timed_ms(lambda s: schedule(md, s), lambda: fleet(True), 10)
    print("100 replicas whose pools vanished, 1,000 clusters x 8 pools (baseline: the fresh placement above)")
    print(f"  kept as they run while a cluster comes up                       {wait[0]:8.2f} {wait[1]:8.2f} ms"
          f"   ({wait[0] / fresh[0]:.2f}x)")
    print(f"  placed afresh once it is up                                     {afresh[0]:8.2f} {afresh[1]:8.2f} ms"
          f"   ({afresh[0] / fresh[0]:.2f}x)")


CPU_SELECTOR = 'device.driver == "dra.cpu"'
CPU_CLASS = PoolClass("epyc", (ClassDevice("cpu", "dra.cpu", 1, "DRA", "dra.cpu", {}, {"cpu": "32"}, shared=True),))


def cpu_snapshot(clusters: int, held: int) -> Snapshot:
    """`clusters` clusters of 7 GPU pools and a 3-node CPU pool; `held` replicas of another deployment on each
    CPU pool, each holding a share of 4 CPUs."""
    base = snapshot(clusters, 7)
    fleet = tuple(Cluster(c.name, (*c.pools, Pool("cpu", "epyc", node_count=3)), c.labels) for c in base.clusters)
    ask = PodAsk((("dra.cpu", 1, (("dra.cpu/cpu", "4"),)),))
    replicas = tuple(Replica(f"other-{c.name}-{i}", "bench/other", c.name, i, (ReplicaEngine("main", (
        ReplicaMember("Standalone", "cpu", True, ask=ask),)),)) for c in fleet for i in range(held))
    return Snapshot(fleet, {**base.classes, "epyc": CPU_CLASS}, replicas)


def cpu_request(replicas: int, cpus: str | None) -> PlacementRequest:
    member = Member("Standalone", (DeviceRequest("cpu", 1, (CPU_SELECTOR,), (("dra.cpu/cpu", cpus),) if cpus else ()),))
    return PlacementRequest("bench/cpu-model", replicas, (Engine("main", (member,)),), {"matchLabels": {"env": "prod"}})


def shares_section() -> None:
    print("100 replicas, 1,000 clusters x (7 GPU pools + a 3-node pool of 32-CPU devices)  best    median")
    rows = {}
    for label, cpus, held in (("whole CPU devices, empty fleet", None, 0), ("shares of 4 CPUs, empty fleet", "4", 0),
                              ("whole CPU devices, 6 shares held per pool", None, 6),
                              ("shares of 4 CPUs, 6 shares held per pool", "4", 6)):
        md = cpu_request(100, cpus)
        result = schedule(md, cpu_snapshot(1000, held))
        rows[label] = took = timed_ms(lambda s: schedule(md, s), lambda: cpu_snapshot(1000, held), 10)
        base = rows["whole CPU devices, " + label.split(", ", 1)[1]]
        print(f"  {label:<62}{took[0]:8.2f} {took[1]:8.2f} ms   ({took[0] / base[0]:.2f}x whole devices; "
              f"{len(result.placements)} placed)")


if __name__ == "__main__":
    main()
