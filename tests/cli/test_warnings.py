"""Silence where kubectl users expect events (issue 26, item 4): a deployment that cannot be placed and
a cache that cannot stage say so with Warning events, as kube-scheduler's FailedScheduling does, and
`describe` shows the spec it judged."""

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"


def run(*args, state=None, code=0):
    argv = [str(a) for a in args] + (["--state", str(state)] if state is not None else [])
    result = CliRunner().invoke(cli, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def test_an_unschedulable_deployment_gets_a_warning_event_and_describe_shows_its_spec(tmp_path):
    model = yaml.safe_load((EKS_RECIPE / "model.yaml").read_text())
    model["metadata"]["name"] = "too-big"
    devices = model["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"]
    devices[0]["selectors"] = [{"cel": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("900Gi")) >= 0'}]
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE / "class.yaml", "-f", EKS_RECIPE / "cluster.yaml", "-f", tmp_path / "model.yaml",
        state=state)

    events = run("get", "events", "--for", "md/too-big", state=state).stdout.splitlines()
    warnings = [line for line in events[1:] if line.split()[1:3] == ["Warning", "Unschedulable"]]
    assert len(warnings) == 1 and "ModelDeployment too-big: 0 of 2 replicas placed; 2 fit nowhere" in warnings[0]

    described = run("describe", "md", "too-big", state=state).stdout
    assert "Spec:\n  replicas: 2\n" in described
    assert 'quantity("900Gi")' in described  # the selector judged, on one line
    assert described.split("Events:")[1].split()[:2] == ["TYPE", "REASON"]
    assert "Warning   Unschedulable" in described.split("Events:")[1]


def test_a_placed_deployment_has_no_warning(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE, state=state)
    events = run("get", "events", "--for", f"md/{yaml.safe_load((EKS_RECIPE / 'model.yaml').read_text())['metadata']['name']}",
                 state=state).stdout
    assert "Warning" not in events


def test_a_cache_that_stages_nowhere_gets_a_warning_event(tmp_path):
    cache = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelCache",
             "metadata": {"name": "qwen", "namespace": "default"},
             "spec": {"source": "HuggingFace", "huggingFace": {"repo": "Qwen/Qwen2.5-0.5B-Instruct", "sizeGiB": 2},
                      "clusterSelector": {"matchLabels": {"tier": "frontier"}}}}
    (tmp_path / "cache.yaml").write_text(yaml.safe_dump(cache))
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE / "class.yaml", "-f", EKS_RECIPE / "cluster.yaml", "-f", tmp_path / "cache.yaml",
        state=state)
    events = run("get", "events", "--for", "modelcache/qwen", state=state).stdout.splitlines()
    assert [line.split()[1:3] for line in events[1:]] == [["Warning", "NoClusters"]]
    assert "no InferenceCluster is selected by its clusterSelector" in events[1]


# ---- validate warns of what apply would hold (issue 26, item 2)

MIXED = REPO / "recipes" / "mixed-fleet"


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_a_pool_whose_class_does_not_exist_is_a_warning_with_the_nearest_name(tmp_path):
    classes = [c for c in documents(MIXED / "classes.yaml") if c["metadata"]["name"] == "civo-cpu"]
    cluster = next(c for c in documents(MIXED / "clusters.yaml") if c["metadata"]["name"] == "civo-lon")
    cluster["spec"]["nodePools"][0]["className"] = "civo-cpu-medum"
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(classes + [cluster]))
    result = run("validate", "-f", tmp_path / "fleet.yaml", "--state", tmp_path / "none")
    assert ("Warning: " + str(tmp_path / "fleet.yaml") + "#1: InferenceCluster/civo-lon: spec.nodePools[0].className: "
            "no InferenceClass civo-cpu-medum among these manifests or those applied; apply holds the cluster until "
            "it exists: did you mean civo-cpu?") in result.stderr
    assert result.stdout.strip().endswith("2 valid, 0 errors, 1 warning")
    strict = run("validate", "--strict", "-f", tmp_path / "fleet.yaml", "--state", tmp_path / "none", code=1)
    assert "error: " + str(tmp_path / "fleet.yaml") + "#1: InferenceCluster/civo-lon: spec.nodePools[0]" in strict.stderr


def test_classes_already_applied_count_as_present(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", MIXED / "classes.yaml", state=state)
    result = run("validate", "-f", MIXED / "clusters.yaml", state=state)
    assert "className" not in result.stderr
    without = run("validate", "-f", MIXED / "clusters.yaml", state=tmp_path / "none")
    assert without.stderr.count("className: no InferenceClass") == 8


def test_the_gate_is_a_warning_before_apply_and_apply_says_so_then_holds(tmp_path):
    amd = next(c for c in documents(MIXED / "classes.yaml") if c["metadata"]["name"] == "eks-amd-mi300x")
    cluster = next(c for c in documents(MIXED / "clusters.yaml") if c["metadata"]["name"] == "eks-amd")
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all([amd, cluster]))
    state = tmp_path / "state"
    warning = ("InferenceCluster/eks-amd: spec.nodePools: the supported-drivers gate will hold this cluster "
               "(UnsupportedDevices), provisioning nothing: class eks-amd-mi300x claims gpu.amd.com; EKS clusters "
               "support ")
    assert warning in run("validate", "-f", tmp_path / "fleet.yaml", state=state).stderr
    applied = run("apply", "-f", tmp_path / "fleet.yaml", state=state)
    assert "Warning: " in applied.stderr and warning in applied.stderr
    ready = yaml.safe_load(run("get", "icluster", "eks-amd", "-o", "yaml", state=state).stdout)["status"]["conditions"]
    assert {(c["type"], c["status"], c["reason"]) for c in ready} >= {("Ready", "False", "UnsupportedDevices")}


