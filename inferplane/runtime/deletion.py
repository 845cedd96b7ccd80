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
    """The part of the Reconciler (reconciler.py) that deletes."""

    cache: Any
    store: Any
    usage: Any
    controllers: dict[str, Any]
    asked: dict[Key, Any]
    watchers: Any

    def _garbage_collect(self, key: Key) -> None:
        """Delete an object and, foreground-style, everything it controls; what observed or required it
        reconciles next."""
        obj = self.cache.get(key)
        if obj is None:
            return
        for controller in self.controllers.values():
            self.store.enqueue(controller.work, controller.due_on_delete(self, key), controller.priority)
        children = set(self.cache.controlled_by(obj["metadata"]["uid"]))
        self.cache.forget(key)
        if controller_of(obj) is None:
            self._user_changed(key)
        self.asked.pop(key, None)
        for child in deletion_order(self.usage, children, self._subtree) if self.usage else sorted(children):
            self._garbage_collect(child)
        self._queue_affected()
        self.store.delete(key)
        self.watchers.note(key, set())
        self._enqueue_affected(key, obj, itself=False)

    def _subtree(self, key: Key) -> list[Resource]:
        """The object and everything it controls, transitively."""
        out, pending = [], [key]
        while pending:
            current = self.cache.get(pending.pop())
            if current is not None:
                out.append(current)
                pending.extend(self.cache.controlled_by(current["metadata"]["uid"]))
        return out

    def delete(self, key: Key) -> bool:
        """Delete a composite and every composed resource under it, users first; InUse (and nothing
        deleted) while an object outside it uses any of them."""
        self._load()
        if self.cache.get(key) is None:
            return False
        in_use = users(self.usage, self._subtree(key), self.store.list()) if self.usage else []
        if in_use:
            raise InUse(key, in_use)
        with self.store.transaction():
            self._garbage_collect(key)
            self._queue_affected()
        return True
