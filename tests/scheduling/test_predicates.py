"""Conformance tables for the scheduling predicates, case by case from Kubernetes' documented
semantics: "Taints and Tolerations" and "Assigning Pods to Nodes" (kubernetes.io/docs/concepts/
scheduling-eviction/), and kube-scheduler's NodeResourcesFit and FitError wording."""

import pytest

from inferplane.scheduling.predicates import (
    DEFAULT_FILTERS,
    NodeAffinity,
    NodeInfo,
    NodeResourcesFit,
    NodeSelector,
    TaintToleration,
    filter_nodes,
    tolerates,
    unschedulable_message,
)

ROOM = {"cpu": "4", "memory": "8Gi", "pods": "110"}


def node(name="n1", labels=None, taints=(), allocatable=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"taints": [dict(t) for t in taints]},
            "status": {"allocatable": dict(allocatable or ROOM)}}


def taint(key, value=None, effect="NoSchedule"):
    return {"key": key, **({"value": value} if value is not None else {}), "effect": effect}


def run(plugin, pod, n):
    return plugin.filter(pod, NodeInfo(n))


# ---- TaintToleration

TAINT_CASES = [
    # (case, node taints, pod tolerations, expected reasons)
    ("Equal toleration matching key, value and effect",
     [taint("key1", "value1")], [{"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"}], []),
    ("Exists toleration ignores the value",
     [taint("key1", "value1")], [{"key": "key1", "operator": "Exists", "effect": "NoSchedule"}], []),
    ("Equal with another value does not tolerate",
     [taint("key1", "value1")], [{"key": "key1", "operator": "Equal", "value": "other", "effect": "NoSchedule"}],
     ["node(s) had untolerated taint {key1: value1}"]),
    ("operator defaults to Equal",
     [taint("key1", "value1")], [{"key": "key1", "value": "value1", "effect": "NoSchedule"}], []),
    ("empty key with Exists tolerates every taint",
     [taint("a", "1"), taint("b", "2", "NoExecute")], [{"operator": "Exists"}], []),
    ("empty effect matches every effect of that key",
     [taint("key1", "v", "NoSchedule"), taint("key1", "v", "NoExecute")], [{"key": "key1", "operator": "Exists"}], []),
    ("a NoSchedule toleration does not tolerate a NoExecute taint",
     [taint("key1", "v", "NoExecute")], [{"key": "key1", "operator": "Exists", "effect": "NoSchedule"}],
     ["node(s) had untolerated taint {key1: v}"]),
    ("an untolerated PreferNoSchedule taint never filters",
     [taint("key1", "v", "PreferNoSchedule")], [], []),
    ("an untolerated NoExecute taint filters",
     [taint("key1", "v", "NoExecute")], [], ["node(s) had untolerated taint {key1: v}"]),
    ("the docs' example: one of three taints untolerated keeps the pod off",
     [taint("key1", "value1"), taint("key1", "value1", "NoExecute"), taint("key2", "value1")],
     [{"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"},
      {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoExecute"}],
     ["node(s) had untolerated taint {key2: value1}"]),
    ("a taint without a value is tolerated by Equal without a value",
     [taint("dedicated")], [{"key": "dedicated", "operator": "Equal", "effect": "NoSchedule"}], []),
    ("empty key with Exists and an effect tolerates every taint of that effect only",
     [taint("a", "1", "NoExecute")], [{"operator": "Exists", "effect": "NoSchedule"}],
     ["node(s) had untolerated taint {a: 1}"]),
    ("a toleration for another key does not help",
     [taint("nvidia.com/gpu", "true")], [{"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
     ["node(s) had untolerated taint {nvidia.com/gpu: true}"]),
    ("no taints: any pod", [], [], []),
    ("the first untolerated taint is the one reported",
     [taint("a", "1"), taint("b", "2")], [], ["node(s) had untolerated taint {a: 1}"]),
]


@pytest.mark.parametrize("case,taints,tolerations,expected", TAINT_CASES, ids=[c[0] for c in TAINT_CASES])
def test_taint_toleration(case, taints, tolerations, expected):
    assert run(TaintToleration(), {"tolerations": tolerations}, node(taints=taints)) == expected


def test_unknown_toleration_operator_tolerates_nothing():
    assert not tolerates({"key": "a", "operator": "Matches", "value": "1"}, taint("a", "1"))


# ---- NodeSelector

SELECTOR_CASES = [
    ("every selector label present with its value", {"disktype": "ssd"}, {"disktype": "ssd", "zone": "a"}, True),
    ("a different value", {"disktype": "ssd"}, {"disktype": "hdd"}, False),
    ("a missing label", {"disktype": "ssd"}, {}, False),
    ("all keys must match", {"disktype": "ssd", "zone": "a"}, {"disktype": "ssd", "zone": "b"}, False),
    ("an empty selector selects every node", {}, {}, True),
]


@pytest.mark.parametrize("case,selector,labels,fits", SELECTOR_CASES, ids=[c[0] for c in SELECTOR_CASES])
def test_node_selector(case, selector, labels, fits):
    reasons = run(NodeSelector(), {"nodeSelector": selector}, node(labels=labels))
    assert reasons == ([] if fits else ["node(s) didn't match Pod's node affinity/selector"])


# ---- NodeAffinity (required)


def required(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def expr(key, operator, *values):
    out = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


AFFINITY_CASES = [
    ("In: the label's value is listed", [{"matchExpressions": [expr("zone", "In", "a", "b")]}], {"zone": "b"}, True),
    ("In: the label is missing", [{"matchExpressions": [expr("zone", "In", "a")]}], {}, False),
    ("NotIn: a missing label matches", [{"matchExpressions": [expr("zone", "NotIn", "a")]}], {}, True),
    ("NotIn: a listed value does not match", [{"matchExpressions": [expr("zone", "NotIn", "a")]}], {"zone": "a"},
     False),
    ("Exists", [{"matchExpressions": [expr("gpu", "Exists")]}], {"gpu": ""}, True),
    ("DoesNotExist", [{"matchExpressions": [expr("gpu", "DoesNotExist")]}], {"gpu": "x"}, False),
    ("Gt compares integers", [{"matchExpressions": [expr("cores", "Gt", "8")]}], {"cores": "16"}, True),
    ("Gt is strict", [{"matchExpressions": [expr("cores", "Gt", "16")]}], {"cores": "16"}, False),
    ("Lt compares integers, not text", [{"matchExpressions": [expr("cores", "Lt", "100")]}], {"cores": "9"}, True),
    ("Gt on a non-integer label never matches", [{"matchExpressions": [expr("cores", "Gt", "1")]}],
     {"cores": "many"}, False),
    ("terms are ORed: the second one matches",
     [{"matchExpressions": [expr("zone", "In", "a")]}, {"matchExpressions": [expr("zone", "In", "b")]}],
     {"zone": "b"}, True),
    ("expressions in a term are ANDed: one fails",
     [{"matchExpressions": [expr("zone", "In", "a"), expr("gpu", "Exists")]}], {"zone": "a"}, False),
    ("an empty term matches no node", [{}], {"zone": "a"}, False),
    ("matchFields on metadata.name", [{"matchFields": [expr("metadata.name", "In", "n1")]}], {}, True),
    ("matchFields and matchExpressions in one term are ANDed",
     [{"matchExpressions": [expr("zone", "In", "a")], "matchFields": [expr("metadata.name", "In", "n1")]}],
     {"zone": "b"}, False),
]


@pytest.mark.parametrize("case,terms,labels,fits", AFFINITY_CASES, ids=[c[0] for c in AFFINITY_CASES])
def test_node_affinity(case, terms, labels, fits):
    reasons = run(NodeAffinity(), required(*terms), node(labels=labels))
    assert reasons == ([] if fits else ["node(s) didn't match Pod's node affinity/selector"])


def test_preferred_affinity_never_filters():
    pod = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [expr("zone", "In", "a")]}}]}}}
    assert run(NodeAffinity(), pod, node(labels={"zone": "b"})) == []


