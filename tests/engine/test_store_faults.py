"""A store that cannot be written, or was written by another layout, is a clear error: never a
traceback, never a half-written object."""

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from inferplane.cli.main import cli
from inferplane.runtime import store as store_module
from inferplane.runtime.store import SCHEMA_VERSION, Store

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


READ_ONLY_FIX = ("commands that only read it (get, describe, trace, explain, route, fleet, diff) still work: to "
                 "change it, make the folder and its files writable to this user (or run as their owner), or copy the "
                 "folder somewhere writable and pass --state there")


@pytest.mark.parametrize("pragma, message", [
    ("PRAGMA query_only = ON",
     "cannot write the state in {state}: SQLite says attempt to write a readonly database (SQLITE_READONLY); "
     + READ_ONLY_FIX),
    ("PRAGMA max_page_count = 8",
     "the state in {state} could not be written: the disk holding the store is full or failing: free some space and "
     "run the command again; every write acknowledged before this one is kept"),
])
def test_a_store_that_cannot_be_written_is_a_clear_error(tmp_path, monkeypatch, pragma, message):
    state = tmp_path / "state"
    Store(state).close()
    opened_with(monkeypatch, pragma)
    result = run("apply", "-f", EKS_RECIPE, "--state", state)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == "Error: " + message.format(state=state)
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
        f"Error: cannot open the state in {state}: its store has schema version {SCHEMA_VERSION + 1} and this inferplane "
        f"knows only up to {SCHEMA_VERSION}: use the inferplane that wrote it, or another --state")


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


# ---- a state read-only to the command, a file that is not a state, a damaged store: each through the
# command as a user runs it (a subprocess), each with its own message and fix, never a stored row.

