"""`inferplane stacks`: per cloud, each supported driver and what serves it, read from the catalog."""

from __future__ import annotations

from inferplane.accelerators.catalog import CLOUDS, serving, supported_drivers

# What the table says for a driver a cloud provides itself (no serving-stack component).
EXTERNAL = "external"


def stacks_rows() -> list[tuple[str, str, str]]:
    """(cloud, driver, components) for every supported driver of every cloud, in catalog order."""
    rows = []
    for cloud in CLOUDS:
        for driver in supported_drivers(cloud):
            # A supported driver no component serves is, by derivation, one the cloud provides.
            served_by = ", ".join(c.key for c in serving(cloud, driver))
            rows.append((cloud, driver, served_by or EXTERNAL))
    return rows
