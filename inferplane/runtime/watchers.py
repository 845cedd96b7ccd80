"""Which composites watch which objects: what each composite required in its last reconcile, and the
reverse, read from the store's requirements when first asked and kept current by the reconciler."""

from __future__ import annotations

from typing import Callable

from inferplane.runtime.keys import Key
from inferplane.runtime.store import Store


class Watchers:
    def __init__(self, store: Store, key: Callable[[Key], Key] = lambda key: key, shared: dict | None = None):
        """`key`: the Key object to keep for a key (the cache's own, Cache.key); `shared`: one object for
        equal values (the reconciler's), so that composites requiring alike share a frozenset."""
        self.store = store
        self.key = key
        self.shared = {} if shared is None else shared
        self.required_by_watcher: dict[Key, frozenset[Key]] = {}  # composite -> what it required
        self.watching: dict[Key, set[Key]] = {}  # key -> the composites that required it
        # Every key some composite requires, read once (a fleet's are its classes: 15 keys for 21,000
        # requirements at 10,000 clusters). A full apply asks `of` every object it writes, nearly all of
        # them required by nobody: known so at once, with neither a query nor a note kept for each.
        self.required_keys: set[Key] | None = None

    def required(self, watcher: Key) -> frozenset[Key]:
        """What one composite required in its last reconcile."""
        if watcher not in self.required_by_watcher:
            self._keep(watcher, self.store.requirements.of(watcher))
        return self.required_by_watcher[watcher]

    def _keep(self, watcher: Key, keys: set[Key]) -> None:
        required = frozenset(keys)
        self.required_by_watcher[watcher] = self.shared.setdefault(required, required)

    def of(self, key: Key) -> set[Key]:
        """The composites that required exactly this key (an object, or Key.every / Key.in_namespace)."""
        found = self.watching.get(key)
        if found is None:
            if self.required_keys is None:
                self.required_keys = self.store.requirements.keys()
            if key not in self.required_keys:
                return set()
            found = self.watching[self.key(key)] = self.store.requirements.watchers_of(key)
        return found

    def note(self, watcher: Key, keys: set[Key]) -> None:
        """A composite's new requirements (already in the store): what is kept follows."""
        for key in self.required(watcher):
            if key in self.watching:
                self.watching[key].discard(watcher)
        self._keep(watcher, keys)
        if self.required_keys is not None:
            self.required_keys |= keys
        for key in keys:
            if key in self.watching:
                self.watching[key].add(watcher)
