"""The fleet's score over shares of devices: pack them (the default) or spread them.

kube-scheduler scores a node by how much of its allocatable the pod's requests would leave used
(NodeResourcesFit's MostAllocated packs, LeastAllocated spreads: pkg/scheduler/framework/plugins/
noderesources); here the resource is the shared capacity of a cluster's pools (DRA consumable
capacity, `shares.py`), read from the pass's ledger. A positive weight packs: the fullest target
first, so engines share the NUMA nodes already in use and whole nodes stay free for the next large
engine; a negative weight spreads. A target with no shared devices scores 0: it changes nothing
for GPU pools.
"""

from __future__ import annotations

from typing import Any, Iterable

from .shares import PoolRoom

# The score's range, as kube-scheduler's MaxNodeScore.
MAX_SCORE = 100


def used_share(rooms: Iterable[Any]) -> int:
    """How full the shared capacity of these rooms is, 0 to MAX_SCORE (0 with none)."""
    left = total = 0
    for room in rooms:
        if isinstance(room, PoolRoom):
            room_left, room_total = room.free()
            left, total = left + room_left, total + room_total
    return int(MAX_SCORE * (total - left) / total) if total else 0


class SharePacking:
    """Weight 1: pack shares onto the fullest cluster (or pool); -1: spread them over the emptiest."""

    name = "SharePacking"

    def indifferent(self, subject: Any, targets: Any) -> bool:
        """Pools of which at most one has shared devices (an engine's GPU pools score 0 alike): packing ranks none."""
        free = getattr(subject, "free", None)
        return free is not None and sum(isinstance(free.get(t.name), PoolRoom) for t in targets) < 2

    def score(self, subject: Any, target: Any, state: Any) -> int:
        if hasattr(target, "pools"):  # a cluster: its pools' rooms in the pass
            return used_share((state.free.get(target.name) or {}).values())
        return used_share((subject.free.get(target.name),))  # a pool of the cluster being fitted
