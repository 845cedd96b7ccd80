"""What a command costs before it does anything: `inferplane validate` of one manifest, as a user checks
their files one by one (or a CI job loops over a folder), against the interpreter's own start.
Run: python bench/cli_bench.py [--against DIR] [--runs N]

Each command runs N times in a fresh process; the figures are the CPU time (user + system) of the
child process, min and median, and the wall-clock median. CPU time is the honest figure on a shared
2-core machine: other processes' load inflates wall-clock time much more. Both checkouts' modules are
compiled to bytecode first, as `scripts/setup` does (the environment here sets
PYTHONDONTWRITEBYTECODE, so nothing else would write them).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFESTS = [REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks" / "model.yaml",
             REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks" / "cluster.yaml"]


def cpu_and_wall(command: list[str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} (in {cwd}) exited {done.returncode}: {done.stderr[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="another checkout (e.g. `git worktree add /tmp/base main`), run in the same turns")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    checkouts = {"this": REPO}
    if args.against:
        checkouts["other"] = args.against.resolve()
    for checkout in checkouts.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", "inferplane"], cwd=checkout, check=True,
                       stdout=subprocess.DEVNULL)
    commands = {"python -c pass": ["-c", "pass"],
                "inferplane --help": ["-m", "inferplane.cli.main", "--help"]}
    for manifest in MANIFESTS:
        commands[f"inferplane validate -f {manifest.relative_to(REPO)}"] = \
            ["-m", "inferplane.cli.main", "validate", "-f", str(manifest)]
    samples = {(name, which): ([], []) for name in commands for which in checkouts
               if which == "this" or name != "python -c pass"}
    for _ in range(args.runs):  # every command takes its turn each round: load weighs on all alike
        for (name, which), (cpus, walls) in samples.items():
            cpu, wall = cpu_and_wall([sys.executable, *commands[name]], checkouts[which])
            cpus.append(cpu)
            walls.append(wall)
    print(f"{'command':<72} {'checkout':<8} {'CPU min s':>9} {'CPU p50 s':>9} {'wall p50 s':>10}")
    for (name, which), (cpus, walls) in samples.items():
        print(f"{name:<72} {which:<8} {min(cpus):9.3f} {statistics.median(cpus):9.3f} "
              f"{statistics.median(walls):10.3f}")
    validate = next(name for name in commands if name.startswith("inferplane validate"))
    per_file = statistics.median(samples[(validate, "this")][1])
    print(f"\none manifest per call: {int(40 // per_file)} files validated in 40 s at the median wall time "
          f"({per_file:.3f} s each)")
    if args.against:
        ratio = statistics.median(samples[(validate, "other")][0]) / statistics.median(samples[(validate, "this")][0])
        print(f"validate CPU p50: other / this = {ratio:.2f}x")


if __name__ == "__main__":
    main()
