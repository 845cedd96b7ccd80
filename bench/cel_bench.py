"""Figures for inferplane.cel: compile time, device-selector evaluations per second, and the gain
over evaluating without caches.  Run: python bench/cel_bench.py

Each rate is the best of three timed runs. Baselines for the same selectors:
- "compile/eval": the expression compiled on every evaluation, device Context reused;
- "no cache": compiled and the device Context (activation) built on every evaluation.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cel  # noqa: E402

from inferplane.cel import Device, compile_expression, evaluate_rule, parse_semver, selector  # noqa: E402
from inferplane.cel.library import FOLDERS  # noqa: E402
from inferplane.cel.source import fold_constants  # noqa: E402

L4 = Device(
    driver="gpu.nvidia.com",
    name="gpu-0",
    attributes={
        "type": "gpu", "productName": "NVIDIA L4", "brand": "Nvidia", "architecture": "Ada Lovelace",
        "uuid": "GPU-4b2a1a4e-2f9c-4e0b-9a8e-0c1d2e3f4a5b", "driverVersion": parse_semver("550.54.15"),
        "cudaComputeCapability": parse_semver("8.9.0"), "cudaDriverVersion": parse_semver("12.4.0"),
    },
    capacity={"memory": "23034Mi"},
)

SHAPES = {
    "string compare": 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"',
    "quantity compare": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0',
    "semver compare": 'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))',
    "missing-domain miss": 'device.attributes["gpu.amd.com"].productName == "AMD_Instinct_MI300X_OAM"',
    "unknown domain empty": 'device.attributes["example.com"].size() == 0',
    "driver + 2 attributes": ('device.driver == "gpu.nvidia.com" && '
                              'device.attributes["gpu.nvidia.com"].architecture == "Ada Lovelace" && '
                              'device.attributes["gpu.nvidia.com"].cudaComputeCapability.major() >= 8'),
}


def rate(fn, seconds: float = 0.4) -> float:
    """Calls per second, best of three runs of roughly `seconds` each."""
    n = 1
    while True:  # calibrate the batch size
        start = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - start > seconds / 4:
            break
        n *= 2
    best = 0.0
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = max(best, n / (time.perf_counter() - start))
    return best


def main() -> None:
    print("Compile time per expression (uncached; includes constant folding and a syntax pass)")
    compile_uncached = compile_expression.__wrapped__
    for label, expr in SHAPES.items():
        ours = 1e6 / rate(lambda: compile_uncached(expr), 0.2)
        raw = 1e6 / rate(lambda: cel.compile(expr), 0.2)
        print(f"  {label:24s} {ours:8.1f} us   (cel.compile alone {raw:6.1f} us)")

    print("\nDevice-selector evaluations per second (prebuilt device activation)")
    print(f"  {'shape':24s} {'cached':>10s} {'unfolded':>10s} {'compile/eval':>13s} {'no cache':>10s}"
          f" {'x compile':>10s} {'x no cache':>11s}")
    for label, expr in SHAPES.items():
        sel = selector(expr)
        sel.matches(L4)
        cached = rate(lambda: sel.matches(L4))

        context = L4.context(sel.domains)
        unfolded = cel.compile(expr)  # quantity()/semver() called through Python on every evaluation
        slow = rate(lambda: _quiet(unfolded.execute, context))

        folded = fold_constants(expr, FOLDERS)
        per_eval_compile = rate(lambda: _quiet(cel.compile(folded).execute, context), 0.2)

        def nothing_cached():
            activation = Device(L4.driver, L4.attributes, L4.capacity).context(sel.domains)
            _quiet(cel.compile(folded).execute, activation)

        no_cache = rate(nothing_cached, 0.2)
        print(f"  {label:24s} {cached:10,.0f} {slow:10,.0f} {per_eval_compile:13,.0f} {no_cache:10,.0f}"
              f" {cached / per_eval_compile:9.1f}x {cached / no_cache:10.1f}x")

    print("\nx-kubernetes-validations rules (evaluate_rule, fresh `self` bound each call)")
    rules = {
        "field compare": ("self.minReplicas <= self.maxReplicas", {"minReplicas": 1, "maxReplicas": 3}),
        "quantity rule": ("quantity(self.memory).isGreaterThan(quantity('1Gi'))", {"memory": "16Gi"}),
        "macro over list": ("self.pools.all(p, p.size > 0 && p.role in ['System', 'GPU', 'CPU'])",
                            {"pools": [{"size": i, "role": "GPU"} for i in range(1, 9)]}),
    }
    for label, (rule, value) in rules.items():
        print(f"  {label:24s} {rate(lambda: evaluate_rule(rule, value)):10,.0f} /s")

    device_build = rate(lambda: Device(L4.driver, L4.attributes, L4.capacity).context(), 0.2)
    print(f"\nDevice activation build (Context with all library functions): {1e6 / device_build:.1f} us")


def _quiet(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - a miss raises; the cost is what we measure
        return False


if __name__ == "__main__":
    main()
