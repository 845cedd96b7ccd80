"""Convergence time and peak memory of the embedded engine for fleets of 50, 200 and 500 clusters.

Run: python bench/fleet_bench.py [SIZES...]
Each size runs in its own process (so peak RSS is that size's own): a synthetic fleet of mixed
clouds with four pools per cluster is applied to a fresh SQLite state and reconciled to a fixpoint.
The baseline is the smallest fleet: time per cluster at each size against it shows cost growth.
Target: 500 clusters to fixpoint in under 30 s and under 1 GiB on a 2-core machine.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(clusters: int) -> dict:
    from inferplane.engine.runtime import Runtime
    from inferplane.engine.synthetic_fleet import write_fleet

    with tempfile.TemporaryDirectory() as tmp:
        manifests = write_fleet(Path(tmp) / "fleet", clusters)
        runtime = Runtime(Path(tmp) / "state")
        start = time.perf_counter()
        result = runtime.apply([manifests])
        elapsed = time.perf_counter() - start
        objects = len(runtime.list())
        runtime.close()
    assert result.admission.ok and result.report.converged
    return {"clusters": clusters, "seconds": elapsed, "reconciles": result.report.reconciles, "objects": objects,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(sizes: list[int]) -> None:
    rows = []
    for size in sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(size)], capture_output=True, text=True,
                             check=True)
        rows.append(json.loads(out.stdout))
    base = rows[0]["seconds"] / rows[0]["clusters"]
    print(f"{'clusters':>8} {'objects':>8} {'reconciles':>10} {'seconds':>8} {'ms/cluster':>10} "
          f"{'vs baseline':>11} {'peak MiB':>9}")
    for row in rows:
        per = row["seconds"] / row["clusters"]
        print(f"{row['clusters']:>8} {row['objects']:>8} {row['reconciles']:>10} {row['seconds']:>8.2f} "
              f"{per * 1000:>10.1f} {per / base:>10.2f}x {row['peak_mib']:>9.0f}")
    last = rows[-1]
    if last["clusters"] == 500:
        ok = last["seconds"] < 30 and last["peak_mib"] < 1024
        print(f"target (500 clusters < 30 s, < 1 GiB): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(measure(int(sys.argv[2]))))
    else:
        main([int(a) for a in sys.argv[1:]] or [50, 200, 500])
