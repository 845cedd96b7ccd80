"""The embedded reconciler, with Crossplane's semantics, run as a Kubernetes controller.

For each composite: call its composition function with the observed composite, its observed composed
resources (by the keys the function gave them) and the required resources it asked for; apply the
desired composed resources; garbage-collect composed resources that are no longer desired; derive
readiness. Composed composites (cloud clusters, serving stacks) reconcile in turn.

It works off the store's work queue, keyed by object: a write queues what it affects (a composite
whose spec changed, the composite controlling a changed resource, the composites that required it),
so a change reconciles only what depends on it, and the queue running dry is the fixpoint. The
reconciler reads from a cache of the store that watches for writes by resourceVersion. It works in
batches: each batch is one transaction, which holds the store's write lock, first reads into the
cache what other processes wrote since, then works off queue items (their writes, and the queue's
bookkeeping) for up to BATCH_SECONDS and commits; a user's write waiting for the lock goes in between
batches. Within a batch nobody else can write, so the cache is the store and writes need not read
versions back; a write that still finds a newer version (a cache bug) is refused, and the batch is
rolled back and redone from a fresh read. Once no reconcile is left, the hosted controllers work off
what became due for them (the simulator: every cluster whose simulation inputs changed is simulated
again). A run may be given the part of the queue it owns (`run(owns=...)`): the rest is set aside,
still queued, for another worker (the engine's scale-out, engine/shards.py).

It knows no kind of ours: the kinds come with their composition functions (the registry), the
managed resources with a provider, deletion's rules with the usage rules, and the simulator is a
controller it hosts (runtime/controller.py).

What a fixpoint takes depends on the fleet, never on the clock: batches only decide when work is
committed, never its order. Work that depends on many objects waits for them: a composite that
requires every object of a kind (a ModelDeployment reads every cluster) reconciles after what
changed them, once for all of them; a hosted controller's queued items all run before what they
cause. The bound on a composite's reconciles counts those since its inputs last changed (see
input_generation).
"""

from __future__ import annotations

import gc
import time
from typing import Any, Callable

from inferplane.api.function import CONFLICT, RECONCILE_ERROR, Request, Requirement, Response
from inferplane.runtime.cache import Cache
from inferplane.runtime.collector import collector_paused
from inferplane.runtime.composed import COMPOSITION_KEY, composed_metadata, desired_digest
from inferplane.runtime.composite_status import composite_status, failed_status
from inferplane.runtime.deletion import Deletion
from inferplane.runtime.user_writes import submit
from inferplane.runtime.controller import (DEPENDENT_PRIORITY, Controller, Provider, ReportsReady, UsageRules,
                                          owner_priority)
from inferplane.runtime.keys import EVERY, Key, Resource, controller_of, controller_ref, resource_version
from inferplane.runtime.lease import Lease
from inferplane.runtime.requirements import answer, call_with_requirements, requirement_kind
from inferplane.runtime.run_report import RunReport
from inferplane.runtime.store import Conflict, Store
from inferplane.runtime.watchers import Watchers
from inferplane.runtime.work_queue import RECONCILE

# A healthy fleet converges in a handful of reconciles per object for each change to its inputs
# (apply, observe ready, report); far more means two things keep undoing each other.
MAX_RECONCILES_PER_OBJECT = 25
# The reconciler commits its work this often (one transaction, one WAL write of the pages it touched),
# rather than after every reconcile; a user's write waits at most this long for the write lock.
BATCH_SECONDS = 0.2


# Hears of each reconcile and controller run done: (how many so far, a count of what is left queued).
ProgressReport = Callable[[int, Callable[[], int]], None]


