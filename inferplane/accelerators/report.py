"""`inferplane stacks`: per cloud, each supported driver and what serves it, read from the catalog."""

from __future__ import annotations

from inferplane.accelerators.catalog import CLOUDS, serving, supported_drivers



def provided_by(cloud: str) -> str:
    """What the table says for a driver a cloud provides itself: inferplane installs nothing for it."""
    return f"provided by {cloud} (external: inferplane installs nothing)"


def stacks_rows() -> list[tuple[str, str, str]]:
    """(cloud, driver, components) for every supported driver of every cloud, in catalog order."""
    rows = []
    for cloud in CLOUDS:
        for driver in supported_drivers(cloud):
            # A supported driver no component serves is, by derivation, one the cloud provides.
            served_by = ", ".join(c.key for c in serving(cloud, driver))
            rows.append((cloud, driver, served_by or provided_by(cloud)))
    return rows