def command(*args, prefix=()):
    done = subprocess.run([*prefix, sys.executable, "-m", "inferplane", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    """A state with the EKS recipe applied, copied fresh by each test."""
    state = tmp_path_factory.mktemp("applied") / "state"
    assert command("apply", "-f", EKS_RECIPE, "--state", state).returncode == 0
    return state


def copy_of(applied, tmp_path):
    state = tmp_path / "state"
    shutil.copytree(applied, state)
    return state


def read_only_tree(state: Path, folder_too: bool):
    for file in state.iterdir():
        file.chmod(0o444)
    if folder_too:
        state.chmod(0o555)


def ageless(text: str) -> str:
    """Output with its ages (AGE, LAST SEEN: 9s, 2m3s) and the spaces that align them taken out."""
    return " ".join(re.sub(r"\b\d+[smhd](\d+[smh])?\b", "<age>", text).split())


def timeless(text: str) -> str:
    """A summary line with its time taken ("in 0.3 s") set aside."""
    return re.sub(r"\bin \d+(\.\d+)? s\b", "in <time>", text)


READS = [("get", "icluster"), ("describe", "icluster", "eks-l4"), ("trace", "icluster", "eks-l4"),
         ("get", "events"), ("fleet",), ("why", "md", "qwen2-5-0-5b-l4"), ("diff", "-f", EKS_RECIPE),
         ("apply", "--dry-run", "-f", EKS_RECIPE), ("metrics", "rules", "--cluster", "eks-l4")]
WRITES = [("apply", "-f", EKS_RECIPE), ("delete", "md", "qwen2-5-0-5b-l4"),
          ("scale", "md", "qwen2-5-0-5b-l4", "--replicas", "1")]


@pytest.mark.parametrize("folder_too", [True, False], ids=["read-only folder", "read-only files"])
def test_a_read_only_state_is_read_and_a_write_says_what_is_read_only_and_the_fix(applied, tmp_path, folder_too,
                                                                                    unprivileged):
    state = copy_of(applied, tmp_path)
    expected = {tuple(map(str, read)): command(*read, "--state", state) for read in READS}
    read_only_tree(state, folder_too)
    prefix = unprivileged
    try:
        # The premise, checked: the command really may not write here.
        assert subprocess.run([*prefix, "test", "-w", state if folder_too else state / "store.db"]).returncode == 1
        before = {f.name: f.read_bytes() for f in state.iterdir()}
        for read, writable in expected.items():
            done = command(*read, "--state", state, prefix=prefix)
            # Standard error as on a writable state: nothing, or a dry run's summary line (its time aside).
            assert (done.returncode, timeless(done.stderr)) == (0, timeless(writable.stderr)), read
            assert ageless(done.stdout) == ageless(writable.stdout), read
        read_only = state if folder_too else state / "store.db"
        for write in WRITES:
            done = command(*write, "--state", state, prefix=prefix)
            assert done.returncode == 1, write
            assert done.stderr == (f"Error: cannot write the state in {state}: {'the folder ' if folder_too else ''}"
                                   f"{read_only} is read-only to this process; {READ_ONLY_FIX}\n"), write
        assert {f.name: f.read_bytes() for f in state.iterdir() if f.name in before} == before
    finally:
        state.chmod(0o755)
    # Writable again, the state is whole: the scale refused above is done now.
    for file in state.iterdir():
        file.chmod(0o644)
    assert command("scale", "md", "qwen2-5-0-5b-l4", "--replicas", "1", "--state", state).returncode == 0


NOT_A_STATE_FIX = ("if --state names the wrong folder, pass the right one; otherwise move {state} aside and apply "
                   "your manifests again to start a new state")


def sqlite_of_another_program(file: Path) -> None:
    with sqlite3.connect(file) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('a private note')")


@pytest.mark.parametrize("make, why", [
    (lambda file: file.write_bytes(b""), "it is empty (0 bytes)"),
    (lambda file: file.write_bytes(b"SQLite format 3\x00\x10\x00"),
     "it is cut short: 18 bytes, less than a database's 100-byte header"),
    (lambda file: file.write_text("not a database"), "it is not a SQLite database"),
    (sqlite_of_another_program, "it is another program's SQLite database (none of its tables is inferplane's)"),
], ids=["empty", "cut short", "not SQLite", "another program's"])
def test_a_file_that_is_not_a_state_is_refused_never_taken_for_a_new_one(tmp_path, make, why):
    state = tmp_path / "state"
    state.mkdir()
    make(state / "store.db")
    before = (state / "store.db").read_bytes()
    for args in (("get", "icluster"), ("apply", "-f", EKS_RECIPE)):
        done = command(*args, "--state", state)
        assert done.returncode == 1, args
        assert done.stderr == (f"Error: {state / 'store.db'} is not an inferplane state: {why}: "
                               f"{NOT_A_STATE_FIX.format(state=state)}\n"), args
    assert (state / "store.db").read_bytes() == before, "the file is left as it was"


def test_a_new_state_is_renamed_into_place_whole_and_a_set_up_that_died_is_redone(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "store.db.new").write_bytes(b"")  # a set-up killed before it finished
    assert command("apply", "-f", EKS_RECIPE / "class.yaml", "--state", state).returncode == 0
    assert sorted(f.name for f in state.iterdir()) == ["store.db", "store.lock"]
    assert command("get", "iclass", "eks-l4", "--state", state).returncode == 0


def overwrite(file: Path, needle: bytes, garbage: bytes) -> None:
    """Overwrite the bytes just after each copy of `needle` in the file (the row and any older version
    of it on a free page)."""
    data = file.read_bytes()
    assert needle in data
    file.write_bytes(data.replace(needle, needle[:-len(garbage)] + garbage))


def smash_a_page(file: Path) -> None:
    """Random bytes over a table's page (the second, the first after the schema's)."""
    import random

    page = int.from_bytes(file.read_bytes()[16:18], "big")
    data = bytearray(file.read_bytes())
    data[page:2 * page] = random.Random(1).randbytes(page)
    file.write_bytes(bytes(data))


CLUSTER_BODY = b'"kind":"InferenceCluster","metadata":{"name":"eks-l4"'


@pytest.mark.parametrize("damage, why", [
    (smash_a_page, "SQLite says database disk image is malformed (SQLITE_CORRUPT)"),
    (lambda file: overwrite(file, CLUSTER_BODY, b"\xff\xfe\xfd"), "a stored text is not UTF-8"),
    (lambda file: overwrite(file, CLUSTER_BODY, b"}{}{"), "a stored object does not read as JSON"),
], ids=["random page", "bytes not UTF-8", "text not JSON"])
def test_a_damaged_store_says_so_and_the_fix_never_a_stored_row(applied, tmp_path, damage, why):
    state = copy_of(applied, tmp_path)
    damage(state / "store.db")
    done = command("get", "icluster", "--state", state)
    assert done.returncode == 1
    assert done.stderr == (f"Error: {state / 'store.db'} is damaged: {why}: move {state} aside (keep it: `sqlite3 "
                           f"{state / 'store.db'} .recover` may save what it held) and apply your manifests again to "
                           "start a new state\n")


def test_a_read_only_state_that_needs_upgrading_or_holds_unfolded_writes_says_what_it_needs(applied, tmp_path,
                                                                                           unprivileged):
    older = copy_of(applied, tmp_path / "older")
    with sqlite3.connect(older / "store.db") as db:
        db.execute("PRAGMA user_version = 2")
    logged = tmp_path / "logged" / "state"
    logged.mkdir(parents=True)
    shutil.copy(applied / "store.db", logged / "store.db")
    writer = sqlite3.connect(logged / "store.db", isolation_level=None)  # a writer that stopped before folding its log
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE counters SET value = value + 1")
    shutil.copy(logged / "store.db-wal", tmp_path / "wal")
    writer.close()
    (logged / "store.db-shm").unlink(missing_ok=True)
    shutil.copy(tmp_path / "wal", logged / "store.db-wal")
    prefix = unprivileged
    expected = {
        older: f"{older / 'store.db'} has schema version 2, older than this inferplane's {SCHEMA_VERSION}, and the "
               f"folder {older} is "
               "read-only to this process: this inferplane reads it once a command that may write the folder "
               "(`inferplane apply`) has brought it up to date; or read it with the inferplane that wrote it",
        logged: f"{logged / 'store.db-wal'} holds writes not yet in {logged / 'store.db'}, and the folder {logged} is "
                f"read-only to this process: only a process that may write the folder reads them; make {logged} "
                "writable to this user, or read it as the user who owns it"}
    for state, message in expected.items():
        read_only_tree(state, folder_too=True)
        try:
            done = command("get", "icluster", "--state", state, prefix=prefix)
        finally:
            state.chmod(0o755)
        assert (done.returncode, done.stderr) == (1, f"Error: {message}\n")


def test_a_store_this_user_may_not_read_says_so(applied, tmp_path, unprivileged):
    state = copy_of(applied, tmp_path)
    (state / "store.db").chmod(0)
    done = command("get", "icluster", "--state", state, prefix=unprivileged)
    assert (done.returncode, done.stderr) == (1, (
        f"Error: {state / 'store.db'} is not readable by this process: make it readable to this user (or run as its "
        "owner), or pass --state with a folder this user may read\n"))


def test_a_command_that_only_reads_leaves_an_older_store_as_it_is_and_says_apply_upgrades_it(applied, tmp_path):
    """`get` and the other readers are read-only even where they may write: a store of an older layout is
    refused, byte for byte unchanged, naming the command that brings it up to date; that one still does."""
    state = copy_of(applied, tmp_path)
    with sqlite3.connect(state / "store.db") as db:
        db.execute("PRAGMA user_version = 2")
    db.close()
    before = (state / "store.db").read_bytes()
    for read in READS:
        done = command(*read, "--state", state)
        assert (done.returncode, done.stderr) == (1, (
            f"Error: {state / 'store.db'} has schema version 2, older than this inferplane's {SCHEMA_VERSION}: this "
            "command only reads, and leaves the store as it is: run a command that writes it (`inferplane apply`) "
            "to bring it up to date, then read it; or read it with the inferplane that wrote it\n")), read
        assert (state / "store.db").read_bytes() == before, read
    assert command("apply", "-f", EKS_RECIPE, "--state", state).returncode == 0
    with sqlite3.connect(state / "store.db") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    db.close()
    assert command("get", "icluster", "--state", state).returncode == 0