# ---- what a cloud does not offer (issue 26, item 2): a region, zone, machine or accelerator type its
# vendored table (inferplane/clouds/offerings/) lacks is a warning naming the field, the value and the
# nearest names; the simulated cloud refuses to provision it, and apply's summary names the cluster held.

def mixed(file: str, name: str) -> dict:
    return next(d for d in yaml.safe_load_all((MIXED / file).read_text()) if d and d["metadata"]["name"] == name)


def table(cloud: str) -> str:
    return f"inferplane/clouds/offerings/{cloud}.yaml, read 2026-12-02"


def held_before_and_after_apply(tmp_path, documents, warning, held, why):
    """The warning from validate (an error with --strict), again from apply, whose summary names the
    cluster held, and describe says why."""
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    line = f"{path}{warning}"
    validated = run("validate", "-f", path, "--state", tmp_path / "none")
    assert f"Warning: {line}" in validated.stderr.splitlines()
    assert validated.stdout.strip().endswith("0 errors, 1 warning")
    strict = run("validate", "--strict", "-f", path, "--state", tmp_path / "none", code=1)
    assert f"error: {line}" in strict.stderr.splitlines()
    state = tmp_path / "state"
    applied = run("apply", "-f", path, state=state)
    assert f"Warning: {line}" in applied.stderr.splitlines()
    assert applied.stderr.splitlines()[-1].endswith(f"; 1 not ready: {held} (ReconcileError)")
    described = run("describe", "icluster", held.split("/")[1], state=state).stdout
    assert why in described
    return state


def test_a_region_the_cloud_lacks_is_a_warning_and_the_cloud_never_provisions_it(tmp_path):
    cluster = mixed("clusters.yaml", "eks-us-east")
    cluster["spec"]["cluster"]["eks"]["region"] = "us-east-9"
    state = held_before_and_after_apply(
        tmp_path, [mixed("classes.yaml", "eks-a10g"), cluster],
        f"#1: InferenceCluster/eks-us-east: spec.cluster.eks.region: region us-east-9 is not in EKS's table "
        f"({table('eks')}): did you mean us-east-2, us-east-1 or us-west-2? Apply holds the cluster: the provider "
        "fails to create it. If EKS offers it since, add it to the table",
        "InferenceCluster/eks-us-east",
        "create failed: InvalidParameterException: unknown region us-east-9: EKS offers no such region")
    # The provider's answer, on the managed resource, as crossplane-runtime reports a failed create.
    cluster = yaml.safe_load(run("get", "cluster.eks.aws.m.upbound.io", "eks-us-east", "-n", "inferplane-system",
                                 "-o", "yaml", state=state).stdout)
    conditions = {c["type"]: c for c in cluster["status"]["conditions"]}
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "Creating")
    assert (conditions["Synced"]["reason"], conditions["Synced"]["message"]) == (
        "ReconcileError",
        "create failed: InvalidParameterException: unknown region us-east-9: EKS offers no such region")
    # A cluster the cloud never created has no nodes.
    assert "has no running cluster" in run("get", "nodes", "--cluster", "eks-us-east", state=state, code=1).stderr


@pytest.mark.parametrize("zone, warning, refused", [
    ("us-central1-e", "zone us-central1-e is not in GKE's table of us-central1's zones ({table}): did you mean "
                      "us-central1-f, us-central1-c or us-central1-b? The cloud refuses a pool in it. If GKE offers it "
                      "since, add it to the table", "unknown zone us-central1-e in region us-central1"),
    ("us-east1-b", "zone us-east1-b is in region us-east1, not in the cluster's region us-central1 ({table}): did you "
                   "mean us-central1-b, us-central1-f or us-central1-c? The cloud refuses a pool in another region's "
                   "zone", "unknown zone us-east1-b in region us-central1"),
], ids=["unknown-zone", "zone-of-another-region"])
def test_a_zone_the_region_lacks_is_a_warning(tmp_path, zone, warning, refused):
    cluster = mixed("clusters.yaml", "gke-us-central")
    cluster["spec"]["nodePools"][0]["zones"] = ["us-central1-a", zone]
    held_before_and_after_apply(
        tmp_path, [mixed("classes.yaml", "gke-l4"), mixed("classes.yaml", "gke-cpu"), cluster],
        "#2: InferenceCluster/gke-us-central: spec.nodePools[0].zones[1]: " + warning.format(table=table("gke")),
        "InferenceCluster/gke-us-central", f"InvalidParameterException: {refused}")