def test_node_selector_and_affinity_must_both_hold():
    # "If you specify both nodeSelector and nodeAffinity, both must be satisfied."
    pod = {"nodeSelector": {"disktype": "ssd"}, **required({"matchExpressions": [expr("zone", "In", "a")]})}
    feasible, rejected = filter_nodes(pod, [node("ok", {"disktype": "ssd", "zone": "a"}),
                                            node("selector", {"disktype": "hdd", "zone": "a"}),
                                            node("affinity", {"disktype": "ssd", "zone": "b"})])
    assert feasible == ["ok"] and set(rejected) == {"selector", "affinity"}


# ---- NodeResourcesFit


def pod_requesting(**requests):
    return {"containers": [{"name": "c", "resources": {"requests": requests}}]}


FIT_CASES = [
    ("fits in what is left", pod_requesting(cpu="500m", memory="1Gi"), {}, 0, []),
    ("Insufficient cpu against what is already requested", pod_requesting(cpu="500m"), {"cpu": "3600m"}, 0,
     ["Insufficient cpu"]),
    ("Insufficient memory across binary and decimal suffixes", pod_requesting(memory="1Gi"),
     {"memory": "7600M"}, 0, ["Insufficient memory"]),
    ("both resources short: both reasons", pod_requesting(cpu="5", memory="9Gi"), {}, 0,
     ["Insufficient cpu", "Insufficient memory"]),
    ("Too many pods", pod_requesting(), {}, 110, ["Too many pods"]),
    ("a pod requesting nothing fits a full node", {"containers": [{"name": "c"}]}, {"cpu": "4", "memory": "8Gi"}, 0,
     []),
    ("an init container's larger request counts", {"containers": [{"name": "c"}],
                                                   "initContainers": [{"name": "i", "resources": {
                                                       "requests": {"cpu": "5"}}}]}, {}, 0, ["Insufficient cpu"]),
]


