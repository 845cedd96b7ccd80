"""A manifest naming an object a composite controls is refused alike by apply, apply --dry-run and
diff, with the composite to change instead; the composed object stays as it was."""

import json
import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli

EKS_RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "qwen2.5-0.5b-nvidia-eks"


def run(*args, code):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def test_apply_dry_run_and_diff_refuse_a_manifest_over_a_composed_stack(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE, "--state", state, code=0)
    stack = json.loads(run("get", "servingstack", "eks-l4", "-o", "json", "--state", state, code=0).stdout)
    manifest = tmp_path / "stack.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": stack["apiVersion"], "kind": "ServingStack",
                                        "metadata": {"name": "eks-l4"}, "spec": stack["spec"]}))
    refusal = (f"error: {manifest}: ServingStack/eks-l4: composed and controlled by InferenceCluster/eks-l4, "
               "whose next reconcile would undo any change made here: change InferenceCluster/eks-l4 instead "
               "(nothing was written)\n")

    for command, code in ((["apply"], 1), (["apply", "--dry-run"], 1), (["diff"], 2)):
        result = run(*command, "-f", manifest, "--state", state, code=code)
        assert result.stderr.startswith(refusal), command
        assert result.stdout == "", command
    # apply ends with its summary: nothing changed, the one object refused.
    assert re.fullmatch(r"applied in \d+\.\d s: 0 changed, 0 unchanged, 1 refused\n",
                        run("apply", "-f", manifest, "--state", state, code=1).stderr[len(refusal):])

    after = json.loads(run("get", "servingstack", "eks-l4", "-o", "json", "--state", state, code=0).stdout)
    assert after == stack


def test_validate_against_the_state_refuses_a_composed_object_as_apply_does(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE, "--state", state, code=0)
    replicas = json.loads(run("get", "modelreplica", "-A", "-o", "json", "--state", state, code=0).stdout)["items"]
    replica = replicas[0]
    manifest = tmp_path / "replica.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": replica["apiVersion"], "kind": "ModelReplica",
                                        "metadata": {"name": replica["metadata"]["name"],
                                                     "namespace": replica["metadata"]["namespace"]},
                                        "spec": replica["spec"]}))
    applied = run("apply", "-f", manifest, "--state", state, code=1)
    validated = run("validate", "-f", manifest, "--state", state, code=1)
    refusal = next(line for line in applied.stderr.splitlines() if line.startswith("error: "))
    assert "composed and controlled by ModelDeployment/" in refusal
    assert validated.stderr.splitlines()[0] == refusal
    assert validated.stderr.splitlines()[-1] == "0 valid, 1 error"
    # Without a state there is nothing composed to refuse it over: it is checked as a manifest alone.
    assert run("validate", "-f", manifest, code=0).stdout
