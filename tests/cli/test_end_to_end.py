"""The inferplane command driven as a user would, against a state folder on disk."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
MIXED = REPO / "recipes" / "mixed-fleet"
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"


def inferplane(*args, state=None, check=True):
    env = {**os.environ}
    if state is not None:
        env["INFERPLANE_STATE"] = str(state)
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", *map(str, args)], capture_output=True,
                         text=True, env=env, cwd=REPO)
    assert "Traceback" not in run.stderr, run.stderr
    if check:
        assert run.returncode == 0, run.stderr
    return run


def test_apply_get_describe_gate_then_delete(tmp_path):
    state = tmp_path / "state"
    applied = inferplane("apply", "-f", EKS_RECIPE, state=state)
    assert "inferencecluster.inferplane.dev/eks-l4 created" in applied.stdout.splitlines()

    got = inferplane("get", "inferenceclusters", state=state).stdout.splitlines()
    assert got[0].split() == ["NAME", "SOURCE", "READY", "REASON", "AGE"]
    assert got[1].split()[:4] == ["eks-l4", "EKS", "True", "Available"]
    described = inferplane("describe", "icluster", "eks-l4", state=state).stdout
    assert "ClusterReady   True" in described and "serving-stack   ServingStack   eks-l4   True" in described
    assert "Placement:" not in described, "only a ModelDeployment is placed"
    releases_before = inferplane("get", "releases", "-A", "-o", "json", state=state).stdout
    node_groups_before = json.loads(inferplane("get", "nodegroups", "-A", "-o", "json", state=state).stdout)["items"]

    # The class now claims a driver EKS cannot serve: re-apply it.
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    # An AMD device, as AMD's driver publishes one (the NVIDIA attributes are not its).
    klass["spec"]["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com",
                                       attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, capacity={})
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    assert "inferenceclass.inferplane.dev/eks-l4 configured" in inferplane(
        "apply", "-f", tmp_path / "class.yaml", state=state).stdout
    got = inferplane("get", "icluster", "eks-l4", state=state).stdout.splitlines()
    assert got[1].split()[:4] == ["eks-l4", "EKS", "False", "UnsupportedDevices"]
    # The live cluster's resources are all still there, unchanged.
    assert inferplane("get", "releases", "-A", "-o", "json", state=state).stdout == releases_before
    node_groups = json.loads(inferplane("get", "nodegroups", "-A", "-o", "json", state=state).stdout)["items"]
    assert [g["spec"] for g in node_groups] == [g["spec"] for g in node_groups_before]
    trace = json.loads(inferplane("trace", "icluster", "eks-l4", "-o", "json", state=state).stdout)
    assert [c["kind"] for c in trace["children"]] == ["EKSCluster", "ServingStack"]

    # Held, it still serves the recipe's model: its replicas keep running, so a delete is refused
    # until they are drained.
    assert inferplane("get", "md", state=state).stdout.splitlines()[1].split()[1:3] == ["2", "2"]
    refused = inferplane("delete", "icluster", "eks-l4", state=state, check=False)
    assert refused.returncode == 1 and "runs replicas qwen2-5-0-5b-l4-eks-l4-0, qwen2-5-0-5b-l4-eks-l4-1" in refused.stderr
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["taints"] = [{"key": "drain", "effect": "NoExecute"}]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    inferplane("apply", "-f", tmp_path / "cluster.yaml", state=state)
    assert inferplane("get", "modelreplicas", "-A", state=state).stdout == ""
    assert inferplane("delete", "icluster", "eks-l4", state=state).stdout.strip() == \
        "inferencecluster.inferplane.dev/eks-l4 deleted"
    for kind in ("releases", "nodegroups", "servingstacks", "eksclusters"):
        assert inferplane("get", kind, "-A", state=state).stdout == ""
    assert inferplane("get", "iclass", state=state).stdout.splitlines()[1].split()[0] == "eks-l4"


def test_rejected_manifest_stores_nothing(tmp_path):
    state = tmp_path / "state"
    run = inferplane("apply", "-f", REPO / "tests/admission/bad/zero-count.yaml", state=state, check=False)
    assert run.returncode == 1
    assert "spec.devices[0].count: must be at least 1, got 0" in run.stderr
    assert inferplane("get", "iclass", state=state).stderr == "No resources found.\n"


def test_render_equals_apply_then_fleet_byte_for_byte(tmp_path):
    rendered = inferplane("render", MIXED).stdout
    assert inferplane("render", MIXED).stdout == rendered
    inferplane("apply", "-f", MIXED, state=tmp_path / "a")
    assert inferplane("fleet", state=tmp_path / "a").stdout == rendered
    inferplane("apply", "-f", MIXED, state=tmp_path / "b")
    assert inferplane("fleet", state=tmp_path / "b").stdout == rendered
    clusters, models, services = rendered.split("\n\n")
    rows = {line.split()[0]: line.split() for line in clusters.splitlines()[1:]}
    # What runs, then apart what is wanted: the refused cluster runs nothing and wants AMD GPUs.
    assert rows["eks-amd"][2:] == ["False", "UnsupportedDevices", "none", "<none>", "none", "gpu.amd.com"]
    assert rows["onprem-lab"][2:5] == ["True", "Existing", "dra.cpu,gpu.amd.com"]
    assert rows["onprem-lab"][-1] == "<none>"
    # The models table: the MI325X model on the lab, the NVIDIA one spread over two clusters' >= 20 GiB GPUs.
    assert [line.split() for line in models.splitlines()] == [
        ["NAMESPACE", "MODEL", "REPLICAS", "PLACED", "READY", "PLACEMENTS"],
        ["default", "llama-3-1-8b", "1", "1", "1", "onprem-lab/mi325x"],
        # Six CPU replicas in shares of 3 CPUs, two per cluster (spread first): gke-us-central's two share its
        # one CPU node.
        ["default", "qwen2-5-0-5b-cpu", "6", "6", "6", "civo-lon/cpu", "civo-lon/cpu", "gke-us-central/cpu",
         "gke-us-central/cpu", "onprem-lab/epyc", "onprem-lab/epyc"],
        ["default", "qwen2-5-7b", "2", "2", "2", "eks-us-east/a10g", "gke-us-central/l4"]]
    # Then each model's one address on the control plane gateway, over its ready replicas.
    assert [line.split() for line in services.splitlines()] == [
        ["SERVICE", "ADDRESS", "ENDPOINTS", "READY", "REASON"],
        ["default/llama", "http://172.18.255.200/default/llama", "1", "True", "Available"],
        ["default/qwen", "http://172.18.255.200/default/qwen", "2", "True", "Available"]]
    as_json = json.loads(inferplane("render", MIXED, "-o", "json").stdout)
    assert as_json == json.loads(inferplane("render", MIXED, "-o", "json").stdout)
    kinds = {o["kind"] for o in as_json}
    assert {"InferenceCluster", "InferenceClass", "ServingStack", "Release", "NodePool", "NodeGroup"} <= kinds


def test_state_folder_option_and_environment(tmp_path):
    inferplane("apply", "-f", EKS_RECIPE / "class.yaml", "--state", tmp_path / "opt")
    assert (tmp_path / "opt" / "store.db").exists()
    inferplane("apply", "-f", EKS_RECIPE / "class.yaml", state=tmp_path / "env")
    assert (tmp_path / "env" / "store.db").exists()


def test_sigkill_mid_apply_keeps_every_acknowledged_write(tmp_path):
    from inferplane.simulator.synthetic_fleet import write_fleet

    manifests = write_fleet(tmp_path / "fleet", 300)
    state = tmp_path / "state"
    process = subprocess.Popen([sys.executable, "-m", "inferplane.cli.main", "apply", "-f", str(manifests),
                                "--state", str(state)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    acknowledged = []
    deadline = time.monotonic() + 120
    while len(acknowledged) < 40 and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        acknowledged.append(line.split()[0])
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert len(acknowledged) >= 40, "apply finished or stalled before the kill"

    with sqlite3.connect(state / "store.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    stored = {f"{o['kind'].lower()}.{o['apiVersion'].split('/')[0]}/{o['metadata']['name']}"
              for kind in ("iclass", "icluster")
              for o in json.loads(inferplane("get", kind, "-o", "json", "--state", state).stdout)["items"]}
    assert set(acknowledged) <= stored
    # The store goes on working: applying again converges.
    inferplane("apply", "-f", manifests, "--state", state)


def test_a_file_that_is_not_a_state_gets_a_clear_error(tmp_path):
    (tmp_path / "store.db").write_text("not a database")
    run = inferplane("fleet", "--state", tmp_path, check=False)
    assert run.returncode == 1
    assert run.stderr.strip() == (f"Error: {tmp_path / 'store.db'} is not an inferplane state: it is not a SQLite "
                                  "database: if --state names the wrong folder, pass the right one; otherwise move "
                                  f"{tmp_path} aside and apply your manifests again to start a new state")


# `inferplane scale`: a ModelDeployment's scale subresource, admitted like any write.
SCALE_ERROR = ("error: scale modeldeployment.inferplane.dev/qwen2-5-0-5b-l4: ModelDeployment/qwen2-5-0-5b-l4: "
               "spec.replicas: ")


def replicas(state):
    return json.loads(inferplane("get", "md", "qwen2-5-0-5b-l4", "-o", "json", state=state).stdout)["spec"]["replicas"]


def placement_section(state) -> list[str]:
    described = inferplane("describe", "md", "qwen2-5-0-5b-l4", state=state).stdout.splitlines()
    start = described.index("Placement:")
    return described[start:described.index("Conditions:")]


def test_scale_sets_replicas_within_the_deployments_bounds(tmp_path):
    state = tmp_path / "state"
    inferplane("apply", "-f", EKS_RECIPE, state=state)
    assert replicas(state) == 2
    assert placement_section(state) == ["Placement:", "  2 of 2 replicas placed on eks-l4",
                                         "  replica 0 on eks-l4: vllm on pool l4", "  replica 1 on eks-l4: vllm on pool l4"]

    scaled = inferplane("scale", "md", "qwen2-5-0-5b-l4", "-n", "default", "--replicas", "5", state=state)
    assert scaled.stdout == "modeldeployment.inferplane.dev/qwen2-5-0-5b-l4 scaled\n"
    assert replicas(state) == 5
    # The L4 pool autoscales to 4 nodes: four replicas are placed, the fifth fits nowhere and the condition
    # says why. The cluster's autoscaler grows the pool from its 2 nodes to 4, so the 4 placed replicas run.
    assert inferplane("get", "md", state=state).stdout.splitlines()[1].split()[:4] == [
        "qwen2-5-0-5b-l4", "5", "4", "eks-l4"]
    nodes = inferplane("get", "nodes", "--cluster", "eks-l4", state=state).stdout.splitlines()
    assert [line.split()[:3] for line in nodes[1:] if line.split()[2] == "l4"] == [
        [f"eks-l4-l4-{i}", "Ready", "l4"] for i in range(4)]
    status = json.loads(inferplane("get", "md", "qwen2-5-0-5b-l4", "-o", "json", state=state).stdout)["status"]
    scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == (
        "False", "Unschedulable", "ModelDeployment qwen2-5-0-5b-l4: 4 of 5 replicas placed on eks-l4; 1 fit nowhere "
        "(eks-l4: pool l4: 0 of 4 nodes free, engine vllm needs 1)")
    why = inferplane("why", "md", "qwen2-5-0-5b-l4", "-n", "default", state=state)
    assert why.stdout == (
        "ModelDeployment qwen2-5-0-5b-l4: 4 of 5 replicas placed, 1 fit nowhere\n"
        + "".join(f"  replica {i} on eks-l4: vllm on pool l4\n" for i in range(4))
        + "  eks-l4:\n    pool l4: 0 of 4 nodes free, engine vllm needs 1\n")
    # describe's verdict: the condition's line, then where each replica runs.
    assert placement_section(state) == [
        "Placement:", "  4 of 5 replicas placed on eks-l4; 1 fit nowhere (eks-l4: pool l4: 0 of 4 nodes free, engine "
        "vllm needs 1)", *(f"  replica {i} on eks-l4: vllm on pool l4" for i in range(4))]
    refused = inferplane("why", "icluster", "eks-l4", state=state, check=False)
    assert (refused.returncode, refused.stderr) == (
        1, "Error: InferenceCluster has no placement to explain: name a ModelDeployment (md)\n")
    # The former `explain KIND NAME` still answers, as `why` does, and says where it moved.
    old = inferplane("explain", "md", "qwen2-5-0-5b-l4", "-n", "default", state=state)
    assert (old.stdout, old.stderr) == (why.stdout, (
        "Warning: `inferplane explain md NAME` is deprecated: its placement explanation is now `inferplane why md "
        "qwen2-5-0-5b-l4 -n default`; `explain` documents fields, as kubectl's does\n"))

    for count, message in ((11, "must be at most 10, got 11: set it to 10 or less"),
                           (0, "must be at least 1, got 0: set it to 1 or more")):
        refused = inferplane("scale", "md", "qwen2-5-0-5b-l4", "--replicas", count, state=state, check=False)
        assert (refused.returncode, refused.stderr) == (1, SCALE_ERROR + message + "\n")
    assert replicas(state) == 5, "a refused scale changes nothing"


def test_scale_refuses_a_kind_without_the_subresource(tmp_path):
    state = tmp_path / "state"
    inferplane("apply", "-f", EKS_RECIPE, state=state)
    refused = inferplane("scale", "icluster", "eks-l4", "--replicas", "2", state=state, check=False)
    assert (refused.returncode, refused.stderr) == (
        1, "Error: InferenceCluster has no scale subresource: edit its manifest and apply it\n")


def test_an_engine_pod_and_its_allocated_claim_are_read_from_the_simulated_cluster(tmp_path):
    state = tmp_path / "state"
    amd = REPO / "recipes" / "qwen2.5-0.5b-amd"
    inferplane("apply", "-f", amd / "class.yaml", "-f", amd / "cluster.yaml", "-f",
               REPO / "tests" / "engine" / "replicas" / "amd-replica.yaml", state=state)
    claims = inferplane("get", "resourceclaims", "--cluster", "amd-lab", state=state).stdout.splitlines()
    assert claims[0].split() == ["NAME", "ALLOCATED", "AGE"]
    assert [line.split()[1] for line in claims[1:]] == ["gpu.amd.com/gpu-1-128"]
    described = inferplane("describe", "mr", "qwen-amd-0", state=state).stdout
    assert "EnginesRunning   True     Running" in described
