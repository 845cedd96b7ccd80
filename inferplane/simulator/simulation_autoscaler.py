"""The cluster autoscaler of a simulated cluster: which autoscaled pools grow, and by how many nodes, for
the pods the scheduler left Pending (cluster-autoscaler's scale-up, estimated by binpacking onto the
nodes it would add). Pools are never shrunk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from inferplane.accelerators.workloads import Workload
from inferplane.scheduling.dra import DeviceAllocator
from inferplane.scheduling.framework import Filter, Profile
from inferplane.scheduling.predicates import DEFAULT_FILTERS, NodeInfo, PodRequests, filter_nodes
from inferplane.simulator.simulation_inputs import Pool
from inferplane.simulator.simulation_objects import kwok_node, node_name, with_daemonset_tolerations
from inferplane.simulator.simulation_slices import pool_slices

Resource = dict[str, Any]


@dataclass
class Unplaced:
    """A pod the scheduler left Pending, kept for the cluster autoscaler: its spec, its claims (an
    engine pod's), the Pending message, the filters that refused it (the autoscaler judges a new node
    by them, as cluster-autoscaler runs the scheduler's filter plugins) and, once the autoscaler gave up,
    why no pool grew for it."""

    pod: Resource
    spec: Resource
    claims: list[tuple[str, Mapping[str, Any]]]
    message: str
    filters: tuple[Filter, ...] = DEFAULT_FILTERS
    at_maximum: str | None = None


class ClusterAutoscaler:
    """The autoscaler's part of `ClusterSimulation`, which it is mixed into: it reads the simulation's
    pools, workloads and Pending pods, and judges the nodes it would add as the scheduler would."""

    cluster: str
    pools: list[Pool]
    preinstalled: tuple[str, ...]
    workloads: list[Workload]
    unplaced: list[Unplaced]
    plugins: Profile[Any, Any]
    pod_requests: PodRequests
    device_classes: Callable[[], dict[str, tuple[str, ...]]]

    def scale_up(self) -> dict[str, int]:
        """{pool: nodes to add} for the Pending pods a new node would take, as the cluster
        autoscaler's binpacking estimates it: each pod in scheduling order goes to a node already
        opened for an earlier pod, else opens one of the first pool (by name) whose new node takes it
        and that is below its maximum. A pod only pools at their maximum would take is marked so."""
        growth: dict[str, int] = {}
        opened: list[tuple[NodeInfo, DeviceAllocator]] = []
        for pending in self.unplaced:
            if any(_take(pending, info, allocator) for info, allocator in opened):
                continue
            full = None
            for pool in self.pools:
                if pool.max_node_count is None:
                    continue
                size = pool.node_count + growth.get(pool.name, 0)
                info, allocator = self.new_node(pool, size)
                if size >= pool.max_node_count:
                    # Only judged when nothing grows for the pod, so that the message names a pool that would take it.
                    full = full or (pool if _fits(pending, info, allocator) is not None else None)
                elif _take(pending, info, allocator):
                    growth[pool.name] = growth.get(pool.name, 0) + 1
                    opened.append((info, allocator))
                    break
            else:
                if full is not None:
                    pending.at_maximum = (f"pool {full.name} is at its maximum "
                                          f"({full.max_node_count} of {full.max_node_count} nodes)")
        return growth

    def new_node(self, pool: Pool, index: int) -> tuple[NodeInfo, DeviceAllocator]:
        """The node the autoscaler would add to `pool` as `index`, as it would run: the DaemonSet pods
        that would land on it bound, and the slices their plugins would publish."""
        info = NodeInfo(kwok_node(node_name(self.cluster, pool.name, index), pool), requests_of=self.pod_requests)
        drivers = list(self.preinstalled)
        for workload in self.workloads:
            if workload.kind != "DaemonSet":
                continue
            template = workload.pod_spec()
            spec = {**template, "tolerations": with_daemonset_tolerations(template.get("tolerations"))}
            if filter_nodes(spec, [info], self.plugins.filters)[0]:
                info.bind(spec)
                if workload.publishes_slices_for:
                    drivers.append(workload.publishes_slices_for)
        return info, DeviceAllocator(pool_slices(info.name, pool, drivers), self.device_classes())


def _fits(pending: Unplaced, info: NodeInfo, allocator: DeviceAllocator) -> dict | None:
    """The pod's device allocation on the node (empty without claims) when the node takes it, else None."""
    if not filter_nodes(pending.spec, [info], pending.filters)[0]:
        return None
    return allocator.try_allocate(info.name, pending.claims)[0] if pending.claims else {}


def _take(pending: Unplaced, info: NodeInfo, allocator: DeviceAllocator) -> bool:
    """Bind the pod to the node, with its devices, when the node takes it."""
    allocation = _fits(pending, info, allocator)
    if allocation is None:
        return False
    info.bind(pending.spec)
    allocator.commit(info.name, allocation)
    return True
