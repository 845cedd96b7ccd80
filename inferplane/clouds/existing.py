"""Existing: a cluster the operator runs; inferplane provisions nothing (docs/clouds.md says how to label it)."""

from __future__ import annotations

from typing import Any

from inferplane.clouds.base import Resource


class Existing:
    source = "Existing"
    autoscales_pools = False  # its nodes are its operator's: nothing of inferplane's grows them

    def nodes_created(self, node_count: int, zones: list[str]) -> int:
        return node_count  # the nodes its operator says the pool has

    def system_pool(self) -> None:
        # The stack's components run wherever the operator's cluster has room for them.
        return None

    def resources(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, Resource]:
        return {}

    def held_pools(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, str]:
        return {}

    def endpoint(self, observed_cluster: Resource | None) -> str | None:
        return None
