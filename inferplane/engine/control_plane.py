"""The control plane as a command drives it: apply manifests, reconcile the fleet, read it back.

Several commands may share one state folder. Each stores its objects first; then the one holding the
reconciler lease works off the queue of everything that changed, and the others wait for it
(lease_wait.py), so that every command ends with the fleet at its fixpoint, or says that it did not.
A set of files applied again replays what it said (apply_sets.py); a write to what a composite controls
is refused (ownership.py), and so is a deletion of what is in use (in_use.py).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from inferplane.admission import AdmissionResult, ReadFiles, admit_manifests, admit_paths, applied_files
from inferplane.admission.kept_files import KeptFiles
from inferplane.admission.limits import StreamLimits
from inferplane.admission.manifests import Manifest
from inferplane.fieldmanager.managers import APPLY, INFERPLANE, UPDATE, recorder
from inferplane.api.json_data import json_copy
from inferplane.api import KINDS_BY_NAME
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.compose.registry import composition_functions
from inferplane.engine.apply_sets import DELTA_SHARE, LAST_SET, ApplyResult, keep_said, said_again, said_by_file
from inferplane.engine import shards
from inferplane.engine.embedded import embedded_reconciler, register_tables
from inferplane.engine.in_use import InUse, serving_apart
from inferplane.engine.lease_wait import DEFAULT_WAIT, as_reconciler
from inferplane.engine.ownership import refuse_composed
from inferplane.runtime.lease import Lease
from inferplane.runtime.collector import collector_paused
from inferplane.runtime.deletion import InUse as Used
from inferplane.runtime.reconciler import ProgressReport, Reconciler, RunReport
from inferplane.simulator.provider import SimulatedProvider
from inferplane.runtime.store import DEFAULT_BUSY_TIMEOUT, Key, Resource, Store

# A user's objects are committed (and acknowledged) this many at a time: one fsync each batch rather
# than each object, while another process waits for the write lock no longer than a few milliseconds.
WRITE_BATCH = 64


class ControlPlane:
    def __init__(self, state: Path | None, progress: ProgressReport | None = None,
                 wait: float = DEFAULT_WAIT, provider: SimulatedProvider | None = None,
                 clock: Callable[[], float] = time.monotonic, read_only: bool = False, shard_min: int = shards.SHARD_MIN):
        """`state=None` keeps everything in memory (render); otherwise the store lives in `state`.
        `wait`: how long to wait for another process, for its reconcile or for a write lock.
        `provider` stands in for the clouds and target clusters (default: SimulatedProvider()).
        `clock` times the reconciler's batches (a test slows it). `read_only`: the caller only reads
        (see Store). `shard_min`: how many InferenceClusters a run queues before a helper process takes
        half of them (engine/shards.py)."""
        self.store = Store(state, busy_timeout=min(wait, DEFAULT_BUSY_TIMEOUT), read_only=read_only)
        register_tables(self.store)
        self.progress = progress
        self.wait = wait
        self.provider = provider
        self.clock = clock
        self.shard_min = shard_min

    @functools.cached_property
    def functions(self):
        """Loaded on first use: reading commands never need the composition functions."""
        return composition_functions()

    def close(self) -> None:
        self.store.close()

    def scratch_copy(self) -> "ControlPlane":
        """A control plane over an in-memory copy of this state: apply to it and nothing is stored."""
        copy = ControlPlane(None)
        copy.store.close()
        copy.store = self.store.snapshot()
        return copy

    def known_classes(self) -> dict[str, InferenceClass]:
        """The stored classes this version can read. One stored in an older shape is left out: the batch
        being applied may replace it, and otherwise its clusters' composition says it is unreadable."""
        classes = {}
        for body in self.store.list(InferenceClass.KIND):
            try:
                classes[body["metadata"]["name"]] = InferenceClass.model_validate(body)
            except ValidationError:
                continue
        return classes

    def _reconciler(self, lease: Lease | None = None) -> Reconciler:
        """The embedded reconciler: inferplane's functions, the simulated clouds and clusters, Usage."""
        return embedded_reconciler(self.store, self.provider, self.functions, progress=self.progress,
                                   lease=lease, clock=self.clock)

    def _run(self, reconciler: Reconciler) -> RunReport:
        """To the fixpoint; a large run with a helper process (which simulates the clouds as
        SimulatedProvider does: only without a provider of the caller's)."""
        if self.provider is not None:
            return reconciler.run()
        return shards.run(reconciler, InferenceCluster.KIND, self.shard_min)

    # The cyclic collector is paused from admission to the fixpoint (runtime/collector.py): between the
    # pauses of admission and of the reconciler, its automatic passes walked the admitted objects again and
    # again, 2.5 s of a 10,000-cluster apply (gc.callbacks: 0.4 s as admission ended, 1.3 s while composed
    # objects were refused, 0.8 s while the objects were stored).
    @collector_paused()
    def apply(self, paths: list[Path], on_applied: Callable[[Key, str], None] | None = None,
              limits: StreamLimits = StreamLimits(), recursive: bool = True) -> ApplyResult:
        """Admission first: nothing of a rejected manifest is stored. Then reconcile to a fixpoint.

        `on_applied` hears of each object once its write is committed (acknowledged); `recursive`: a
        folder's subfolders are read too (-R)."""
        # A persistent state keeps the files it admitted whole: re-applying them unchanged is cheap; and
        # what the last set of files applied whole said, file by file: with no user's write since, its
        # files applied again unchanged change nothing, and say the same.
        read: ReadFiles = {}  # the files as read here, for admission
        files = applied_files(paths, limits, read, recursive) if self.store.path is not None else None
        record = KeptFiles(self.store).applied_set(LAST_SET) if files else None
        if record is not None:
            recorded = dict(record["files"])
            if [key for _, key in files] == [key for key, _ in record["files"]]:
                said = said_again(files, recorded, {}, ApplyResult(AdmissionResult()), on_applied)
                said.report = self.reconcile()
                return said
            changed_files = [path for path, key in files if key not in recorded]
            if len(changed_files) * DELTA_SHARE <= len(files):
                delta = self._apply_changed(files, recorded, changed_files, on_applied, limits, read)
                if delta is not None:
                    return delta
        before = self.store.user_writes()
        admission = self._admit(paths, limits, read, recursive)
        read.clear()  # the files' bytes (10 MB at 10,000 clusters) are not held through the reconcile
        result = self._store(admission, on_applied, operation=APPLY)
        if files is not None:
            keep_said(self.store, files, {}, said_by_file(result, files), result, before)
        return result

    def _apply_changed(self, files: list[tuple[Path, str]], recorded: dict[str, dict], changed: list[Path],
                       on_applied: Callable[[Key, str], None] | None, limits: StreamLimits,
                       read: ReadFiles) -> ApplyResult | None:
        """Apply the files of a set that changed since it was last applied whole, the others saying what
        they said; None when a changed file holds a class (its clusters' verdicts may change with it)."""
        admission = self._admit(changed, limits, read)
        if any(isinstance(obj, InferenceClass) for _, obj in admission.admitted):
            return None
        before = self.store.user_writes()
        result = self._store(admission, operation=APPLY)
        fresh = said_by_file(result, [(path, key) for path, key in files if key not in recorded])
        said = said_again(files, recorded, fresh or {}, result, on_applied)
        keep_said(self.store, files, recorded, fresh, result, before)
        return said

    def scale(self, key: Key, replicas: int) -> ApplyResult:
        """Set the replica count of an object whose kind serves the scale subresource (as `kubectl
        scale` does): the changed object goes through admission like any other write."""
        current = self.store.get(key)
        if current is None:
            raise LookupError(f"{key} not found")
        kind = KINDS_BY_NAME.get(current["kind"])
        if kind is None or not kind.SCALE:
            raise LookupError(f"{current['kind']} has no scale subresource: edit its manifest and apply it")
        body = json_copy({k: v for k, v in current.items() if k != "status"})
        *parents, leaf = kind.SCALE["specReplicasPath"].strip(".").split(".")
        node = body
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = replicas
        manifest = Manifest(f"scale {key.qualified()}", body)
        return self._store(admit_manifests([manifest], known_classes=self.known_classes()))

    def update(self, changes: list[tuple[Key, Callable[[dict], None]]], source: str) -> ApplyResult:
        """Change stored objects in place (`inferplane label`): each changed body, status left out,
        goes through admission like any other write, then the fleet is reconciled once."""
        manifests = []
        for key, change in changes:
            current = self.store.get(key)
            if current is None:
                raise LookupError(f"{key} not found")
            body = json_copy({k: v for k, v in current.items() if k != "status"})
            change(body)
            manifests.append(Manifest(f"{source} {key.qualified()}", body))
        return self._store(admit_manifests(manifests, known_classes=self.known_classes()))

    def write(self, manifests: list[Manifest], reconcile: bool = True, dry_run: bool = False,
              managed: list | None = None) -> ApplyResult:
        """Objects a client sent whole (`inferplane serve`'s creates, updates and patches): the same
        admission and ownership checks as `apply`, then stored. `reconcile=False` leaves the queued work
        to whoever reconciles next (the server's reconciler thread), so that the write is answered at once;
        `dry_run` checks and stores nothing. `managed`: the managedFields the server recorded (of one object)."""
        admission = admit_manifests(manifests, known_classes=self.known_classes())
        if dry_run:
            refuse_composed(self.store, admission)
            return ApplyResult(admission)
        return self._store(admission, reconcile=reconcile, managed=managed)

    def _admit(self, paths: list[Path], limits: StreamLimits, read: ReadFiles,
               recursive: bool = True) -> AdmissionResult:
        """Admission of files (inside apply: the cyclic collector paused); on a persistent state, the files it
        admitted whole before are not parsed again. `read`: files read already (see admit_paths)."""
        return admit_paths(paths, known_classes=self.known_classes(),
                           kept=KeptFiles(self.store) if self.store.path is not None else None, limits=limits, read=read,
                           recursive=recursive)

    @collector_paused()  # see apply
    def _store(self, admission: AdmissionResult,
               on_applied: Callable[[Key, str], None] | None = None, reconcile: bool = True,
               operation: str = UPDATE, managed: list | None = None) -> ApplyResult:
        """Store admitted objects, each recording its managedFields: `managed` (what `inferplane serve`
        recorded), else the CLI's manager with `operation` (fieldmanager.managers.recorder)."""
        result = ApplyResult(admission)
        record = None if managed is not None else recorder(INFERPLANE, operation, self.store.clock)
        writer = self._reconciler()
        bodies = refuse_composed(self.store, admission)
        for start in range(0, len(bodies), WRITE_BATCH):
            # Each batch is one durable transaction: acknowledged writes survive a kill mid-apply.
            with self.store.transaction():
                for body in bodies[start:start + WRITE_BATCH] if managed is not None else ():
                    body["metadata"]["managedFields"] = managed
                written = [(Key.of(body), writer.submit(body, record)) for body in bodies[start:start + WRITE_BATCH]]
            for key, (changed, created) in written:
                verb = "unchanged" if not changed else "created" if created else "configured"
                result.applied.append((key, verb))
                if on_applied:
                    on_applied(key, verb)
        # Written: the bodies go before the reconcile, and so do the documents they were read from and the
        # admitted models (only their sources are read after this), which a fleet's apply would otherwise
        # hold throughout (~40 MiB and ~50 MiB at 10,000 clusters).
        del bodies
        admission.admitted = [(Manifest(manifest.source, {}), None) for manifest, _ in admission.admitted]
        result.report = self.reconcile() if reconcile else None
        return result

    def reconcile(self) -> RunReport:
        """Work off the queue to the fixpoint: here, or by waiting for the process that is doing it."""
        return self._as_reconciler(lambda reconciler: None)

    def delete(self, key: Key) -> tuple[bool, RunReport]:
        """Delete an object and everything composed under it, then reconcile what depended on it.
        Returns whether it was deleted (False: it was gone, or the lease stayed busy) and the report."""
        deleted = False

        def delete_first(reconciler: Reconciler) -> None:
            nonlocal deleted
            try:
                deleted = reconciler.delete(key)
            except Used as refused:
                others, serving = serving_apart(reconciler, refused.users)
                roots = {user: reconciler.root(user) for user in others}
                raise InUse(key, others, serving, {u: r for u, r in roots.items() if r != u}) from None

        report = self._as_reconciler(delete_first)
        return deleted, report

    def _as_reconciler(self, first: Callable[[Reconciler], object]) -> RunReport:
        """Hold the lease, do `first`, then run the queue dry (lease_wait.py)."""
        return as_reconciler(self.store, self.wait, self._reconciler, first, self._run)

    def get(self, key: Key) -> Resource | None:
        return self.store.get(key)

    def list(self, kind: str | None = None) -> list[Resource]:
        return self.store.list(kind)
