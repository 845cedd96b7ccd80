"""Every bundled recipe reconciles cleanly; in the mixed fleet, only the gate's cluster is refused."""

from pathlib import Path

import pytest

from inferplane.engine.fleet import simulate_fleet
from inferplane.engine.runtime import Runtime

RECIPES = sorted(p for p in (Path(__file__).resolve().parents[2] / "recipes").iterdir() if p.is_dir())


def cluster_ready(obj):
    return next(c for c in obj["status"]["conditions"] if c["type"] == "ClusterReady")


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_recipe_reconciles_cleanly(recipe):
    runtime = Runtime(None)
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
    runtime = Runtime(None)
    runtime.apply([Path(__file__).resolve().parents[2] / "recipes" / "qwen2.5-0.5b-cpu"])
    objects = runtime.store.cluster_objects("civo-cpu")["civo-cpu"]
    slices = [o for o in objects if o["kind"] == "ResourceSlice"]
    assert sorted((s["spec"]["nodeName"], s["spec"]["driver"]) for s in slices) == [
        ("civo-cpu-cpu-0", "dra.cpu"), ("civo-cpu-cpu-1", "dra.cpu")]
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert all(p["status"]["phase"] == "Running" for p in pods)
    cpu_driver_nodes = {p["spec"]["nodeName"] for p in pods if p["metadata"]["name"].startswith("dra-driver-cpu")}
    assert cpu_driver_nodes == {"civo-cpu-cpu-0", "civo-cpu-cpu-1"}
