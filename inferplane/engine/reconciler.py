"""The embedded reconciler, with Crossplane's semantics.

For each composite: call its composition function with the observed composite, its observed composed
resources (by the keys the function gave them) and the required resources it asked for; apply the
desired composed resources; garbage-collect composed resources that are no longer desired; derive
readiness. Repeat until nothing changes (a fixpoint) or the iteration bound is hit, which is
reported. Composed composites (cloud clusters, serving stacks) reconcile in turn.
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from inferplane.compose.base import Request, Response, is_ready
from inferplane.engine.provider import SimulatedProvider
from inferplane.engine.store import Key, Resource, Store
from inferplane.engine.usage import deletion_order, users

# Crossplane marks each composed resource with the key its function gave it.
COMPOSITION_KEY = "crossplane.io/composition-resource-name"
COMPOSITE_LABEL = "crossplane.io/composite"
# A healthy fleet converges in a handful of reconciles per object (apply, observe ready, report);
# far more means two things keep undoing each other.
MAX_RECONCILES_PER_OBJECT = 25
# Bounded so that a function which keeps asking for new resources cannot spin forever.
MAX_REQUIREMENT_ROUNDS = 5


def composition_functions() -> dict[str, Callable[[Request], Response]]:
    """Kind -> composition function. Imported lazily: functions pull in the whole catalog."""
    from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
    from inferplane.compose.cloud_cluster import compose_cloud_cluster
    from inferplane.compose.inference_cluster import compose_inference_cluster
    from inferplane.compose.serving_stack import compose_serving_stack

    functions = {"InferenceCluster": compose_inference_cluster, "ServingStack": compose_serving_stack}
    functions.update({kind.KIND: compose_cloud_cluster for kind in CLOUD_CLUSTER_KINDS.values()})
    return functions


def controller_of(obj: Resource) -> str | None:
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref.get("uid")
    return None


class InUse(Exception):
    """A deletion refused because something outside it still uses what it would remove."""

    def __init__(self, key: Key, users: list[Key]):
        super().__init__(f"{key.qualified()} is in use by {', '.join(u.qualified() for u in users)}: delete "
                         f"those or change them to stop using it first; nothing was deleted")
        self.key = key
        self.users = users


@dataclass
class RunReport:
    converged: bool = True
    reconciles: int = 0
    # Objects that hit the bound, with how often they were reconciled.
    unconverged: dict[str, int] = field(default_factory=dict)


class Reconciler:
    def __init__(self, store: Store, provider: SimulatedProvider | None = None,
                 functions: dict[str, Callable[[Request], Response]] | None = None,
                 progress: Callable[[int, int], None] | None = None):
        self.store = store
        self.provider = provider or SimulatedProvider()
        self.functions = functions if functions is not None else composition_functions()
        self.progress = progress
        # A write-through cache of the store, indexed by controller uid, loaded once per run.
        self.objects: dict[Key, Resource] = {}
        self.owned: dict[str, set[Key]] = {}
        self.by_uid: dict[str, Key] = {}

    # ---- cache

    def _load(self) -> None:
        self.objects, self.owned, self.by_uid = {}, {}, {}
        for obj in self.store.list():
            self._remember(obj)

    def _remember(self, obj: Resource) -> None:
        key = Key.of(obj)
        previous = self.objects.get(key)
        if previous is not None:
            self._forget_owner(key, previous)
        self.objects[key] = obj
        self.by_uid[obj["metadata"]["uid"]] = key
        owner = controller_of(obj)
        if owner:
            self.owned.setdefault(owner, set()).add(key)

    def _forget_owner(self, key: Key, obj: Resource) -> None:
        owner = controller_of(obj)
        if owner and owner in self.owned:
            self.owned[owner].discard(key)

    def _put(self, obj: Resource) -> tuple[Resource, bool]:
        stored, changed = self.store.put(obj)
        if changed:
            self._remember(stored)
        return stored, changed

    def _put_status(self, key: Key, status: dict[str, Any]) -> bool:
        """Replace an object's status (from the cache: no read back); whether it changed."""
        return self._put({**self.objects[key], "status": status})[1]

    # ---- the loop

    def run(self) -> RunReport:
        """Reconcile every composite to a fixpoint."""
        self._load()
        report = RunReport()
        queue: deque[Key] = deque(sorted(k for k, o in self.objects.items() if o["kind"] in self.functions))
        queued = set(queue)
        counts: dict[Key, int] = {}
        while queue:
            key = queue.popleft()
            queued.discard(key)
            if key not in self.objects:
                continue
            counts[key] = counts.get(key, 0) + 1
            if counts[key] > MAX_RECONCILES_PER_OBJECT:
                report.converged = False
                report.unconverged[str(key)] = counts[key] - 1
                continue
            report.reconciles += 1
            for follow_up in self.reconcile(key):
                if follow_up not in queued and follow_up in self.objects:
                    queue.append(follow_up)
                    queued.add(follow_up)
            if self.progress:
                self.progress(report.reconciles, len(queue))
        return report

    def reconcile(self, key: Key) -> list[Key]:
        """One reconcile of one composite; returns the objects to reconcile next."""
        composite = self.objects[key]
        function = self.functions[composite["kind"]]
        uid = composite["metadata"]["uid"]
        observed = {}
        for child_key in sorted(self.owned.get(uid, ())):
            child = self.objects[child_key]
            observed[child["metadata"].get("annotations", {}).get(COMPOSITION_KEY, child_key.name)] = child
        try:
            response = self._call(function, composite, observed)
        except Exception as exc:  # noqa: BLE001 - a function's bug must not stop the fleet or delete anything
            self._report_failure(key, composite, exc)
            return []
        follow_ups: list[Key] = []
        with self.store.transaction():
            for name, desired in sorted(response.desired.items()):
                applied, more = self._apply(composite, name, desired.resource)
                follow_ups += more
                if name in observed and Key.of(observed[name]) != applied:
                    self._garbage_collect(Key.of(observed[name]))  # renamed: the old object goes
            for name in sorted(set(observed) - set(response.desired)):
                self._garbage_collect(Key.of(observed[name]))
                self.store.record_event(key, "Normal", "DeletedComposed",
                                        f"deleted {Key.of(observed[name])}: no longer desired")
                follow_ups.append(key)
            for event in response.events:
                self.store.record_event(key, event.type, event.reason, event.message)
            if self._set_status(key, composite, response, observed):
                owner = self.by_uid.get(controller_of(self.objects[key]) or "")
                if owner:
                    follow_ups.append(owner)
        return follow_ups

    def _report_failure(self, key: Key, composite: Resource, exc: Exception) -> None:
        """As Crossplane does: Synced=False with the error; composed resources stay as they are."""
        status = dict(composite.get("status") or {})
        conditions = {c["type"]: c for c in status.get("conditions", [])}
        message = f"composition function failed: {type(exc).__name__}: {exc}"
        conditions["Synced"] = {"type": "Synced", "status": "False", "reason": "ReconcileError", "message": message}
        status["conditions"] = [conditions[t] for t in sorted(conditions)]
        with self.store.transaction():
            self.store.record_event(key, "Warning", "ReconcileError", message)
            self._put_status(key, status)

    def _call(self, function: Callable[[Request], Response], composite: Resource,
              observed: dict[str, Resource]) -> Response:
        required: dict[str, Resource | None] = {}
        response = function(Request(copy.deepcopy(composite), copy.deepcopy(observed), required))
        for _ in range(MAX_REQUIREMENT_ROUNDS):
            wanted = {n: r for n, r in response.requirements.items() if n not in required}
            if not wanted:
                break
            for name, requirement in wanted.items():
                group = requirement.api_version.rsplit("/", 1)[0]
                found = self.objects.get(Key(group, requirement.kind, requirement.namespace or "", requirement.name))
                required[name] = copy.deepcopy(found) if found else None
            response = function(Request(copy.deepcopy(composite), copy.deepcopy(observed), dict(required)))
        return response

    def _apply(self, composite: Resource, name: str, resource: Resource) -> tuple[Key, list[Key]]:
        """Apply one desired composed resource: its key, and what to reconcile next."""
        obj = copy.deepcopy(resource)
        obj.pop("status", None)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("name", f"{composite['metadata']['name']}-{name}")
        meta.setdefault("annotations", {})[COMPOSITION_KEY] = name
        meta.setdefault("labels", {})[COMPOSITE_LABEL] = composite["metadata"]["name"]
        meta["ownerReferences"] = [{
            "apiVersion": composite["apiVersion"], "kind": composite["kind"], "name": composite["metadata"]["name"],
            "uid": composite["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        child_key = Key.of(obj)
        existing = self.objects.get(child_key)
        if existing is not None and controller_of(existing) not in (None, composite["metadata"]["uid"]):
            self.store.record_event(Key.of(composite), "Warning", "ComposedResourceConflict",
                                    f"{child_key} is controlled by another composite: not applied")
            return child_key, []
        stored, changed = self._put(obj)
        if not changed:
            return child_key, []
        if obj["kind"] in self.functions:
            return child_key, [child_key]  # a composed composite reconciles in turn
        self._put_status(child_key, self.provider.observe(stored))
        return child_key, [Key.of(composite)]  # the composite observes its new resource next time

    def _garbage_collect(self, key: Key) -> None:
        """Delete an object and, foreground-style, everything it controls."""
        obj = self.objects.pop(key, None)
        if obj is None:
            return
        self._forget_owner(key, obj)
        uid = obj["metadata"]["uid"]
        self.by_uid.pop(uid, None)
        for child in deletion_order(self.owned.pop(uid, set()), self._subtree):
            self._garbage_collect(child)
        self.store.delete(key)

    def _subtree(self, key: Key) -> list[Resource]:
        """The object and everything it controls, transitively."""
        out, pending = [], [key]
        while pending:
            current = self.objects.get(pending.pop())
            if current is not None:
                out.append(current)
                pending.extend(self.owned.get(current["metadata"]["uid"], ()))
        return out

    def delete(self, key: Key) -> bool:
        """Delete a composite and every composed resource under it, users first; InUse (and nothing
        deleted) while an object outside it uses any of them."""
        self._load()
        if key not in self.objects:
            return False
        in_use = users(self._subtree(key), self.objects.values())
        if in_use:
            raise InUse(key, in_use)
        with self.store.transaction():
            self._garbage_collect(key)
        return True

    def _set_status(self, key: Key, composite: Resource, response: Response,
                    observed: dict[str, Resource]) -> bool:
        status: dict[str, Any] = dict(composite.get("status") or {})
        status.update(copy.deepcopy(response.status))
        conditions = {c["type"]: c for c in status.get("conditions", [])}
        for condition in response.conditions:
            conditions[condition.type] = condition.to_dict()
        pending = sorted(name for name, d in response.desired.items()
                         if not (d.ready if d.ready is not None else is_ready(observed.get(name))))
        failing = [c for c in response.conditions if c.status == "False"]
        if pending or failing:
            # A condition that says why (InvalidSpec, UnsupportedDevices) beats a generic "Creating".
            stuck = [c for c in failing if c.reason not in ("Creating", "Installing")]
            why = stuck[0].reason if stuck else failing[0].reason if failing and not pending else "Creating"
            message = stuck[0].message if stuck else (f"waiting for {', '.join(pending)}" if pending
                                                      else failing[0].message)
            conditions["Ready"] = {"type": "Ready", "status": "False", "reason": why, "message": message}
        else:
            conditions["Ready"] = {"type": "Ready", "status": "True", "reason": "Available", "message": ""}
        conditions["Synced"] = {"type": "Synced", "status": "True", "reason": "ReconcileSuccess", "message": ""}
        status["conditions"] = [conditions[t] for t in sorted(conditions)]
        return self._put_status(key, status)
