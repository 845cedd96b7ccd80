"""Issue 17, from the user's side: the CLI behaves like kubectl, its status never contradicts itself,
and its errors name what is wrong. Each test drives `inferplane` commands and reads their output."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"
MIXED = REPO / "recipes" / "mixed-fleet"


def run(*args, state=None, code=0):
    argv = [str(a) for a in args] + (["--state", str(state)] if state is not None else [])
    result = CliRunner().invoke(cli, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def model(name: str, namespace: str | None) -> dict:
    body = yaml.safe_load((EKS_RECIPE / "model.yaml").read_text())
    body["metadata"] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return body


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The EKS recipe, plus models in two namespaces."""
    folder = tmp_path_factory.mktemp("fleet")
    state = folder / "state"
    (folder / "models.yaml").write_text(yaml.safe_dump_all([model("chat", None), model("chat", "team-a"),
                                                            model("batch", "team-a")]))
    run("apply", "-f", EKS_RECIPE / "class.yaml", "-f", EKS_RECIPE / "cluster.yaml", "-f", folder / "models.yaml",
        state=state)
    return state


def names(output: str) -> list[str]:
    return [line.split()[0] for line in output.splitlines()[1:] if line.strip()]


# ---- 1. namespaces


def test_namespaced_kinds_default_to_default_and_all_namespaces_lists_every_one(fleet):
    assert names(run("get", "md", state=fleet).stdout) == ["chat"]
    assert names(run("get", "md", "-n", "team-a", state=fleet).stdout) == ["batch", "chat"]
    everywhere = run("get", "md", "-A", state=fleet).stdout.splitlines()
    assert everywhere[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [line.split()[:2] for line in everywhere[1:]] == [
        ["default", "chat"], ["team-a", "batch"], ["team-a", "chat"]]
    assert run("get", "md", "-n", "nobody", state=fleet).stderr == "No resources found in nobody namespace.\n"


def test_delete_without_namespace_touches_only_default(tmp_path):
    state = tmp_path / "state"
    (tmp_path / "models.yaml").write_text(yaml.safe_dump_all([model("only-a", "team-a")]))
    run("apply", "-f", tmp_path / "models.yaml", state=state)
    refused = run("delete", "md", "only-a", state=state, code=1)
    assert refused.stderr == ('Error: modeldeployment.inferplane.dev "only-a" not found in namespace default '
                              "(-n NAMESPACE or `get -A` finds it elsewhere)\n")
    assert names(run("get", "md", "-n", "team-a", state=state).stdout) == ["only-a"]
    assert run("delete", "md", "only-a", "-n", "team-a", state=state).stdout == \
        "modeldeployment.inferplane.dev/only-a deleted (namespace team-a)\n"


def test_namespace_on_a_cluster_scoped_kind_is_refused(fleet):
    refused = run("get", "icluster", "-n", "default", state=fleet, code=2)
    assert "Error: InferenceCluster is cluster-scoped: drop -n/--namespace (it has no namespace)" in refused.stderr


# ---- 2. output conventions


def test_output_formats_lists_and_names(fleet):
    listed = json.loads(run("get", "iclusters", "-o", "json", state=fleet).stdout)
    assert (listed["kind"], [o["metadata"]["name"] for o in listed["items"]]) == ("List", ["eks-l4"])
    one = json.loads(run("get", "icluster", "eks-l4", "-o", "json", state=fleet).stdout)
    assert (one["kind"], one["metadata"]["name"]) == ("InferenceCluster", "eks-l4")
    assert yaml.safe_load(run("get", "iclass", "-o", "yaml", state=fleet).stdout)["kind"] == "List"
    assert run("get", "iclass,icluster", "-o", "name", state=fleet).stdout == \
        "inferenceclass.inferplane.dev/eks-l4\ninferencecluster.inferplane.dev/eks-l4\n"
    assert run("get", "md", "-A", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}",
               state=fleet).stdout == "default/chat\nteam-a/batch\nteam-a/chat\n\n"
    assert run("get", "icluster", "eks-l4", "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
               state=fleet).stdout == "True\n"
    wide = run("get", "icluster", "-o", "wide", state=fleet).stdout.splitlines()
    assert wide[0].split() == ["NAME", "SOURCE", "READY", "REASON", "AGE", "DRIVERS", "POOLS"]
    assert wide[1].split()[-2:] == ["gpu.nvidia.com", "l4"]
    assert "use one of wide, name, json, yaml, jsonpath=TEMPLATE" in run("get", "md", "-o", "xml", state=fleet,
                                                                         code=2).stderr


