"""Admission throughput: validations per second of a typical InferenceClass, against a baseline.

Run: python bench/admission_bench.py
Baseline: the straightforward implementation of the same checks: the pure-Python jsonschema
validator on every manifest, and every CEL rule evaluated with `self` converted at its own node
(what inferplane did before binding the document once and taking a Rust-backed fast path).
"""

from __future__ import annotations

import time

from inferplane.admission.manifests import Manifest
from inferplane import cel
from inferplane.admission.structural import apply_defaults
from inferplane.api.json_data import json_copy
from inferplane.admission.validate import admit, kind_admission
from inferplane.api.inference_class import InferenceClass

TYPICAL_CLASS = {
    "apiVersion": "inferplane.dev/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "gke-l4"},
    "spec": {
        "description": "One NVIDIA L4 per g2-standard-8 node on GKE.",
        "provisioning": {"provider": "GKE", "gke": {"machineType": "g2-standard-8",
                                                     "accelerator": {"type": "nvidia-l4", "count": 1}}},
        "devices": [{
            "name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 1,
            "attributes": {"productName": {"string": "NVIDIA L4"}, "cudaComputeCapability": {"version": "8.9.0"}},
            "capacity": {"memory": {"value": "23034Mi"}},
        }],
    },
}


def rate(fn, seconds: float = 2.0) -> float:
    fn()  # warm caches
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        fn()
        count += 1
    return count / elapsed


def main() -> None:
    manifest = Manifest("bench", TYPICAL_CLASS)

    def admitted() -> None:
        obj, errors = admit(manifest)
        assert obj is not None and not errors

    compiled = kind_admission(InferenceClass)

    def straightforward() -> None:
        body = json_copy(TYPICAL_CLASS)
        apply_defaults(compiled.plan, body)
        content = {"spec": body["spec"]}
        assert not list(compiled.content.validator.iter_errors(content))
        assert all(evaluate_rules(compiled.plan, content))
        InferenceClass.model_validate(body)

    def evaluate_rules(plan, value):
        for entry in plan.rules:
            yield cel.evaluate_rule(entry["rule"], value)
        if isinstance(value, dict):
            for name, child in plan.properties.items():
                if name in value:
                    yield from evaluate_rules(child, value[name])
            if plan.values:
                for item in value.values():
                    yield from evaluate_rules(plan.values, item)
        elif isinstance(value, list) and plan.items:
            for item in value:
                yield from evaluate_rules(plan.items, item)

    fast = rate(admitted)
    slow = rate(straightforward)
    print(f"admission, typical InferenceClass: {fast:,.0f} validations/s ({1e6 / fast:.0f} us each)")
    print(f"baseline, jsonschema + rules bound at each node: {slow:,.0f} validations/s")
    print(f"ratio: {fast / slow:.1f}x; target >= 5,000/s: {'met' if fast >= 5000 else 'NOT met'}")


if __name__ == "__main__":
    main()