HELD_POOL = ("Apply holds every cluster with a pool of it: the provider fails to create the pool's node group. If "
             "{cloud} offers it since, add it to the table")


@pytest.mark.parametrize("cloud, klass, field, value, cluster, warning, refused", [
    ("EKS", "eks-a10g", "eks.instanceType", "g5.2xlarg", "eks-us-east",
     "EC2 instance type g5.2xlarg is not in EKS's table ({table}): did you mean g5.2xlarge, g5g.2xlarge or "
     "g5.24xlarge?", "unknown EC2 instance type g5.2xlarg"),
    ("Nebius", "nebius-h100", "nebius.preset", "1gpu-16vcpu-200g", "nebius-eu",
     "preset 1gpu-16vcpu-200g is not in Nebius's table of gpu-h100-sxm's presets ({table}): did you mean "
     "1gpu-16vcpu-200gb or 8gpu-128vcpu-1600gb?", "platform gpu-h100-sxm has no preset 1gpu-16vcpu-200g"),
    ("GKE", "gke-l4", "gke.accelerator.type", "nvidia-l4-24gb", "gke-us-central",
     "accelerator type nvidia-l4-24gb is not in GKE's table ({table}): did you mean nvidia-l4, nvidia-h200-141gb "
     "or nvidia-gb200?", "unknown accelerator type nvidia-l4-24gb"),
], ids=["instance-type", "nebius-preset", "accelerator-type"])
def test_a_machine_the_cloud_lacks_is_a_warning_and_its_node_group_is_never_created(
        tmp_path, cloud, klass, field, value, cluster, warning, refused):
    changed = mixed("classes.yaml", klass)
    *parents, last = ["provisioning", *field.split(".")]
    block = changed["spec"]
    for key in parents:
        block = block[key]
    block[last] = value
    # The cluster's other classes, as the recipe has them (GKE's CPU pool).
    others = [mixed("classes.yaml", p["className"]) for p in mixed("clusters.yaml", cluster)["spec"]["nodePools"]
              if p["className"] != klass]
    held_before_and_after_apply(
        tmp_path, [changed, *others, mixed("clusters.yaml", cluster)],
        f"#0: InferenceClass/{klass}: spec.provisioning.{field}: {warning.format(table=table(cloud.lower()))} "
        + HELD_POOL.format(cloud=cloud),
        f"InferenceCluster/{cluster}", f"InvalidParameterException: {refused}")
    # The pool's node group was never created: it has no nodes, and its cluster's other pools run.
    pool = next(p["name"] for p in mixed("clusters.yaml", cluster)["spec"]["nodePools"] if p["className"] == klass)
    nodes = run("get", "nodes", "--cluster", cluster, state=tmp_path / "state").stdout.splitlines()[1:]
    assert "system" in {line.split()[2] for line in nodes} and pool not in {line.split()[2] for line in nodes}


def test_a_running_cluster_keeps_running_when_its_class_names_what_the_cloud_lacks(tmp_path):
    state = tmp_path / "state"
    klass, cluster = mixed("classes.yaml", "eks-a10g"), mixed("clusters.yaml", "eks-us-east")
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all([klass, cluster]))
    run("apply", "-f", tmp_path / "fleet.yaml", state=state)
    nodes = run("get", "nodes", "--cluster", "eks-us-east", state=state).stdout
    klass["spec"]["provisioning"]["eks"]["instanceType"] = "g5.2xlarg"
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all([klass, cluster]))
    applied = run("apply", "-f", tmp_path / "fleet.yaml", state=state)
    assert "spec.provisioning.eks.instanceType: EC2 instance type g5.2xlarg" in applied.stderr
    # The node group exists: the cloud refuses the update, and the pool runs as it was.
    after = run("get", "nodes", "--cluster", "eks-us-east", state=state).stdout
    names = [line.split()[0] for line in after.splitlines()]
    assert names == [line.split()[0] for line in nodes.splitlines()]
    group = yaml.safe_load(run("get", "nodegroup.eks.aws.m.upbound.io", "-n", "inferplane-system", "-o", "yaml",
                               state=state).stdout)
    pools = [g for g in group["items"] if g["metadata"]["name"].startswith("eks-us-east-a10g-")]
    assert [c["reason"] for c in pools[0]["status"]["conditions"]] == ["Available", "ReconcileError"]
    assert "update failed: InvalidParameterException" in pools[0]["status"]["conditions"][1]["message"]


def test_existing_clusters_have_no_table(tmp_path):
    cluster = mixed("clusters.yaml", "onprem-lab")
    cluster["spec"]["nodePools"][0]["zones"] = ["rack-9"]
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(
        [mixed("classes.yaml", "lab-mi325x"), mixed("classes.yaml", "lab-epyc"), cluster]))
    assert "Warning" not in run("validate", "-f", tmp_path / "fleet.yaml", "--state", tmp_path / "none").stderr
