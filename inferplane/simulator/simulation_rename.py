"""A simulation's objects moved to another cluster's name: what a simulation of a cluster of the same
inputs under that name gives, derived without simulating it again (see `renamed`)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from inferplane.api.managed import NAME_MAX
from inferplane.simulator.simulation_objects import (
    HOSTNAME_LABEL,
    KIND_ORDER,
    WORKLOAD_ANNOTATION,
    daemon_pod_name,
    object_order,
)
from inferplane.simulator.simulation_slices import renamed_slice

Resource = dict[str, Any]


def node_names(cluster: str, pools: Iterable[tuple[str, int]]) -> list[str] | None:
    """The names of the nodes of `pools` ((name, node count)) as `node_name` gives them, or None if any
    is cut: then a name no longer starts with the cluster's, and `renamed` cannot move it."""
    names = [f"{cluster}-{pool}-{index}" for pool, count in pools for index in range(count)]
    return None if any(len(name) > NAME_MAX for name in names) else names


def renamed(objects: Sequence[Resource], cluster: str, pools: Sequence[tuple[str, int]], to: str
            ) -> list[Resource] | None:
    """The objects a simulation of cluster `to` gives, from those a simulation of `cluster` gave on the
    same inputs; None where that cannot be derived. `pools`: the simulated pools, (name, node count).
    New dicts along every path written here (and each object's metadata, for its caller to stamp); the
    rest is shared with `objects`, which are left as they were.

    The cluster's name reaches a simulation only through its nodes' names, `<cluster>-<pool>-<index>`.
    So when no name is cut (`node_names`), and the inputs name neither cluster (the caller's condition:
    then no selector, affinity or label value of the inputs can equal a node's name, which contains the
    cluster's), both simulations decide alike: predicates see the same labels apart from the hostname
    label no input matches, and orderings by node name compare names that share their cluster's prefix,
    so they order as the `<pool>-<index>` rest does. They then differ only where a node's name is
    printed, which is what this rewrites: a Node's name and hostname label, a pod's node (its nodeName,
    and a DaemonSet pod's pinning and its name), a ResourceSlice's node (see `renamed_slice`). Engine
    workloads are not covered (their manifests and messages name nodes): the caller leaves them out."""
    old, new = node_names(cluster, pools), node_names(to, pools)
    if old is None or new is None:
        return None
    nodes = dict(zip(old, new))
    out = []
    for obj in objects:
        kind = obj["kind"]
        obj = {**obj, "metadata": dict(obj["metadata"])}
        metadata = obj["metadata"]
        if kind == "Node":
            metadata["name"] = nodes[metadata["name"]]
            labels = metadata["labels"] = dict(metadata["labels"])
            labels[HOSTNAME_LABEL] = nodes.get(labels[HOSTNAME_LABEL], labels[HOSTNAME_LABEL])
        elif kind == "Pod":
            spec = obj["spec"] = dict(obj["spec"])
            if "nodeName" in spec:
                spec["nodeName"] = nodes[spec["nodeName"]]
            pinned = _repin(spec, nodes)
            if pinned is not None:
                workload_kind, daemonset = metadata["annotations"][WORKLOAD_ANNOTATION].split("/", 1)
                if workload_kind != "DaemonSet" or metadata["name"] != daemon_pod_name(daemonset, pinned):
                    return None
                metadata["name"] = daemon_pod_name(daemonset, nodes[pinned])
        elif kind == "ResourceSlice":
            obj = renamed_slice(obj, nodes)
            if obj is None:
                return None
        elif kind not in KIND_ORDER:
            return None  # a kind this does not know where names go in
        out.append(obj)
    return sorted(out, key=object_order)


def _repin(spec: Resource, nodes: Mapping[str, str]) -> str | None:
    """The node a DaemonSet pod is pinned to (`pin_to_node`), if `nodes` maps it; the pod spec's
    affinity (new dicts) is then pinned to the node it maps to."""
    affinity = spec.get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    pinned = next((f["values"][0] for t in terms for f in t.get("matchFields") or []
                   if f.get("key") == "metadata.name" and f.get("values") and f["values"][0] in nodes), None)
    if pinned is None:
        return None
    moved = [{**t, "matchFields": [{**f, "values": [nodes.get(v, v) for v in f.get("values") or []]}
                                   if f.get("key") == "metadata.name" else f for f in t["matchFields"]]}
             if t.get("matchFields") else t for t in terms]
    spec["affinity"] = {**affinity, "nodeAffinity": {
        **affinity["nodeAffinity"], "requiredDuringSchedulingIgnoredDuringExecution": {
            **required, "nodeSelectorTerms": moved}}}
    return pinned
