"""The embedded engine's cost curve, 500 to 10,000 clusters: does work grow with the change or the fleet?

Run: python bench/fleet_curve_bench.py [SIZES...] [--runs N] [--one-process] [--against DIR]
For each size (default 500 1000 2000 5000 10000), N times (default 3: N rounds of every size), each run
in its own process (so that its peak RSS is its own): a synthetic fleet of mixed clouds, four pools per
cluster, one file per object (synthetic_fleet.write_fleet), applied to a fresh SQLite state to its
fixpoint; the same folder applied again unchanged (no-op); one cluster's nodeCount changed and the folder
applied again; then a whole `inferplane get icluster NAME` of one cluster, process start included, three
times. Each apply is a fresh ControlPlane, as each `inferplane apply` is a fresh process.
A run of 250 clusters or more starts a helper process (engine/shards.py), counted in its CPU and peak;
`--one-process` keeps every run in one process, to compare. `--against DIR` runs another checkout's code
(with its own copy of this benchmark) after each run of this one, and prints its figures beside.

Prints per size the best run's wall seconds, CPU seconds (best of the runs, each phase on its own), CPU
ms per cluster, peak RSS, and the no-op and the change as shares of the full apply; then the machine's
speed (a fixed piece of pure-Python work timed before each run: machine_reference); then the curve's
flatness (CPU per cluster, largest over smallest) and the targets: 10,000 clusters under 60 s wall and
1 GiB peak, CPU per cluster within 25% from 500 to 10,000, no-op and change each under 1% of the full
apply at 10,000, `get` of one cluster under 0.5 s at 10,000.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fleet_bench import measure

REPO = Path(__file__).resolve().parents[1]

SIZES = [500, 1000, 2000, 5000, 10000]
RUNS = 3
GETS = 3
# A ControlPlane's shard_min no fleet reaches: every run in one process (--one-process).
ONE_PROCESS = 10**9


def timed_gets(state: Path, cluster: str) -> dict:
    """A whole `inferplane get icluster NAME`, process start included: the best of GETS."""
    gets = []
    for _ in range(GETS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "inferplane", "get", "icluster", cluster, "--state", str(state)],
                       check=True, capture_output=True)
        gets.append(time.perf_counter() - start)
    return {"get": min(gets)}


def machine_reference() -> float:
    """Seconds of a fixed piece of pure-Python work (dicts, lists, strings, JSON), best of three, timed just
    before a run: this shared machine's speed moves by a half within an hour, and a run's figures mean
    little without the speed it ran at."""
    def work() -> None:
        for i in range(20_000):
            obj = {"metadata": {"name": f"pool-{i}", "labels": {"a": str(i), "b": "x" * (i % 7)}},
                   "spec": {"nodes": [{"index": j, "ready": j % 2 == 0} for j in range(8)]}}
            json.loads(json.dumps(obj))
    times = []
    for _ in range(3):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def one_run(clusters: int, one_process: bool) -> dict:
    reference = machine_reference()
    return {**measure(clusters, models=False, then=timed_gets, shard_min=ONE_PROCESS if one_process else None),
            "reference": reference}


def best(runs: list[dict], phase: str, field: str) -> float:
    return min(run[phase][field] for run in runs)


def one_run_of(checkout: Path, size: int, one_process: bool) -> dict:
    """One run in its own process, of `checkout`'s code and its own copy of this benchmark. In `checkout`'s
    folder too: an older checkout starts its helper with `python -m` alone, which puts the working folder
    first on the helper's path."""
    return json.loads(subprocess.run(
        [sys.executable, str(checkout / "bench" / Path(__file__).name), "--one", str(size)]
        + ["--one-process"] * one_process, capture_output=True, text=True, check=True, cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)}).stdout)


def main(sizes: list[int], runs: int, one_process: bool, against: Path | None = None) -> None:
    # Round by round, every size in each: this machine's speed drifts within the minutes a curve takes, and
    # all runs of one size in a row would put that drift into the curve's flatness. With `against`, the
    # other checkout's run of each size follows this one's, so that both see the same drift.
    checkouts = [REPO] + ([against.resolve()] if against else [])
    rows: dict[Path, dict[int, list[dict]]] = {checkout: {size: [] for size in sizes} for checkout in checkouts}
    for _ in range(runs):
        for size in sizes:
            for checkout in checkouts:
                rows[checkout][size].append(one_run_of(checkout, size, one_process))
    for checkout in checkouts:
        if against:
            print(f"\n== {checkout} ({git_head(checkout)})")
        report(rows[checkout], runs)


