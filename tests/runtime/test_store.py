"""The SQLite store: generation, resourceVersion, optimistic concurrency, spec and status kept apart,
atomic transactions, the work queue, and a clear error when another process keeps it locked."""

import multiprocessing
import sqlite3
import threading
import time

import pytest

from inferplane.runtime import checkpointer, store_file
from inferplane.runtime.store import Conflict, Key, Store, StoreBusy, uid_for

CLASS = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "l4"},
         "spec": {"devices": [{"name": "gpu"}]}}
KEY = Key("inferplane.dev", "InferenceClass", "", "l4")
READY = {"conditions": [{"type": "Ready", "status": "True"}]}


def based_on(obj, version):
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}


def test_generation_counts_spec_changes_and_resource_version_every_write(tmp_path):
    store = Store(tmp_path)
    stored, changed = store.put(CLASS)
    assert changed and stored["metadata"]["generation"] == 1
    assert stored["metadata"]["uid"] == uid_for(KEY, 1)
    assert stored["metadata"]["resourceVersion"] == "1"

    assert store.put(based_on(CLASS, "1")) == (stored, False), "an identical write is no change"
    after_status, changed = store.put_status(KEY, READY, stored)
    assert changed and after_status["metadata"]["generation"] == 1
    assert after_status["metadata"]["resourceVersion"] == "2"

    changed_spec = {**CLASS, "spec": {"devices": [{"name": "gpu"}, {"name": "cpu"}]}}
    stored, changed = store.put(based_on(changed_spec, "2"))
    assert changed and stored["metadata"]["generation"] == 2
    assert stored["status"] == READY, "a spec write keeps the status"
    assert store.get(KEY) == stored


def test_an_object_created_again_is_a_new_object_with_a_uid_of_its_own():
    """As Kubernetes' uids: what knew the deleted object (a composite's owner references, a simulation's
    inputs) tells the new one apart. The same writes give the same uids in another store."""
    store, again = Store(None), Store(None)
    first, _ = store.put(CLASS)
    assert store.delete(KEY)
    second, _ = store.put(CLASS)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    assert store.put(based_on(CLASS, second["metadata"]["resourceVersion"]))[0]["metadata"]["uid"] == \
        second["metadata"]["uid"], "an update keeps the uid"
    assert again.put(CLASS)[0]["metadata"]["uid"] == first["metadata"]["uid"]


def test_a_write_based_on_a_stale_version_is_refused():
    store = Store(None)
    first, _ = store.put(CLASS)
    store.put_status(KEY, READY, first)
    stale_spec = {**CLASS, "spec": {"devices": [{"name": "cpu"}]}}
    with pytest.raises(Conflict, match=r"InferenceClass/l4: the write was based on resourceVersion 1, but it is at 2"):
        store.put(based_on(stale_spec, "1"))
    with pytest.raises(Conflict, match="based on resourceVersion 1, but it is at 2"):
        store.put(based_on(stale_spec, "1"), known=first)
    with pytest.raises(Conflict, match="based on resourceVersion 1, but it is at 2"):
        store.put_status(KEY, {"conditions": []}, first)
    with pytest.raises(Conflict, match=r"based on resourceVersion \(none: a create\), but it is at 2"):
        store.put(CLASS)
    gone = based_on({**CLASS, "metadata": {"name": "gone"}}, "9")
    with pytest.raises(Conflict, match="based on resourceVersion 9, but it does not exist"):
        store.put_status(Key("inferplane.dev", "InferenceClass", "", "gone"), READY, gone)
    assert store.get(KEY)["spec"] == CLASS["spec"] and store.get(KEY)["status"] == READY


