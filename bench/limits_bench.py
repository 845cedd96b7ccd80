"""Hostile YAML refused before it grows: time and peak memory to refuse a "billion laughs" file and a
10,000-deep document, against what loading them the plain way costs.

Run: python bench/limits_bench.py
Baseline: PyYAML's safe_load and one JSON serialisation (what admission did before the limits), on a
bomb cut to 6 levels (the full 9 levels exhaust the machine's memory).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml

from inferplane.admission.manifests import load


def bomb(levels: int) -> str:
    names = "abcdefghijklmnop"[:levels]
    return "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9 if prev else ['lol'] * 9)}]\n"
                   for prev, name in zip([None, *names], names))


def measure(fn) -> tuple[float, float]:
    """(seconds, peak MiB): timed on its own, then run again under tracemalloc, which slows it."""
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak / 1024 / 1024


def main() -> None:
    sys.setrecursionlimit(10_000)
    folder = Path(tempfile.mkdtemp())
    cases = {"billion laughs (9 levels)": bomb(9), "10,000-deep list": "a: " + "[" * 10000 + "]" * 10000 + "\n"}
    for name, text in cases.items():
        path = folder / "doc.yaml"
        path.write_text(text)
        elapsed, peak = measure(lambda: load([path]))
        _, errors = load([path])
        print(f"{name} ({len(text):,} bytes): refused in {elapsed * 1000:.1f} ms, peak {peak:.2f} MiB: "
              f"{errors[0].message[:60]}...")
    small = bomb(6)
    elapsed, peak = measure(lambda: json.dumps(yaml.safe_load(small)))
    ours, our_peak = measure(lambda: load([folder / "doc.yaml"]) if (folder / "doc.yaml").write_text(small) else None)
    print(f"baseline, safe_load + json.dumps of a 6-level bomb ({len(small)} bytes): {elapsed * 1000:.0f} ms, "
          f"peak {peak:.1f} MiB; ours on the same: {ours * 1000:.1f} ms, peak {our_peak:.2f} MiB "
          f"({elapsed / ours:.0f}x faster, {peak / our_peak:.0f}x less memory)")


if __name__ == "__main__":
    main()