def git_head(checkout: Path) -> str:
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()


def report(rows: dict[int, list[dict]], runs: int) -> None:
    print(f"best of {runs} runs each (CPU: each phase's least; wall and peak: the run with the least full CPU)")
    print(f"{'clusters':>8} {'objects':>8} | {'full s':>7} {'cpu s':>7} {'ms/cl':>6} {'MiB':>6} | {'no-op s':>7} "
          f"{'cpu s':>6} {'of full':>7} | {'change s':>8} {'cpu s':>6} {'recs':>4} {'of full':>7} | {'get s':>5}")
    per_cluster = {}
    for size, size_runs in rows.items():
        run = min(size_runs, key=lambda r: r["full"]["cpu"])
        full_cpu = best(size_runs, "full", "cpu")
        per_cluster[size] = full_cpu / size * 1000
        noop_cpu, change_cpu = best(size_runs, "noop", "cpu"), best(size_runs, "change", "cpu")
        print(f"{size:>8} {run['full']['objects']:>8} | {run['full']['seconds']:>7.1f} {full_cpu:>7.1f} "
              f"{per_cluster[size]:>6.2f} {run['full']['peak_mib']:>6.0f} | {best(size_runs, 'noop', 'seconds'):>7.2f} "
              f"{noop_cpu:>6.2f} {noop_cpu / full_cpu:>7.2%} | {best(size_runs, 'change', 'seconds'):>8.2f} "
              f"{change_cpu:>6.2f} {run['change']['reconciles']:>4} {change_cpu / full_cpu:>7.2%} | "
              f"{min(r['get'] for r in size_runs):>5.2f}")
    # Every run, not only the best: the spread is this machine's as much as the engine's.
    print("every run's full apply, wall s (the fixed work's s before it): " + "; ".join(
        f"{size}: " + ", ".join(f"{r['full']['seconds']:.1f} ({r['reference']:.2f})" for r in size_runs)
        for size, size_runs in rows.items()))
    references = sorted(r["reference"] for size_runs in rows.values() for r in size_runs)
    print(f"machine speed: a fixed piece of pure-Python work took {references[0]:.3f}-{references[-1]:.3f} s "
          "before the runs (lower is faster; compare figures taken at like speeds)")
    flat = max(per_cluster.values()) / min(per_cluster.values())
    print(f"CPU per cluster, largest over smallest: {flat:.2f} (target within 1.25: {'met' if flat <= 1.25 else 'NOT met'})")
    if 10000 in rows:
        size_runs = rows[10000]
        run = min(size_runs, key=lambda r: r["full"]["cpu"])
        full_cpu = best(size_runs, "full", "cpu")
        checks = [
            ("full apply under 60 s wall", run["full"]["seconds"] < 60, f"{run['full']['seconds']:.1f} s"),
            ("peak under 1 GiB", run["full"]["peak_mib"] < 1024, f"{run['full']['peak_mib']:.0f} MiB"),
            ("no-op under 1% of the full apply", best(size_runs, "noop", "cpu") < 0.01 * full_cpu,
             f"{best(size_runs, 'noop', 'cpu') / full_cpu:.2%} CPU"),
            ("one-cluster change under 1% of the full apply", best(size_runs, "change", "cpu") < 0.01 * full_cpu,
             f"{best(size_runs, 'change', 'cpu') / full_cpu:.2%} CPU"),
            ("get of one cluster under 0.5 s", min(r["get"] for r in size_runs) < 0.5,
             f"{min(r['get'] for r in size_runs):.2f} s"),
        ]
        for name, ok, figure in checks:
            print(f"target at 10,000 clusters, {name}: {figure}, {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    args = sys.argv[1:]
    one_process = "--one-process" in args
    args = [a for a in args if a != "--one-process"]
    if args[:1] == ["--one"]:
        print(json.dumps(one_run(int(args[1]), one_process)))
    else:
        options = {}
        for option in ("--runs", "--against"):
            if option in args:
                options[option] = args[args.index(option) + 1]
                del args[args.index(option):args.index(option) + 2]
        main([int(a) for a in args] or SIZES, int(options.get("--runs", RUNS)), one_process,
             Path(options["--against"]) if "--against" in options else None)
