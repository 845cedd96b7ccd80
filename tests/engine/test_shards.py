"""A large run starts a helper process that reconciles half of the fleet's clusters beside it (engine/shards.py):
the fleet it leaves is the one a run of one process leaves; a helper that fails, or whose objects a
user changed in mid-run, changes nothing, and the run does its work itself."""

import json

import pytest

from inferplane.engine.control_plane import ControlPlane
from inferplane.engine import shards
from inferplane.runtime.store import STORE_FILE, Key, Store
from inferplane.simulator.synthetic_fleet import write_fleet
from inferplane.simulator.cluster_objects import simulated_objects

CLUSTERS = 12  # every cloud twice, one deployment placed on two of them
ONE_PROCESS = 10**9  # a shard_min no fleet here reaches


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return write_fleet(tmp_path_factory.mktemp("fleet") / "fleet", CLUSTERS, True)


def as_compared(obj):
    """An object less what differs between any two runs: its version, uid, creation time and the times of
    its managedFields entries."""
    obj = json.loads(json.dumps(obj))
    meta = obj["metadata"]
    for field in ("resourceVersion", "uid", "creationTimestamp"):
        meta.pop(field, None)
    for owner in meta.get("ownerReferences") or []:
        owner.pop("uid", None)
    for entry in meta.get("managedFields") or []:
        entry.pop("time", None)
    return obj


def timeless(node):
    """Simulated objects less their creation times (a run's clock)."""
    if isinstance(node, dict):
        return {k: timeless(v) for k, v in node.items() if k != "creationTimestamp"}
    return [timeless(v) for v in node] if isinstance(node, list) else node


def applied(fleet, state, shard_min):
    runtime = ControlPlane(state, shard_min=shard_min)
    result = runtime.apply([fleet])
    assert result.admission.ok and result.report.converged, result.report.unconverged
    return runtime, result.report


@pytest.fixture(scope="module")
def one_process(fleet, tmp_path_factory):
    runtime, report = applied(fleet, tmp_path_factory.mktemp("one") / "state", ONE_PROCESS)
    yield runtime, report
    runtime.close()


def helpers_started(monkeypatch):
    started = []
    real = shards.Helper.__init__

    def counted(self, reconciler, kind, roots):
        started.append(sorted(roots))
        real(self, reconciler, kind, roots)
    monkeypatch.setattr(shards.Helper, "__init__", counted)
    return started


def merges_counted(monkeypatch):
    """What each merge of a helper's work returned (True: merged), in order."""
    merges = []
    real_merge = shards.merge
    monkeypatch.setattr(shards, "merge", lambda store, said: merges.append(real_merge(store, said)) or merges[-1])
    return merges


def assert_same_fleet(runtime, one_process):
    one, _ = one_process
    assert [as_compared(o) for o in runtime.list()] == [as_compared(o) for o in one.list()]
    assert timeless(simulated_objects(runtime.store)) == timeless(simulated_objects(one.store))
    assert runtime.store.queue.queued() == 0
    versions = [int(o["metadata"]["resourceVersion"]) for o in runtime.list()]
    uids = [o["metadata"]["uid"] for o in runtime.list()]
    assert len(set(versions)) == len(versions) and len(set(uids)) == len(uids)
    assert max(versions) <= runtime.store.latest_version()
    # Each body's version is its row's (a watch reads the row's, a get the body's).
    assert not runtime.store._db.execute(
        "SELECT 1 FROM resources WHERE json_extract(body, '$.metadata.resourceVersion') != CAST(rv AS TEXT)").fetchall()


def test_a_helper_reconciles_half_the_clusters_and_the_fleet_is_the_one_a_single_process_makes(
        fleet, tmp_path, one_process, monkeypatch):
    left = tmp_path / "state" / ".helper-killed"  # what a run killed in mid-run left
    left.mkdir(parents=True)
    (left / "store.db").write_bytes(b"a copy of the state")
    started = helpers_started(monkeypatch)
    merges = merges_counted(monkeypatch)
    runtime, report = applied(fleet, tmp_path / "state", shard_min=2)
    assert len(started) == 1 and len(started[0]) == CLUSTERS // 2 and merges == [True]
    assert_same_fleet(runtime, one_process)
    # Every cluster and replica reconciled, by one process or the other, and reported Ready.
    assert {name for name in report.reconciled if name.startswith("InferenceCluster/")} == \
        {name for name in one_process[1].reconciled if name.startswith("InferenceCluster/")}
    assert not [p for p in (tmp_path / "state").iterdir() if p.name.startswith(".helper-")]
    # The next apply of the same files changes nothing.
    assert ControlPlane(tmp_path / "state", shard_min=2).apply([fleet]).report.reconciles == 0