def test_several_kinds_at_once_print_kind_and_group(fleet):
    out = run("get", "iclass,icluster", state=fleet).stdout.split("\n\n")
    assert names(out[0]) == ["inferenceclass.inferplane.dev/eks-l4"]
    assert names(out[1]) == ["inferencecluster.inferplane.dev/eks-l4"]


def test_label_selectors(fleet):
    assert run("get", "releases", "-A", "-l", "crossplane.io/composite=other,inferplane.dev/component in "
               "(cert-manager)", state=fleet).stderr == "No resources found.\n"
    found = run("get", "releases", "-A", "-o", "name", "-l",
                "inferplane.dev/component in (cert-manager,dcgm-exporter)", state=fleet).stdout.split()
    assert found == ["release.helm.m.crossplane.io/eks-l4-cert-manager-29642d4bb390",
                     "release.helm.m.crossplane.io/eks-l4-dcgm-exporter-0e7e158c9bf1"]
    assert run("get", "releases", "-A", "-l", "!inferplane.dev/component", state=fleet).stderr == \
        "No resources found.\n"
    assert "is not a label requirement" in run("get", "releases", "-l", "a b c", state=fleet, code=2).stderr


def test_plural_and_short_names_and_a_typo_suggests(fleet):
    for spelling in ("iclusters", "icluster", "inferencecluster", "InferenceCluster",
                     "inferenceclusters.inferplane.dev"):
        assert names(run("get", spelling, state=fleet).stdout) == ["eks-l4"]
    typo = run("get", "iclustr", state=fleet, code=2)
    assert "Error: unknown resource type 'iclustr': did you mean 'icluster'?" in typo.stderr


def test_apply_and_delete_print_kind_group_name(tmp_path):
    state = tmp_path / "state"
    assert run("apply", "-f", EKS_RECIPE / "class.yaml", state=state).stdout == \
        "inferenceclass.inferplane.dev/eks-l4 created\n"
    assert run("delete", "iclass", "eks-l4", state=state).stdout == "inferenceclass.inferplane.dev/eks-l4 deleted\n"


