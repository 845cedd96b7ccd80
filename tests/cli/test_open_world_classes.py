"""Issue 44 through the CLI, as a user would apply it: classes for hardware the drivers' tables lack (a B300-class
NVIDIA part, an MI355X-class AMD part, a class by memory alone) are admitted with a warning each, their clusters
come Ready, the simulation publishes what they state, and deployments selecting on those values serve there; and
Modelplane v0.3.1's scheduler fleets, whose classes state memory alone (141Gi, 200Gi), place as Modelplane places
them (functions/compose-model-deployment/tests/test_scheduling.py)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from test_kubectl_conventions import run

API = "inferplane.dev/v1alpha1"


def gpu_class(name: str, driver: str, attributes: dict | None = None, capacity: dict | None = None,
              synthetic: dict | None = None) -> dict:
    devices = [{"name": "gpu", "driver": driver, "deviceClassName": driver, "count": 1,
                "attributes": attributes or {}, "capacity": {k: {"value": v} for k, v in (capacity or {}).items()}}]
    if synthetic is not None:
        devices.append({"name": "syn", "claim": "Synthetic", "driver": driver,
                        "capacity": {k: {"value": v} for k, v in synthetic.items()}})
    return {"apiVersion": API, "kind": "InferenceClass", "metadata": {"name": name}, "spec": {"devices": devices}}


def existing_cluster(name: str, pools: dict[str, str], nodes: int = 2) -> dict:
    """An Existing cluster with `nodes` nodes per pool (pool name -> class name): a Leader and its Worker take two."""
    existing = {"kubernetesVersion": "1.35",
                "secretRef": {"name": f"{name}-kubeconfig", "namespace": "inferplane-system", "key": "kubeconfig"}}
    return {"apiVersion": API, "kind": "InferenceCluster", "metadata": {"name": name},
            "spec": {"cluster": {"source": "Existing", "existing": existing},
                     "nodePools": [{"name": pool, "className": klass, "nodeCount": nodes}
                                   for pool, klass in pools.items()]}}


def member(role: str, *selectors: str, nodes: int | None = None) -> dict:
    out = {"role": role, "nodeSelector": {"devices": [{"name": "gpu", "count": 1,
                                                       "selectors": [{"cel": s} for s in selectors]}]},
           "template": {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.10.1"}]}}}
    if nodes is not None:
        out["worker"] = {"nodes": nodes}
    return out


def deployment(name: str, *members: dict) -> dict:
    return {"apiVersion": API, "kind": "ModelDeployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "template": {"spec": {"engines": [{"name": "main", "members": list(members)}]}}}}


def write(folder: Path, *objects: dict) -> Path:
    folder.mkdir()
    (folder / "fleet.yaml").write_text(yaml.safe_dump_all(objects))
    return folder


def memory_at_least(driver: str, quantity: str) -> str:
    return f'device.capacity["{driver}"].memory.compareTo(quantity("{quantity}")) >= 0'


def placements(state: Path) -> dict[str, str]:
    """Each deployment's READY count and placements, from `inferplane fleet`."""
    out = {}
    lines = run("fleet", state=state).stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("NAMESPACE"))
    for line in lines[start + 1:]:
        if not line.strip():
            break
        fields = line.split()
        out[fields[1]] = f"{fields[4]} " + " ".join(fields[5:])
    return out


NEW_HARDWARE = (
    gpu_class("b300", "gpu.nvidia.com", {"productName": {"string": "NVIDIA B300 SXM6 AC"},
                                         "architecture": {"string": "Blackwell"}}, {"memory": "275Gi"}),
    gpu_class("mi355x", "gpu.amd.com", {"productName": {"string": "AMD_Instinct_MI355X_OAM"}}, {"memory": "288Gi"}),
    gpu_class("by-memory", "gpu.nvidia.com", capacity={"memory": "200Gi"}),
    existing_cluster("lab", {"b300": "b300", "mi355x": "mi355x", "big": "by-memory"}),
    deployment("on-b300", member("Standalone", 'device.attributes["gpu.nvidia.com"].productName == '
                                                 '"NVIDIA B300 SXM6 AC"')),
    deployment("on-mi355x", member("Standalone", 'device.attributes["gpu.amd.com"].productName == '
                                                   '"AMD_Instinct_MI355X_OAM"', memory_at_least("gpu.amd.com", "288Gi"))),
    deployment("on-200gi", member("Standalone", memory_at_least("gpu.nvidia.com", "200Gi"),
                                  memory_at_least("gpu.nvidia.com", "250Gi").replace(">=", "<"))),
)