def test_spec_writes_never_touch_status_and_status_writes_never_touch_spec():
    store = Store(None)
    created, _ = store.put({**CLASS, "status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert "status" not in created, "a user's write carries no status"
    with_status, _ = store.put_status(KEY, READY, created)
    respecced, _ = store.put(based_on({**CLASS, "spec": {"devices": []}}, with_status["metadata"]["resourceVersion"]))
    assert respecced["status"] == READY
    restatused, _ = store.put_status(KEY, {"note": "x"}, respecced)
    assert restatused["spec"] == {"devices": []} and restatused["status"] == {"note": "x"}


def test_readers_watch_what_changed_since_a_version():
    store = Store(None)
    store.put(CLASS)
    other = {**CLASS, "metadata": {"name": "h100"}}
    store.put(other)
    store.put_status(KEY, READY, store.get(KEY))
    assert store.latest_version() == 3
    assert [(key.name, version) for key, version, _ in store.rows_changed_since(1)] == [("h100", 2), ("l4", 3)]
    assert store.rows_changed_since(3) == []


def test_a_failed_transaction_leaves_nothing(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put(CLASS)
            store.queue.enqueue("reconcile", [KEY])
            raise RuntimeError("crash mid-apply")
    assert store.get(KEY) is None
    assert store.queue.next_item() is None
    assert store.latest_version() == 0, "a rolled-back write takes no resourceVersion"
    assert store.put(CLASS)[0]["metadata"]["resourceVersion"] == "1"


def test_resource_versions_keep_counting_across_transactions_and_connections(tmp_path):
    store, other = Store(tmp_path), Store(tmp_path)
    with store.transaction():
        first, _ = store.put(CLASS)
        store.put_status(KEY, READY, first)
        assert store.latest_version() == 2, "a transaction sees its own writes' versions"
    assert other.latest_version() == 2
    created, _ = other.put({**CLASS, "metadata": {"name": "h100"}})
    assert created["metadata"]["resourceVersion"] == "3"
    assert store.put_status(KEY, {"note": "x"}, store.get(KEY))[0]["metadata"]["resourceVersion"] == "4"


def test_writes_survive_reopening(tmp_path):
    store = Store(tmp_path)
    store.put(CLASS)
    store.event_log.record(KEY, "Warning", "Reason", "message")
    store.event_log.record(KEY, "Warning", "Reason", "message")
    store.queue.enqueue("reconcile", [KEY])
    store.close()
    reopened = Store(tmp_path)
    assert reopened.get(KEY)["spec"] == CLASS["spec"]
    assert [(e["type"], e["reason"], e["message"], e["count"]) for e in reopened.event_log.events(KEY)] == [
        ("Warning", "Reason", "message", 2)]
    assert reopened.queue.next_item() == ("reconcile", KEY, 0)
    assert reopened._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_queue_is_first_in_first_out_by_priority_and_keeps_an_item_queued_again_while_worked_on():
    store = Store(None)
    a, b, c = (Key("inferplane.dev", "InferenceCluster", "", n) for n in "abc")
    store.queue.enqueue("simulate", [a], priority=1)
    store.queue.enqueue("reconcile", [b, c])
    store.queue.enqueue("reconcile", [b])  # already queued: keeps its place
    assert store.queue.queued() == 3
    work, key, bumps = store.queue.next_item()
    assert (work, key, bumps) == ("reconcile", b, 1)
    store.queue.enqueue("reconcile", [b])  # written again while b was being reconciled
    store.queue.done(work, key, bumps)
    assert store.queue.next_item() == ("reconcile", b, 2), "b stays queued: what it read may be stale"
    store.queue.done("reconcile", b, 2)
    assert store.queue.next_item() == ("reconcile", c, 0)
    store.queue.done("reconcile", c, 0)
    assert store.queue.next_item() == ("simulate", a, 0)


def test_requirements_say_who_watches_an_object():
    store = Store(None)
    x, y = Key("inferplane.dev", "InferenceCluster", "", "x"), Key("inferplane.dev", "InferenceCluster", "", "y")
    store.requirements.set(x, [KEY])
    store.requirements.set(y, [KEY])
    assert store.requirements.watchers(KEY) == [x, y]
    store.requirements.set(x, [])
    assert store.requirements.watchers(KEY) == [y]
    store.delete(y)
    assert store.requirements.watchers(KEY) == []


def test_a_store_locked_by_another_process_is_reported_once_the_wait_is_over(tmp_path):
    Store(tmp_path).close()
    holder = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    store = Store(tmp_path, busy_timeout=0.2)
    with pytest.raises(StoreBusy) as caught:
        store.put(CLASS)
    assert str(caught.value) == (
        f"{tmp_path / 'store.db'} stayed locked by another process for 0.2 s: wait for the other inferplane command "
        "(or whatever holds the file) to finish, then run this command again")
    holder.execute("ROLLBACK")
    assert store.put(CLASS)[1], "the store works once it is free"


def test_the_reconciler_lets_a_waiting_writer_in_between_batches_and_pauses_for_nobody_else(tmp_path, monkeypatch):
    """A user's write announces itself while it waits for the write lock; between two batches the reconciler
    waits for such writers to be done before taking the lock again, and goes straight on when there are none."""
    monkeypatch.setattr(store_file, "WRITERS_WAIT_SECONDS", 60.0)
    reconciler_store = Store(tmp_path)
    assert reconciler_store.database.let_writers_in() is False, "nobody waits: no pause"
    in_transaction, release, order = threading.Event(), threading.Event(), []

    def user_write():
        writer_store = Store(tmp_path)
        with writer_store.transaction():
            writer_store.put(CLASS)
            in_transaction.set()
            release.wait(timeout=60)
            order.append("user's write committed")
        writer_store.close()

    writer = threading.Thread(target=user_write)
    writer.start()
    assert in_transaction.wait(timeout=60)
    threading.Timer(0.1, release.set).start()
    assert reconciler_store.database.let_writers_in() is True
    order.append("reconciler goes on")
    writer.join(timeout=60)
    assert order == ["user's write committed", "reconciler goes on"]
    assert reconciler_store.get(KEY) is not None
    assert reconciler_store.database.let_writers_in() is False, "the writer is gone: no pause"
    with reconciler_store.transaction(durable=False):
        other = Store(tmp_path)
        assert other.database.let_writers_in() is False, "the reconciler's own transaction is not announced"


def test_a_long_run_of_batches_checkpoints_on_a_thread_and_the_log_starts_over(tmp_path, monkeypatch):
    """While the reconciler commits batch after batch, a thread copies the write-ahead log into the database
    and, once the log is long, the next batch waits for it so that the log starts over: it stays a few
    batches long (without the thread it would hold every batch: 1,600 pages here) and nothing written is lost."""
    monkeypatch.setattr(checkpointer, "RESTART_PAGES", 50)
    store = Store(tmp_path)
    padding = "x" * 16_000  # four pages of 4 KiB an object: ten objects a batch, 40 batches, 1,600 pages
    # Each batch takes a little while, as the reconciler's do (0.2 s each), for the thread to keep up.
    with store.checkpoints_in_background():
        assert any(t.name == "inferplane-checkpointer" for t in threading.enumerate())
        assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0, "the writer leaves it to the thread"
        for batch in range(40):
            with store.transaction(durable=False):
                for i in range(10):
                    store.put({**CLASS, "metadata": {"name": f"c-{batch}-{i}", "annotations": {"pad": padding}}})
                time.sleep(0.01)
    wal = store.file.with_name(store.file.name + "-wal")
    assert wal.stat().st_size < 800 * 4096, f"the log grew to {wal.stat().st_size} bytes"
    assert not any(t.name == "inferplane-checkpointer" for t in threading.enumerate())
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == checkpointer.AUTOCHECKPOINT_PAGES
    store.close()
    reopened = Store(tmp_path)
    assert reopened.count() == 400


def _open_when_all_are_ready(path, barrier, outcomes):
    barrier.wait()
    try:
        Store(path).close()
        outcomes.put("opened")
    except Exception as exc:  # noqa: BLE001 - the test reports whatever went wrong
        outcomes.put(f"{type(exc).__name__}: {exc}")


def test_commands_started_together_on_a_new_state_folder_all_open_it(tmp_path):
    """Two `inferplane apply` started at once on a new folder both set it up; SQLite refused one of
    them at once (about one open in a hundred) before setting up was serialised."""
    context = multiprocessing.get_context("fork")
    processes_per_trial, trials = 6, 60
    outcomes = context.Queue()
    for trial in range(trials):
        barrier = context.Barrier(processes_per_trial)
        processes = [context.Process(target=_open_when_all_are_ready, args=(tmp_path / str(trial), barrier, outcomes))
                     for _ in range(processes_per_trial)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=60)
        failures = [o for o in (outcomes.get(timeout=10) for _ in processes) if o != "opened"]
        assert failures == [], f"trial {trial}: {failures}"


def test_a_repeated_event_counts_instead_of_being_appended():
    store = Store()
    store.put(CLASS)
    for reason in ("First", "First", "Second", "First"):
        store.event_log.record(KEY, "Normal", reason, "message")
    assert [(e["reason"], e["count"]) for e in store.event_log.events(KEY)] == [("First", 3), ("Second", 1)]


def test_a_version_2_store_gains_event_counts(tmp_path):
    import sqlite3

    with sqlite3.connect(tmp_path / "store.db") as db:
        db.executescript("CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, api_group TEXT NOT NULL, "
                         "kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, "
                         "reason TEXT NOT NULL, message TEXT NOT NULL); PRAGMA user_version = 2;")
        db.execute("INSERT INTO events (api_group, kind, namespace, name, type, reason, message) VALUES "
                   "('inferplane.dev', 'InferenceClass', '', 'l4', 'Warning', 'Old', 'kept')")
    store = Store(tmp_path)
    store.event_log.record(KEY, "Warning", "Old", "kept")
    assert [(e["reason"], e["count"]) for e in store.event_log.events(KEY)] == [("Old", 2)]


def test_a_store_from_before_versions_and_owners_were_indexed_gains_them_from_its_bodies(tmp_path):
    import orjson

    owner = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "name": "eks", "uid": "u-1",
             "controller": True}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "cm", "namespace": "default", "uid": "u-2", "resourceVersion": "7", "ownerReferences": [owner]}}
    with sqlite3.connect(tmp_path / "store.db") as db:
        db.executescript("CREATE TABLE resources (api_group TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, "
                         "name TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (api_group, kind, namespace, name));"
                         "PRAGMA user_version = 1;")
        db.execute("INSERT INTO resources VALUES ('', 'ConfigMap', 'default', 'cm', ?)", (orjson.dumps(body).decode(),))
    store = Store(tmp_path)  # the columns are added and filled in setup's own transactions
    key = Key("", "ConfigMap", "default", "cm")
    assert store.get(key) == body
    assert store._db.execute("SELECT rv, uid, controller FROM resources").fetchone() == (7, "u-2", "u-1")
    store.close()


