"""The SQLite store: generation, resourceVersion, status kept across spec writes, atomic transactions."""

import pytest

from inferplane.engine.store import Key, Store, uid_for

CLASS = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "l4"},
         "spec": {"devices": [{"name": "gpu"}]}}
KEY = Key("inferplane.dev", "InferenceClass", "", "l4")


def test_generation_counts_spec_changes_and_resource_version_every_write(tmp_path):
    store = Store(tmp_path)
    stored, changed = store.put(CLASS)
    assert changed and stored["metadata"]["generation"] == 1
    assert stored["metadata"]["uid"] == uid_for(KEY)
    first_version = int(stored["metadata"]["resourceVersion"])

    assert store.put(CLASS) == (stored, False), "an identical write is no change"
    after_status, changed = store.put({**stored, "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert changed
    assert after_status["metadata"]["generation"] == 1
    assert int(after_status["metadata"]["resourceVersion"]) > first_version

    changed_spec = {**CLASS, "spec": {"devices": [{"name": "gpu"}, {"name": "cpu"}]}}
    stored, changed = store.put(changed_spec)
    assert changed and stored["metadata"]["generation"] == 2
    assert stored["status"] == after_status["status"], "a spec write keeps the status"


def test_a_failed_transaction_leaves_nothing(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.put(CLASS)
            raise RuntimeError("crash mid-apply")
    assert store.get(KEY) is None


def test_writes_survive_reopening(tmp_path):
    store = Store(tmp_path)
    store.put(CLASS)
    store.record_event(KEY, "Warning", "Reason", "message")
    store.record_event(KEY, "Warning", "Reason", "message")
    store.close()
    reopened = Store(tmp_path)
    assert reopened.get(KEY)["spec"] == CLASS["spec"]
    assert reopened.events(KEY) == [{"type": "Warning", "reason": "Reason", "message": "message"}]
    assert reopened._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_only_consecutive_repeats_of_an_event_are_dropped():
    store = Store()
    store.put(CLASS)
    for reason in ("First", "First", "Second", "First"):
        store.record_event(KEY, "Normal", reason, "message")
    assert [e["reason"] for e in store.events(KEY)] == ["First", "Second", "First"]
