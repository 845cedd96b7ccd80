"""The engine's scale-out: for a large run, a helper process reconciles half of the fleet's trees beside
this one. The runtime knows nothing of it: it drives the reconciler through `Reconciler.run(owns=...)`
(which sets aside what another worker owns) and the store through its public interface.

A run whose queue holds many roots of the shard kind (an InferenceCluster is the root of a tree of
composed objects that no other tree writes) starts a helper process before its first batch, on a
machine with more than one core. The run parks the helper's roots in the store's queue (they stay
queued, so that a crash loses no trigger) and goes on with everything else, parking what it meets of
the helper's trees.
The helper copies the store as it stands into a private file, works off its roots there to their
fixpoint, parking what it meets of other trees (a ModelDeployment that reads every cluster), and exits.
When only parked items are left here, what the helper changed is merged into the store in one
transaction: its objects numbered after this process's writes, its requirements, events, simulated
clusters and the items it parked. Then everything parked is unparked and the run goes on to the
fixpoint as one process.

A helper that fails, or whose objects another process wrote meanwhile (a user's edit in mid-run),
changes nothing: its roots are unparked and reconciled here.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from inferplane.engine.embedded import embedded_reconciler
from inferplane.runtime.keys import Key
from inferplane.runtime.reconciler import Reconciler, RunReport
from inferplane.runtime.store import STORE_FILE, Store
from inferplane.runtime.store_file import CACHE_KIB
from inferplane.runtime.work_queue import PARKED, RECONCILE

# A run starts a helper when at least this many roots of the shard kind are queued: below it, the
# helper's start, the store's copy and the merge cost more than half the work saves. Full applies of the
# synthetic fleet (simulator/synthetic_fleet.py) to a new state, with a helper and without, three of each
# alternated (2026-12-03): 500 clusters 3.3-4.0 s against 4.4-5.0 s, 250 clusters 1.9-2.2 s against
# 2.2-2.9 s, 120 clusters 1.0-1.5 s against 0.9-1.4 s (no gain).
SHARD_MIN = 250
# The helper's work starts ~0.45 s after the run's (measured from its spawn to its first item: a new
# interpreter imports the engine, then copies the store): it takes up to this many roots fewer than half,
# which the run works off itself (~0.2 s in each process). With an even split, the run waited for the
# helper's end in 5 of 6 runs at 2,000 and 10,000 clusters (0.64-2.40 s).
HEADSTART_ROOTS = 30
ROOTS, REPORT, DONE, LOG = "roots.json", "report.json", "done", "helper.log"
# The helper numbers its writes from this far above the store's version at its copy, so that every one is
# newer than what the run writes meanwhile (a reader watching the store sees them after the run's), and its
# rows merge as they are: rewriting each body's resourceVersion cost ~1 s of the merge at 10,000 clusters.
# A run that writes as many versions before the merge merges nothing (see `merge`).
HELPER_VERSIONS = 10**9
# Every table of the store, merged from the helper's copy (MERGE_RESOURCES, MERGE_REST, MERGE_PARKED) or
# not, and why not: a table the schema gains must be named here (tests/engine/test_shards.py), or what a
# helper writes to it would be lost at the merge without a word.
MERGED_TABLES = frozenset({"resources", "requirements", "events", "cluster_objects", "simulations", "work_queue"})
UNMERGED_TABLES = {
    "counters": "the resourceVersion is skipped past the helper's (merge); a helper writes no user's object",
    "admitted_files": "admission's, written before a run",
    "applied_sets": "the engine's apply, written after a run",
    "leases": "the run holds the lease, the helper none",
}
# The helper's copies of what its work may change, as they stood when it copied the store.
BASE_TABLES = {
    "base_resources": "SELECT api_group, kind, namespace, name, rv FROM resources",
    "base_requirements": "SELECT * FROM requirements",
    "base_events": "SELECT * FROM events",
    "base_simulations": "SELECT * FROM simulations",
}


def run(reconciler: Reconciler, kind: str, minimum: int = SHARD_MIN) -> RunReport:
    """The reconciler's run to the fixpoint, half of the trees of `kind` worked off by a helper process
    when one pays (see start_helper)."""
    if reconciler.store.queue.next_item() is None:
        return RunReport()  # nothing changed: no helper, nothing left by one to forget
    helper = start_helper(reconciler, kind, minimum)
    if helper is None:
        return reconciler.run()
    try:
        return helper.run(reconciler)
    finally:
        helper.stop(reconciler)


def start_helper(reconciler: Reconciler, kind: str, minimum: int) -> "Helper | None":
    """A helper for this run, taking every second root of `kind` queued (less a few: HEADSTART_ROOTS);
    None when one would not pay: fewer roots than `minimum`, one core, a store in memory."""
    store = reconciler.store
    if store.path is not None:
        forget_killed_helpers(store)
    if store.file is None or (os.cpu_count() or 1) < 2:
        return None
    roots = sorted(set(store.queue.queued_of_kind(RECONCILE, kind)))
    if len(roots) < max(minimum, 2):
        return None
    taken = roots[1::2]
    return Helper(reconciler, kind, set(taken[:len(taken) - min(HEADSTART_ROOTS, len(roots) // 16)]))


def forget_killed_helpers(store: Store) -> None:
    """What the helper of a run killed before its merge left, gone, whether or not this run starts one: its
    folder (up to a copy of the whole state) and its roots' parking. A helper works only while its run
    holds the lease, which this run holds now, so no helper's folder is in use."""
    assert store.path is not None
    for stale in store.path.glob(".helper-*"):
        shutil.rmtree(stale, ignore_errors=True)
    with store.transaction(durable=False):
        store.queue.unpark()


