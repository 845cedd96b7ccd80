"""A store that cannot be written, or was written by another layout, is a clear error: never a
traceback, never a half-written object."""

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from inferplane.cli.main import cli
from inferplane.engine import store as store_module
from inferplane.engine.store import SCHEMA_VERSION, Store

REPO = Path(__file__).resolve().parents[2]
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"


def run(*args):
    result = CliRunner().invoke(cli, list(map(str, args)))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def opened_with(monkeypatch, pragma):
    """Every store the commands open gets `pragma` right after opening (a fault, injected)."""
    original = Store.__init__

    def faulty(self, path=None, **options):
        original(self, path, **options)
        self._db.execute(pragma)

    monkeypatch.setattr(Store, "__init__", faulty)


@pytest.mark.parametrize("pragma, meaning", [
    ("PRAGMA query_only = ON",
     "the store is read-only: fix the folder's permissions, or pass --state with a writable folder"),
    ("PRAGMA max_page_count = 8",
     "the disk holding the store is full or failing: free some space and run the command again"),
])
def test_a_store_that_cannot_be_written_is_a_clear_error(tmp_path, monkeypatch, pragma, meaning):
    state = tmp_path / "state"
    Store(state).close()
    opened_with(monkeypatch, pragma)
    result = run("apply", "-f", EKS_RECIPE, "--state", state)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: the state in {state} could not be written: {meaning}; every write acknowledged before this one "
        "is kept")
    monkeypatch.undo()
    with sqlite3.connect(state / "store.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # Whatever was acknowledged is readable; nothing half-written stands in the way of a retry.
    assert run("apply", "-f", EKS_RECIPE, "--state", state).exit_code == 0


def test_the_store_records_its_schema_version_and_refuses_a_newer_one(tmp_path):
    state = tmp_path / "state"
    Store(state).close()
    with sqlite3.connect(state / "store.db") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    result = run("fleet", "--state", state)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: cannot open the state in {state}: its store has schema version 4 and this inferplane knows only up "
        "to 3: use the inferplane that wrote it, or another --state")


def test_a_store_from_before_versioning_is_adopted(tmp_path):
    state = tmp_path / "state"
    Store(state).close()
    with sqlite3.connect(state / "store.db") as db:
        db.execute("PRAGMA user_version = 0")
    assert run("apply", "-f", EKS_RECIPE / "class.yaml", "--state", state).exit_code == 0
    with sqlite3.connect(state / "store.db") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (store_module.SCHEMA_VERSION,)


CPU_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-cpu"


def store_class_in_an_older_shape(state: Path) -> None:
    """A class as inferplane stored it before capacities took DRA's {value} form."""
    import yaml

    body = yaml.safe_load((CPU_RECIPE / "class.yaml").read_text())
    body["spec"]["devices"][0]["capacity"] = {"cpu": "4"}
    store = Store(state)
    with store.transaction():
        store.put(body)
    store.close()


def test_a_class_stored_in_an_older_shape_is_replaced_by_applying_it_again(tmp_path):
    state = tmp_path / "state"
    store_class_in_an_older_shape(state)
    result = run("apply", "-f", CPU_RECIPE, "--state", state)
    assert result.exit_code == 0, result.output
    assert "inferenceclass.inferplane.dev/civo-cpu-medium configured" in result.output
    table = run("get", "ic", "civo-cpu", "--state", state).output
    assert table.splitlines()[1].split()[:4] == ["civo-cpu", "Civo", "True", "Available"]


def test_a_cluster_on_a_class_stored_in_an_older_shape_says_the_class_is_unreadable(tmp_path):
    state = tmp_path / "state"
    store_class_in_an_older_shape(state)
    result = run("apply", "-f", CPU_RECIPE / "cluster.yaml", "--state", state)
    assert result.exit_code == 0, result.output
    described = run("describe", "ic", "civo-cpu", "--state", state).output
    assert ("Ready          False    InvalidClass       InferenceClass civo-cpu-medium is invalid: "
            "spec.devices.0.capacity.cpu: Input should be a valid dictionary") in described
