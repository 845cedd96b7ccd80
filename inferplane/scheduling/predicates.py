"""Kubernetes' scheduling predicates as small filter plugins over a node snapshot.

Each plugin is one concept of kube-scheduler's default profile, checked in the scheduler's order:
TaintToleration, NodeSelector and NodeAffinity (one plugin, NodeAffinity, in kube-scheduler; two
here so each reads as one idea), then NodeResourcesFit. As in the scheduler's framework, a node is
rejected by the first plugin that fails it, and the rejection's reasons are worded exactly as
kube-scheduler words them, so that the Pending message a user reads here is the one `kubectl
describe pod` would show: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
taint {nvidia.com/gpu: true}."

A pod is given as its `spec` (nodeSelector, affinity, tolerations, containers); a node as a Node
object, wrapped in a NodeInfo that also counts what the pods already bound to it request.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from inferplane.cel.quantity import parse_quantity

from .framework import Filter

PodSpec = Mapping[str, Any]
Node = Mapping[str, Any]

# The scheduler's own wording (pkg/scheduler/framework/plugins): users search for these strings.
UNTOLERATED_TAINT = "node(s) had untolerated taint {{{key}: {value}}}"
NODE_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
INSUFFICIENT = "Insufficient {resource}"

# Only these effects keep a pod off a node; PreferNoSchedule is a scoring hint, never a filter.
FILTERING_EFFECTS = ("NoSchedule", "NoExecute")
# One zero for every resource nobody requested yet (a Fraction costs a microsecond to make).
ZERO = Fraction(0)


# ---- the snapshot


@dataclass
class NodeInfo:
    """A node and what the pods already bound to it consume (the scheduler's NodeInfo)."""

    node: Node
    requested: dict[str, Fraction] = field(default_factory=dict)
    pods: int = 0
    # The node's allocatable, parsed once: a node never changes within a snapshot.
    _allocatable: dict[str, Fraction] = field(default_factory=dict, repr=False, compare=False)
    # How a pod's requests are read: pod_requests, or a caller's PodRequests memo shared by its nodes.
    requests_of: Callable[[PodSpec], Mapping[str, Fraction]] | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def name(self) -> str:  # read for every node a pod is scored on: kept after the first read
        return self.node["metadata"]["name"]

    @property
    def labels(self) -> Mapping[str, str]:
        return self.node.get("metadata", {}).get("labels") or {}

    @property
    def taints(self) -> list[Mapping[str, str]]:
        return (self.node.get("spec") or {}).get("taints") or []

    def allocatable(self, resource: str) -> Fraction:
        if resource not in self._allocatable:
            value = ((self.node.get("status") or {}).get("allocatable") or {}).get(resource)
            self._allocatable[resource] = parse_quantity(str(value)) if value is not None else ZERO
        return self._allocatable[resource]

    def requests(self, pod: PodSpec) -> Mapping[str, Fraction]:
        return (self.requests_of or pod_requests)(pod)

    def bind(self, pod: PodSpec) -> None:
        """Account for a pod placed here, so the next pod sees what is left."""
        for resource, amount in self.requests(pod).items():
            self.requested[resource] = self.requested.get(resource, ZERO) + amount
        self.pods += 1


def pod_requests(pod: PodSpec) -> dict[str, Fraction]:
    """The pod's effective requests: its containers' requests summed, or its largest init container's
    request where that is larger (init containers run one at a time, before the others)."""
    total: dict[str, Fraction] = {}
    for container in pod.get("containers") or []:
        for resource, value in _requests(container).items():
            total[resource] = total.get(resource, ZERO) + value
    for container in pod.get("initContainers") or []:
        for resource, value in _requests(container).items():
            total[resource] = max(total.get(resource, ZERO), value)
    return total


def qos_class(pod: PodSpec) -> str:
    """The pod's QoS class as Kubernetes derives it from the spec alone (pkg/apis/core/helper/qos GetPodQOS, without
    pod-level resources): BestEffort with no cpu or memory request or limit anywhere; Guaranteed when every
    container limits both, each request (defaulted to its limit) equal to it; Burstable otherwise."""
    stated, guaranteed = False, True
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        limits = {k: parse_quantity(str(v)) for k, v in (resources.get("limits") or {}).items()
                  if k in ("cpu", "memory")}
        requests = {k: parse_quantity(str(v)) for k, v in (resources.get("requests") or {}).items()
                    if k in ("cpu", "memory")}
        stated = stated or any(limits.values()) or any(requests.values())
        guaranteed = guaranteed and set(limits) == {"cpu", "memory"} and all(
            requests.get(k, v) == v for k, v in limits.items())
    return "BestEffort" if not stated else "Guaranteed" if guaranteed else "Burstable"


class PodRequests:
    """pod_requests, remembering the containers (and init containers) it read last, and what they
    request: the pods of one workload share their template's lists (nothing modifies a pod spec once
    built), and each is checked against many nodes and then bound, so the same lists are read again and
    again in a row. Kept by its caller (a simulation, for its nodes), not by this module; holding the
    lists keeps their identities from being reused. Read only."""

    def __init__(self) -> None:
        self.last: tuple[Any, Any, dict[str, Fraction]] = (None, None, {})

    def __call__(self, pod: PodSpec) -> Mapping[str, Fraction]:
        containers, init_containers = pod.get("containers"), pod.get("initContainers")
        last_containers, last_init, last_total = self.last
        if containers is last_containers and init_containers is last_init and containers is not None:
            return last_total
        total = pod_requests(pod)
        self.last = (containers, init_containers, total)
        return total


def _requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    requests = (container.get("resources") or {}).get("requests") or {}
    return {name: parse_quantity(str(value)) for name, value in requests.items()}


# ---- the plugins


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether one toleration tolerates one taint (Toleration.ToleratesTaint in k8s.io/api).

    An empty effect matches every effect; an empty key (only valid with Exists) matches every key;
    Exists ignores the value, Equal (the default operator) compares it.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False  # an unknown operator tolerates nothing: fail closed


def untolerated_taint(tolerations: Iterable[Mapping[str, Any]], taints: Iterable[Mapping[str, Any]],
                      effects: Sequence[str] = FILTERING_EFFECTS) -> Mapping[str, Any] | None:
    """The first taint with one of `effects` that no toleration tolerates, in the node's order."""
    tolerations = list(tolerations)
    for taint in taints:
        if taint.get("effect") in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def node_taint_reason(taint: Mapping[str, Any]) -> str:
    return UNTOLERATED_TAINT.format(key=taint.get("key", ""), value=taint.get("value") or "")


class Tolerating(Protocol):
    tolerations: Sequence[Mapping[str, Any]]


class Tainted(Protocol):
    @property
    def taints(self) -> Sequence[Mapping[str, Any]]: ...


class TaintToleration:
    """kube-scheduler's TaintToleration filter (pkg/scheduler/framework/plugins/tainttoleration), at
    both levels: a pod (its spec) against a node's taints, worded as the scheduler words it, and a
    deployment (a PlacementRequest) against a cluster's fleet taints, with the fleet's wording."""

    name = "TaintToleration"

    def __init__(self, effects: Sequence[str] = FILTERING_EFFECTS,
                 reason: Callable[[Mapping[str, Any]], str] = node_taint_reason):
        self.effects = tuple(effects)
        self.reason = reason

    def filter(self, subject: PodSpec | Tolerating, target: Tainted) -> list[str]:
        # A pod spec is JSON, a dict (asking Mapping costs a deployment a microsecond per cluster).
        tolerations = subject.get("tolerations") or () if isinstance(subject, dict) else subject.tolerations
        taint = untolerated_taint(tolerations, target.taints, self.effects)
        return [] if taint is None else [self.reason(taint)]


class NodeSelector:
    """spec.nodeSelector: every key must be a node label with exactly that value."""

    name = "NodeSelector"

    def filter(self, pod: PodSpec, node: NodeInfo) -> list[str]:
        selector = pod.get("nodeSelector") or {}
        labels = node.labels
        if all(key in labels and labels[key] == value for key, value in selector.items()):
            return []
        return [NODE_AFFINITY_MISMATCH]


class NodeAffinity:
    """requiredDuringSchedulingIgnoredDuringExecution: the terms are ORed, each term's expressions
    and fields ANDed. Preferred terms only score, so they never reject a node."""

    name = "NodeAffinity"

    def filter(self, pod: PodSpec, node: NodeInfo) -> list[str]:
        required = (((pod.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution"))
        if required is None:
            return []
        if any(term_matches(term, node.node) for term in required.get("nodeSelectorTerms") or []):
            return []
        return [NODE_AFFINITY_MISMATCH]


def term_matches(term: Mapping[str, Any], node: Node) -> bool:
    """One nodeSelectorTerm. An empty term matches no node (as Kubernetes documents it)."""
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    # metadata.name is the only field a node selector may match on.
    node_fields = {"metadata.name": metadata.get("name")}
    return (all(requirement_matches(e, labels) for e in expressions)
            and all(requirement_matches(f, node_fields) for f in fields))


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """One NodeSelectorRequirement against a node's labels (or fields)."""
    key, operator = requirement.get("key"), requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    present = key in labels and labels[key] is not None
    if operator == "In":
        return present and str(labels[key]) in values
    if operator == "NotIn":
        return not present or str(labels[key]) not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt"):
        # Both sides are integers; a missing or non-integer label never matches.
        if not present or len(values) != 1:
            return False
        try:
            label, bound = int(str(labels[key])), int(values[0])
        except ValueError:
            return False
        return label > bound if operator == "Gt" else label < bound
    return False  # an unknown operator matches nothing: fail closed


class NodeResourcesFit:
    """The pod's cpu and memory requests fit in what the node has left, and it has a pod slot."""

    name = "NodeResourcesFit"
    resources = ("cpu", "memory")

    def filter(self, pod: PodSpec, node: NodeInfo) -> list[str]:
        reasons = []
        if node.pods + 1 > node.allocatable("pods"):
            reasons.append(TOO_MANY_PODS)
        requests = (node.requests_of or pod_requests)(pod)  # node.requests, inlined: run per node per pod
        for resource in self.resources:
            wanted = requests.get(resource, ZERO)
            # A resource the pod does not request never fails it, even on a full node.
            if wanted > 0 and wanted > node.allocatable(resource) - node.requested.get(resource, ZERO):
                reasons.append(INSUFFICIENT.format(resource=resource))
        return reasons


# kube-scheduler's default order for these plugins.
DEFAULT_FILTERS: tuple[Filter, ...] = (TaintToleration(), NodeSelector(), NodeAffinity(), NodeResourcesFit())


# ---- running them


def as_node_info(node: NodeInfo | Node) -> NodeInfo:
    return node if isinstance(node, NodeInfo) else NodeInfo(node)


def filter_nodes(pod: PodSpec, nodes: Iterable[NodeInfo | Node],
                 filters: Sequence[Filter] = DEFAULT_FILTERS) -> tuple[list[str], dict[str, list[str]]]:
    """(names of the nodes that can run the pod, {rejected node: the reasons}), in the nodes' order.

    A node's reasons come from the first plugin that rejects it, as in the scheduler's framework.
    """
    feasible: list[str] = []
    rejected: dict[str, list[str]] = {}
    for info in map(as_node_info, nodes):
        for plugin in filters:
            reasons = plugin.filter(pod, info)
            if reasons:
                rejected[info.name] = reasons
                break
        else:
            feasible.append(info.name)
    return feasible, rejected


def unschedulable_message(node_count: int, rejected: Mapping[str, Sequence[str]]) -> str:
    """The scheduler's FitError message: each reason with how many nodes gave it, sorted as text."""
    histogram = Counter(reason for reasons in rejected.values() for reason in reasons)
    reasons = sorted(f"{count} {reason}" for reason, count in histogram.items())
    if not reasons:
        return f"0/{node_count} nodes are available."
    return f"0/{node_count} nodes are available: {', '.join(reasons)}."
