"""Every bundled recipe reconciles cleanly; in the mixed fleet, only the gate's cluster is refused."""

from pathlib import Path

import pytest

from inferplane.engine.control_plane import ControlPlane

RECIPES = sorted(p for p in (Path(__file__).resolve().parents[2] / "recipes").iterdir() if p.is_dir())


def cluster_ready(obj):
    return next(c for c in obj["status"]["conditions"] if c["type"] == "ClusterReady")


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_recipe_reconciles_cleanly(recipe, simulate_fleet):
    runtime = ControlPlane(None)
    result = runtime.apply([recipe])
    assert result.admission.ok and result.report.converged
    refused = {o["metadata"]["name"]: cluster_ready(o)["reason"] for o in runtime.list("InferenceCluster")
               if cluster_ready(o)["status"] != "True"}
    assert refused == ({"eks-amd": "UnsupportedDevices"} if recipe.name == "mixed-fleet" else {})
    # The simulated clusters place every workload where it belongs: the audit finds nothing.
    assert simulate_fleet(runtime.store) == {name: [] for name in
                                             (o["metadata"]["name"] for o in runtime.list("InferenceCluster"))
                                             if name not in refused}


def test_cpu_recipe_publishes_cpu_slices_on_its_pool_only():
    runtime = ControlPlane(None)
    runtime.apply([Path(__file__).resolve().parents[2] / "recipes" / "qwen2.5-0.5b-cpu"])
    objects = runtime.store.cluster_objects("civo-cpu")["civo-cpu"]
    slices = [o for o in objects if o["kind"] == "ResourceSlice"]
    assert sorted((s["spec"]["nodeName"], s["spec"]["driver"]) for s in slices) == [
        ("civo-cpu-cpu-0", "dra.cpu"), ("civo-cpu-cpu-1", "dra.cpu")]
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert all(p["status"]["phase"] == "Running" for p in pods)
    cpu_driver_nodes = {p["spec"]["nodeName"] for p in pods if p["metadata"]["name"].startswith("dra-driver-cpu")}
    assert cpu_driver_nodes == {"civo-cpu-cpu-0", "civo-cpu-cpu-1"}


@pytest.mark.parametrize("recipe, placed", [
    ("qwen2.5-0.5b-amd", [("qwen2-5-0-5b-amd-amd-lab-0", "amd-lab", "mi325x", "gpu.amd.com")]),
    ("qwen2.5-0.5b-gaudi", [("qwen2-5-0-5b-gaudi-gaudi-lab-0", "gaudi-lab", "gaudi2", "gaudi.intel.com")]),
    # Four replicas in shares of 3 of each node's 6 CPUs: two on each of the pool's two nodes.
    ("qwen2.5-0.5b-cpu", [(f"qwen2-5-0-5b-cpu-civo-cpu-{i}", "civo-cpu", "cpu", "dra.cpu") for i in range(4)]),
    ("qwen2.5-0.5b-nvidia-eks", [("qwen2-5-0-5b-l4-eks-l4-0", "eks-l4", "l4", "gpu.nvidia.com"),
                                 ("qwen2-5-0-5b-l4-eks-l4-1", "eks-l4", "l4", "gpu.nvidia.com")]),
])
def test_model_recipe_places_its_replicas_on_its_pool(recipe, placed):
    runtime = ControlPlane(None)
    runtime.apply([Path(__file__).resolve().parents[2] / "recipes" / recipe])
    replicas = [(r["metadata"]["name"], r["spec"]["clusterName"], member["nodePoolName"],
                 member["deviceRequests"][0]["deviceClassName"])
                for r in runtime.list("ModelReplica") for e in r["spec"]["engines"] for member in e["members"]]
    assert replicas == placed
    (deployment,) = runtime.list("ModelDeployment")
    assert deployment["status"]["replicas"]["total"] == len(placed)
    assert deployment["status"]["clusters"] == [placed[0][1]]


@pytest.mark.parametrize("recipe, cluster, engines", [
    ("qwen2.5-0.5b-amd", "amd-lab", [("qwen2-5-0-5b-amd-amd-lab-0", "amd-lab-mi325x-0", "Running", ["gpu.amd.com"])]),
    ("qwen2.5-0.5b-gaudi", "gaudi-lab", [
        ("qwen2-5-0-5b-gaudi-gaudi-lab-0", "gaudi-lab-gaudi2-0", "Running", ["gaudi.intel.com"])]),
    ("qwen2.5-0.5b-cpu", "civo-cpu", [(f"qwen2-5-0-5b-cpu-civo-cpu-{i}", f"civo-cpu-cpu-{i % 2}", "Running", ["dra.cpu"])
                                      for i in range(4)]),
    ("qwen2.5-0.5b-nvidia-eks", "eks-l4", [
        ("qwen2-5-0-5b-l4-eks-l4-0", "eks-l4-l4-0", "Running", ["gpu.nvidia.com"]),
        ("qwen2-5-0-5b-l4-eks-l4-1", "eks-l4-l4-1", "Running", ["gpu.nvidia.com"])]),
])
def test_model_recipe_engine_pods_run_with_devices_from_their_pools_driver(recipe, cluster, engines, simulate_fleet):
    runtime = ControlPlane(None)
    runtime.apply([Path(__file__).resolve().parents[2] / "recipes" / recipe])
    objects = runtime.store.cluster_objects(cluster)[cluster]
    claims = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceClaim"}
    pods = [o for o in objects if o["kind"] == "Pod" and "inferplane.dev/replica" in o["metadata"]["labels"]]
    assert sorted((p["metadata"]["labels"]["inferplane.dev/replica"], p["spec"]["nodeName"], p["status"]["phase"],
                   [result["driver"] for status in p["status"]["resourceClaimStatuses"]
                    for result in claims[status["resourceClaimName"]]["status"]["allocation"]["devices"]["results"]])
                  for p in pods) == engines
    (deployment,) = runtime.list("ModelDeployment")
    assert deployment["status"]["replicas"] == {"total": len(engines), "ready": len(engines)}
    # The placement audit covers the engine pods (on their replica's pool), and finds nothing.
    assert simulate_fleet(runtime.store)[cluster] == []
