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
