"""`inferplane audit [DIR...]`: a table of every cluster's audits (the state's, or each folder's, each
reconciled in memory on its own), exit 1 on any failure."""

import shutil
from pathlib import Path

from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]


def run(*args):
    return CliRunner().invoke(cli, ["audit", *args])


def test_every_leg_is_audited_on_its_own_and_passes():
    result = run(*sorted(str(leg) for leg in (REPO / "tests" / "legs").iterdir()))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["CLUSTER", "AUDIT", "RESULT", "DETAIL"]
    rows = [line.split(None, 3) for line in lines[1:]]
    legs = ["leg-aks", "leg-civo", "leg-eks", "leg-existing", "leg-gke", "leg-nebius", "leg-vultr"]
    assert [(leg, audit) for leg, audit, _, _ in rows] == [
        (leg, audit) for leg in legs for audit in ("placement", "toleration", "claims", "held")]
    assert {result for _, _, result, _ in rows} == {"Pass"}
    assert rows[12] == ["leg-existing", "placement", "Pass",
                        "9 device-stack pods, each on its own pools (amd, cpu, nvidia), none missing"]


def test_a_failing_audit_prints_a_row_per_finding_and_exits_1(mutate_component, tmp_path):
    shutil.copytree(REPO / "tests" / "legs" / "civo", tmp_path / "civo")
    # The CPU chart's own default: every NoSchedule taint, and no nodeSelector.
    mutate_component("dra-driver-cpu", values=lambda spec: {"tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]})
    result = run(str(tmp_path / "civo"))
    assert result.exit_code == 1, result.output
    failed = [line.split(None, 3) for line in result.output.splitlines() if " Fail " in line]
    assert [(leg, audit, detail.split(":")[0]) for leg, audit, _, detail in failed] == [
        ("leg-civo", "placement", "DriverOnForeignPool")] * 4 + [("leg-civo", "toleration", "DriverOverTolerant")] * 2
    assert "DaemonSet/dra-driver-cpu pod kube-system/dra-driver-cpu-" in failed[0][3]


def test_a_cluster_the_gate_refused_reads_skipped_with_the_reason():
    result = run(str(REPO / "recipes" / "mixed-fleet"))
    assert result.exit_code == 0, result.output
    (skipped,) = [line for line in result.output.splitlines() if "Skipped" in line]
    assert skipped.split(None, 3)[:3] == ["eks-amd", "-", "Skipped"]
    assert "nothing runs: ClusterReady False (UnsupportedDevices): class eks-amd-mi300x claims gpu.amd.com" in skipped


def test_a_rejected_manifest_is_reported_with_its_file_and_exits_1(tmp_path):
    (tmp_path / "bad.yaml").write_text("apiVersion: inferplane.dev/v1alpha1\nkind: InferenceClass\n"
                                       "metadata: {name: zero}\nspec: {devices: [{name: gpu, driver: gpu.nvidia.com, "
                                       "deviceClassName: gpu.nvidia.com, count: 0}]}\n")
    result = run(str(tmp_path))
    assert result.exit_code == 1
    assert "bad.yaml: InferenceClass/zero: spec.devices[0].count: must be at least 1, got 0" in result.output


def test_a_folder_with_no_objects_is_an_error(tmp_path):
    result = run(str(tmp_path))
    assert result.exit_code == 1
    assert f"no objects found in {tmp_path}" in result.output


def test_without_a_folder_the_states_clusters_are_audited(tmp_path):
    state = tmp_path / "state"
    applied = CliRunner().invoke(cli, ["apply", "-f", str(REPO / "recipes" / "mixed-fleet"), "--state", str(state)])
    assert applied.exit_code == 0, applied.output
    result = run("--state", str(state))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["CLUSTER", "AUDIT", "RESULT", "DETAIL"]
    rows = [line.split(None, 3) for line in lines[1:]]
    assert {cluster for cluster, *_ in rows} == {"civo-lon", "eks-amd", "eks-us-east", "gke-us-central", "nebius-eu",
                                                 "onprem-lab"}
    assert [row[:3] for row in rows if row[0] == "eks-amd"] == [["eks-amd", "-", "Skipped"]]
    # The models' engine pods are audited too: their claims come from their own drivers' slices.
    onprem_claims = next(row for row in rows if row[:2] == ["onprem-lab", "claims"])
    assert onprem_claims[2] == "Pass" and "gpu.amd.com" in onprem_claims[3]


def test_without_a_state_there_is_nothing_to_audit(tmp_path):
    result = run("--state", str(tmp_path / "none"))
    assert result.exit_code == 1 and "no inferplane state in" in result.output
