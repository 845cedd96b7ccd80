"""Users' writes as the reconciler takes them: stored, and what they affect queued in the same transaction."""

from __future__ import annotations

from typing import Callable, Container

from inferplane.runtime.keys import Key, Resource, resource_version, written_digest
from inferplane.runtime.store import Conflict, Store
from inferplane.runtime.work_queue import RECONCILE


def submit(store: Store, composites: Container[str], obj: Resource,
           record: Callable[[Resource, Resource | None], list] | None = None) -> tuple[bool, bool]:
    """Store a user's object (spec and metadata; its status stays the reconciler's) and queue what it
    affects: itself if its kind is one of `composites`, and what required it. Based on the version read
    just before; retried when another write came in between. Returns (changed, created). The same object
    written again is known unchanged by its digest, without reading the stored one. `record`: the
    object's managedFields, from it and the stored one (fieldmanager.managers.recorder), when it is written."""
    key = Key.of(obj)
    written = written_digest(obj)
    while True:
        if store.written(key) == written:
            return False, False
        current = store.get(key)
        meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "resourceVersion"}
        if current is not None:
            meta["resourceVersion"] = resource_version(current)
        if record is not None:
            meta["managedFields"] = record(obj, current)
        try:
            with store.transaction():
                _, changed = store.put({**obj, "metadata": meta}, known=current, written=written)
                if changed:
                    targets = [key] if key.kind in composites else []
                    store.queue.enqueue(RECONCILE, targets + store.requirements.watchers(key))
            return changed, current is None
        except Conflict:
            continue
