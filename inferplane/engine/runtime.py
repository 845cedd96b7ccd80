"""The embedded runtime as a user drives it: apply manifests, reconcile the fleet, read it back.

Several commands may share one state folder. Each stores its objects first; then the one holding the
reconciler lease works off the queue of everything that changed, and the others wait for it to
finish (or take the lease over when it is free or its holder died), so that every command ends with
the fleet at its fixpoint, or says that it did not.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from inferplane.admission import AdmissionResult, ReadFiles, admit_manifests, admit_paths, applied_files
from inferplane.admission.kept_files import KeptFiles
from inferplane.admission.limits import StreamLimits
from inferplane.admission.manifests import Manifest, source_name
from inferplane.admission.stored_kinds import update_problem
from inferplane.admission.validate import AdmissionError
from inferplane.api.json_data import json_copy
from inferplane.api import KINDS_BY_NAME
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.runtime.lease import Lease, LeaseLost
from inferplane.compose.registry import composition_functions
from inferplane.runtime.collector import collector_paused
from inferplane.runtime.deletion import InUse as Used
from inferplane.runtime.reconciler import ProgressReport, Reconciler, RunReport
from inferplane.simulator.controller import MODEL_REPLICA
from inferplane.engine import shards
from inferplane.engine.embedded import embedded_reconciler, register_tables
from inferplane.simulator.provider import SimulatedProvider
from inferplane.runtime.store import DEFAULT_BUSY_TIMEOUT, Key, Resource, Store, controller_ref
from inferplane import DEFAULT_STATE, STATE_ENV, state_dir  # noqa: F401  (the engine's callers read them here)

# How long a command waits for another command's reconcile before it gives up and says so. A fleet
# of a thousand clusters converges in well under this on a small machine.
DEFAULT_WAIT = 300.0
# How often a waiting command looks at the lease again.
POLL_EVERY = 0.1
# A user's objects are committed (and acknowledged) this many at a time: one fsync each batch rather
# than each object, while another process waits for the write lock no longer than a few milliseconds.
WRITE_BATCH = 64
# The state keeps what the last set of files applied whole said, under this key.
LAST_SET = b"last"
# A set of which at most one file in this many changed since it was applied whole applies those files
# alone, the others saying what they said (a one-cluster change to a fleet's folder).
DELTA_SHARE = 4


@dataclass
class ApplyResult:
    admission: AdmissionResult
    applied: list[tuple[Key, str]] = field(default_factory=list)  # (object, "created" | "configured" | "unchanged")
    report: RunReport | None = None


class Runtime:
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

    def scratch_copy(self) -> "Runtime":
        """A runtime over an in-memory copy of this state: apply to it and nothing is stored."""
        copy = Runtime(None)
        copy.store.close()
        copy.store = self.store.snapshot()
        return copy

    def known_classes(self) -> dict[str, InferenceClass]:
        """The stored classes this version can read. One stored in an older shape is left out: the batch
        being applied may replace it, and otherwise its clusters' composition says it is unreadable."""
        classes = {}
        for body in self.store.list("InferenceClass"):
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
                return self._said_again(files, recorded, {}, ApplyResult(AdmissionResult()), on_applied)
            changed_files = [path for path, key in files if key not in recorded]
            if len(changed_files) * DELTA_SHARE <= len(files):
                delta = self._apply_changed(files, recorded, changed_files, on_applied, limits, read)
                if delta is not None:
                    return delta
        before = self.store.user_writes()
        admission = self._admit(paths, limits, read, recursive)
        read.clear()  # the files' bytes (10 MB at 10,000 clusters) are not held through the reconcile
        result = self._store(admission, on_applied)
        if files is not None:
            self._keep_said(files, {}, said_by_file(result, files), result, before)
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
        result = self._store(admission)
        fresh = said_by_file(result, [(path, key) for path, key in files if key not in recorded])
        said = self._said_again(files, recorded, fresh or {}, result, on_applied, reconcile=False)
        self._keep_said(files, recorded, fresh, result, before)
        return said

    def _said_again(self, files: list[tuple[Path, str]], recorded: dict[str, dict], fresh: dict[str, dict],
                    result: ApplyResult, on_applied: Callable[[Key, str], None] | None,
                    reconcile: bool = True) -> ApplyResult:
        """The set's answer in file order: what each unchanged file said before (its objects unchanged),
        what each changed one says now (`result`, from applying those alone)."""
        verbs = dict(result.applied)
        merged = AdmissionResult(errors=result.admission.errors, admitted=result.admission.admitted)
        out = ApplyResult(merged, report=result.report)
        for _, key in files:
            said = recorded.get(key) or fresh.get(key) or {"warnings": [], "notes": [], "applied": []}
            merged.warnings += [AdmissionError(*w) for w in said["warnings"]]
            merged.notes += [AdmissionError(*n) for n in said["notes"]]
            for applied in said["applied"]:
                verb = "unchanged" if key in recorded else verbs.get(Key(*applied), "unchanged")
                merged.unchanged += key in recorded
                out.applied.append((Key(*applied), verb))
                if on_applied:
                    on_applied(Key(*applied), verb)
        if reconcile:
            out.report = self.reconcile()
        return out

    def _keep_said(self, files: list[tuple[Path, str]], recorded: dict[str, dict], fresh: dict[str, dict] | None,
                   result: ApplyResult, before: int) -> None:
        """Keep what the set said, file by file (`recorded` for files unchanged, `fresh` for those applied),
        when every user write since `before` was this apply's own (another command's write in between
        would make it stale) and the fleet is at its fixpoint."""
        changed = sum(verb != "unchanged" for _, verb in result.applied)
        if fresh is None or not result.admission.ok or not result.report.converged or \
                self.store.user_writes() != before + changed:
            return
        said = {"files": [[key, recorded.get(key) or fresh[key]] for _, key in files]}
        KeptFiles(self.store).keep_applied_set(LAST_SET, said)

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

    def write(self, manifests: list[Manifest], reconcile: bool = True, dry_run: bool = False) -> ApplyResult:
        """Objects a client sent whole (`inferplane serve`'s creates, updates and patches): the same
        admission and ownership checks as `apply`, then stored. `reconcile=False` leaves the queued work
        to whoever reconciles next (the server's reconciler thread), so that the write is answered at once;
        `dry_run` checks and stores nothing."""
        admission = admit_manifests(manifests, known_classes=self.known_classes())
        if dry_run:
            self.refuse_composed(admission)
            return ApplyResult(admission)
        return self._store(admission, reconcile=reconcile)

    def _admit(self, paths: list[Path], limits: StreamLimits, read: ReadFiles,
               recursive: bool = True) -> AdmissionResult:
        """Admission of files (inside apply: the cyclic collector paused); on a persistent state, the files it
        admitted whole before are not parsed again. `read`: files read already (see admit_paths)."""
        return admit_paths(paths, known_classes=self.known_classes(),
                           kept=KeptFiles(self.store) if self.store.path is not None else None, limits=limits, read=read,
                           recursive=recursive)

    @collector_paused()  # see apply
    def _store(self, admission: AdmissionResult,
               on_applied: Callable[[Key, str], None] | None = None, reconcile: bool = True) -> ApplyResult:
        result = ApplyResult(admission)
        writer = self._reconciler()
        bodies = self.refuse_composed(admission)
        for start in range(0, len(bodies), WRITE_BATCH):
            # Each batch is one durable transaction: acknowledged writes survive a kill mid-apply.
            with self.store.transaction():
                written = [(Key.of(body), writer.submit(body)) for body in bodies[start:start + WRITE_BATCH]]
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

    def refuse_composed(self, admission: AdmissionResult) -> list[Resource]:
        """The admitted objects' bodies, less those naming an object a composite controls: each of those
        becomes an admission error naming the composite (its next reconcile would write the object back,
        or delete and compose it again, as Crossplane's ownership does). Decided per object: a kind may be
        both composed and written by users (a ModelEndpoint)."""
        bodies, admitted = [], []
        for manifest, obj in admission.admitted:
            body = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
            key = Key.of(body)
            # Only what may refuse the write is read whole: a controlled object, a core object (which may
            # be immutable); most objects are neither, and are not decoded.
            current = self.store.get(key) if key.group == "" or self.store.controller_uid(key) else None
            owner = controller_ref(current) if current is not None else None
            refused = update_problem(current, body) if current is not None else None
            if refused is not None:
                admission.errors.append(AdmissionError(manifest.source, body["kind"], body["metadata"]["name"],
                                                       "immutable", refused))
                continue
            if owner is None:
                bodies.append(body)
                admitted.append((manifest, obj))
                continue
            admission.errors.append(AdmissionError(manifest.source, body["kind"], body["metadata"]["name"], "",
                                                   composed_refusal(owner)))
        admission.admitted = admitted
        return bodies

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
        """Hold the lease, do `first`, then run the queue dry. A busy lease is waited for, up to `wait`."""
        if self.store.path is None:  # in memory: no other process can see this store
            reconciler = self._reconciler()
            first(reconciler)
            return self._run(reconciler)
        lease = Lease(self.store)
        deadline = time.monotonic() + self.wait
        done_first = False
        while True:
            if lease.try_acquire():
                try:
                    reconciler = self._reconciler(lease)
                    if not done_first:
                        first(reconciler)
                        done_first = True
                    return self._run(reconciler)
                except LeaseLost:
                    pass  # another process took over: wait for it like any other holder
                finally:
                    lease.release()
            if time.monotonic() > deadline:
                return RunReport(converged=False, waited_for=lease.current_holder() or "another process")
            time.sleep(POLL_EVERY)

    def get(self, key: Key) -> Resource | None:
        return self.store.get(key)

    def list(self, kind: str | None = None) -> list[Resource]:
        return self.store.list(kind)