def test_api_resources_version_and_completion():
    rows = {line.split()[0]: line.split() for line in run("api-resources").stdout.splitlines()[1:]}
    assert rows["inferenceclusters"] == ["inferenceclusters", "icluster,ic", "inferplane.dev/v1alpha1", "false",
                                         "InferenceCluster"]
    assert rows["modeldeployments"] == ["modeldeployments", "md", "inferplane.dev/v1alpha1", "true",
                                        "ModelDeployment"]
    assert rows["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert run("--version").stdout == "inferplane, version 0.1.0\n"
    assert "_INFERPLANE_COMPLETE=bash_complete" in run("completion", "bash").stdout


def complete(words: str, state: Path | None = None) -> list[str]:
    env = {"_INFERPLANE_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)}
    if state is not None:
        env["INFERPLANE_STATE"] = str(state)
    out = CliRunner().invoke(cli, [], env=env, prog_name="inferplane").stdout
    return [line.split(",", 1)[1] for line in out.splitlines()]


def test_completion_of_commands_kinds_and_names(fleet):
    assert complete("inferplane de") == ["delete", "describe"]
    assert complete("inferplane get iclu") == ["icluster"]
    assert complete("inferplane get iclass,iclu") == ["iclass,icluster"]
    assert complete("inferplane describe icluster e", fleet) == ["eks-l4"]


# ---- 3. events


def test_events_have_type_reason_age_count_and_recovery_is_recorded(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE, state=state)
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    good = yaml.safe_dump(klass)
    # An AMD device, as AMD's driver publishes one (the NVIDIA attributes are not its).
    klass["spec"]["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com",
                                       attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, capacity={})
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    run("apply", "-f", tmp_path / "class.yaml", state=state)
    klass["spec"]["description"] = "still AMD"
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    run("apply", "-f", tmp_path / "class.yaml", state=state)  # the same refusal again: counted, not appended
    (tmp_path / "class.yaml").write_text(good)
    run("apply", "-f", tmp_path / "class.yaml", state=state)

    events = run("get", "events", "--for", "icluster/eks-l4", state=state).stdout.splitlines()
    assert events[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE"]
    rows = [re.split(r"\s{2,}", line) for line in events[1:]]
    warnings = [r for r in rows if r[1] == "Warning" and r[2] == "UnsupportedDevices"]
    assert len(warnings) == 1 and int(warnings[0][4]) >= 2
    assert all(re.fullmatch(r"\d+s", r[0]) for r in rows)
    recovered = [r for r in rows if r[1] == "Normal" and "recovered from UnsupportedDevices" in r[5]]
    assert recovered and recovered[-1][2] == "Available" and recovered[-1][3] == "inferencecluster/eks-l4"
    described = run("describe", "icluster", "eks-l4", state=state).stdout
    assert re.search(r"Events:\n  TYPE +REASON +AGE +COUNT +MESSAGE\n", described)
    assert re.search(r"  Warning +UnsupportedDevices +\d+s +[2-9]\d* +class eks-l4 claims gpu.amd.com", described)
    every = json.loads(run("get", "events", "-A", "-o", "json", state=state).stdout)
    assert every["kind"] == "List" and {e["involvedObject"]["kind"] for e in every["items"]} >= {"InferenceCluster"}


# ---- 4. status that does not contradict itself


def test_a_held_cluster_shows_its_stack_held_and_fleet_separates_running_from_wanted(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE, state=state)
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    # An AMD device, as AMD's driver publishes one (the NVIDIA attributes are not its).
    klass["spec"]["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com",
                                       attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, capacity={})
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    run("apply", "-f", tmp_path / "class.yaml", state=state)

    described = run("describe", "icluster", "eks-l4", state=state).stdout
    assert re.search(r"serving-stack +ServingStack +eks-l4 +Held \(UnsupportedDevices: kept as it was", described)
    assert "Source:       EKS" in described
    assert re.search(r"Node Pools:\n  NAME +CLASS +NODES +ZONES\n  l4 +eks-l4 +2 +<none>", described)
    assert re.search(r"Schedulable Pools:\n  NAME +ROLE +NODES +DEVICES\n  l4 +GPU +2 +1xgpu.nvidia.com \(DRA\)",
                     described)
    assert re.search(r"DRA Drivers:\n  DRIVER +SERVED BY\n  gpu.amd.com +nothing: EKS does not serve it", described)
    trace = run("trace", "icluster", "eks-l4", state=state).stdout
    assert re.search(r"ServingStack/eks-l4 +True +Held +UnsupportedDevices", trace)
    fleet = run("fleet", state=state).stdout.splitlines()
    assert fleet[0].split() == ["CLUSTER", "CLOUD", "READY", "REASON", "DRIVERS", "POOLS", "DEVICE-STACKS",
                                "WANTED-DRIVERS"]
    assert fleet[1].split() == ["eks-l4", "EKS", "False", "UnsupportedDevices", "gpu.nvidia.com",
                                "l4(GPU:1xgpu.nvidia.com)",
                                "dra-driver-nvidia-gpu,nvidia-critical-pods-quota,dcgm-exporter", "gpu.amd.com"]


def test_pods_columns_and_a_deleted_clusters_simulated_objects_go_with_it(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", EKS_RECIPE, state=state)
    pods = run("get", "pods", "-A", "--cluster", "eks-l4", state=state).stdout.splitlines()
    assert pods[0].split() == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert all(re.fullmatch(r"\S+ +\S+ +1/1 +Running +0 +\d+s", line) for line in pods[1:])
    refused = run("delete", "icluster", "eks-l4", state=state, code=1)
    assert "ModelDeployment default/qwen2-5-0-5b-l4 runs replicas" in refused.stderr
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["taints"] = [{"key": "decommission", "effect": "NoExecute"}]  # drains the replicas
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    run("apply", "-f", tmp_path / "cluster.yaml", state=state)
    run("delete", "icluster", "eks-l4", state=state)
    gone = run("get", "nodes", "--cluster", "eks-l4", state=state, code=1)
    assert gone.stderr == "Error: InferenceCluster 'eks-l4' does not exist: `inferplane get inferenceclusters` " \
                          "lists them\n"


def test_kinds_that_share_a_name_show_their_group(fleet):
    trace = run("trace", "icluster", "eks-l4", state=fleet).stdout
    assert "ClusterProviderConfig.helm.m.crossplane.io/eks-l4" in trace
    assert "ClusterProviderConfig.kubernetes.m.crossplane.io/eks-l4" in trace
    both = run("get", "clusterproviderconfigs", state=fleet).stdout
    assert names(both.split("\n\n")[0]) == ["clusterproviderconfig.helm.m.crossplane.io/eks-l4"]
    # The stack's, and the cloud cluster's own for its shared storage's StorageClass.
    assert names(both.split("\n\n")[1]) == [
        "clusterproviderconfig.kubernetes.m.crossplane.io/eks-l4",
        "clusterproviderconfig.kubernetes.m.crossplane.io/eks-l4-storage-provider-config-e34628a61b66"]
    ambiguous = run("describe", "clusterproviderconfig", "eks-l4", state=fleet, code=2)
    # Every provider's ClusterProviderConfig is a kind of that name (the clouds', Helm's, Kubernetes').
    assert "use one of clusterproviderconfig.aws.m.upbound.io, " in ambiguous.stderr
    assert "clusterproviderconfig.helm.m.crossplane.io, clusterproviderconfig.kubernetes.m.crossplane.io" \
        in ambiguous.stderr


# ---- 5. dry runs and diffs


def test_dry_run_stores_nothing_and_diff_shows_each_change(tmp_path):
    state = tmp_path / "state"
    dry = run("apply", "-f", EKS_RECIPE, "--dry-run", state=state).stdout.splitlines()
    assert "inferencecluster.inferplane.dev/eks-l4 created (dry run)" in dry
    assert "release.helm.m.crossplane.io/eks-l4-dra-driver-nvidia-gpu-a59706f0ea78 created (dry run)" in dry
    assert not (state / "store.db").exists()
    run("apply", "-f", EKS_RECIPE, state=state)
    assert run("diff", "-f", EKS_RECIPE, state=state).stdout == ""
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["nodePools"][0]["nodeCount"] = 3
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    diff = run("diff", "-f", tmp_path / "cluster.yaml", state=state, code=1).stdout
    assert "--- live/inferencecluster.inferplane.dev/eks-l4\n+++ applied/inferencecluster.inferplane.dev/eks-l4\n" \
        in diff
    assert "--- live/nodegroup.eks.aws.m.upbound.io/eks-l4-l4-c76b1331bc1b\n" in diff
    assert "-    nodeCount: 2\n+    nodeCount: 3\n" in diff
    before = run("get", "icluster", "eks-l4", "-o", "json", state=state).stdout
    assert run("apply", "-f", tmp_path / "cluster.yaml", "--dry-run", state=state).stdout.splitlines() == [
        "ekscluster.infrastructure.inferplane.dev/eks-l4 configured (dry run)",
        "inferencecluster.inferplane.dev/eks-l4 configured (dry run)",
        "nodegroup.eks.aws.m.upbound.io/eks-l4-l4-c76b1331bc1b configured (dry run)"]
    assert run("get", "icluster", "eks-l4", "-o", "json", state=state).stdout == before


# ---- 6. state folder mistakes


def test_reading_a_folder_with_no_state_is_an_error_and_creates_nothing(tmp_path):
    for command in (["get", "icluster"], ["fleet"], ["describe", "icluster", "x"], ["trace", "icluster", "x"],
                    ["delete", "icluster", "x"], ["get", "events"]):
        result = run(*command, state=tmp_path / "empty", code=1)
        assert result.stderr == (f"Error: no inferplane state in {tmp_path / 'empty'}: `inferplane apply -f FILE "
                                 f"--state {tmp_path / 'empty'}` creates it; or pass --state (or set "
                                 "$INFERPLANE_STATE) to the folder you applied to\n")
    assert not (tmp_path / "empty").exists()


def test_apply_of_an_empty_file_says_it_found_no_objects(tmp_path):
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    result = run("apply", "-f", tmp_path / "empty.yaml", state=tmp_path / "state", code=1)
    assert result.stderr == f"Error: no objects found in {tmp_path / 'empty.yaml'}: a manifest needs apiVersion, " \
                            "kind and metadata\n"


# ---- 8. --help answers at once, validate starts light, -f - reads standard input


def test_help_imports_nothing_heavy():
    probe = ("import sys; from click.testing import CliRunner; from inferplane.cli.main import cli; "
             "CliRunner().invoke(cli, ['--help']); "
             "print(sorted(m for m in ('yaml', 'pydantic', 'jsonschema', 'sqlite3', 'jsonpath_ng', 'celpy', 'cel', "
             "'inferplane.engine', 'inferplane.admission', 'inferplane.api') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout == "[]\n"


def test_validate_imports_only_what_a_valid_manifest_needs(tmp_path):
    """A loop over a folder, one `validate` per file, pays the start for every file (bench/cli_bench.py):
    the recipe's class, cluster, deployment (CEL selectors) and service are admitted without them."""
    probe = ("import sys; from click.testing import CliRunner; from inferplane.cli.main import cli; "
             f"result = CliRunner().invoke(cli, ['validate', '-f', {str(EKS_RECIPE)!r}]); "
             "assert result.exit_code == 0, result.output; "
             "print(sorted(m for m in ('prompt_toolkit', 'rich', 'jsonschema', 'kubernetes_validate', 'grpc', "
             "'inferplane.engine') if m in sys.modules))")
    # With no state to read the classes of (a state in the checkout, left by the main job, would be read).
    env = {**os.environ, "INFERPLANE_STATE": str(tmp_path / "no-state")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True, env=env)
    assert out.stdout == "[]\n"


def test_python_dash_m_inferplane_is_the_command():
    out = subprocess.run([sys.executable, "-m", "inferplane", "validate", "-f", str(EKS_RECIPE / "class.yaml")],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0 and out.stdout.endswith("1 valid, 0 errors\n"), out.stderr


def test_the_cel_packages_command_line_loads_when_read():
    """It is deferred (it pulls in prompt_toolkit), not gone."""
    probe = ("import sys, inferplane.cel; assert 'prompt_toolkit' not in sys.modules; "
             "import cel.cli; print(callable(cel.cli.main), 'prompt_toolkit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout == "True True\n"


def test_an_invalid_manifest_still_gets_every_error_with_its_path(tmp_path):
    """The validator that describes failures is built on the first failure: what it says is unchanged."""
    bad = write(tmp_path / "class.yaml", "apiVersion: inferplane.dev/v1alpha1\nkind: InferenceClass\n"
                "metadata: {name: l4}\nspec:\n  devices:\n"
                "  - {name: gpu, driver: 7, deviceClassName: gpu.nvidia.com, extra: 1}\n")
    errors = run("validate", "-f", bad, code=1).stderr
    assert "InferenceClass/l4: spec.devices[0].driver: must be a string" in errors
    assert 'InferenceClass/l4: spec.devices[0].extra: unknown field "extra": remove it' in errors
    assert errors.endswith("0 valid, 2 errors\n")


def test_dash_reads_manifests_from_standard_input(tmp_path):
    """`-f -`, as kubectl: with files beside it, and its errors named <stdin>."""
    piped = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", "-", "-f",
                            str(EKS_RECIPE / "class.yaml")], input=(EKS_RECIPE / "model.yaml").read_text(),
                           capture_output=True, text=True, cwd=REPO)
    assert piped.returncode == 0, piped.stderr
    assert re.search(r"ModelDeployment\s+\S+\s+<stdin>\n", piped.stdout)
    assert "InferenceClass" in piped.stdout and piped.stdout.endswith("2 valid, 0 errors\n")
    broken = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", "-"],
                            input="kind: [\n", capture_output=True, text=True, cwd=REPO)
    assert broken.returncode == 1
    assert broken.stderr.startswith("error: <stdin>:2:1: malformed YAML")
    state = tmp_path / "state"
    applied = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "apply", "-f", "-", "--state", str(state)],
                             input=(EKS_RECIPE / "class.yaml").read_text(), capture_output=True, text=True, cwd=REPO)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == "inferenceclass.inferplane.dev/eks-l4 created\n"


# ---- 9. small things users hit


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_bad_values_are_quoted_whole_and_a_numeric_name_is_not_missing(tmp_path):
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    klass["spec"]["devices"][0]["capacity"]["memory"] = {"value": "24 GB"}
    bad = run("validate", "-f", write(tmp_path / "class.yaml", yaml.safe_dump(klass)), code=1).stderr
    assert "spec.devices[0].capacity.memory.value: must be a Kubernetes quantity" in bad and "got '24 GB'" in bad
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    klass["metadata"]["name"] = 5
    numeric = run("validate", "-f", write(tmp_path / "numeric.yaml", yaml.safe_dump(klass)), code=1).stderr
    assert "metadata.name: must be a string, got 5: quote it, e.g. name: \"5\"" in numeric


def test_apply_accepts_a_kind_list(tmp_path):
    documents = [yaml.safe_load((EKS_RECIPE / f).read_text()) for f in ("class.yaml", "cluster.yaml")]
    listed = write(tmp_path / "list.yaml", yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": documents}))
    assert run("apply", "-f", listed, state=tmp_path / "state").stdout == (
        "inferenceclass.inferplane.dev/eks-l4 created\ninferencecluster.inferplane.dev/eks-l4 created\n")


def test_nodes_of_a_refused_cluster_say_why(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", MIXED, state=state)
    refused = run("get", "nodes", "--cluster", "eks-amd", state=state, code=1).stderr
    assert refused.startswith("Error: InferenceCluster eks-amd has no running cluster: ClusterReady is False "
                              "(UnsupportedDevices): class eks-amd-mi300x claims gpu.amd.com")


def test_a_gke_pool_over_two_zones_has_its_count_in_each(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", MIXED, state=state)
    nodes = run("get", "nodes", "--cluster", "gke-us-central", "-l", "inferplane.dev/pool=l4", "-o", "name",
                state=state).stdout.split()
    zones = yaml.safe_load_all((MIXED / "clusters.yaml").read_text())
    gke = next(c for c in zones if c["metadata"]["name"] == "gke-us-central")
    l4 = next(p for p in gke["spec"]["nodePools"] if p["name"] == "l4")
    assert (l4["nodeCount"], len(l4["zones"])) == (2, 2)
    assert nodes == [f"node/gke-us-central-l4-{i}" for i in range(4)]



def test_a_gke_pool_over_two_zones_takes_a_replica_on_each_of_its_nodes(tmp_path):
    """GKE counts a pool's nodes per zone: the scheduler counts the nodes the pool has, not its spec's
    per-zone count (it placed one replica on this two-node pool, and the second never ran)."""
    documents = [d for f in ("classes.yaml", "clusters.yaml", "models.yaml") for d in
                 yaml.safe_load_all((MIXED / f).read_text()) if d]
    klass = next(d for d in documents if d["metadata"]["name"] == "gke-l4")
    cluster = next(d for d in documents if d["metadata"]["name"] == "gke-us-central")
    # A fixed pool (GKE pools autoscale by default): one node in each of two zones.
    cluster["spec"]["nodePools"] = [{"name": "l4", "className": "gke-l4", "nodeCount": 1, "maxNodeCount": 1,
                                     "zones": ["us-central1-a", "us-central1-b"]}]
    qwen = next(d for d in documents if d["metadata"]["name"] == "qwen2-5-7b")
    qwen["spec"]["replicas"] = 3  # one more than the pool's nodes: it waits, unplaced
    fleet = write(tmp_path / "fleet.yaml", yaml.safe_dump_all([klass, cluster, qwen]))
    state = tmp_path / "state"
    run("apply", "-f", fleet, state=state)
    status = json.loads(run("get", "inferencecluster", "gke-us-central", "-o", "json", state=state).stdout)["status"]
    assert [(p["name"], p["nodeCount"], p.get("maxNodeCount")) for p in status["schedulablePools"]] == [("l4", 2, None)]
    replicas = run("get", "modelreplicas", "-o", "name", state=state).stdout.split()
    assert replicas == ["modelreplica.inferplane.dev/qwen2-5-7b-gke-us-central-0",
                        "modelreplica.inferplane.dev/qwen2-5-7b-gke-us-central-1"]
    pods = run("get", "pods", "--cluster", "gke-us-central", "-A", "-o", "json", state=state).stdout
    engine_nodes = sorted(p["spec"]["nodeName"] for p in json.loads(pods)["items"]
                          if p["metadata"]["name"].startswith("qwen2-5-7b") and p["status"]["phase"] == "Running")
    assert engine_nodes == ["gke-us-central-l4-0", "gke-us-central-l4-1"]
    deployment = json.loads(run("get", "modeldeployment", "qwen2-5-7b", "-o", "json", state=state).stdout)["status"]
    assert deployment["replicas"] == {"ready": 2, "total": 2}
    scheduled = next(c for c in deployment["conditions"] if c["type"] == "Scheduled")
    assert "2 of 3 replicas placed on gke-us-central; 1 fit nowhere (gke-us-central: pool l4: 0 of 2 nodes free" \
        in scheduled["message"]


# ---- 10. DRANET: served on EKS by AWS's chart, published where its DaemonSet runs


def test_dranet_on_eks_is_served_by_aws_dranet_which_publishes_its_slices(tmp_path):
    assert re.search(r"^EKS +dra\.net +aws-dranet", run("stacks").stdout, re.M)
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    klass["spec"]["provisioning"]["eks"]["instanceType"] = "g6.12xlarge"  # EFA-capable (the chart's list)
    klass["spec"]["devices"].append({"name": "nic", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws",
                                     "count": 2})
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["cluster"]["eks"]["kubernetesVersion"] = "1.35"  # aws-dranet's minimum
    cluster["spec"]["nodePools"][0]["fabric"] = {"type": "EFA"}
    run("apply", "-f", write(tmp_path / "class.yaml", yaml.safe_dump(klass)),
        "-f", write(tmp_path / "cluster.yaml", yaml.safe_dump(cluster)), state=tmp_path / "state")
    described = run("describe", "icluster", "eks-l4", state=tmp_path / "state").stdout
    assert re.search(r"DRA Drivers:\n  DRIVER +SERVED BY\n  dra.net +aws-dranet\n"
                     r"  gpu.nvidia.com +dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter", described)
    trace = run("trace", "icluster", "eks-l4", state=tmp_path / "state").stdout
    assert re.search(r"Release/eks-l4-aws-dranet-\w+ +True +True +Available", trace)
    pods = run("get", "pods", "-n", "kube-system", "--cluster", "eks-l4", "-o", "name",
               state=tmp_path / "state").stdout.split()
    assert len([p for p in pods if p.startswith("pod/aws-dranet-")]) == 2
    slices = json.loads(run("get", "resourceslices", "--cluster", "eks-l4", "-o", "json",
                            state=tmp_path / "state").stdout)["items"]
    net = [s for s in slices if s["spec"]["driver"] == "dra.net"]
    # DRANET names a PCI network device pci-<address> (google/dranet pkg/names): an EFA device has no netdev.
    efa_devices = ["pci-0000-30-00-0", "pci-0000-40-00-0"]
    assert [(s["spec"]["nodeName"], [d["name"] for d in s["spec"]["devices"]]) for s in net] == [
        ("eks-l4-l4-0", efa_devices), ("eks-l4-l4-1", efa_devices)]
