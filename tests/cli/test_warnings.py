"""Silence where kubectl users expect events (issue 26, item 4): a deployment that cannot be placed and
a cache that cannot stage say so with Warning events, as kube-scheduler's FailedScheduling does, and
`describe` shows the spec it judged."""

from pathlib import Path

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
