"""`inferplane get` reads the store alone: a new process that lists or shows objects never imports the
engine, the composition functions or the device stacks, whose imports were most of a `get`'s time (a
fleet of 10,000 clusters answers one cluster in ~0.25 s, process start included, instead of ~0.55 s)."""

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
# What `get` must not load: the engine and what only reconciling or describing needs.
HEAVY = ("inferplane.engine", "inferplane.compose", "inferplane.accelerators", "inferplane.admission",
         "inferplane.simulator", "inferplane.scheduling")
# Except the simulator's tables, which `get --cluster` reads (they import the runtime only).
LIGHT = ("inferplane.simulator", "inferplane.simulator.cluster_objects")
PROBE = """
import sys
from inferplane.cli.main import cli
try:
    cli.main(sys.argv[1:], prog_name="inferplane")
except SystemExit as exit_:
    code = exit_.code
print("LOADED", sorted({m for m in sys.modules if m.startswith(%r) and m not in %r}), "CODE", code)
"""


def test_get_prints_what_is_stored_without_loading_the_engine(tmp_path):
    state = tmp_path / "state"
    applied = CliRunner().invoke(cli, ["apply", "-f", str(REPO / "recipes" / "mixed-fleet"), "--state", str(state)])
    assert applied.exit_code == 0, applied.output
    for argv in (["get", "icluster", "--state", str(state)],
                 ["get", "icluster", "eks-us-east", "-o", "yaml", "--state", str(state)],
                 ["get", "nodes", "--cluster", "eks-us-east", "--state", str(state)],
                 ["get", "events", "--state", str(state)]):
        done = subprocess.run([sys.executable, "-c", PROBE % (HEAVY, LIGHT), *argv], capture_output=True, text=True,
                              check=True)
        last = done.stdout.strip().splitlines()[-1]
        assert last.endswith("CODE 0") or last.endswith("CODE None"), (argv, done.stdout, done.stderr)
        assert last.startswith("LOADED [] "), (argv, last)
        assert "eks-us-east" in done.stdout or argv[1] == "events", (argv, done.stdout)
