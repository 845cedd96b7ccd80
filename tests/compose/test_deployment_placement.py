"""ModelDeployment composition: the fleet as required resources, one ModelReplica per placement, status."""

import copy

import pytest

from inferplane.compose.base import Request
from inferplane.compose.model_deployment import compose_model_deployment, explain, replica_name, verdict

GROUP = "inferplane.dev/v1alpha1"
READY = [{"type": "Ready", "status": "True", "reason": "Available", "message": ""}]
NOT_READY = [{"type": "Ready", "status": "False", "reason": "Creating", "message": ""}]
AMD_SELECTOR = 'device.attributes["gpu.amd.com"].productName == "AMD_Instinct_MI325X_OAM"'


def klass(name, driver, attributes, capacity):
    return {"apiVersion": GROUP, "kind": "InferenceClass", "metadata": {"name": name},
            "spec": {"description": "", "devices": [{"name": "gpu", "driver": driver, "deviceClassName": driver,
                                                     "count": 1, "attributes": attributes, "capacity": capacity}]}}


CLASSES = [klass("mi325x", "gpu.amd.com", {"productName": {"string": "AMD_Instinct_MI325X_OAM"}},
                 {}),
           klass("epyc", "dra.cpu", {}, {"cpu": {"value": "64"}})]


def cluster(name, pools, conditions=READY, labels=None, taints=None):
    spec = {"cluster": {"source": "Existing"}, "nodePools": [{"name": p, "className": c, "nodeCount": n}
                                                             for p, c, n in pools]}
    if taints:
        spec["taints"] = taints
    return {"apiVersion": GROUP, "kind": "InferenceCluster", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec,
            "status": {"conditions": conditions, "schedulablePools": [
                {"name": p, "className": c, "role": "GPU", "nodeCount": n} for p, c, n in pools]}}


def deployment(replicas=1, selector=AMD_SELECTOR, tolerations=None, name="qwen"):
    spec = {"engines": [{"name": "vllm", "members": [{
        "role": "Standalone",
        "nodeSelector": {"devices": [{"name": "gpu", "count": 1, "selectors": [{"cel": selector}]}]},
        "template": {"spec": {"containers": [{"name": "engine", "image": "rocm/vllm:v1"}]}}}]}]}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": GROUP, "kind": "ModelDeployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"team": "ml"}}, "spec": spec}}}


def replica_on(cluster_name, index=0, pool="mi325x", conditions=READY, owner="qwen"):
    """A replica as the function composes it (what the runtime observes and lists back)."""
    return {"apiVersion": GROUP, "kind": "ModelReplica",
            "metadata": {"name": replica_name(owner, cluster_name, index), "namespace": "ml",
                         "labels": {"team": "ml", "inferplane.dev/deployment": owner,
                                    "inferplane.dev/cluster": cluster_name, "inferplane.dev/replica-index": str(index)}},
            "spec": {"clusterName": cluster_name, "serving": {"mode": "Unified"}, "engines": [{
                "name": "vllm", "copies": 1, "members": [{
                    "role": "Standalone", "nodePoolName": pool,
                    "deviceRequests": [{"name": "gpu", "deviceClassName": "gpu.amd.com", "count": 1,
                                        "selectors": [{"cel": AMD_SELECTOR}]}],
                    "template": {"spec": {"containers": [{"name": "engine", "image": "rocm/vllm:v1"}]}}}]}]},
            "status": {"conditions": conditions}}


def full_request(composite, clusters, replicas=(), observed=None, classes=CLASSES):
    """The request once the runtime answered every requirement (a class not found is None)."""
    required = {"clusters": list(clusters), "replicas": list(replicas), "class-mi325x": None, "class-epyc": None}
    required.update({f"class-{k['metadata']['name']}": k for k in classes})
    return Request(composite, observed or {}, required)


def composed(response):
    """Desired replicas as (key, name, cluster, pools) rows."""
    return [(key, d.resource["metadata"]["name"], d.resource["spec"]["clusterName"],
             [m["nodePoolName"] for e in d.resource["spec"]["engines"] for m in e["members"]])
            for key, d in sorted(response.desired.items())]


def scheduled(response):
    condition = response.condition("Scheduled")
    return condition.status, condition.reason, condition.message


LAB = cluster("lab", [("mi325x", "mi325x", 1), ("cpu", "epyc", 2)])
CIVO = cluster("civo", [("cpu", "epyc", 2)])


def test_asks_for_the_fleet_then_the_classes_its_pools_name():
    first = compose_model_deployment(Request(deployment()))
    assert {n: (r.kind, r.name) for n, r in first.requirements.items()} == {
        "clusters": ("InferenceCluster", None), "replicas": ("ModelReplica", None)}
    assert first.desired == {} and first.conditions == []
    second = compose_model_deployment(Request(deployment(), {}, {"clusters": [LAB], "replicas": []}))
    assert sorted(second.requirements) == ["class-epyc", "class-mi325x", "clusters", "replicas"]
    assert second.desired == {}


def test_places_a_replica_on_the_pool_whose_class_matches_with_the_resolved_requests():
    composite = deployment(tolerations=[{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}])
    before = copy.deepcopy(composite)
    response = compose_model_deployment(full_request(composite, [CIVO, LAB]))
    assert composite == before, "the request is left as it was"
    assert composed(response) == [("replica-lab-0", "qwen-lab-0", "lab", ["mi325x"])]
    replica = response.desired["replica-lab-0"].resource
    assert replica["metadata"] == {"name": "qwen-lab-0", "namespace": "ml", "labels": {
        "team": "ml", "inferplane.dev/deployment": "qwen", "inferplane.dev/cluster": "lab",
        "inferplane.dev/replica-index": "0"}}
    assert replica["spec"] == {
        "clusterName": "lab", "serving": {"mode": "Unified"},
        "tolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}],
        "engines": [{"name": "vllm", "copies": 1, "members": [{
            "role": "Standalone", "nodePoolName": "mi325x",
            "deviceRequests": [{"name": "gpu", "deviceClassName": "gpu.amd.com", "count": 1,
                                "selectors": [{"cel": AMD_SELECTOR}]}],
            "template": {"spec": {"containers": [{"name": "engine", "image": "rocm/vllm:v1"}]}}}]}]}
    assert response.status == {"replicas": {"total": 1, "ready": 0}, "clusters": ["lab"]}
    assert scheduled(response) == ("True", "Scheduled", "ModelDeployment qwen: 1 of 1 replicas placed on lab")


