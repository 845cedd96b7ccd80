"""`inferplane serve` under a fleet: kubectl's `get` of 1,000 clusters, and how soon a watch sees each
cluster while `inferplane apply` writes 1,000 of them.

Run: python bench/serve_bench.py [CLUSTERS]   (default 1,000)
A synthetic fleet (synthetic_fleet.write_fleet: mixed clouds, four pools a cluster, one file per object)
is applied by `inferplane apply` in its own process to a state `inferplane serve` serves (a subprocess
on an ephemeral loopback port). A watch on inferenceclusters, opened before the apply with the Python
kubernetes client, timestamps each cluster's ADDED event; `apply` prints each `created` line once its
write is committed, and that line is timestamped as it arrives: an event's latency is its arrival
less its line's (negative where the event beat the line). Baseline: one cluster applied while the
server is idle (the fleet's first cluster, which the fleet's apply then leaves unchanged). Then, on the converged fleet, `kubectl get inferenceclusters` (a Table of CLUSTERS rows)
and `kubectl get ic -o json`, each the median of RUNS fresh processes, against `inferplane get ic`
on the same state, and the server's peak resident memory. Nothing is asserted: figures are printed.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "apiserver"))

RUNS = 3
CREATED = " created"


def watch_added(server, seen: dict[str, float], ready: threading.Event, stop: threading.Event) -> None:
    import kubernetes

    api = kubernetes.client.CustomObjectsApi(kubernetes.config.new_client_from_config(config_file=str(
        server.kubeconfig)))
    watch = kubernetes.watch.Watch()
    version = api.list_cluster_custom_object("inferplane.dev", "v1alpha1", "inferenceclusters")["metadata"][
        "resourceVersion"]
    ready.set()
    try:
        for event in watch.stream(api.list_cluster_custom_object, "inferplane.dev", "v1alpha1", "inferenceclusters",
                                  resource_version=version, timeout_seconds=900):
            if event["type"] == "ADDED":
                seen.setdefault(event["object"]["metadata"]["name"], time.monotonic())
            if stop.is_set():
                watch.stop()
    except Exception:  # noqa: BLE001 (the server stopping under a live watch ends it)
        if not stop.is_set():
            raise


def apply_timed(state: Path, folder: Path) -> dict[str, float]:
    """`inferplane apply` of a folder: each created cluster's name, when its line came."""
    printed = {}
    process = subprocess.Popen([sys.executable, "-m", "inferplane", "apply", "-f", str(folder), "--state", str(state)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    for line in process.stdout:
        if line.startswith("inferencecluster.") and line.rstrip().endswith(CREATED):
            printed[line.split("/", 1)[1].rsplit(CREATED, 1)[0]] = time.monotonic()
    assert process.wait() == 0
    return printed


def latencies(printed: dict[str, float], seen: dict[str, float], wait: float = 30) -> list[float]:
    deadline = time.monotonic() + wait
    while set(printed) - set(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    missing = set(printed) - set(seen)
    assert not missing, f"{len(missing)} clusters never seen by the watch (of {len(seen)} seen)"
    return sorted(seen[name] - printed[name] for name in printed)


def median_seconds(argv: list[str], env: dict | None = None) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
        times.append(time.perf_counter() - start)
        size = len(done.stdout.splitlines())
    return statistics.median(times), size


def peak_mib(pid: int) -> float:
    """A process's peak resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def summary(values: list[float]) -> str:
    ms = [1000 * v for v in values]
    return (f"median {statistics.median(ms):7.1f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:7.1f} ms, "
            f"max {ms[-1]:7.1f} ms ({len(ms)} events)")


def main(clusters: int) -> None:
    from served import KUBECTL, start

    from inferplane.simulator.synthetic_fleet import write_fleet

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        fleet = write_fleet(tmp_path / "fleet", clusters)
        one = write_fleet(tmp_path / "one", 1)
        server = start(tmp_path / "state", tmp_path / "home")
        try:
            seen: dict[str, float] = {}
            ready, stop = threading.Event(), threading.Event()
            watcher = threading.Thread(target=watch_added, args=(server, seen, ready, stop), daemon=True)
            watcher.start()
            ready.wait(60)
            idle = latencies(apply_timed(server.state, one), seen)
            started = time.perf_counter()
            try:
                under_load = latencies(apply_timed(server.state, fleet), seen)
            except AssertionError:
                print(server.stop()[-3000:])
                raise
            applied = time.perf_counter() - started
            stop.set()
            kubectl = [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(tmp_path / "cache")]
            env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
            table, rows = median_seconds([*kubectl, "get", "inferenceclusters"], env)
            as_json, _ = median_seconds([*kubectl, "get", "ic", "-o", "json"], env)
            ours, our_rows = median_seconds([sys.executable, "-m", "inferplane", "get", "ic", "--state",
                                             str(server.state)])
            peak = peak_mib(server.process.pid)
        finally:
            log = server.stop()
    print(f"fleet: {clusters} clusters (+1 baseline), `inferplane apply` took {applied:.1f} s with the server watching")
    print(f"watch latency, idle server (baseline): {summary(idle)}")
    print(f"watch latency, under the {clusters}-cluster apply: {summary(under_load)}")
    print(f"kubectl get inferenceclusters ({rows - 1} rows): {table:.2f} s median of {RUNS}; "
          f"kubectl get ic -o json: {as_json:.2f} s; baseline inferplane get ic ({our_rows - 1} rows): {ours:.2f} s "
          f"(kubectl {table / ours:.2f}x)")
    print(f"server: peak {peak:.0f} MiB resident (the watch holds every object's last body), "
          f"{len(log.splitlines())} requests logged")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
