"""Deletion as the reconciler does it, foreground-style as Kubernetes' garbage collector: an object
and everything it controls, users before what they use, refused while anything outside it uses any of
them (Crossplane's Usage)."""

from __future__ import annotations

from typing import Any

from inferplane.runtime.keys import Key, Resource, controller_of
from inferplane.runtime.usage import deletion_order, users


class InUse(Exception):
    """A deletion refused because objects outside it still use what it would remove (Crossplane's Usage)."""

    def __init__(self, key: Key, users: list[Key]):
        super().__init__(f"{key.qualified()} is in use by {', '.join(u.qualified() for u in users)}")
        self.key = key
        self.users = users


class Deletion:
    """Deletes through one reconciler (reconciler.py), by its public interface: its cache and store, the
    controllers it hosts, and how it notes and queues what a write affects."""

    def __init__(self, reconciler: Any):  # a Reconciler (which makes its Deletion: no import back)
        self.reconciler = reconciler

    def garbage_collect(self, key: Key) -> None:
        """Delete an object and, foreground-style, everything it controls; what observed or required it
        reconciles next."""
        run = self.reconciler
        obj = run.cache.get(key)
        if obj is None:
            return
        for controller in run.controllers.values():
            run.store.queue.enqueue(controller.work, controller.due_on_delete(run, key), controller.priority)
        children = set(run.cache.controlled_by(obj["metadata"]["uid"]))
        run.forget(key)
        if controller_of(obj) is None:
            run.user_changed(key)
        for child in deletion_order(run.usage, children, self.subtree) if run.usage else sorted(children):
            self.garbage_collect(child)
        run.queue_affected()
        run.store.delete(key)
        run.watchers.note(key, set())
        run.note_write(key, obj, itself=False)

    def subtree(self, key: Key) -> list[Resource]:
        """The object and everything it controls, transitively."""
        cache = self.reconciler.cache
        out, pending = [], [key]
        while pending:
            current = cache.get(pending.pop())
            if current is not None:
                out.append(current)
                pending.extend(cache.controlled_by(current["metadata"]["uid"]))
        return out

    def delete(self, key: Key) -> bool:
        """Delete a composite and every composed resource under it, users first; InUse (and nothing
        deleted) while an object outside it uses any of them."""
        run = self.reconciler
        run.reload()
        if run.cache.get(key) is None:
            return False
        in_use = users(run.usage, self.subtree(key), run.store.list()) if run.usage else []
        if in_use:
            raise InUse(key, in_use)
        with run.store.transaction():
            self.garbage_collect(key)
            run.queue_affected()
        return True
