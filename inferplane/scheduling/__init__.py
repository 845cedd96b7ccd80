"""Placement: the fleet scheduler (replicas onto clusters and pools) and the cluster simulator's
Kubernetes scheduling predicates, both as Filter and Score plugins of one framework (`framework.py`),
enabled and weighted in one place (`profiles.py`)."""

from .fleet import EnginePlacement, MemberPlacement, Placement, Schedule, schedule
from .matching import InvalidSelectors, ResolvedRequest
from .snapshot import (ClassDevice, Cluster, DeviceRequest, Engine, Member, PlacementRequest, Pool, PoolClass,
                       Replica, ReplicaEngine, ReplicaMember, Snapshot, pool_class)

__all__ = [
    "schedule", "Schedule", "Placement", "EnginePlacement", "MemberPlacement", "ResolvedRequest",
    "InvalidSelectors", "PlacementRequest", "Engine", "Member", "DeviceRequest", "Snapshot", "Cluster", "Pool",
    "PoolClass", "ClassDevice", "Replica", "ReplicaEngine", "ReplicaMember", "pool_class",
]
