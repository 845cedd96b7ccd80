"""What a workload of a serving-stack component is, as the simulated cluster runs it, and how a
description reads a chart's values.

Each component (in `catalog.py` and the driver modules) has a description: a function from its
rendered values or manifest to the DaemonSets, Deployments and StatefulSets its chart (or object)
creates, with the pod's nodeSelector, affinity and tolerations taken from those values the way the
chart's templates take them (chart defaults, then Helm's merge of our values over them).

Each workload also says where it belongs, which is what the placement audit checks:
- `System`: a controller; it belongs on the System pool and nowhere else;
- `Drivers`: a device stack's node agent; it belongs only on pools whose class claims one of its
  component's drivers (and a DRA kubelet plugin publishes that driver's ResourceSlices where it runs);
- `EveryNode`: a node agent meant for every node it tolerates (node metrics, feature discovery).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping

from inferplane.api.json_data import json_copy

Values = dict[str, Any]
# A component's rendered body: Helm values for a release, the manifest for an object.
Rendered = Mapping[str, Any]
# Every installed component's rendered body, by component key: an operator's operands are
# described by the custom resources other components create.
Installed = Mapping[str, Rendered]


class Placement(str, Enum):
    SYSTEM = "System"
    DRIVERS = "Drivers"
    EVERY_NODE = "EveryNode"


@dataclass(frozen=True)
class Workload:
    kind: str  # DaemonSet, Deployment or StatefulSet
    name: str
    namespace: str
    component: str
    placement: Placement
    # The drivers whose pools a `Drivers` workload belongs on: its component's tags (`workloads.workloads` sets them).
    drivers: frozenset[str] = frozenset()
    replicas: int = 1  # ignored for a DaemonSet
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Any] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    requests: Mapping[str, str] = field(default_factory=dict)
    container: str = "main"
    # A DRA kubelet plugin: the driver whose ResourceSlices it publishes on its node.
    publishes_slices_for: str | None = None
    # Why the container exits at start-up with these values (its pods crash-loop), or None.
    crash: str | None = None

    def pod_spec(self) -> dict[str, Any]:
        """The pod template's spec as the chart renders it (the fields placement reads)."""
        spec: dict[str, Any] = {}
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        if self.affinity:
            spec["affinity"] = json_copy(dict(self.affinity))
        if self.tolerations:
            spec["tolerations"] = [dict(t) for t in self.tolerations]
        container: dict[str, Any] = {"name": self.container}
        if self.requests:
            container["resources"] = {"requests": dict(self.requests)}
        spec["containers"] = [container]
        return spec


class UnknownComponent(KeyError):
    """A component with no workload description: describe it here before it can be simulated."""


Describe = Callable[[Rendered, Installed], tuple[Workload, ...]]



# ---- Helm's view of values


def helm_merge(defaults: Mapping[str, Any], values: Mapping[str, Any]) -> Values:
    """Our values over a chart's defaults, as Helm coalesces them: maps merge key by key, anything
    else (lists included) replaces the default, and null deletes the key."""
    out: Values = json_copy(dict(defaults))
    for key, value in values.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = json_copy(value)
    return out


def dig(tree: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """tree["a"]["b"] for "a.b", or default when any step is missing or null."""
    node: Any = tree
    for step in path.split("."):
        if not isinstance(node, Mapping) or node.get(step) is None:
            return default
        node = node[step]
    return node


def tolerations_of(value: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(dict(t) for t in value or [])


def no_workloads(why: str) -> Describe:
    """An explicit "creates nothing that runs", with the reason kept for readers."""
    def describe(_: Rendered, __: Installed) -> tuple[Workload, ...]:
        return ()
    describe.__doc__ = why
    return describe
