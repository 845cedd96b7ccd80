"""The embedded reconciler: the generic controller runtime given inferplane's composition functions, the
simulated clouds and clusters, and the usage rules; and the tables its parts keep in the store beside the
runtime's own."""

from __future__ import annotations

from inferplane.admission import kept_files
from inferplane.compose.registry import composition_functions
from inferplane.compose.usage import USAGE
from inferplane.runtime.reconciler import Reconciler
from inferplane.runtime.schema import Tables
from inferplane.runtime.store import Store
from inferplane.simulator import cluster_objects
from inferplane.simulator.controller import Simulator
from inferplane.simulator.provider import SimulatedProvider

# Every owner's tables the engine's store holds: registered on opening (each owner also registers its own
# on first use), so that a new state has them all from the start and a helper's merge finds them.
TABLES: tuple[Tables, ...] = (cluster_objects.TABLES, kept_files.TABLES)


def register_tables(store: Store) -> None:
    for tables in TABLES:
        store.register_tables(tables)


def embedded_reconciler(store: Store, provider: SimulatedProvider | None = None, functions: dict | None = None,
                        **options) -> Reconciler:
    """inferplane's functions, the simulated clouds and clusters, Usage; `options`: the Reconciler's
    progress, lease and clock (a large run's helper process makes its own: engine/shards.py)."""
    return Reconciler(store, functions or composition_functions(), provider=provider or SimulatedProvider(),
                      controllers=(Simulator(),), usage=USAGE, **options)