def test_ready_counts_the_replicas_whose_ready_condition_is_true():
    second = cluster("lab2", [("mi325x", "mi325x", 1)])
    observed = {"replica-lab-0": replica_on("lab"), "replica-lab2-0": replica_on("lab2", conditions=NOT_READY)}
    response = compose_model_deployment(full_request(deployment(replicas=2), [LAB, second],
                                                     observed.values(), observed))
    assert composed(response) == [("replica-lab-0", "qwen-lab-0", "lab", ["mi325x"]),
                                  ("replica-lab2-0", "qwen-lab2-0", "lab2", ["mi325x"])]
    assert response.status == {"replicas": {"total": 2, "ready": 1}, "clusters": ["lab", "lab2"]}


def test_replicas_that_fit_nowhere_say_why_in_one_line_and_in_explain():
    taint = {"key": "maintenance", "value": "on", "effect": "NoSchedule"}
    tainted = cluster("tainted", [("mi325x", "mi325x", 4)], taints=[taint])
    down = cluster("down", [("mi325x", "mi325x", 4)], conditions=NOT_READY)
    lab = cluster("lab", [("mi325x", "mi325x", 1)])
    request = full_request(deployment(replicas=3), [CIVO, lab, tainted, down])
    response = compose_model_deployment(request)
    assert composed(response) == [("replica-lab-0", "qwen-lab-0", "lab", ["mi325x"])]
    assert response.status["replicas"] == {"total": 1, "ready": 0}
    selector_false = (f"pool cpu: Standalone: request gpu: selector {AMD_SELECTOR!r} failed for class epyc's "
                      "device gpu: no such key: productName (no attribute gpu.amd.com/productName)")
    assert scheduled(response) == (
        "False", "Unschedulable",
        "ModelDeployment qwen: 1 of 3 replicas placed on lab; 2 fit nowhere (civo: " + selector_false
        + "; down: cluster is not ready; lab: pool mi325x: 0 of 1 nodes free, engine vllm needs 1; "
        "tainted: taint maintenance=on:NoSchedule is not tolerated)")
    assert explain(request) == [
        "ModelDeployment qwen: 1 of 3 replicas placed, 2 fit nowhere",
        "  replica 0 on lab: vllm on pool mi325x",
        "  civo:", "    " + selector_false,
        "  down:", "    cluster is not ready",
        "  lab:", "    pool mi325x: 0 of 1 nodes free, engine vllm needs 1",
        "  tainted:", "    taint maintenance=on:NoSchedule is not tolerated"]
    # describe's verdict: the condition's line, then where each replica runs.
    assert verdict(request) == [scheduled(response)[2].removeprefix("ModelDeployment qwen: "),
                                "replica 0 on lab: vllm on pool mi325x"]


def test_another_deployments_replica_takes_its_node():
    theirs = replica_on("lab", owner="other")
    lab = cluster("lab", [("mi325x", "mi325x", 1)])
    response = compose_model_deployment(full_request(deployment(), [lab], [theirs]))
    assert response.desired == {}
    assert scheduled(response)[2] == ("ModelDeployment qwen: 0 of 1 replicas placed; 1 fit nowhere "
                                      "(lab: pool mi325x: 0 of 1 nodes free, engine vllm needs 1)")


@pytest.mark.parametrize("case", ["invalid-selector", "missing-class"])
def test_running_replicas_are_kept_as_they_are_when_the_function_cannot_decide(case):
    running = replica_on("lab")
    observed = {"replica-lab-0": running}
    composite, classes, reason = deployment(), CLASSES, "InvalidSelectors"
    if case == "invalid-selector":  # stored behind admission's back
        composite = deployment(selector="device.driver ==")
    else:
        classes, reason = [CLASSES[1]], "WaitingForClasses"
    response = compose_model_deployment(full_request(composite, [LAB], [running], observed, classes))
    kept = response.desired["replica-lab-0"]
    assert list(response.desired) == ["replica-lab-0"]
    assert (kept.resource["spec"], kept.resource["metadata"]["name"]) == (running["spec"], "qwen-lab-0")
    status, got, message = scheduled(response)
    assert (status, got) == ("False", reason)
    assert message.endswith("the running replicas are kept as they are")


def test_a_replica_on_a_deleted_cluster_is_replaced_elsewhere():
    moved = cluster("lab2", [("mi325x", "mi325x", 1)])
    observed = {"replica-lab-0": replica_on("lab")}
    response = compose_model_deployment(full_request(deployment(), [moved], observed.values(), observed))
    assert composed(response) == [("replica-lab2-0", "qwen-lab2-0", "lab2", ["mi325x"])]


def test_long_names_are_shortened_to_a_dns_label_deterministically():
    name = replica_name("a" * 60, "cluster-with-a-long-name", 3)
    assert len(name) == 63 and name == replica_name("a" * 60, "cluster-with-a-long-name", 3)
    assert name.startswith("a" * 54 + "-") and name != replica_name("a" * 60, "cluster-with-a-long-name", 4)
