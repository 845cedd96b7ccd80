"""The cluster simulation's scores over nodes, and the state they read.

kube-scheduler's default scores (NodeResourcesFit's LeastAllocated, BalancedAllocation,
PodTopologySpread, ImageLocality...; pkg/scheduler/apis/config/v1/default_plugins.go) rate a node by
what its pods request; the simulation reads a simpler signal, how many pods a node runs, which
spreads an empty cluster's pods the same way and keeps every placement easy to predict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .predicates import NodeInfo, PodSpec


class LeastPods:
    """The node running the fewest pods first: fill the emptiest node."""

    name = "LeastPods"

    def score(self, pod: PodSpec, node: NodeInfo, state: object) -> int:
        return -node.pods


@dataclass
class WorkloadPods:
    """How many of one workload's pods each node runs (`Spread` reads it); `workload` None: a pod whose
    workload is not spread (an engine pod), on every node as on none."""

    workload: object | None = None
    running: dict[tuple[int, str], int] = field(default_factory=dict)

    def placed(self, target: str) -> int:
        return 0 if self.workload is None else self.running.get((id(self.workload), target), 0)

    def bind(self, target: str) -> None:
        if self.workload is not None:
            key = (id(self.workload), target)
            self.running[key] = self.running.get(key, 0) + 1