def composed_refusal(owner: dict) -> str:
    """Why a write to an object a composite controls is refused (`owner`: its controller reference)."""
    composite = f"{owner['kind']}/{owner['name']}"
    return (f"composed and controlled by {composite}, whose next reconcile would undo any change made here: "
            f"change {composite} instead (nothing was written)")


# How many users a refused deletion names (a Namespace's may be thousands).
IN_USE_NAMED = 20


class InUse(Exception):
    """A deletion refused because something outside it still uses what it would remove: other objects,
    or the ModelReplicas of deployments that run on it (deployment -> its replicas there)."""

    def __init__(self, key: Key, users: list[Key], serving: dict[Key, list[Key]] | None = None,
                 composed_for: dict[Key, Key] | None = None):
        serving, composed_for = serving or {}, composed_for or {}
        reasons = [f"ModelDeployment {deployment.namespace}/{deployment.name} runs replicas "
                   f"{', '.join(r.name for r in replicas)} on it" for deployment, replicas in sorted(serving.items())]
        if serving:
            reasons.append("move them first: a NoExecute taint in the cluster's spec.taints drains them, or narrow "
                           "each deployment's clusterSelector so that it no longer selects this cluster")
        if users:
            named = ", ".join(u.qualified() for u in users[:IN_USE_NAMED])
            more = f" and {len(users) - IN_USE_NAMED} more" if len(users) > IN_USE_NAMED else ""
            # A composed user is changed through what composed it (deleted, it would be composed again).
            fix = "delete those or change them to stop using it first"
            if composed_for:
                roots = ", ".join(r.qualified() for r in sorted(set(composed_for.values())))
                fix = (f"{'those not composed: ' + fix + '; the others' if len(composed_for) < len(users) else 'they'}"
                       f" are composed for {roots}: delete or change that first")
            reasons.append(f"{'it ' if serving else ''}is in use by {named}{more}: {fix}")
        super().__init__(f"{key.qualified()}{':' if serving else ''} {'; '.join(reasons)}; nothing was deleted")
        self.key = key
        self.users = users
        self.serving = serving