# The folder holding the `inferplane` package this process imported.
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class Helper:
    """The helper process of one run, seen from the run: started at the start, waited for and merged
    once only parked items are left, `stop`ped at the end whatever happened. A new interpreter, not a
    fork: it shares none of this process's heap, so that the two together hold about what one process
    would."""

    def __init__(self, reconciler: Reconciler, kind: str, roots: set[Key]):
        self.kind, self.roots = kind, roots
        store = reconciler.store
        assert store.path is not None and store.file is not None
        self.folder = Path(tempfile.mkdtemp(prefix=".helper-", dir=store.path))
        (self.folder / ROOTS).write_text(json.dumps(sorted(roots)))
        (self.folder / DONE).write_bytes(bytes(8))
        with store.transaction(durable=False):
            store.queue.park(RECONCILE, sorted(roots))
        with open(self.folder / LOG, "wb") as log:
            # The helper runs the very package this process runs: `-P` keeps the working folder (which may
            # hold another checkout's `inferplane`) off its path, PACKAGE_ROOT goes first.
            self.process: subprocess.Popen | None = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__, str(store.file), str(self.folder), str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))})
        with open(self.folder / DONE, "r+b") as counter:
            self.done = mmap.mmap(counter.fileno(), 8)  # the helper's reconciles and runs so far
        self.merged = False  # the helper's count is in the run's report once merged (or dropped)
        # Each process works on half of the fleet's pages: half the page cache each holds as many of them
        # as one process does (15 MiB less of the two processes' peak at 10,000 clusters).
        store.database.set_page_cache(CACHE_KIB // 2)

    def beside(self) -> int:
        """How much work the helper has done so far and is not yet counted in the run's report."""
        return 0 if self.merged else struct.unpack_from("q", self.done)[0]

    def run(self, reconciler: Reconciler) -> RunReport:
        """Work off this process's part while the helper works off its own; wait for it and merge what it
        did; then work off the queue, first every tree of the shard kind (the helper's too, had it failed),
        then everything. Progress counts both processes' work, and the runs before."""
        told = reconciler.progress
        report = RunReport()
        if told is not None:
            reconciler.progress = lambda done, queued: told(report.reconciles + report.simulations + done
                                                            + self.beside(), queued)
        # One checkpointing thread for the whole of it: the merge's commit, with SQLite's own checkpoints
        # back on between runs, would copy the whole log into the file on this thread.
        try:
            with reconciler.store.checkpoints_in_background():
                report.add(reconciler.run(owns=lambda key: runs_beside(reconciler, self.kind, self.roots, key)))
                self._wait(reconciler, report)
                for owns in (lambda key: runs_beside(reconciler, self.kind, set(), key), None):
                    report.add(reconciler.run(owns=owns))
                    with reconciler.store.transaction(durable=False):
                        reconciler.store.queue.unpark()
        finally:
            reconciler.progress = told
        return report

    def _wait(self, reconciler: Reconciler, report: RunReport) -> None:
        """Wait for the helper (renewing the run's lease) and merge what it did; everything unparked."""
        store = reconciler.store
        assert self.process is not None
        while self.process.poll() is None:
            if reconciler.lease is not None:
                reconciler.lease.renew_if_due()
            if reconciler.progress is not None:
                reconciler.progress(0, store.queue.queued)
            time.sleep(0.05)
        said = self._said() if self.process.returncode == 0 else None
        self.process = None
        with attached(store, self.folder / STORE_FILE) if said else contextlib.nullcontext():
            with store.transaction(durable=False):
                if said is not None and merge(store, said):
                    add_report(report, said)
                store.queue.unpark()
        self.merged = True

    def stop(self, reconciler: Reconciler) -> None:
        """The helper gone (killed, if the run ends before it: its roots stay parked, to be unparked by
        the next run) and its folder with it; the store's page cache as it was."""
        reconciler.store.database.set_page_cache(CACHE_KIB)
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        self.done.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _said(self) -> dict | None:
        try:
            return json.loads((self.folder / REPORT).read_text())
        except (OSError, ValueError):
            return None


def runs_beside(reconciler: Reconciler, kind: str, roots: set[Key], key: Key) -> bool:
    """Whether the run works on a queued item while the helper works: yes for the trees of its own roots
    and for objects no function composes; no for the helper's trees, and no for a composite rooted
    elsewhere (a ModelDeployment places replicas on the clusters that are ready when it reconciles: it
    waits for the helper's clusters, as it waits for every cluster's simulation in a run of one process)."""
    root = reconciler.root(key)
    return root not in roots and (root.kind == kind or root.kind not in reconciler.functions)


class RunGone(Exception):
    """The helper's run is gone (killed): nobody will merge what the helper does."""


def work_as_helper(source: Path, folder: Path, run_pid: int) -> None:
    """The helper's whole life: copy the store, take the parked roots, work them off, say what it did.
    It stops as soon as its run (process `run_pid`, its parent) is gone: a killed run never merges, and
    its helper would otherwise work on alone for as long as half the fleet takes."""
    roots = {Key(*key) for key in json.loads((folder / ROOTS).read_text())}
    reader, copy = sqlite3.connect(f"file:{source}?mode=ro", uri=True), sqlite3.connect(folder / STORE_FILE)
    reader.backup(copy)
    reader.close()
    copy.close()
    store = Store(folder)
    store.database.private_copy()
    store.database.set_page_cache(CACHE_KIB // 2)  # as the run's (Helper)
    with store.transaction(durable=False):
        for table, select in BASE_TABLES.items():
            store.execute(f"CREATE TABLE {table} AS {select}")
        store.execute(f"DELETE FROM work_queue WHERE priority < {PARKED}")  # the run's own work
        taken = [list(row) for row in store.execute(
            "SELECT work, api_group, kind, namespace, name, bumps FROM work_queue")]
        store.queue.unpark()
        since = store.latest_version()
        store.skip_versions_to(since + HELPER_VERSIONS)
        events = store.execute("SELECT IFNULL(MAX(seq), 0) FROM events").fetchone()[0]
    helper = embedded_reconciler(store)
    with open(folder / DONE, "r+b") as counter, mmap.mmap(counter.fileno(), 8) as done:
        def progress(count: int, queued: int) -> None:
            if os.getppid() != run_pid:  # the run was killed: this process now belongs to another parent
                raise RunGone(f"the run (process {run_pid}) that started this helper is gone: stopped")
            struct.pack_into("q", done, 0, count)
        helper.progress = progress
        report = helper.run(owns=lambda key: helper.root(key) in roots)
    said = {"since": since, "events": events, "latest": store.latest_version(), "taken": taken,
            "reconciles": report.reconciles, "simulations": report.simulations, "reconciled": report.reconciled,
            "unconverged": report.unconverged, "converged": report.converged}
    store.close()
    (folder / REPORT).write_text(json.dumps(said))


def add_report(report: RunReport, said: dict) -> None:
    report.reconciles += said["reconciles"]
    report.simulations += said["simulations"]
    report.converged = report.converged and said["converged"]
    for name, count in said["reconciled"].items():
        report.reconciled[name] = report.reconciled.get(name, 0) + count
    report.unconverged.update(said["unconverged"])


SAME_KEY = "m.api_group=h.api_group AND m.kind=h.kind AND m.namespace=h.namespace AND m.name=h.name"
# Objects both processes changed since the copy: written by both, or written by one and deleted by the other.
CONFLICTS = f"""
SELECT 1 FROM helper.resources h JOIN main.resources m ON {SAME_KEY} WHERE h.rv > :since AND m.rv > :since
UNION ALL SELECT 1 FROM helper.resources h JOIN helper.base_resources b USING (api_group, kind, namespace, name)
    WHERE h.rv > :since AND NOT EXISTS (SELECT 1 FROM main.resources m WHERE {SAME_KEY})
UNION ALL SELECT 1 FROM helper.base_resources h JOIN main.resources m ON {SAME_KEY} WHERE m.rv > :since
    AND NOT EXISTS (SELECT 1 FROM helper.resources x WHERE x.api_group=h.api_group AND x.kind=h.kind
                    AND x.namespace=h.namespace AND x.name=h.name)
LIMIT 1
"""
# The helper's writes in their order, as they are (numbered after the run's: HELPER_VERSIONS); then the
# objects it deleted.
MERGE_RESOURCES = [
    """INSERT INTO main.resources (api_group, kind, namespace, name, body, rv, uid, controller, written)
       SELECT api_group, kind, namespace, name, body, rv, uid, controller, written
       FROM helper.resources WHERE rv > :since ORDER BY rv
       ON CONFLICT (api_group, kind, namespace, name) DO UPDATE SET body=excluded.body, rv=excluded.rv,
           uid=excluded.uid, controller=excluded.controller, written=excluded.written""",
    f"""DELETE FROM main.resources WHERE (api_group, kind, namespace, name) IN (
           SELECT api_group, kind, namespace, name FROM helper.base_resources h WHERE NOT EXISTS (
               SELECT 1 FROM helper.resources m WHERE {SAME_KEY}))""",
]
MERGE_REST = [
    """DELETE FROM main.requirements WHERE (watcher, api_group, kind, namespace, name) IN (
           SELECT * FROM helper.base_requirements EXCEPT SELECT * FROM helper.requirements)""",
    """INSERT OR IGNORE INTO main.requirements (watcher, api_group, kind, namespace, name)
       SELECT * FROM helper.requirements EXCEPT SELECT * FROM helper.base_requirements""",
    "DELETE FROM main.events WHERE seq IN (SELECT seq FROM helper.base_events EXCEPT SELECT seq FROM helper.events)",
    # An event both processes saw again keeps both counts.
    """UPDATE main.events AS m SET count = m.count + h.count - b.count, last_seen = MAX(m.last_seen, h.last_seen)
       FROM helper.events h JOIN helper.base_events b ON b.seq = h.seq
       WHERE m.seq = h.seq AND (h.count != b.count OR h.last_seen != b.last_seen)""",
    """INSERT INTO main.events (api_group, kind, namespace, name, type, reason, message, count, first_seen, last_seen)
       SELECT api_group, kind, namespace, name, type, reason, message, count, first_seen, last_seen
       FROM helper.events WHERE seq > :events ORDER BY seq""",
    """CREATE TEMP TABLE resimulated AS
       SELECT cluster FROM (SELECT * FROM helper.simulations EXCEPT SELECT * FROM helper.base_simulations)
       UNION SELECT cluster FROM (SELECT * FROM helper.base_simulations EXCEPT SELECT * FROM helper.simulations)""",
    "DELETE FROM main.cluster_objects WHERE cluster IN (SELECT cluster FROM temp.resimulated)",
    """INSERT INTO main.cluster_objects (cluster, seq, kind, body)
       SELECT cluster, seq, kind, body FROM helper.cluster_objects WHERE cluster IN (SELECT cluster FROM temp.resimulated)""",
    "DELETE FROM main.simulations WHERE cluster IN (SELECT cluster FROM temp.resimulated)",
    """INSERT INTO main.simulations (cluster, inputs)
       SELECT cluster, inputs FROM helper.simulations WHERE cluster IN (SELECT cluster FROM temp.resimulated)""",
    "DROP TABLE temp.resimulated",
]
# What the helper parked (other trees' work its writes made due), queued here as parked too (after the
# roots it worked off are gone from the queue).
MERGE_PARKED = """INSERT INTO main.work_queue (priority, work, api_group, kind, namespace, name)
       SELECT priority, work, api_group, kind, namespace, name FROM helper.work_queue WHERE true ORDER BY seq
       ON CONFLICT (work, api_group, kind, namespace, name) DO UPDATE SET bumps = bumps + 1"""


def merge(store: Store, said: dict) -> bool:
    """Inside the run's transaction, the helper's store attached: what the helper did, into the store.
    False (nothing merged) when another process changed one of the objects the helper changed, or when the
    run's own versions reached the helper's."""
    since = said["since"]
    if store.latest_version() >= since + HELPER_VERSIONS or store.execute(CONFLICTS, {"since": since}).fetchone():
        return False
    for statement in MERGE_RESOURCES:
        store.execute(statement, {"since": since})
    for statement in MERGE_REST:
        store.execute(statement, {"events": said["events"]})
    # The helper's roots it worked off, unless queued again here meanwhile; then what it parked.
    store.executemany(f"DELETE FROM main.work_queue WHERE work=? AND api_group=? AND kind=? AND namespace=? AND "
                      f"name=? AND bumps=? AND priority >= {PARKED}", said["taken"])
    store.execute(MERGE_PARKED)
    store.skip_versions_to(said["latest"])
    return True


@contextlib.contextmanager
def attached(store: Store, file: Path) -> Iterator[None]:
    """The helper's store attached to the run's connection as `helper` (outside any transaction)."""
    store.execute("ATTACH DATABASE ? AS helper", (str(file),))
    try:
        yield
    finally:
        store.execute("DETACH DATABASE helper")


if __name__ == "__main__":  # the helper: python -m inferplane.engine.shards STORE_FILE FOLDER RUN_PID
    try:
        work_as_helper(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
    except RunGone as gone:
        sys.exit(str(gone))
    # Done: the report is written and the store closed. The interpreter's own exit would free the heap
    # (half the fleet's objects) one by one while the run waits to merge: 3 s at 10,000 clusters.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
