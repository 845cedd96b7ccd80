"""CPU engines sharing a NUMA node end to end: the fleet places shares, the simulated cluster allocates them
as kube-scheduler does, every composed ResourceClaimTemplate is valid Kubernetes 1.36, and the replica
that does not fit says how much capacity is left."""

from __future__ import annotations

from pathlib import Path

from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

RECIPES = Path(__file__).resolve().parents[2] / "recipes"

FLEET = """
apiVersion: inferplane.dev/v1alpha1
kind: InferenceClass
metadata: {name: lab-epyc}
spec:
  devices:
    - {name: cpu, driver: dra.cpu, deviceClassName: dra.cpu, capacity: {cpu: {value: "%s"}}}
---
apiVersion: inferplane.dev/v1alpha1
kind: InferenceCluster
metadata: {name: lab}
spec:
  cluster:
    source: Existing
    existing: {kubernetesVersion: "1.36", secretRef: {name: lab-kubeconfig}}
  nodePools:
    - {name: epyc, className: lab-epyc, nodeCount: 3}
"""

DEPLOYMENT = """
---
apiVersion: inferplane.dev/v1alpha1
kind: ModelDeployment
metadata: {name: %s, namespace: default}
spec:
  replicas: %d
  template:
    spec:
      engines:
        - name: vllm
          members:
            - role: Standalone
              nodeSelector:
                devices:
                  - name: cpu
                    selectors: [{cel: 'device.driver == "dra.cpu"'}]
                    capacity: {requests: {dra.cpu/cpu: "4"}}
              template:
                spec:
                  containers:
                    - {name: engine, image: vllm-cpu:v0.10.2, args: ["--model", "Qwen/Qwen2.5-0.5B-Instruct"]}
"""


def run(tmp_path, cpus, deployments):
    (tmp_path / "fleet.yaml").write_text(FLEET % cpus + "".join(DEPLOYMENT % d for d in deployments))
    runtime = ControlPlane(None)
    assert runtime.apply([tmp_path]).admission.ok
    return runtime


def placed(runtime, name):
    deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "default", name))
    return deployment["status"]["replicas"], {c["type"]: c for c in deployment["status"]["conditions"]}


def test_three_nodes_of_32_cpus_serve_24_engines_of_4_and_refuse_the_next(tmp_path):
    runtime = run(tmp_path, 32, [("qwen-a", 8), ("qwen-b", 8), ("qwen-c", 8), ("qwen-d", 1)])
    for name in ("qwen-a", "qwen-b", "qwen-c"):
        assert placed(runtime, name)[0] == {"total": 8, "ready": 8}
    replicas, conditions = placed(runtime, "qwen-d")
    assert replicas["total"] == 0
    assert ("lab: pool epyc: a pod asking dra.cpu/cpu 4 of one dra.cpu device does not fit: dra.cpu/cpu 0 of 96 "
            "free over the pool (at most 0 on one device); 0 of 3 nodes unused") in str(conditions)
    objects = runtime.store.cluster_objects("lab")["lab"]
    claims = [o for o in objects if o["kind"] == "ResourceClaim"]
    assert len(claims) == 24
    consumed = {}
    for claim in claims:
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["consumedCapacity"] == {"dra.cpu/cpu": "4"} and len(result["shareID"]) == 36
        consumed[result["pool"]] = consumed.get(result["pool"], 0) + 4
    assert consumed == {"lab-epyc-0": 32, "lab-epyc-1": 32, "lab-epyc-2": 32}


def test_reserved_cpus_leave_room_for_fewer(tmp_path):
    # reservedCPUs 0-1 on a 32-CPU NUMA node: the driver publishes 30, seven shares of 4.
    runtime = run(tmp_path, 30, [("qwen-a", 8), ("qwen-b", 8), ("qwen-c", 8)])
    totals = [placed(runtime, name)[0]["total"] for name in ("qwen-a", "qwen-b", "qwen-c")]
    assert sorted(totals) == [5, 8, 8] and sum(totals) == 21


def composed_claim_templates(runtime):
    return [o["spec"]["forProvider"]["manifest"] for o in runtime.list("Object")
            if ((o.get("spec") or {}).get("forProvider") or {}).get("manifest", {}).get("kind") == "ResourceClaimTemplate"]