def test_a_helper_runs_this_package_whatever_folder_the_run_is_started_in(fleet, tmp_path, one_process, monkeypatch):
    # A user's working folder holding another `inferplane` (an older checkout, say), which `python -m` would
    # import first: here one that fails at once.
    other = tmp_path / "checkout" / "inferplane"
    (other / "engine").mkdir(parents=True)
    (other / "__init__.py").write_text("raise SystemExit('another checkout')\n")
    (other / "engine" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path / "checkout")
    merges = merges_counted(monkeypatch)
    runtime, _ = applied(fleet, tmp_path / "state", shard_min=2)
    assert merges == [True]  # the helper ran, and its work was merged
    assert_same_fleet(runtime, one_process)


def test_a_helper_that_fails_changes_nothing_and_the_run_does_its_work(fleet, tmp_path, one_process, monkeypatch):
    started = helpers_started(monkeypatch)

    # The helper's process fails at its start: it cannot copy the store.
    real_popen = shards.subprocess.Popen
    monkeypatch.setattr(shards.subprocess, "Popen", lambda args, **options: real_popen(
        [str(tmp_path / "no-such-store.db") if arg.endswith(STORE_FILE) else arg for arg in args], **options))
    runtime, _ = applied(fleet, tmp_path / "state", shard_min=2)
    assert started
    assert_same_fleet(runtime, one_process)


def test_a_user_write_to_a_helpers_cluster_in_mid_run_wins_and_the_run_reconciles_it(
        fleet, tmp_path, one_process, monkeypatch):
    started = helpers_started(monkeypatch)
    real_merge = shards.merge
    edited = []

    def user_edits_first(store, said):
        key = Key("inferplane.dev", "InferenceCluster", "", started[0][0].name)
        current = store.get(key)
        current["metadata"].setdefault("labels", {})["team"] = "search"
        store.put({k: v for k, v in current.items() if k != "status"})
        merged = real_merge(store, said)
        edited.append((key, merged))
        return merged
    monkeypatch.setattr(shards, "merge", user_edits_first)
    runtime, _ = applied(fleet, tmp_path / "state", shard_min=2)
    [(key, merged)] = edited
    assert merged is False  # the helper's work is dropped whole, and done again here
    assert runtime.get(key)["metadata"]["labels"]["team"] == "search"
    assert runtime.store.queue.queued() == 0
    assert timeless(simulated_objects(runtime.store)) == timeless(simulated_objects(one_process[0].store))
    ready = {o["metadata"]["name"]: o["status"]["conditions"] for o in runtime.list("InferenceCluster")}
    assert ready.keys() == {o["metadata"]["name"] for o in one_process[0].list("InferenceCluster")}
    assert all(any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) for conditions in ready.values())


def test_a_run_that_wrote_as_many_versions_as_the_helper_numbers_above_merges_nothing_and_does_its_work(
        fleet, tmp_path, one_process, monkeypatch):
    # The helper numbers its writes HELPER_VERSIONS above the store's version at its copy, so that they
    # merge as they are and newer than the run's; a run that wrote that many meanwhile cannot take them.
    real_merge = shards.merge
    merges = []

    def run_wrote_that_many(store, said):
        store._db.execute("UPDATE counters SET value=? WHERE name='resourceVersion'",
                          (said["since"] + shards.HELPER_VERSIONS,))
        merges.append(real_merge(store, said))
        return merges[-1]
    monkeypatch.setattr(shards, "merge", run_wrote_that_many)
    runtime, _ = applied(fleet, tmp_path / "state", shard_min=2)
    assert merges == [False]
    assert_same_fleet(runtime, one_process)