class Reconciler:
    def __init__(self, store: Store, functions: dict[str, Callable[[Request], Response]],
                 provider: Provider | None = None, controllers: tuple[Controller, ...] = (),
                 usage: UsageRules | None = None, progress: ProgressReport | None = None,
                 lease: Lease | None = None, clock: Callable[[], float] = time.monotonic):
        """`functions`: the composition function of each kind that has one (the registry). `provider`
        reports on managed resources (default: each is Ready as applied). `controllers` are hosted beside
        the functions (the simulator). `usage`: the rules that refuse a deletion from under a user (none:
        nothing is refused). `progress(done, queued)` hears of each reconcile and controller run done
        (`queued()` counts what is left). `clock` times the batches (a test slows it: the fixpoint does
        not depend on it)."""
        self.store = store
        self.provider = provider or ReportsReady()
        self.functions = functions
        self.controllers = {controller.work: controller for controller in controllers}
        self.usage = usage
        self.progress = progress
        self.lease = lease
        self.clock = clock
        # The cache of the store, read through (see cache.py); made anew by _load.
        self.cache = self._new_cache()
        # composite -> the requirements its function last asked for (answered up front next time).
        self.asked: dict[Key, dict[str, Requirement]] = {}
        # One object for equal values composites keep, never changed (what a class's clusters ask and require).
        self.shared: dict = {}
        # composite -> what it required last time, and the reverse, each read from the store when first
        # asked (the store keeps every composite's requirements) and kept current by this reconciler.
        self.watchers = Watchers(store, self.cache.key, self.shared)
        # Composites the writes of the current reconcile affect, in the order they were first affected,
        # with their queue priority: queued once when it ends, rather than once per write (a stack's
        # dozen releases each affect it).
        self.affected: dict[Key, int] = {}
        # (composite uid, composition key) -> what was applied there last: the digest of the desired
        # resource as the function returned it (desired_digest; a digest, not the resource: a full apply
        # applies every composed object, and keeping each one's desired copy beside the cache's held a
        # seventh of the run's memory), the composite's apiVersion, and the key and resourceVersion it
        # left. An equal resource applied over that same version changes nothing, and is not built and
        # written again.
        # Kept by composite, then key: one small dict a composite rather than a pair an object.
        self.applied: dict[str, dict[str, tuple[bytes | None, str, Key, str | None]]] = {}
        # composite -> (its input_generation, its reconciles since that changed), for the bound.
        self.rounds: dict[Key, tuple[tuple, int]] = {}
        # (group, kind) -> how often an object of the kind that users write came, went or changed spec.
        self.user_changes: dict[tuple[str, str], int] = {}
        self.depths: dict[Key, int] = {}  # composite -> how many composites it is composed under (_depth)
        self.running: str | None = None  # the hosted controller whose queued work is being worked off
        self.owns: Callable[[Key], bool] | None = None  # the current run's part of the queue (see run)
        self.deletion = Deletion(self)

    # ---- cache

    def reload(self) -> None:
        """Start from an empty cache of the store (a run's start; a batch that found the cache behind)."""
        self.cache = self._new_cache()
        self.affected = {}
        self.applied = {}  # a batch rolled back may have left versions that the next writes number again
        self.shared = {}
        self.watchers = Watchers(self.store, self.cache.key, self.shared)
        self.depths = {}

    def _new_cache(self) -> Cache:
        indexes = tuple(index for controller in self.controllers.values() for index in controller.field_indexes)
        return Cache(self.store, indexes, self._changed)

    def _changed(self, key: Key, before: Resource | None, after: Resource) -> None:
        """A write or the watch changed an object: count what users change (see input_generation)."""
        if controller_of(after) is None and (before is None or before["metadata"].get("generation")
                                             != after["metadata"].get("generation")):
            self.user_changed(key)

    def user_changed(self, key: Key) -> None:
        kind = (key.group, key.kind)
        self.user_changes[kind] = self.user_changes.get(kind, 0) + 1

    def forget(self, key: Key) -> None:
        """An object deleted: out of the cache, and what its function last asked with it."""
        self.cache.forget(key)
        self.asked.pop(key, None)

    # ---- what users do through the reconciler

    def submit(self, obj: Resource, record: Callable[[Resource, Resource | None], list] | None = None
               ) -> tuple[bool, bool]:
        """Store a user's object and queue what it affects (user_writes.submit; `record`: its managedFields):
        (changed, created)."""
        return submit(self.store, self.functions, obj, record)

    def delete(self, key: Key) -> bool:
        """Delete a composite and everything composed under it (Deletion.delete; InUse while used)."""
        return self.deletion.delete(key)

    # ---- what hosted controllers read (runtime.controller.View)

    def get(self, key: Key) -> Resource | None:
        return self.cache.get(key)

    def lookup(self, kind: str, name: str) -> Resource | None:
        """The cluster-scoped object of a kind with this name."""
        key = self.cache.cluster_scoped(kind, name)
        return self.cache.get(key) if key else None

    def children(self, uid: str) -> list[Resource]:
        """What the object with this uid controls, in key order."""
        return [obj for k in self.cache.controlled_by(uid) if (obj := self.cache.get(k)) is not None]

    def by_field(self, kind: str, path: str, value: str) -> list[Resource]:
        return self.cache.by_field(kind, path, value)

    def root(self, key: Key) -> Key:
        """The top of the controller chain an object is composed under."""
        while (obj := self.cache.get(key)) is not None and (owner := self.controller_key(obj)) is not None:
            key = owner
        return key

    def report_status(self, key: Key, status: dict[str, Any]) -> None:
        """Merge what a hosted controller reports into an object's status (its composite reconciles)."""
        observed = self.cache.get(key)
        if observed is not None:
            self._put_status(key, {**(observed.get("status") or {}), **status})

    def _of_kind(self, group: str, kind: str) -> list[Resource]:
        """Every object of a kind, in key order."""
        return self.cache.of_kind(group, kind)

    def _resolve(self, requirement: Requirement) -> Any:
        return answer(requirement, self._of_kind(*requirement_kind(requirement)), self.cache.get)

    def controller_key(self, obj: Resource) -> Key | None:
        """The key of what controls the object, if anything does."""
        return self.cache.key_of_uid(controller_of(obj) or "")

    # ---- writes the reconciler makes (inside a transaction), each queueing what it affects

    def note_write(self, key: Key, obj: Resource, itself: bool) -> None:
        """Note what a write affects: the object itself (a composite), else its controller, and the
        composites that required it by name (each by its depth: see owner_priority); after those, the
        dependents that required its whole kind (or namespace)."""
        affected = self.affected
        if itself:
            affected[key] = 0
        readers = sorted(self.watchers.of(key))
        if not itself and (owner := self.controller_key(obj)) is not None:
            readers.insert(0, owner)
        for target in readers:
            priority = owner_priority(self._depth(target))
            affected[target] = min(affected.get(target, priority), priority)
        dependents = sorted(self.watchers.of(Key.every(key.group, key.kind))
                            | self.watchers.of(Key.in_namespace(key.group, key.kind, key.namespace)))
        for target in dependents:
            affected.setdefault(target, DEPENDENT_PRIORITY)

    def _depth(self, key: Key) -> int:
        """How many composites an object is composed under (a controller chain never changes)."""
        depth = self.depths.get(key)
        if depth is None:
            obj = self.cache.get(key)
            owner = self.controller_key(obj) if obj is not None else None
            depth = self.depths[key] = 0 if owner is None else 1 + self._depth(owner)
        return depth

    def queue_affected(self) -> None:
        """Queue what the writes so far affect (before anything else is queued, to keep the order)."""
        if self.affected:
            for priority in sorted(set(self.affected.values())):
                self.store.queue.enqueue(RECONCILE, [k for k, p in self.affected.items() if p == priority], priority)
            self.affected.clear()

    def _put(self, obj: Resource, status: Callable[[Resource], dict[str, Any]] | None = None
             ) -> tuple[Resource, bool]:
        """Write a composed resource's spec (and `status`: see Store.put): a composite reconciles next; a
        managed resource's composite observes it next."""
        key = Key.of(obj)
        existing = self.cache.get(key)
        if existing is not None:
            obj["metadata"]["resourceVersion"] = resource_version(existing)
        stored, changed = self.store.put(obj, known=existing, status=status)
        if changed:
            self.cache.remember(stored)
            self.note_write(key, stored, itself=key.kind in self.functions)
        return stored, changed

    def _put_status(self, key: Key, status: dict[str, Any]) -> bool:
        """Replace an object's status, based on the version in the cache; whether it changed."""
        known = self.cache.get(key)
        assert known is not None
        stored, changed = self.store.put_status(key, status, known)
        if changed:
            self.cache.remember(stored)
            self.note_write(key, stored, itself=False)
        return changed

    def resync(self) -> None:
        """Queue every composite, as an informer's periodic resync does: a level-triggered check that
        the fleet is at its fixpoint, whatever the queue says."""
        self.store.queue.enqueue(RECONCILE, sorted(Key.of(o) for o in self.store.list() if o["kind"] in self.functions))

    # ---- the loop

    def run(self, owns: Callable[[Key], bool] | None = None) -> RunReport:
        """Work off the queue until it is empty: the fleet's fixpoint. `owns`: the objects whose items this
        run works on; every other item it meets is set aside (parked: still queued, so that a crash loses no
        trigger) for another worker, and the run ends when only set-aside items are left."""
        report = RunReport()
        if self.store.queue.next_item(unparked=owns is not None) is None:
            return report  # nothing changed: nothing to read
        self.reload()
        self.owns = owns
        try:
            with collector_paused(), self.store.checkpoints_in_background():
                self._run_batches(report)
        finally:
            self.owns = None
            gc.unfreeze()
        return report

    def _run_batches(self, report: RunReport) -> None:
        while True:
            try:
                if not self._run_batch(report):
                    return
                # What the batch left in cycles is collected; what survived it (the cache, mostly) is
                # kept out of every later collection's way until the run ends.
                gc.collect(0)
                gc.freeze()
                # A command waiting for the write lock gets it before the next batch takes it again,
                # rather than starving while a long reconcile re-takes it at once; nobody waiting: no pause.
                self.store.database.let_writers_in()
            except Conflict:
                self.reload()  # the cache missed a write (it never should): read everything, redo the batch

    def _run_batch(self, report: RunReport) -> bool:
        """Work off queue items in one transaction, for up to BATCH_SECONDS; whether any are left.

        The transaction holds the store's write lock, so the cache, brought up to date first, stays the
        store's own copy until commit: no write in between needs its version read back. A user's write
        waits for the batch to commit (a fraction of a second); a batch that fails leaves its items queued."""
        with self.store.transaction(durable=False):
            self.cache.watch()
            self.store.trust_cached_copies()
            deadline = self.clock() + BATCH_SECONDS
            while (item := self._next_item()) is not None:
                if self.lease is not None:
                    self.lease.renew_if_due()
                self._work_on(item, report)
                self.queue_affected()  # what its writes affect, queued before the next item is read
                if self.clock() >= deadline:
                    return True
            return False

    def _next_item(self) -> tuple[str, Key, int] | None:
        """The next queue item. Once a hosted controller's items start, every one queued runs before what
        they cause (a ModelDeployment whose replicas the simulations report on reconciles once for all of
        them), across batches."""
        while True:
            unparked = self.owns is not None
            item = self.store.queue.next_item(self.running, unparked) if self.running else None
            item = item or self.store.queue.next_item(None, unparked)
            if item is None or self.owns is None or self.owns(item[1]):
                break
            self.store.queue.park(item[0], [item[1]])  # another worker's: set aside for it
        self.running = item[0] if item is not None and item[0] in self.controllers else None
        return item

    def _work_on(self, item: tuple[str, Key, int], report: RunReport) -> None:
        work, key, bumps = item
        if work in self.controllers:
            with self.store.transaction(durable=False):
                self.store.queue.done(work, key, bumps)
                report.simulations += bool(self.controllers[work].run(self, key))
            self._report_progress(report)
            return
        if key.kind not in self.functions or self.cache.get(key) is None:
            self.store.queue.done(work, key, bumps)
            return
        inputs = self.input_generation(key)
        since, count = self.rounds.get(key, (inputs, 0))
        count = count if since == inputs else 0
        if count == MAX_RECONCILES_PER_OBJECT:
            report.converged = False
            report.unconverged[str(key)] = count
            self.store.queue.done(work, key, None)
            return
        self.rounds[key] = (inputs, count + 1)
        report.reconciles += 1
        report.reconciled[str(key)] = report.reconciled.get(str(key), 0) + 1
        self.reconcile(key, bumps)
        self._report_progress(report)

    def _report_progress(self, report: RunReport) -> None:
        if self.progress:
            self.progress(report.reconciles + report.simulations, self.store.queue.queued)

    def input_generation(self, key: Key) -> tuple:
        """What a composite's reconciles are bounded by: its own generation and those of the inputs it
        required that users write (no composite controls them), the ones required by kind counted by
        how often users changed that kind during the run. It changes when a user changes an input (from
        this command or another), never when the engine does: what a composite composes follows from
        its inputs, so two composites that keep undoing each other hit the bound."""
        composite = self.cache.get(key)
        assert composite is not None
        generations = [composite["metadata"].get("generation")]
        for required in sorted(self.watchers.required(key)):
            if required.name == EVERY:
                generations.append(self.user_changes.get((required.group, required.kind), 0))
            else:
                obj = self.cache.get(required)
                generations.append(None if obj is None or controller_of(obj)
                                   else obj["metadata"].get("generation"))
        return tuple(generations)

    def reconcile(self, key: Key, bumps: int | None = None) -> None:
        """One reconcile of one composite, committed with its queue bookkeeping (`bumps`: see WorkQueue.done)."""
        composite = self.cache.get(key)
        assert composite is not None
        function = self.functions[composite["kind"]]
        uid = composite["metadata"]["uid"]
        observed = {}
        for child in self.children(uid):
            observed[child["metadata"].get("annotations", {}).get(COMPOSITION_KEY, child["metadata"]["name"])] = child
        response: Response | None = None
        required: set[Key] = set()
        failure: Exception | None = None
        try:
            response, required = self._call(key, function, composite, observed)
        except Exception as exc:  # noqa: BLE001 - a function's bug must not stop the fleet or delete anything
            failure = exc
        with self.store.transaction(durable=False):
            self.store.queue.done(RECONCILE, key, bumps)
            for controller in self.controllers.values():
                self.store.queue.enqueue(controller.work, controller.due_after_reconcile(self, key),
                                         controller.priority)
            self._write_response(key, composite, observed, response, required, failure)

    def _write_response(self, key: Key, composite: Resource, observed: dict[str, Resource],
                        response: Response | None, required: set[Key], failure: Exception | None) -> None:
        """Apply what the function desired, collect what it no longer does, and write the status."""
        if response is None:
            assert failure is not None
            self._report_failure(key, composite, failure)
            return
        if required != self.watchers.required(key):
            self.store.requirements.set(key, required)
            self.watchers.note(key, required)
        conflicts: list[str] = []
        for name, desired in sorted(response.desired.items()):
            applied = self._apply(composite, name, desired.resource, conflicts)
            if name in observed and Key.of(observed[name]) != applied:
                self.deletion.garbage_collect(Key.of(observed[name]))  # renamed: the old object goes
        for name in sorted(set(observed) - set(response.desired)):
            self.deletion.garbage_collect(Key.of(observed[name]))
            self.store.event_log.record(key, "Normal", "DeletedComposed",
                                        f"deleted {Key.of(observed[name])}: no longer desired")
        for event in response.events:
            self.store.event_log.record(key, event.type, event.reason, event.message)
        self._set_status(key, composite, response, observed, conflicts)

    def _report_failure(self, key: Key, composite: Resource, exc: Exception) -> None:
        """As Crossplane does: Synced=False with the error; composed resources stay as they are."""
        status, message = failed_status(composite, exc)
        self.store.event_log.record(key, "Warning", RECONCILE_ERROR, message)
        self._put_status(key, status)

    def _call(self, key: Key, function: Callable[[Request], Response], composite: Resource,
              observed: dict[str, Resource]) -> tuple[Response, set[Key]]:
        """The function's response, and the objects it required. The request holds the cache's own
        objects, uncopied: a function never modifies its request (base.py; checked in the tests)."""
        response, required = call_with_requirements(self._resolve, function, composite, observed, self.asked.get(key))
        asked = tuple(sorted(response.requirements.items()))
        if asked not in self.shared:
            self.shared[asked] = dict(asked)
        self.asked[key] = self.shared[asked]
        return response, required

    def _of_kind_named(self, kind: str) -> list[Resource]:
        """Every cached object of a kind in any group (the provider's gateway controllers ask by kind)."""
        return self.cache.of_kind_named(kind)

    def _apply(self, composite: Resource, name: str, resource: Resource, conflicts: list[str]) -> Key:
        """Apply one desired composed resource; returns its key. A resource that another composite
        controls is left alone, and why is added to `conflicts`."""
        uid = composite["metadata"]["uid"]
        last = self.applied.get(uid, {}).get(name)
        digest = desired_digest(resource)
        if last is not None:
            desired, api_version, child_key, version = last
            current = self.cache.get(child_key)
            # What this apply would write is what the last one wrote, and nothing wrote it since: unchanged.
            if current is not None and resource_version(current) == version and api_version == composite["apiVersion"] \
                    and digest is not None and desired == digest:
                if self.provider.observes_others(current):  # what it depends on may have changed since
                    self._put_status(child_key, self.provider.observe(current, self._of_kind_named))
                return child_key
        # New dicts for what is written here only: the rest is shared, as nothing in the engine
        # modifies an object once built (the function may have returned the cache's own objects).
        obj = {k: v for k, v in resource.items() if k != "status"}
        obj["metadata"] = composed_metadata(composite, name, obj.get("metadata") or {})
        child_key = Key.of(obj)
        existing = self.cache.get(child_key)
        if existing is not None and controller_of(existing) not in (None, uid):
            self._refuse_conflict(composite, child_key, existing, conflicts)
            return child_key
        # A managed resource's provider reports on it as soon as it is applied: its status is written
        # with it, in one version.
        managed = obj["kind"] not in self.functions
        stored, changed = self._put(obj, (lambda applied: self.provider.observe(applied, self._of_kind_named))
                                    if managed else None)
        if managed and not changed and self.provider.observes_others(stored):  # its status moved on since
            self._put_status(child_key, self.provider.observe(stored, self._of_kind_named))
            stored = self.cache.get(child_key) or stored
        self.applied.setdefault(uid, {})[name] = (digest, composite["apiVersion"], self.cache.key(child_key),
                                                  resource_version(stored))
        return child_key

    def _refuse_conflict(self, composite: Resource, key: Key, existing: Resource, conflicts: list[str]) -> None:
        """An object another composite controls is left alone: why is added to `conflicts`."""
        owner = controller_ref(existing)
        assert owner is not None
        message = (f"{key} is controlled by {owner['kind']} {owner['name']}, so {composite['kind']} "
                   f"{composite['metadata']['name']} cannot apply it: rename or delete one of the two")
        conflicts.append(message)
        self.store.event_log.record(Key.of(composite), "Warning", CONFLICT, message)

    def _set_status(self, key: Key, composite: Resource, response: Response,
                    observed: dict[str, Resource], conflicts: list[str]) -> bool:
        status, recoveries = composite_status(composite, response, observed, conflicts)
        for reason, message in recoveries:
            self.store.event_log.record(key, "Normal", reason, message)
        return self._put_status(key, status)
