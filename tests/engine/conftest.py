"""What the engine's tests share."""

from typing import Any

import pytest

from inferplane.runtime.store import Store
from inferplane.simulator.fleet import Templates, simulate
from stored_inputs import fleet_inputs


@pytest.fixture
def simulate_fleet():
    """Simulates every cluster of a store again, whatever its fingerprint: the placement audit's findings
    by cluster (a cluster with nothing to simulate has none)."""
    def run(store: Store) -> dict[str, list[dict[str, Any]]]:
        findings: dict[str, list[dict[str, Any]]] = {}
        templates = Templates()
        for cluster, inputs in fleet_inputs(store):
            found, _ = simulate(store, cluster, inputs, templates)
            if inputs is not None:
                findings[cluster["metadata"]["name"]] = found
        return findings

    return run