def test_a_helper_whose_run_is_gone_stops_at_once_and_merges_nothing(fleet, tmp_path, one_process, monkeypatch):
    # The helper is told its run is process 1: the run it knows of is gone, as after a SIGKILL of the run
    # (the helper is then a child of another process).
    real_popen = shards.subprocess.Popen
    monkeypatch.setattr(shards.subprocess, "Popen", lambda args, **options: real_popen([*args[:-1], "1"], **options))
    logs, merges = [], []
    real_stop = shards.Helper.stop

    def stop_read_log(self, reconciler):
        logs.append((self.folder / shards.LOG).read_text())
        real_stop(self, reconciler)
    monkeypatch.setattr(shards.Helper, "stop", stop_read_log)
    monkeypatch.setattr(shards, "merge", lambda store, said: merges.append(said))
    runtime, _ = applied(fleet, tmp_path / "state", shard_min=2)
    assert merges == []
    assert logs and "the run (process 1) that started this helper is gone: stopped" in logs[0]
    assert "Traceback" not in logs[0]
    assert_same_fleet(runtime, one_process)


def test_a_run_without_a_helper_removes_what_a_killed_runs_helper_left(fleet, tmp_path, one_process):
    left = tmp_path / "state" / ".helper-killed"
    left.mkdir(parents=True)
    (left / "store.db").write_bytes(b"a copy of the state")
    runtime, _ = applied(fleet, tmp_path / "state", ONE_PROCESS)
    assert not [p for p in (tmp_path / "state").iterdir() if p.name.startswith(".helper-")]
    assert_same_fleet(runtime, one_process)


def test_the_helper_takes_every_second_root_less_a_few_for_its_later_start(tmp_path, monkeypatch):
    store = Store(tmp_path / "state")
    roots = [Key("inferplane.dev", "InferenceCluster", "", f"c-{i:03d}") for i in range(160)]
    with store.transaction():
        store.queue.enqueue(shards.RECONCILE, roots)
    taken = []
    monkeypatch.setattr(shards, "Helper", lambda reconciler, kind, helper_roots: taken.append(helper_roots))
    monkeypatch.setattr(shards.os, "cpu_count", lambda: 2)
    shards.start_helper(type("Run", (), {"store": store})(), "InferenceCluster", 2)
    # 80 would be half; 160 // 16 = 10 fewer stay with the run (at most HEADSTART_ROOTS).
    assert sorted(taken[0]) == roots[1::2][:70]
    store.close()


def test_every_table_of_the_store_is_merged_or_said_not_to_be(tmp_path):
    # A table added to the schema and not merged would lose what a helper wrote to it.
    runtime = ControlPlane(tmp_path / "state")  # the engine's store: every owner's tables registered
    tables = {row[0] for row in runtime.store.execute("SELECT name FROM sqlite_master WHERE type='table'")
              if not row[0].startswith("sqlite_")}
    runtime.close()
    assert not shards.MERGED_TABLES & set(shards.UNMERGED_TABLES)
    assert tables == shards.MERGED_TABLES | set(shards.UNMERGED_TABLES)


def without_last_pools(fleet, copy):
    """The fleet, copied to `copy`, each cluster less its last node pool (its composed pool goes)."""
    import shutil

    import yaml
    shutil.copytree(fleet, copy)
    for path in sorted(copy.glob("*.yaml")):
        obj = yaml.safe_load(path.read_text())
        if obj["kind"] == "InferenceCluster":
            obj["spec"]["nodePools"] = obj["spec"]["nodePools"][:-1]
            path.write_text(yaml.safe_dump(obj))
    return copy


def stated_events(runtime):
    """Every event less its times (a run's clock), in a stable order."""
    return sorted((str(e["involvedObject"]), e["type"], e["reason"], e["message"], e["count"])
                  for e in runtime.store.event_log.events())


def test_deletions_and_events_a_helper_makes_are_merged_as_one_process_makes_them(fleet, tmp_path, monkeypatch):
    changed = without_last_pools(fleet, tmp_path / "changed")
    runs = {}
    for name, shard_min in (("one", ONE_PROCESS), ("helper", 2)):
        first, _ = applied(fleet, tmp_path / name, ONE_PROCESS)
        before = first.store.count()
        first.close()
        started = helpers_started(monkeypatch) if shard_min == 2 else []
        runs[name], _ = applied(changed, tmp_path / name, shard_min)
        assert runs[name].store.count() < before  # pools (and what they composed) deleted
        assert bool(started) == (name == "helper")
    one, helped = runs["one"], runs["helper"]
    assert [as_compared(o) for o in helped.list()] == [as_compared(o) for o in one.list()]
    assert timeless(simulated_objects(helped.store)) == timeless(simulated_objects(one.store))
    assert any(event[2] == "DeletedComposed" for event in stated_events(one))
    assert stated_events(helped) == stated_events(one)
    assert helped.store.queue.queued() == 0