def serving_apart(reconciler: Reconciler, in_use: list[Key]) -> tuple[list[Key], dict[Key, list[Key]]]:
    """The users that are not a ModelReplica's workloads, and the replicas whose workloads use it, by
    deployment: a replica is moved by its deployment, never deleted from under it."""
    others, serving = [], {}
    for user in in_use:
        replica: Key | None = user
        while replica is not None and replica.kind != MODEL_REPLICA:
            replica = reconciler.controller_key(reconciler.get(replica) or {})
        if replica is None:
            others.append(user)
            continue
        deployment = reconciler.controller_key(reconciler.get(replica) or {}) or replica
        if replica not in serving.setdefault(deployment, []):
            serving[deployment].append(replica)
    return others, {d: sorted(r) for d, r in serving.items()}



def said_by_file(result: ApplyResult, files: list[tuple[Path, str]]) -> dict[str, dict] | None:
    """What an apply said, file by file (by file key): each file's warnings, notes and objects, as a state
    keeps them for the same files applied again; None when a source names no file of the set."""
    keys = {source_name(path): key for path, key in files}
    said = {key: {"warnings": [], "notes": [], "applied": []} for _, key in files}
    fields = lambda e: [e.source, e.kind, e.name, e.path, e.message]  # noqa: E731
    entries = [("warnings", w.source, fields(w)) for w in result.admission.warnings]
    entries += [("notes", n.source, fields(n)) for n in result.admission.notes]
    entries += [("applied", manifest.source, list(key))
                for (manifest, _), (key, _) in zip(result.admission.admitted, result.applied)]
    for part, source, entry in entries:
        key = keys.get(source.split("#", 1)[0].split(" items[", 1)[0])
        if key is None:
            return None
        said[key][part].append(entry)
    return said