def test_every_composed_resource_claim_template_validates_against_kubernetes_1_36(tmp_path):
    from kubernetes_schemas import schema_errors

    runtime = run(tmp_path, 32, [("qwen-a", 3)])
    templates = composed_claim_templates(runtime)
    assert len(templates) == 3 and all(t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] ==
                                       {"requests": {"dra.cpu/cpu": "4"}} for t in templates)
    objects = runtime.store.cluster_objects("lab")["lab"]
    claims = [o for o in objects if o["kind"] == "ResourceClaim"]
    # The engine pods as they run, each requesting and limiting the 4 CPUs its share pins.
    pods = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("qwen-a-")]
    assert len(pods) == 3 and all(p["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "4"}, "limits": {"cpu": "4"}, "claims": [{"name": "cpu"}]} for p in pods)
    assert schema_errors(templates + claims + pods, "1.36") == []
    mixed = ControlPlane(None)
    assert mixed.apply([RECIPES / "mixed-fleet"]).admission.ok
    templates = composed_claim_templates(mixed)
    assert any("capacity" in t["spec"]["spec"]["devices"]["requests"][0]["exactly"] for t in templates)
    assert schema_errors(templates, "1.36") == []


CPU_REPLICA = """
apiVersion: inferplane.dev/v1alpha1
kind: ModelReplica
metadata: {name: qwen-cpu-0, namespace: default}
spec:
  clusterName: civo-cpu
  engines:
    - name: vllm
      copies: 3
      members:
        - role: Standalone
          nodePoolName: cpu
          deviceRequests:
            - name: cpu
              deviceClassName: dra.cpu
              selectors: [{cel: 'device.driver == "dra.cpu"'}]
              capacity: {requests: {dra.cpu/cpu: "4"}}
          template:
            spec:
              containers: [{name: engine, image: vllm-cpu:v0.10.2}]
"""


def pending_reasons(tmp_path, cpus):
    """A replica pinned by hand (past the fleet scheduler): four copies of 4 CPUs on the three nodes of the lab's
    pool, its class publishing `cpus` CPUs per node; the replica's Ready condition's message once simulated."""
    (tmp_path / "fleet.yaml").write_text(FLEET % cpus + "---\n" + CPU_REPLICA.replace("civo-cpu", "lab").replace(
        "copies: 3", "copies: 4").replace("nodePoolName: cpu", "nodePoolName: epyc"))
    runtime = ControlPlane(None)
    assert runtime.apply([tmp_path / "fleet.yaml"]).admission.ok
    pods = [o for o in runtime.store.cluster_objects("lab")["lab"]
            if o["kind"] == "Pod" and o["metadata"]["name"].startswith("qwen-cpu-0-")]
    assert sorted(p["status"]["phase"] for p in pods) == ["Pending", "Running", "Running", "Running"]
    replica = runtime.get(Key("inferplane.dev", "ModelReplica", "default", "qwen-cpu-0"))
    ready = next(c for c in replica["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    return ready["message"]


def test_a_share_that_fits_on_no_node_leaves_its_pod_pending_naming_what_is_left(tmp_path):
    # Nodes of 7 claimable CPUs (9 allocatable with the 2 reserved): after one copy, 3 CPUs of the device are left
    # and 4.9 of the node's allocatable cpu, so DRA allocation is what refuses the next copy.
    message = pending_reasons(tmp_path, 7)
    for node in ("lab-epyc-0", "lab-epyc-1", "lab-epyc-2"):
        assert (f"node {node}: claim cpu: request cpu: needs 1 dra.cpu device, 0 of the 1 that satisfy its "
                "selectors free (dra.cpu/cpu 4 asked; device cpudevnuma000: dra.cpu/cpu 3 of 7 free)") in message


def test_a_share_past_the_nodes_allocatable_cpu_is_refused_for_its_cpu_requests(tmp_path):
    # The engine requests the CPUs it claims (the CPU driver's rule), so on nodes of 6 claimable CPUs (8 allocatable)
    # a second copy of 4 does not fit the cpu one copy and the driver's agent left, and kube-scheduler's
    # NodeResourcesFit refuses the node before DRA allocation is tried, in its own words.
    message = pending_reasons(tmp_path, 6)
    for node in ("lab-epyc-0", "lab-epyc-1", "lab-epyc-2"):
        assert f"node {node}: Insufficient cpu" in message


def test_why_and_describe_show_each_shared_pools_capacity_and_why_a_share_did_not_fit(tmp_path):
    from click.testing import CliRunner

    from inferplane.cli.main import cli

    (tmp_path / "fleet.yaml").write_text(FLEET % 32 + DEPLOYMENT % ("qwen-a", 8) + DEPLOYMENT % ("qwen-b", 8)
                                         + DEPLOYMENT % ("qwen-c", 8) + DEPLOYMENT % ("qwen-d", 1))
    state = str(tmp_path / "state")
    assert CliRunner().invoke(cli, ["apply", "-f", str(tmp_path / "fleet.yaml"), "--state", state]).exit_code == 0
    why = CliRunner().invoke(cli, ["why", "md", "qwen-d", "--state", state]).output
    assert why.splitlines() == [
        "ModelDeployment qwen-d: 0 of 1 replicas placed, 1 fit nowhere",
        "  lab:",
        "    pool epyc: a pod asking dra.cpu/cpu 4 of one dra.cpu device does not fit: dra.cpu/cpu 0 of 96 free over "
        "the pool (at most 0 on one device); 0 of 3 nodes unused",
        "  shared devices:",
        "    lab: pool epyc: dra.cpu dra.cpu/cpu: 96 used, 0 free of 96 over 3 devices (3 with 0 free)"]
    described = CliRunner().invoke(cli, ["describe", "md", "qwen-a", "--state", state]).output
    assert "    lab: pool epyc: dra.cpu dra.cpu/cpu: 96 used, 0 free of 96 over 3 devices (3 with 0 free)" in described
