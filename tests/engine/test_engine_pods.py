"""The simulated cluster runs the ModelReplicas pinned to it: engine pods placed by the scheduling
predicates and DRA allocation, their claims allocated from the right driver's slices, and the
replica Ready only when every pod runs (otherwise its condition names the pod, the node and why)."""

import copy
from pathlib import Path

import pytest
import yaml

from inferplane.engine.control_plane import ControlPlane
from inferplane.simulator.simulation import ClusterSimulation
from inferplane.simulator.simulation_inputs import EngineObject, Pool
from inferplane.simulator.audits import audit
from inferplane.runtime.store import Key
from kubernetes_schemas import schema_errors

REPO = Path(__file__).resolve().parents[2]
# The recipes' class and cluster only: these tests pin replicas by hand, beside no deployment.
AMD_RECIPE = [REPO / "recipes" / "qwen2.5-0.5b-amd" / f for f in ("class.yaml", "cluster.yaml")]
CPU_RECIPE = [REPO / "recipes" / "qwen2.5-0.5b-cpu" / f for f in ("class.yaml", "cluster.yaml")]
REPLICA = yaml.safe_load((Path(__file__).parent / "replicas" / "amd-replica.yaml").read_text())
MI325X = 'device.attributes["gpu.amd.com"].productName == "AMD_Instinct_MI325X_OAM"'


def amd_replica(count=1, copies=1, selector=MI325X, name="qwen-amd-0"):
    replica = copy.deepcopy(REPLICA)
    replica["metadata"]["name"] = name
    engine = replica["spec"]["engines"][0]
    engine["copies"] = copies
    request = engine["members"][0]["deviceRequests"][0]
    request["count"] = count
    request["selectors"][1]["cel"] = selector
    return replica


def run(tmp_path, *replicas, recipe=AMD_RECIPE):
    files = []
    for index, replica in enumerate(replicas):
        files.append(tmp_path / f"replica-{index}.yaml")
        files[-1].write_text(yaml.safe_dump(replica))
    runtime = ControlPlane(None)
    result = runtime.apply([*recipe, *files])
    assert result.admission.ok and result.report.converged
    return runtime


def condition(runtime, name, type_="Ready"):
    replica = runtime.get(Key("inferplane.dev", "ModelReplica", "default", name))
    return next(c for c in replica["status"]["conditions"] if c["type"] == type_)


def engine_objects(runtime, cluster="amd-lab"):
    return [o for o in runtime.store.cluster_objects(cluster)[cluster] if o["metadata"].get("namespace") == "default"]


