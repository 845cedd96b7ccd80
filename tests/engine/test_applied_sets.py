"""A set of files applied whole, applied again with no user's write since, changes nothing and says the
same (its warnings, every object unchanged) without admitting the files again; any user's write since
(another file, a label, a deletion) makes it admit them afresh."""

from pathlib import Path

import pytest

from inferplane.engine import control_plane as control_plane_module
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
MIXED = REPO / "recipes" / "mixed-fleet"
EKS_AMD = Key("inferplane.dev", "InferenceCluster", "", "eks-amd")


def apply(state, *paths):
    runtime = ControlPlane(state)
    try:
        return runtime.apply(list(paths))
    finally:
        runtime.close()


def said(result):
    return ([(str(k), verb) for k, verb in result.applied], [str(w) for w in result.admission.warnings],
            result.admission.ok, result.report.converged)


def refuse_admission(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("the set was admitted again")
    monkeypatch.setattr(control_plane_module, "admit_paths", refused)


def test_the_same_set_applied_again_says_the_same_without_admitting_it(tmp_path, monkeypatch):
    first = apply(tmp_path / "state", MIXED)
    second = apply(tmp_path / "state", MIXED)  # records nothing new: nothing changed since the first
    assert said(second)[0] == [(k, "unchanged") for k, _ in said(first)[0]]
    assert said(second)[1] == said(first)[1] and any("eks-amd" in w for w in said(first)[1])
    refuse_admission(monkeypatch)
    assert said(apply(tmp_path / "state", MIXED)) == said(second)


def test_a_users_write_since_makes_the_set_admitted_again(tmp_path, monkeypatch):
    state = tmp_path / "state"
    apply(state, MIXED)
    runtime = ControlPlane(state)
    runtime.update([(EKS_AMD, lambda body: body["metadata"].setdefault("labels", {}).update(team="a"))], "label")
    runtime.close()
    again = apply(state, MIXED)  # the label is undone: the file says otherwise
    assert (EKS_AMD, "configured") in again.applied
    # A deletion since, too: the set's object is created again.
    runtime = ControlPlane(state)
    runtime.delete(Key("inferplane.dev", "ModelService", "default", "qwen"))
    runtime.close()
    assert (Key("inferplane.dev", "ModelService", "default", "qwen"), "created") in apply(state, MIXED).applied


def test_another_set_or_a_changed_file_is_admitted(tmp_path, monkeypatch):
    state, folder = tmp_path / "state", tmp_path / "fleet"
    folder.mkdir()
    for path in sorted(MIXED.glob("*.yaml")):
        (folder / path.name).write_text(path.read_text())
    apply(state, folder)
    apply(state, folder)
    models = folder / "models.yaml"
    models.write_text(models.read_text().replace("replicas: 2", "replicas: 1", 1))
    changed = apply(state, folder)
    assert (Key("inferplane.dev", "ModelDeployment", "default", "qwen2-5-7b"), "configured") in changed.applied
    refuse_admission(monkeypatch)
    with pytest.raises(AssertionError, match="admitted again"):
        apply(state, folder / "models.yaml")  # a set never applied whole


def test_a_few_changed_files_of_a_set_are_admitted_alone_and_the_rest_say_what_they_said(tmp_path, monkeypatch):
    import yaml

    from inferplane.simulator.synthetic_fleet import write_fleet

    state, folder = tmp_path / "state", write_fleet(tmp_path / "fleet", 8)
    files = sorted(folder.glob("*.yaml"))
    first = apply(state, folder)
    changed = next(p for p in files if p.name.endswith("-0004.yaml"))
    cluster = yaml.safe_load(changed.read_text())
    cluster["spec"]["nodePools"][0]["nodeCount"] += 1
    changed.write_text(yaml.safe_dump(cluster))
    admitted = []
    admit_paths = control_plane_module.admit_paths

    def recording(paths, *args, **kwargs):
        admitted.append(sorted(p.name for p in paths))
        return admit_paths(paths, *args, **kwargs)

    monkeypatch.setattr(control_plane_module, "admit_paths", recording)
    again = apply(state, folder)
    assert admitted == [[changed.name]]
    key = Key("inferplane.dev", "InferenceCluster", "", cluster["metadata"]["name"])
    assert again.applied == [(k, "configured" if k == key else "unchanged") for k, _ in first.applied]
    assert [str(w) for w in again.admission.warnings] == [str(w) for w in first.admission.warnings]
    assert again.report.converged and again.admission.unchanged == len(first.applied) - 1
    # A changed file that holds a class may change other clusters' verdicts: the whole set is admitted.
    admitted.clear()
    klass = next(p for p in files if "InferenceClass" in p.read_text())
    klass.write_text(klass.read_text().replace("description:", "description: changed", 1)
                     if "description:" in klass.read_text() else klass.read_text() + "\n")
    apply(state, folder)
    assert admitted == [[klass.name], [folder.name]]


def test_an_apply_reads_each_file_once_and_admits_the_bytes_it_keyed(tmp_path, monkeypatch):
    import inferplane.admission as admission
    reads = []
    real_read = admission.read_input

    def counted(path, limits):
        reads.append(path)
        return real_read(path, limits)
    monkeypatch.setattr(admission, "read_input", counted)
    result = apply(tmp_path / "state", MIXED)
    assert result.admission.ok and result.report.converged
    assert reads and len(reads) == len(set(reads))  # each file read once, for its key and its admission
    # What was admitted is what was keyed: the same set applied again is recognised, nothing admitted.
    refuse_admission(monkeypatch)
    assert [verb for _, verb in apply(tmp_path / "state", MIXED).applied] == ["unchanged"] * len(result.applied)
