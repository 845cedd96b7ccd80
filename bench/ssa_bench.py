"""Server-side apply of a fleet through `inferplane serve`, against `inferplane apply` of the same files.

Run: python bench/ssa_bench.py [CLUSTERS]   (default 1,000)
The synthetic fleet (synthetic_fleet.write_fleet: mixed clouds, one file per object) is applied once
by `inferplane apply -f` to a fresh state, and once by the pinned kubectl's `apply --server-side -f` to a
fresh state `inferplane serve` serves; each is timed from the command's start to the fleet at its
fixpoint (for the server: no reconcile queued or running). Both figures and their ratio are printed;
the served path is meant to cost no more than twice the CLI's. Nothing is asserted.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "apiserver"))


def settle(state: Path) -> None:
    from inferplane.engine.control_plane import ControlPlane
    from inferplane.runtime.lease import Lease

    runtime = ControlPlane(state, read_only=True)
    try:
        time.sleep(0.5)  # the server's reconciler is woken by the last write
        while runtime.store.queue.queued() or Lease(runtime.store).current_holder():
            time.sleep(0.1)
    finally:
        runtime.close()


def main(clusters: int = 1000) -> None:
    from served import INFERPLANE, start

    from inferplane.simulator.synthetic_fleet import write_fleet

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        fleet = write_fleet(tmp_path / "fleet", clusters)
        began = time.perf_counter()
        subprocess.run([*INFERPLANE, "apply", "-f", str(fleet), "--state", str(tmp_path / "cli")], check=True,
                       capture_output=True)
        cli = time.perf_counter() - began

        server = start(tmp_path / "served", tmp_path / "home")
        try:
            began = time.perf_counter()
            server.kubectl("apply", "--server-side", "-f", str(fleet))
            settle(server.state)
            served = time.perf_counter() - began
        finally:
            server.stop()
    print(f"{clusters} clusters: inferplane apply {cli:.1f} s; kubectl apply --server-side (to the fixpoint) "
          f"{served:.1f} s; ratio {served / cli:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