def test_the_amd_engine_runs_on_the_mi325x_pool_with_an_amd_gpu_allocated(tmp_path, simulate_fleet):
    runtime = run(tmp_path, amd_replica())
    objects = engine_objects(runtime)
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert [(p["spec"]["nodeName"], p["status"]["phase"]) for p in pods] == [("amd-lab-mi325x-0", "Running")]
    (claim,) = [o for o in objects if o["kind"] == "ResourceClaim"]
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.amd.com", "pool": "amd-lab-mi325x-0", "device": "gpu-1-128"}]
    assert pods[0]["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    assert (condition(runtime, "qwen-amd-0")["status"], condition(runtime, "qwen-amd-0", "EnginesRunning")["reason"]) \
        == ("True", "Running")
    assert simulate_fleet(runtime.store) == {"amd-lab": []}
    assert schema_errors(objects, "1.36") == []


def test_no_device_satisfying_a_selector_keeps_the_replica_not_ready_naming_pod_node_and_selector(
        tmp_path, simulate_fleet):
    runtime = run(tmp_path, amd_replica(selector='device.attributes["gpu.amd.com"].productName == "AMD_Instinct_MI300X_OAM"'))
    ready = condition(runtime, "qwen-amd-0")
    (pod,) = [o for o in engine_objects(runtime) if o["kind"] == "Pod"]
    assert (ready["status"], ready["reason"]) == ("False", "Unschedulable")
    assert (f"pod default/{pod['metadata']['name']} is Pending: node amd-lab-mi325x-0: claim gpu: request gpu: "
            "no gpu.amd.com device satisfies its selectors (selector 'device.attributes[\"gpu.amd.com\"].productName "
            "== \"AMD_Instinct_MI300X_OAM\"' is false for device gpu-1-128)") in ready["message"]
    assert "node amd-lab-system-0: node(s) had untolerated taint" not in ready["message"]
    # The toleration audit reports the Pending engine pod on the cluster: every node's predicates admit
    # it except the System node's, so DRA allocation is what kept it off its pool.
    findings = simulate_fleet(runtime.store)["amd-lab"]
    assert [(f["audit"], f["reason"], f["pod"]) for f in findings] == [
        ("toleration", "EnginePending", f"default/{pod['metadata']['name']}")]
    assert findings[0]["message"].endswith(
        "(resources or DRA allocation kept it off amd-lab-mi325x-0; NodeSelector kept it off amd-lab-system-0, "
        "amd-lab-system-1)")


def test_more_devices_than_the_node_has_are_not_enough_devices(tmp_path):
    ready = condition(run(tmp_path, amd_replica(count=2)), "qwen-amd-0")
    assert ready["status"] == "False"
    assert "node amd-lab-mi325x-0: claim gpu: request gpu: needs 2 gpu.amd.com devices, 1 of the 1 that satisfy " \
           "its selectors free" in ready["message"]


def test_devices_are_allocated_once_a_second_copy_finds_none_free(tmp_path):
    runtime = run(tmp_path, amd_replica(copies=2))
    pods = [o for o in engine_objects(runtime) if o["kind"] == "Pod"]
    assert sorted(p["status"]["phase"] for p in pods) == ["Pending", "Running"]
    assert "needs 1 gpu.amd.com device, 0 of the 1 that satisfy its selectors free" in \
        condition(runtime, "qwen-amd-0")["message"]


def test_two_replicas_on_one_gpu_the_second_waits_and_runs_once_the_first_is_deleted(tmp_path):
    runtime = run(tmp_path, amd_replica(name="a"), amd_replica(name="b"))
    assert (condition(runtime, "a")["status"], condition(runtime, "b")["status"]) == ("True", "False")
    assert runtime.delete(Key("inferplane.dev", "ModelReplica", "default", "a"))[0]
    assert condition(runtime, "b")["status"] == "True"
    running = [p["metadata"]["name"] for p in engine_objects(runtime) if p["kind"] == "Pod"]
    assert len(running) == 1 and running[0].startswith("b-vllm-")


def test_a_cpu_gang_runs_leader_and_workers_on_the_cpu_pool(tmp_path, simulate_fleet):
    replica = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelReplica",
               "metadata": {"name": "gang", "namespace": "default"},
               "spec": {"clusterName": "civo-cpu", "engines": [{"name": "vllm", "members": [
                   {"role": "Leader", "nodePoolName": "cpu",
                    "template": {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.10.1"}]}}},
                   {"role": "Worker", "nodePoolName": "cpu", "worker": {"nodes": 1},
                    "deviceRequests": [{"name": "cpu", "deviceClassName": "dra.cpu", "count": 1,
                                        "selectors": [{"cel": 'device.driver == "dra.cpu"'}]}],
                    "template": {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.10.1"}]}}},
               ]}]}}
    runtime = run(tmp_path, replica, recipe=CPU_RECIPE)
    pods = {p["metadata"]["name"]: p for p in engine_objects(runtime, "civo-cpu") if p["kind"] == "Pod"}
    assert sorted(pods) == ["gang-vllm-0", "gang-vllm-0-1"]
    assert all(p["status"]["phase"] == "Running" and p["spec"]["nodeName"].startswith("civo-cpu-cpu-")
               for p in pods.values())
    (claim,) = [o for o in engine_objects(runtime, "civo-cpu") if o["kind"] == "ResourceClaim"]
    assert [r["driver"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["dra.cpu"]
    assert condition(runtime, "gang")["status"] == "True"
    # The leader claims nothing but is an engine pod: on its pool, not a controller outside the System pool.
    assert simulate_fleet(runtime.store) == {"civo-cpu": []}


# ---- the simulation alone: what the composer never writes


AMD_POOL = Pool.from_wire({"name": "mi325x", "role": "GPU", "nodeCount": 1,
                           "labels": {"inferplane.dev/pool": "mi325x"},
                           "taints": [{"key": "amd.com/gpu", "value": "true", "effect": "NoSchedule"}]},
                          [{"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com", "count": 1,
                            "attributes": {"productName": {"string": "AMD_Instinct_MI325X_OAM"}}}])


def test_an_engine_pod_without_the_pools_toleration_is_refused_by_the_taint():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bare", "namespace": "default"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": {
                      "metadata": {"labels": {"a": "b"}},
                      "spec": {"nodeSelector": {"inferplane.dev/pool": "mi325x"},
                               "containers": [{"name": "engine", "image": "x"}]}}}}
    simulation = ClusterSimulation("c1", [AMD_POOL], {}, engines=[EngineObject("team-a", "bare-object", deployment)])
    objects = simulation.simulate()
    readiness = simulation.readiness["team-a/bare-object"]
    assert not readiness.ready
    assert readiness.message.endswith("is Pending: node c1-mi325x-0: node(s) had untolerated taint {amd.com/gpu: true}")
    assert [f.reason for f in audit(objects)] == ["PodPending"]
