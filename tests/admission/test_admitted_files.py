"""A state keeps the files it admitted whole: applying them again unchanged yields the same objects
without parsing and checking them again. Anything that could change the verdict admits afresh: the
file's bytes, its path, the admitting code; a file that had an error is never kept; the checks that
read several objects run every time."""

import shutil
from pathlib import Path

import pytest

import inferplane.admission as admission
import inferplane.admission.files as admission_files
from inferplane.admission import admit_paths
from inferplane.admission.kept_files import KeptFiles
from inferplane.runtime.store import Store

REPO = Path(__file__).resolve().parents[2]
CPU_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-cpu"


@pytest.fixture
def recipe(tmp_path):
    folder = tmp_path / "recipe"
    shutil.copytree(CPU_RECIPE, folder)
    return folder


@pytest.fixture
def checks(monkeypatch):
    """The manifests admission checked, by source."""
    checked = []
    admit = admission_files.admit

    def counting(manifest):
        checked.append(Path(manifest.source.split("#")[0]).name)
        return admit(manifest)

    monkeypatch.setattr(admission_files, "admit", counting)
    return checked


def dumped(result):
    return [(m.source, o.model_dump(by_alias=True, mode="json")) for m, o in result.admitted]


def test_an_unchanged_file_yields_the_same_objects_unchecked(tmp_path, recipe, checks):
    store = Store(tmp_path / "state")
    first = admit_paths([recipe], kept=KeptFiles(store))
    assert first.ok and sorted(checks) == ["class.yaml", "cluster.yaml", "model.yaml", "service.yaml", "service.yaml"]
    checks.clear()
    again = admit_paths([recipe], kept=KeptFiles(Store(tmp_path / "state")))
    assert again.ok and checks == []
    assert dumped(again) == dumped(first)
    assert dumped(again) == dumped(admit_paths([recipe]))  # as admitted without a state


def test_a_changed_file_is_checked_again(tmp_path, recipe, checks):
    store = Store(tmp_path / "state")
    admit_paths([recipe], kept=KeptFiles(store))
    checks.clear()
    (recipe / "model.yaml").write_text((recipe / "model.yaml").read_text().replace("replicas: 4", "replicas: -1"))
    result = admit_paths([recipe], kept=KeptFiles(store))
    assert checks == ["model.yaml"]
    assert [e.path for e in result.errors] == ["spec.replicas"]


def test_the_same_bytes_at_another_path_are_checked_and_named_by_their_own_path(tmp_path, recipe, checks):
    store = Store(tmp_path / "state")
    admit_paths([recipe / "class.yaml"], kept=KeptFiles(store))
    other = tmp_path / "copy.yaml"
    other.write_bytes((recipe / "class.yaml").read_bytes())
    checks.clear()
    result = admit_paths([other], kept=KeptFiles(store))
    assert checks == ["copy.yaml"] and [m.source for m, _ in result.admitted] == [str(other)]


def test_a_file_with_an_error_is_never_kept(tmp_path, recipe, checks):
    store = Store(tmp_path / "state")
    (recipe / "model.yaml").write_text((recipe / "model.yaml").read_text().replace("replicas: 4", "replicas: -1"))
    for _ in range(2):
        checks.clear()
        result = admit_paths([recipe], kept=KeptFiles(store))
        assert "model.yaml" in checks and [e.path for e in result.errors] == ["spec.replicas"]


def test_other_admitting_code_checks_every_file_again(tmp_path, recipe, checks, monkeypatch):
    store = Store(tmp_path / "state")
    admit_paths([recipe], kept=KeptFiles(store))
    checks.clear()
    monkeypatch.setattr(admission, "admission_code", lambda: b"another inferplane")
    admit_paths([recipe], kept=KeptFiles(store))
    assert sorted(checks) == ["class.yaml", "cluster.yaml", "model.yaml", "service.yaml", "service.yaml"]


def test_the_checks_across_objects_run_on_kept_files(tmp_path, recipe):
    """The cluster file is admitted on its own; its version against its class's CPU driver is checked
    at every admission."""
    (recipe / "cluster.yaml").write_text((recipe / "cluster.yaml").read_text().replace('"1.36"', '"1.35"'))
    store = Store(tmp_path / "state")
    for _ in range(2):
        result = admit_paths([recipe], kept=KeptFiles(store))
        assert [(e.kind, e.name) for e in result.errors] == [("InferenceCluster", "civo-cpu")]
        assert "1.36" in result.errors[0].message


def test_the_admitting_code_changes_with_our_modules_and_with_any_library_version(monkeypatch):
    admission.admission_code.cache_clear()
    ours = admission.admission_code()
    version = admission.importlib.metadata.version
    monkeypatch.setattr(admission.importlib.metadata, "version",
                        lambda name: "0.0.0" if name == "pydantic" else version(name))
    admission.admission_code.cache_clear()
    assert admission.admission_code() != ours
    monkeypatch.undo()
    read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read_bytes(self) + (b"#" if self.name == "validate.py" else b""))
    admission.admission_code.cache_clear()
    assert admission.admission_code() != ours
    monkeypatch.undo()
    admission.admission_code.cache_clear()
    assert admission.admission_code() == ours


def admitted_as_printed(result):
    return ([str(e) for e in result.errors], [str(n) for n in result.notes], [str(w) for w in result.warnings],
            dumped(result))


def test_many_files_admitted_on_two_cores_say_what_one_core_says(tmp_path, monkeypatch):
    """A fleet's files are admitted by a forked child and this process, half each (admission/files.py): the
    objects, errors, notes and warnings, in the files' order, are those of one process."""
    folder = tmp_path / "files"
    shutil.copytree(REPO / "recipes" / "mixed-fleet", folder)
    (folder / "zz-broken.yaml").write_text("apiVersion: inferplane.dev/v1alpha1\nkind: InferenceCluster\n"
                                           "metadata: {name: broken}\nspec: {nodePools: 3}\n")
    (folder / "zz-not-yaml.yaml").write_text("kind: [unclosed\n")
    (folder / "zz-sa.yaml").write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa, namespace: x}\n")
    one_core = admitted_as_printed(admit_paths([folder], kept=KeptFiles(Store(tmp_path / "one"))))
    monkeypatch.setattr(admission_files, "FORK_MIN", 2)
    forked = []
    real_fork = admission_files.os.fork
    monkeypatch.setattr(admission_files.os, "fork", lambda: forked.append(1) or real_fork())
    two_cores = admitted_as_printed(admit_paths([folder], kept=KeptFiles(Store(tmp_path / "two"))))
    assert forked and two_cores == one_core
    assert one_core[0] and one_core[1] and one_core[3]  # errors, a note and objects, all compared
