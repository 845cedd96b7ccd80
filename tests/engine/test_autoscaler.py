"""The simulated cluster's autoscaler: engine pods Pending only for lack of nodes grow their pool,
never past its maximum; a pool without autoscaling never grows."""

import copy
from pathlib import Path

import yaml

from inferplane.engine.control_plane import ControlPlane
from inferplane.simulator.simulation import ClusterSimulation
from inferplane.simulator.simulation_inputs import EngineObject, Pool
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
EKS = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"
MODEL = yaml.safe_load((EKS / "model.yaml").read_text())
L4_SELECTOR = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'


def cluster(pool: dict, source="EKS") -> dict:
    block = {"eks": {"region": "us-east-2", "kubernetesVersion": "1.34"}} if source == "EKS" else {
        "existing": {"secretRef": {"name": "lab-kubeconfig", "namespace": "inferplane-system", "key": "kubeconfig"},
                     "kubernetesVersion": "1.34"}}
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "gpus"},
            "spec": {"cluster": {"source": source, **block}, "nodePools": [{"name": "l4", "className": "eks-l4", **pool}]}}


def replica(copies: int) -> dict:
    """A ModelReplica pinned by hand (as the ModelDeployment would compose it): `copies` engine pods,
    each claiming the one L4 a node has."""
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelReplica",
            "metadata": {"name": "qwen-0", "namespace": "default"},
            "spec": {"clusterName": "gpus", "engines": [{"name": "vllm", "copies": copies, "members": [{
                "role": "Standalone", "nodePoolName": "l4",
                "deviceRequests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1,
                                    "selectors": [{"cel": L4_SELECTOR}]}],
                "template": {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.10.2"}]}}}]}]}}


def deployment(replicas: int) -> dict:
    out = copy.deepcopy(MODEL)
    out["spec"]["replicas"] = replicas
    return out


def run(tmp_path, *documents) -> ControlPlane:
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all(documents))
    runtime = ControlPlane(None)
    result = runtime.apply([EKS / "class.yaml", tmp_path / "objects.yaml"])
    assert result.admission.ok and result.report.converged
    return runtime


def objects(runtime, kind):
    return [o for o in runtime.store.cluster_objects("gpus")["gpus"] if o["kind"] == kind]


def pods(runtime):
    """(node, phase) of every engine pod."""
    return sorted(((p["spec"].get("nodeName"), p["status"]["phase"]) for p in objects(runtime, "Pod")
                   if p["metadata"]["namespace"] == "default" and "engine" in str(p["spec"]["containers"])),
                  key=lambda pair: (pair[0] or "", pair[1]))


def l4_nodes(runtime):
    return [n["metadata"]["name"] for n in objects(runtime, "Node") if "-l4-" in n["metadata"]["name"]]


def condition(runtime, kind, name, type_):
    obj = runtime.get(Key("inferplane.dev", kind, "default", name))
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def test_a_deployment_needing_three_nodes_grows_the_pool_from_one_to_its_maximum_of_three(tmp_path):
    runtime = run(tmp_path, cluster({"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3}), deployment(3))
    assert l4_nodes(runtime) == ["gpus-l4-0", "gpus-l4-1", "gpus-l4-2"]
    assert pods(runtime) == [("gpus-l4-0", "Running"), ("gpus-l4-1", "Running"), ("gpus-l4-2", "Running")]
    # Each new node runs the NVIDIA plugin and publishes its L4, which the claims were allocated from.
    slices = sorted(s["spec"]["nodeName"] for s in objects(runtime, "ResourceSlice")
                    if s["spec"]["driver"] == "gpu.nvidia.com")
    assert slices == ["gpus-l4-0", "gpus-l4-1", "gpus-l4-2"]
    allocated = sorted(c["status"]["allocation"]["devices"]["results"][0]["pool"]
                       for c in objects(runtime, "ResourceClaim"))
    assert allocated == ["gpus-l4-0", "gpus-l4-1", "gpus-l4-2"]
    status = runtime.get(Key("inferplane.dev", "ModelDeployment", "default", "qwen2-5-0-5b-l4"))["status"]
    assert status["replicas"] == {"total": 3, "ready": 3}
    # The new nodes carry the pool's labels and taint, as its first one does.
    first, *added = [n for n in objects(runtime, "Node") if "-l4-" in n["metadata"]["name"]]
    for node in added:
        assert node["spec"] == first["spec"]
        assert {k: v for k, v in node["metadata"]["labels"].items() if k != "kubernetes.io/hostname"} == \
            {k: v for k, v in first["metadata"]["labels"].items() if k != "kubernetes.io/hostname"}


def test_a_replica_needing_four_nodes_of_a_pool_of_at_most_three_leaves_one_pod_pending_naming_the_maximum(tmp_path):
    runtime = run(tmp_path, cluster({"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3}), replica(copies=4))
    assert l4_nodes(runtime) == ["gpus-l4-0", "gpus-l4-1", "gpus-l4-2"]
    assert pods(runtime) == [(None, "Pending"), ("gpus-l4-0", "Running"), ("gpus-l4-1", "Running"),
                             ("gpus-l4-2", "Running")]
    (pending,) = [p for p in objects(runtime, "Pod") if p["status"]["phase"] == "Pending"]
    assert pending["status"]["conditions"][0]["message"].endswith(
        " pod didn't trigger scale-up: pool l4 is at its maximum (3 of 3 nodes).")
    ready = condition(runtime, "ModelReplica", "qwen-0", "Ready")
    assert ready["status"] == "False"
    assert (f"pod default/{pending['metadata']['name']} is Pending: pool l4 is at its maximum (3 of 3 nodes); "
            "node gpus-l4-0: claim gpu: request gpu: needs 1 gpu.nvidia.com device, 0 of the 1 that satisfy its selectors free"
            ) in ready["message"]


def test_a_pool_of_fixed_size_never_grows(tmp_path):
    runtime = run(tmp_path, cluster({"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 1}), replica(copies=2))
    assert l4_nodes(runtime) == ["gpus-l4-0"]
    assert pods(runtime) == [(None, "Pending"), ("gpus-l4-0", "Running")]
    (pending,) = [p for p in objects(runtime, "Pod") if p["status"]["phase"] == "Pending"]
    assert "scale-up" not in pending["status"]["conditions"][0]["message"]
    assert "maximum" not in condition(runtime, "ModelReplica", "qwen-0", "Ready")["message"]


def test_an_existing_clusters_pool_is_not_grown_by_inferplane(tmp_path):
    runtime = run(tmp_path, cluster({"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3}, "Existing"),
                  replica(copies=2))
    assert l4_nodes(runtime) == ["gpus-l4-0"]
    assert pods(runtime) == [(None, "Pending"), ("gpus-l4-0", "Running")]


def test_an_eks_pool_without_bounds_autoscales_up_to_eight():
    """No bounds on EKS: 0..8, as Modelplane. Ten single-GPU pods get eight nodes, two stay Pending."""
    devices = yaml.safe_load((EKS / "class.yaml").read_text())["spec"]["devices"]
    pool = Pool.from_wire({"name": "l4", "role": "GPU", "nodeCount": 0, "maxNodeCount": 8,
                           "labels": {"inferplane.dev/pool": "l4"}}, devices)
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cpu-only", "namespace": "default"},
                "spec": {"replicas": 10, "template": {"spec": {
                    "nodeSelector": {"inferplane.dev/pool": "l4"},
                    "containers": [{"name": "engine", "image": "busybox", "resources": {"requests": {"cpu": "6"}}}]}}}}
    simulation = ClusterSimulation("c1", [pool], {}, engines=[EngineObject("default", "cpu-only", manifest)])
    first = simulation.simulate()
    nodes = [o["metadata"]["name"] for o in first if o["kind"] == "Node"]
    assert nodes == [f"c1-l4-{i}" for i in range(8)]
    phases = [p["status"]["phase"] for p in first if p["kind"] == "Pod"]
    assert (phases.count("Running"), phases.count("Pending")) == (8, 2)
    assert "pool l4 is at its maximum (8 of 8 nodes)" in simulation.readiness["default/cpu-only"].message
    # The same inputs give the same nodes, names and placements.
    again = ClusterSimulation("c1", [pool], {}, engines=[EngineObject("default", "cpu-only", manifest)]).simulate()
    assert again == first


def test_pods_that_share_a_node_grow_the_pool_by_the_nodes_they_need_not_one_per_pod():
    pool = Pool.from_wire({"name": "cpu", "role": "CPU", "nodeCount": 1, "maxNodeCount": 5,
                           "labels": {"inferplane.dev/pool": "cpu"}})
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "small", "namespace": "default"},
                "spec": {"replicas": 8, "template": {"spec": {
                    "nodeSelector": {"inferplane.dev/pool": "cpu"},
                    "containers": [{"name": "engine", "image": "busybox", "resources": {"requests": {"cpu": "3"}}}]}}}}
    simulation = ClusterSimulation("c1", [pool], {}, engines=[EngineObject("default", "small", manifest)])
    out = simulation.simulate()
    # 8 CPUs a node: two pods of 3 CPUs each, so eight pods need four nodes.
    assert [o["metadata"]["name"] for o in out if o["kind"] == "Node"] == [f"c1-cpu-{i}" for i in range(4)]
    assert simulation.readiness["default/small"].message == "8 of 8 pods running"


def test_nodes_that_take_none_of_the_pending_pods_stop_the_autoscaler_however_high_the_maximum(tmp_path, monkeypatch):
    """An estimate that a new node takes a pod the scheduler then leaves Pending again (here forced:
    every new node 'takes' every pod, yet the pods claim a GPU model no node has) adds one round of
    nodes and stops; before, each round added nodes again until the pool's maximum, a million here."""
    from inferplane.simulator import simulation_autoscaler

    monkeypatch.setattr(simulation_autoscaler, "_take", lambda pending, info, allocator: True)
    unmatched = replica(2)
    unmatched["spec"]["engines"][0]["members"][0]["deviceRequests"][0]["selectors"] = [
        {"cel": 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H200"'}]
    runtime = run(tmp_path, cluster({"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 1000000}), unmatched)
    assert l4_nodes(runtime) == ["gpus-l4-0", "gpus-l4-1"]
    assert pods(runtime) == [(None, "Pending"), (None, "Pending")]


def schedulable_pool(runtime):
    (pool,) = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "gpus"))["status"]["schedulablePools"]
    return pool


def test_the_scheduler_counts_an_autoscaled_pools_maximum_only_where_the_cloud_grows_it(tmp_path):
    """The status publishes the maximum the scheduler counts: on EKS three replicas are placed on a
    pool of one node that may grow to three (and the simulated autoscaler grows it); on an existing
    cluster, whose nodes nothing of inferplane's grows, one is placed and two fit nowhere, rather than
    three placed and two Pending forever."""
    bounds = {"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3}
    eks = run(tmp_path, cluster(bounds), deployment(3))
    assert (schedulable_pool(eks)["nodeCount"], schedulable_pool(eks)["maxNodeCount"]) == (1, 3)
    assert eks.get(Key("inferplane.dev", "ModelDeployment", "default", "qwen2-5-0-5b-l4"))["status"]["replicas"] == {
        "total": 3, "ready": 3}

    existing = run(tmp_path, cluster(bounds, "Existing"), deployment(3))
    assert "maxNodeCount" not in schedulable_pool(existing)
    scheduled = condition(existing, "ModelDeployment", "qwen2-5-0-5b-l4", "Scheduled")
    assert scheduled["message"] == ("ModelDeployment qwen2-5-0-5b-l4: 1 of 3 replicas placed on gpus; 2 fit nowhere "
                                    "(gpus: pool l4: 0 of 1 nodes free, engine vllm needs 1)")
    assert pods(existing) == [("gpus-l4-0", "Running")]
