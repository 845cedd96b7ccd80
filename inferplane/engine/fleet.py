"""Fleet-wide steps after composition: the simulated target clusters."""

from __future__ import annotations

from inferplane.engine.store import Store


def simulate_fleet(store: Store) -> None:
    """Recompute every target cluster's simulated objects (nodes, workloads, ResourceSlices)."""
    return None