def test_a_second_store_in_one_process_leaves_the_first_seeing_other_processes_writes(tmp_path):
    # A server opens a store a thread; opening (and closing) another must not drop the first one's locks,
    # or a writer process closing last would remove the write-ahead log the first one still reads.
    import subprocess
    import sys

    first = Store(tmp_path)
    key = Key("", "ConfigMap", "default", "from-another-process")
    assert first.get(key) is None
    Store(tmp_path).close()
    writer = ("import sys; from pathlib import Path; from inferplane.runtime.store import Store; "
              "s = Store(Path(sys.argv[1])); s.put({'apiVersion': 'v1', 'kind': 'ConfigMap', "
              "'metadata': {'name': sys.argv[2], 'namespace': 'default'}}); s.close()")
    for name in ("from-another-process", "and-again"):
        subprocess.run([sys.executable, "-c", writer, str(tmp_path), name], check=True)
        assert first.get(Key("", "ConfigMap", "default", name)) is not None, name
    first.close()


def test_a_field_index_finds_its_kind_by_the_field_and_replaces_the_index_schema_4_kept_over_every_kind(tmp_path):
    store = Store(tmp_path)
    # Schema 4's index parsed every row's body on every write, whatever its kind.
    store._db.execute("CREATE INDEX field_spec_clusterName ON resources (kind, json_extract(body, '$.spec.clusterName'))")
    replica = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelReplica",
               "metadata": {"name": "r", "namespace": "default"}, "spec": {"clusterName": "eks-a"}}
    other = {**replica, "kind": "ModelDeployment", "metadata": {"name": "d", "namespace": "default"}}
    store.put(replica)
    store.put(other)
    found = store.rows_by_field("ModelReplica", "spec.clusterName", "eks-a")
    assert [key.name for key, _, _ in found] == ["r"]
    assert store.rows_by_field("ModelReplica", "spec.clusterName", "eks-b") == []
    indexes = {name for (name,) in store._db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "field_ModelReplica_spec_clusterName" in indexes and "field_spec_clusterName" not in indexes
    plan = store._db.execute("EXPLAIN QUERY PLAN SELECT body FROM resources WHERE "
                             "CASE WHEN kind='ModelReplica' THEN json_extract(body, '$.spec.clusterName') END = 'x'")
    assert "field_ModelReplica_spec_clusterName" in str(plan.fetchall())
    with pytest.raises(ValueError, match="not a kind"):
        store.index_field("Model'Replica", "spec.clusterName")


def test_uids_grow_as_objects_are_created_and_stay_unique_past_32_bits_of_versions():
    # The store's uid index takes each new uid at its end only if uids grow with creation.
    store = Store(None)
    uids = [store.put({**CLASS, "metadata": {"name": f"c{i}"}})[0]["metadata"]["uid"] for i in range(300)]
    assert uids == sorted(uids) and len(set(uids)) == 300
    assert uid_for(KEY, 7) != uid_for(KEY, 7 + 2 ** 32), "the version's low bits lead; the digest keeps them apart"
    assert uid_for(KEY, 7) != uid_for(Key("inferplane.dev", "InferenceClass", "", "other"), 7)


def test_an_owners_tables_are_made_once_inside_the_callers_transaction_and_kept(tmp_path):
    from inferplane.runtime.schema import Tables

    shelves = Tables("toy", ("CREATE TABLE IF NOT EXISTS toy_shelves (name TEXT PRIMARY KEY)",))
    store = Store(tmp_path)
    with pytest.raises(RuntimeError), store.transaction():
        store.register_tables(shelves)
        store.execute("INSERT INTO toy_shelves VALUES ('a')")
        raise RuntimeError("rolled back, the table with it")
    assert not store.execute("SELECT 1 FROM sqlite_master WHERE name='toy_shelves'").fetchall()
    with store.transaction():
        store.register_tables(shelves)
        store.execute("INSERT INTO toy_shelves VALUES ('a')")
    store.close()
    assert Store(tmp_path).execute("SELECT name FROM toy_shelves").fetchall() == [("a",)]


def test_managed_fields_stay_in_the_store_not_in_the_reconcilers_cache(tmp_path):
    """The reconciler's cache holds no managedFields; its writes of a user's object (a status, a finalizer
    removed) keep the ones stored, and a user's write with new ones replaces them."""
    from inferplane.runtime.cache import Cache

    managers = [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:devices": {}}}}]
    store = Store(tmp_path)
    written = {**CLASS, "metadata": {**CLASS["metadata"], "finalizers": ["keep"], "managedFields": managers}}
    store.put(written)
    cached = Cache(store).get(KEY)
    assert "managedFields" not in cached["metadata"]

    after_status, changed = store.put_status(KEY, READY, cached)
    assert changed and "managedFields" not in after_status["metadata"]
    assert store.get(KEY)["metadata"]["managedFields"] == managers
    assert store.put(after_status, known=after_status) == (after_status, False), "the same object, unchanged"

    unfinalized = {**after_status, "metadata": {**after_status["metadata"], "finalizers": []}}
    store.put(unfinalized, known=after_status)
    assert store.get(KEY)["metadata"]["managedFields"] == managers

    others = [{**managers[0], "manager": "argocd-controller"}]
    current = store.get(KEY)
    store.put({**current, "metadata": {**current["metadata"], "managedFields": others}})
    assert store.get(KEY)["metadata"]["managedFields"] == others
