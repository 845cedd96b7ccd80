"""Which composites watch which objects: what each composite required in its last reconcile, and the
reverse, read from the store's requirements when first asked and kept current by the reconciler."""

from __future__ import annotations

from typing import Callable

from inferplane.runtime.keys import Key
from inferplane.runtime.store import Store


class Watchers:
    def __init__(self, store: Store, key: Callable[[Key], Key] = lambda key: key):
        """`key`: the Key object to keep for a key (the cache's own, Cache.key)."""
        self.store = store
        self.key = key
        self.required_by_watcher: dict[Key, set[Key]] = {}  # composite -> what it required
        self.watching: dict[Key, set[Key]] = {}  # key -> the composites that required it
        # Keys nobody requires (nearly every composed object), noted apart rather than each kept with
        # a set of its own: a full apply asks `of` every object it writes.
        self.unwatched: set[Key] = set()

    def required(self, watcher: Key) -> set[Key]:
        """What one composite required in its last reconcile."""
        if watcher not in self.required_by_watcher:
            self.required_by_watcher[watcher] = self.store.required_by_watcher(watcher)
        return self.required_by_watcher[watcher]

    def of(self, key: Key) -> set[Key]:
        """The composites that required exactly this key (an object, or Key.every / Key.in_namespace)."""
        found = self.watching.get(key)
        if found is None:
            if key in self.unwatched:
                return set()
            found = self.store.watchers_of(key)
            if not found:
                self.unwatched.add(self.key(key))
                return found
            self.watching[self.key(key)] = found
        return found

    def note(self, watcher: Key, keys: set[Key]) -> None:
        """A composite's new requirements (already in the store): what is kept follows."""
        for key in self.required(watcher):
            if key in self.watching:
                self.watching[key].discard(watcher)
        self.required_by_watcher[watcher] = keys
        for key in keys:
            if key in self.watching:
                self.watching[key].add(watcher)
            elif key in self.unwatched:
                self.unwatched.discard(key)
                self.watching[key] = {watcher}