def test_hardware_the_tables_lack_is_admitted_with_a_warning_each_and_serves(tmp_path):
    fleet = write(tmp_path / "fleet", *NEW_HARDWARE)
    state = tmp_path / "state"
    checked = run("validate", "-f", fleet)
    warned = [line for line in checked.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warned) == 3, checked.stderr
    assert any("InferenceClass/b300" in w and "no gpu.nvidia.com model with productName 'NVIDIA B300 SXM6 AC'" in w
               for w in warned)
    assert any("InferenceClass/mi355x" in w and "'AMD_Instinct_MI355X_OAM'" in w for w in warned)
    assert any("InferenceClass/by-memory" in w and "names no gpu.nvidia.com model" in w for w in warned)
    run("validate", "--strict", "-f", fleet, code=1)  # warnings count as errors there

    run("apply", "-f", fleet, state=state)
    assert "True" in run("get", "icluster", "lab", "--no-headers", state=state).stdout.split()
    assert placements(state) == {"on-200gi": "1 lab/big", "on-b300": "1 lab/b300", "on-mi355x": "1 lab/mi355x"}
    # The simulation publishes what each class states, in the driver's types, beside the driver's own identity.
    slices = json.loads(run("get", "resourceslices", "--cluster", "lab", "-o", "json", state=state).stdout)["items"]
    devices = {s["spec"]["nodeName"].split("-")[1]: s["spec"]["devices"][0] for s in slices
               if s["spec"]["nodeName"].endswith("-0")}
    assert devices["b300"]["attributes"]["productName"] == {"string": "NVIDIA B300 SXM6 AC"}
    assert devices["b300"]["attributes"]["type"] == {"string": "gpu"}
    assert devices["b300"]["attributes"]["uuid"]["string"].startswith("GPU-")
    assert devices["b300"]["capacity"] == {"memory": {"value": "275Gi"}}
    assert devices["mi355x"]["attributes"]["type"] == {"string": "amdgpu"}
    assert devices["big"]["capacity"] == {"memory": {"value": "200Gi"}}


def test_modelplanes_scheduler_fleets_by_memory_alone_place_as_modelplane_places_them(tmp_path):
    state = tmp_path / "state"
    classes = (gpu_class("h200", "gpu.nvidia.com", capacity={"memory": "141Gi"}),
               gpu_class("big", "gpu.nvidia.com", capacity={"memory": "256Gi"}),
               gpu_class("syn-200", "gpu.nvidia.com", capacity={"memory": "141Gi"}, synthetic={"memory": "200Gi"}))
    mem_141, mem_200 = memory_at_least("gpu.nvidia.com", "141Gi"), memory_at_least("gpu.nvidia.com", "200Gi")
    fleet = write(tmp_path / "fleet", *classes,
                  existing_cluster("cluster-a", {"gpu": "h200", "big": "big"}),
                  existing_cluster("cluster-b", {"syn": "syn-200", "big": "big"}),
                  # A Leader/Worker engine lands on the one pool that satisfies both members.
                  deployment("gang", member("Leader", mem_141), member("Worker", mem_200, nodes=1)))
    run("apply", "-f", fleet, state=state)
    assert placements(state) == {"gang": "1 cluster-a/big"}
    replica = json.loads(run("get", "modelreplica", "-o", "json", state=state).stdout)["items"][0]
    assert [m["nodePoolName"] for m in replica["spec"]["engines"][0]["members"]] == ["big", "big"]

    # A member claimable elsewhere is not stranded on a Synthetic match: on cluster-b's pool syn the worker's
    # selector matches only the Synthetic 200Gi device, and pool big has a real one.
    only_b = write(tmp_path / "only-b", *classes, existing_cluster("cluster-b", {"syn": "syn-200", "big": "big"}),
                   deployment("gang", member("Leader", mem_141), member("Worker", mem_200, nodes=1)))
    other = tmp_path / "other"
    run("apply", "-f", only_b, state=other)
    replica = json.loads(run("get", "modelreplica", "-o", "json", state=other).stdout)["items"][0]
    assert [m["nodePoolName"] for m in replica["spec"]["engines"][0]["members"]] == ["big", "big"]


