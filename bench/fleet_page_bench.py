"""`inferplane fleet --html` on the mixed-fleet recipe (6 clusters) and on synthetic fleets (1,000
clusters by default): the page's size and the time the command takes, as a user runs it.

Run: python bench/fleet_page_bench.py [SIZES...]
Each fleet is applied once to a fresh SQLite state (that is not timed: bench/fleet_bench.py measures
it); the synthetic ones with one ModelDeployment of two replicas per ten clusters. Then `inferplane
fleet --html` runs three times, each a fresh process as a user's is; its wall-clock and CPU seconds
(the child's user + system time) are printed, best and median, with the page's size. Target: at 1,000
clusters, under 500 KiB and written in a second or two.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = 3


def inferplane(*args: object) -> tuple[float, float]:
    """Run the command in a fresh process: (wall seconds, CPU seconds)."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "inferplane", *map(str, args)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def measure(name: str, manifests: Path) -> None:
    state = manifests.with_name(f"{manifests.name}-state")
    inferplane("apply", "-f", manifests, "--state", state)
    page = manifests.with_name(f"{manifests.name}.html")
    runs = [inferplane("fleet", "--html", page, "--state", state) for _ in range(RUNS)]
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    size = page.stat().st_size
    print(f"{name:>22} | {size / 1024:>8.1f} KiB | wall {min(walls):.2f} / {statistics.median(walls):.2f} s | "
          f"cpu {min(cpus):.2f} / {statistics.median(cpus):.2f} s", flush=True)


def main(sizes: list[int]) -> None:
    from inferplane.simulator.synthetic_fleet import write_fleet

    print(f"{'fleet':>22} | {'page':>12} | {'fleet --html, best / median of ' + str(RUNS)}")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        mixed = tmp / "mixed-fleet"
        mixed.symlink_to(REPO / "recipes" / "mixed-fleet")
        measure("mixed-fleet (6)", mixed)
        for size in sizes:
            measure(f"synthetic ({size:,})", write_fleet(tmp / f"fleet-{size}", size, models=True))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000])
