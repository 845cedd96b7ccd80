"""The embedded reconciler: the generic controller runtime given inferplane's composition functions, the
simulated clouds and clusters, and the usage rules."""

from __future__ import annotations

from inferplane.compose.registry import composition_functions
from inferplane.compose.usage import USAGE
from inferplane.runtime.reconciler import Reconciler
from inferplane.runtime.store import Store
from inferplane.simulator.controller import Simulator
from inferplane.simulator.provider import SimulatedProvider


def embedded_reconciler(store: Store, provider: SimulatedProvider | None = None, functions: dict | None = None,
                        **options) -> Reconciler:
    """inferplane's functions, the simulated clouds and clusters, Usage; `options`: the Reconciler's
    progress, lease and clock (a large run's helper process makes its own: runtime/shards.py)."""
    return Reconciler(store, functions or composition_functions(), provider=provider or SimulatedProvider(),
                      controllers=(Simulator(),), usage=USAGE, **options)