EKS = Path(__file__).resolve().parents[2] / "recipes" / "qwen2.5-0.5b-nvidia-eks"


def test_the_machine_names_the_model_an_eks_g6_xlarge_class_naming_only_the_architecture_is_an_l4(tmp_path):
    klass = yaml.safe_load((EKS / "class.yaml").read_text())
    klass["spec"]["devices"][0]["attributes"] = {"architecture": {"string": "Ada Lovelace"}}
    klass["spec"]["devices"][0].pop("capacity")
    fleet = write(tmp_path / "fleet", klass, yaml.safe_load((EKS / "cluster.yaml").read_text()))
    state = tmp_path / "state"
    assert not [line for line in run("validate", "-f", fleet).stderr.splitlines() if line.startswith("Warning:")]
    run("apply", "-f", fleet, state=state)
    slices = json.loads(run("get", "resourceslices", "--cluster", "eks-l4", "-o", "json", state=state).stdout)["items"]
    gpus = [d for s in slices if s["spec"]["driver"] == "gpu.nvidia.com" for d in s["spec"]["devices"]]
    assert gpus and all(d["attributes"]["productName"] == {"string": "NVIDIA L4"} for d in gpus)
    assert all(d["capacity"] == {"memory": {"value": "23034Mi"}} for d in gpus)
    assert len(gpus) == len({s["spec"]["nodeName"] for s in slices if s["spec"]["driver"] == "gpu.nvidia.com"})

    # The machine first: a class that says it is an L40S (46068Mi) on a g6.xlarge is warned, and simulated as
    # the L4 the machine carries, so placement never puts a 40 GiB model there.
    klass["spec"]["devices"][0]["attributes"] = {"productName": {"string": "NVIDIA L40S"}}
    klass["spec"]["devices"][0]["capacity"] = {"memory": {"value": "46068Mi"}}
    wrong = write(tmp_path / "wrong", klass)
    warned = [line for line in run("validate", "-f", wrong).stderr.splitlines() if line.startswith("Warning:")]
    assert any("productName = 'NVIDIA L4' for NVIDIA L4 (the GPU of g6.xlarge), not 'NVIDIA L40S'" in w for w in warned)
    assert any("memory as 23034Mi for NVIDIA L4 (the GPU of g6.xlarge), not 46068Mi" in w for w in warned)


def test_the_seeds_amd_mistake_is_still_refused_and_a_capacity_above_a_confirmed_value_warns(tmp_path):
    amd = write(tmp_path / "amd", gpu_class("mi325x", "gpu.amd.com", {"productName": {"string": "AMD Instinct MI325X"}}))
    refused = run("validate", "-f", amd, code=1)
    assert "use AMD_Instinct_MI325X_OAM" in refused.stdout + refused.stderr
    over = write(tmp_path / "over", gpu_class("l4", "gpu.nvidia.com", {"productName": {"string": "NVIDIA L4"}},
                                              {"memory": "24Gi"}),
                 existing_cluster("lab", {"l4": "l4"}), deployment("fits", member("Standalone", memory_at_least(
                     "gpu.nvidia.com", "23034Mi"))))
    assert "reports gpu.nvidia.com/memory as 23034Mi for NVIDIA L4" in run("validate", "-f", over).stderr
    run("validate", "--strict", "-f", over, code=1)
    state = tmp_path / "state"
    run("apply", "-f", over, state=state)
    slices = json.loads(run("get", "resourceslices", "--cluster", "lab", "-o", "json", state=state).stdout)["items"]
    assert {d["capacity"]["memory"]["value"] for s in slices for d in s["spec"]["devices"]} == {"23034Mi"}
