"""`inferplane stacks`: per cloud, each supported driver and what serves it, read from the catalog."""

from __future__ import annotations

from inferplane.accelerators.catalog import CLOUDS, serving, supported_drivers


def stacks_rows() -> list[tuple[str, str, str]]:
    """(cloud, driver, components) for every supported driver of every cloud, in catalog order."""
    rows = []
    for cloud in CLOUDS:
        for driver in supported_drivers(cloud):
            rows.append((cloud, driver, ", ".join(c.key for c in serving(cloud, driver))))
    return rows
