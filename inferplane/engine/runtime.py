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

from inferplane.admission import AdmissionResult, admit_manifests, admit_paths, applied_set_key
from inferplane.admission.limits import StreamLimits
from inferplane.admission.manifests import Manifest
from inferplane.admission.stored_kinds import update_problem
from inferplane.admission.validate import AdmissionError
from inferplane.api.json_data import json_copy
from inferplane.api import KINDS_BY_NAME
from inferplane.api.inference_class import InferenceClass
from inferplane.runtime.lease import Lease, LeaseLost
from inferplane.compose.registry import composition_functions
from inferplane.compose.usage import USAGE
from inferplane.runtime.reconciler import InUse as Used, ProgressReport, Reconciler, RunReport
from inferplane.simulator.controller import MODEL_REPLICA, Simulator
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


@dataclass
class ApplyResult:
    admission: AdmissionResult
    applied: list[tuple[Key, str]] = field(default_factory=list)  # (object, "created" | "configured" | "unchanged")
    report: RunReport | None = None


class Runtime:
    def __init__(self, state: Path | None, progress: ProgressReport | None = None,
                 wait: float = DEFAULT_WAIT, provider: SimulatedProvider | None = None,
                 clock: Callable[[], float] = time.monotonic, read_only: bool = False):
        """`state=None` keeps everything in memory (render); otherwise the store lives in `state`.
        `wait`: how long to wait for another process, for its reconcile or for a write lock.
        `provider` stands in for the clouds and target clusters (default: SimulatedProvider()).
        `clock` times the reconciler's batches (a test slows it). `read_only`: the caller only reads
        (see Store)."""
        self.store = Store(state, busy_timeout=min(wait, DEFAULT_BUSY_TIMEOUT), read_only=read_only)
        self.progress = progress
        self.wait = wait
        self.provider = provider
        self.clock = clock

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
        return Reconciler(self.store, self.functions, provider=self.provider or SimulatedProvider(),
                          controllers=(Simulator(),), usage=USAGE, progress=self.progress, lease=lease,
                          clock=self.clock)

    def apply(self, paths: list[Path], on_applied: Callable[[Key, str], None] | None = None,
              limits: StreamLimits = StreamLimits()) -> ApplyResult:
        """Admission first: nothing of a rejected manifest is stored. Then reconcile to a fixpoint.

        `on_applied` hears of each object once its write is committed (acknowledged)."""
        # A persistent state keeps the files it admitted whole: re-applying them unchanged is cheap; and
        # the last set of files applied whole, which re-applied with no user's write since changes nothing.
        kept = self.store if self.store.path is not None else None
        set_key = applied_set_key(paths, limits) if kept is not None else None
        said = self.store.applied_set(set_key) if set_key is not None else None
        if said is not None:
            return self._said_again(said, on_applied)
        before = self.store.user_writes()
        result = self._store(admit_paths(paths, known_classes=self.known_classes(), kept=kept, limits=limits),
                             on_applied)
        changed = sum(verb != "unchanged" for _, verb in result.applied)
        # Kept only when every user write since `before` was this apply's own (another command's write in
        # between would make the answer stale) and the fleet is at its fixpoint.
        if set_key is not None and result.admission.ok and result.report.converged and \
                self.store.user_writes() == before + changed:
            self.store.keep_applied_set(set_key, said_of(result))
        return result

    def _said_again(self, said: dict, on_applied: Callable[[Key, str], None] | None) -> ApplyResult:
        """What an apply of a set of files said, said again: every object unchanged, the same warnings."""
        admission = AdmissionResult(warnings=[AdmissionError(*w) for w in said["warnings"]],
                                    notes=[AdmissionError(*n) for n in said["notes"]],
                                    unchanged=len(said["applied"]))
        result = ApplyResult(admission)
        for key in said["applied"]:
            result.applied.append((Key(*key), "unchanged"))
            if on_applied:
                on_applied(Key(*key), "unchanged")
        result.report = self.reconcile()
        return result

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

    def _store(self, admission: AdmissionResult,
               on_applied: Callable[[Key, str], None] | None = None) -> ApplyResult:
        result = ApplyResult(admission)
        writer = self._reconciler()
        bodies = self._refuse_composed(admission)
        for start in range(0, len(bodies), WRITE_BATCH):
            # Each batch is one durable transaction: acknowledged writes survive a kill mid-apply.
            with self.store.transaction():
                written = [(Key.of(body), writer.submit(body)) for body in bodies[start:start + WRITE_BATCH]]
            for key, (changed, created) in written:
                verb = "unchanged" if not changed else "created" if created else "configured"
                result.applied.append((key, verb))
                if on_applied:
                    on_applied(key, verb)
        result.report = self.reconcile()
        return result

    def _refuse_composed(self, admission: AdmissionResult) -> list[Resource]:
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
            composite = f"{owner['kind']}/{owner['name']}"
            admission.errors.append(AdmissionError(
                manifest.source, body["kind"], body["metadata"]["name"], "",
                f"composed and controlled by {composite}, whose next reconcile would undo any change made "
                f"here: change {composite} instead (nothing was written)"))
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
                raise InUse(key, *serving_apart(reconciler, refused.users)) from None

        report = self._as_reconciler(delete_first)
        return deleted, report

    def _as_reconciler(self, first: Callable[[Reconciler], object]) -> RunReport:
        """Hold the lease, do `first`, then run the queue dry. A busy lease is waited for, up to `wait`."""
        if self.store.path is None:  # in memory: no other process can see this store
            reconciler = self._reconciler()
            first(reconciler)
            return reconciler.run()
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
                    return reconciler.run()
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


# How many users a refused deletion names (a Namespace's may be thousands).
IN_USE_NAMED = 20


class InUse(Exception):
    """A deletion refused because something outside it still uses what it would remove: other objects,
    or the ModelReplicas of deployments that run on it (deployment -> its replicas there)."""

    def __init__(self, key: Key, users: list[Key], serving: dict[Key, list[Key]] | None = None):
        serving = serving or {}
        reasons = [f"ModelDeployment {deployment.namespace}/{deployment.name} runs replicas "
                   f"{', '.join(r.name for r in replicas)} on it" for deployment, replicas in sorted(serving.items())]
        if serving:
            reasons.append("move them first: a NoExecute taint in the cluster's spec.taints drains them, or narrow "
                           "each deployment's clusterSelector so that it no longer selects this cluster")
        if users:
            named = ", ".join(u.qualified() for u in users[:IN_USE_NAMED])
            more = f" and {len(users) - IN_USE_NAMED} more" if len(users) > IN_USE_NAMED else ""
            reasons.append(f"{'it ' if serving else ''}is in use by {named}{more}: delete "
                           "those or change them to stop using it first")
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


def said_of(result: ApplyResult) -> dict:
    """What an apply said, as a state keeps it for the same set of files applied again."""
    fields = lambda e: [e.source, e.kind, e.name, e.path, e.message]  # noqa: E731
    return {"warnings": [fields(w) for w in result.admission.warnings],
            "notes": [fields(n) for n in result.admission.notes],
            "applied": [list(key) for key, _ in result.applied]}
