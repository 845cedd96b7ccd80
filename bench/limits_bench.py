"""Hostile YAML refused before it grows: time and peak memory to refuse a "billion laughs" file and a
10,000-deep document, against what loading them the plain way costs; and inputs over the stream
limits: 177,000 small InferenceClasses in one ~50 MB file (as documents, and as one List), and an
endless standard input.

Run: python bench/limits_bench.py
Baseline: PyYAML's safe_load and one JSON serialisation (what admission did before the limits), on a
bomb cut to 6 levels (the full 9 levels exhaust the machine's memory). Before the stream limits, the
177,000-document file ran `validate` for over 300 s at 1.28 GB (issue 25); it is not re-run here.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml

from inferplane.admission.limits import StreamLimits
from inferplane.admission.manifests import load, read_input


def bomb(levels: int) -> str:
    names = "abcdefghijklmnop"[:levels]
    return "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9 if prev else ['lol'] * 9)}]\n"
                   for prev, name in zip([None, *names], names))


# A small InferenceClass of about 285 bytes: 177,000 of them make the issue's ~50 MB file.
SMALL_CLASS = ("apiVersion: inferplane.dev/v1alpha1\nkind: InferenceClass\nmetadata:\n  name: class-{i:06d}\n"
               "spec:\n  description: a small class, one of many in one file\n  devices:\n  - name: gpu\n"
               "    driver: gpu.nvidia.com\n    deviceClassName: gpu.nvidia.com\n    count: 1\n")


def many_documents(count: int) -> str:
    return "---\n".join(SMALL_CLASS.format(i=i) for i in range(count))


def one_list(count: int) -> str:
    items = "".join("- " + SMALL_CLASS.format(i=i).replace("\n", "\n  ").rstrip(" ") for i in range(count))
    return "apiVersion: v1\nkind: List\nitems:\n" + items


class Endless:
    """Standard input that never ends."""

    def read(self, size: int) -> bytes:
        return b"#" * size


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
    for name, text in (("177,000 documents", many_documents(177_000)), ("one List of 177,000 items",
                                                                     one_list(177_000))):
        path = folder / "many.yaml"
        path.write_text(text)
        elapsed, peak = measure(lambda: load([path]))
        manifests, errors = load([path])
        assert manifests == [] and len(errors) == 1
        print(f"{name} ({len(text) / 1e6:.1f} MB): refused in {elapsed:.2f} s, peak {peak:.1f} MiB: "
              f"{errors[0].message[:48]}...")
    sys.stdin = type("Stdin", (), {"buffer": Endless()})()
    elapsed, peak = measure(lambda: read_input(Path("-"), StreamLimits()))
    print(f"endless standard input: refused after 64 MiB + 1 byte in {elapsed:.2f} s, peak {peak:.1f} MiB: "
          f"{read_input(Path('-'), StreamLimits()).message[:40]}...")
    small = bomb(6)
    elapsed, peak = measure(lambda: json.dumps(yaml.safe_load(small)))
    ours, our_peak = measure(lambda: load([folder / "doc.yaml"]) if (folder / "doc.yaml").write_text(small) else None)
    print(f"baseline, safe_load + json.dumps of a 6-level bomb ({len(small)} bytes): {elapsed * 1000:.0f} ms, "
          f"peak {peak:.1f} MiB; ours on the same: {ours * 1000:.1f} ms, peak {our_peak:.2f} MiB "
          f"({elapsed / ours:.0f}x faster, {peak / our_peak:.0f}x less memory)")


if __name__ == "__main__":
    main()