@pytest.mark.parametrize("case,pod,used,pods,expected", FIT_CASES, ids=[c[0] for c in FIT_CASES])
def test_node_resources_fit(case, pod, used, pods, expected):
    from inferplane.cel.quantity import parse_quantity

    info = NodeInfo(node(), {k: parse_quantity(v) for k, v in used.items()}, pods)
    assert NodeResourcesFit().filter(pod, info) == expected


def test_binding_consumes_what_the_next_pod_sees():
    info = NodeInfo(node(allocatable={"cpu": "1", "memory": "1Gi", "pods": "10"}))
    pod = pod_requesting(cpu="600m")
    assert filter_nodes(pod, [info])[0] == ["n1"]
    info.bind(pod)
    assert filter_nodes(pod, [info]) == ([], {"n1": ["Insufficient cpu"]})


def test_requests_are_read_from_each_pods_own_containers():
    """pod_requests remembers the containers it read last (a workload's pods share them): a pod with
    other containers, even right after, is read afresh, and pods sharing one template read alike."""
    info = NodeInfo(node(allocatable={"cpu": "1", "memory": "1Gi", "pods": "10"}))
    small = pod_requesting(cpu="100m")
    shared = {**small, "nodeName": "n1"}  # a new pod dict over the same containers
    large = pod_requesting(cpu="2")
    assert NodeResourcesFit().filter(small, info) == []
    assert NodeResourcesFit().filter(large, info) == ["Insufficient cpu"]
    assert NodeResourcesFit().filter(shared, info) == []
    for pod in (small, shared, small):
        info.bind(pod)
    assert str(info.requested["cpu"]) == "3/10"
    grown = {"containers": [*small["containers"], {"name": "d", "resources": {"requests": {"cpu": "800m"}}}]}
    assert NodeResourcesFit().filter(grown, info) == ["Insufficient cpu"]


# ---- the pipeline and its message


def test_a_node_is_rejected_by_the_first_failing_plugin_only():
    # Taints are checked before the selector, as in kube-scheduler's default profile.
    n = node(labels={}, taints=[taint("nvidia.com/gpu", "true")])
    assert filter_nodes({"nodeSelector": {"a": "b"}}, [n]) == (
        [], {"n1": ["node(s) had untolerated taint {nvidia.com/gpu: true}"]})
    assert [f.name for f in DEFAULT_FILTERS] == ["TaintToleration", "NodeSelector", "NodeAffinity",
                                                 "NodeResourcesFit"]


def test_unschedulable_message_is_the_schedulers():
    rejected = {"gpu-0": ["node(s) had untolerated taint {nvidia.com/gpu: true}"],
                "gpu-1": ["node(s) had untolerated taint {nvidia.com/gpu: true}"],
                "sys-0": ["Insufficient cpu"]}
    assert unschedulable_message(3, rejected) == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {nvidia.com/gpu: true}.")
    assert unschedulable_message(0, {}) == "0/0 nodes are available."
