"""The reconciler's view of the store: read through, indexed, kept current by the writes.

Like an informer's cache with its indexers (by kind, by controller, by uid, by an indexed field), but
lazy: nothing is read until a reconcile asks for it, so a run costs what its change reads, not what the
fleet holds. The store's own indexes answer each question the first time; the answer is then kept and
kept current, by the reconciler's writes (`remember`, `forget`) and by what other processes wrote
(`watch`). Each object is decoded once per version read: a row at a version the cache holds is not
decoded again.

Within one of the reconciler's batches the store's write lock is held, so the cache is the store.
"""

from __future__ import annotations

from typing import Callable

from inferplane.runtime.keys import unmanaged
from inferplane.runtime.store import Key, Resource, Store, controller_of, resource_version

# An index kept over one field of one kind's objects: (kind, field path).
FieldIndex = tuple[str, str]


def field_value(obj: Resource, path: str) -> str | None:
    """The value at a dotted field path, as the store's index reads it (None where there is none)."""
    node: object = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return None if node is None or isinstance(node, (dict, list)) else str(node)


class Cache:
    def __init__(self, store: Store, field_indexes: tuple[FieldIndex, ...] = (),
                 on_change: Callable[[Key, Resource | None, Resource], None] = lambda key, before, after: None):
        """`field_indexes`: the (kind, field path) pairs `by_field` answers. `on_change(key, before,
        after)` hears of each object a write or the watch changed (not of those merely read)."""
        self.store = store
        self.field_indexes = field_indexes
        self.on_change = on_change
        for kind, path in field_indexes:
            store.index_field(kind, path)
        self.objects: dict[Key, Resource] = {}
        self.absent: set[Key] = set()  # read and found missing
        # Every answer below is complete once read, and kept so by remember and forget.
        self.kinds: dict[tuple[str, str], set[Key]] = {}
        self.sorted_kinds: dict[tuple[str, str], list[Key]] = {}
        # The answers by a value, each a dict of keys (to None) rather than a set: a composite's dozen
        # resources take half the bytes (~4 MiB a process at 10,000 clusters).
        self.controlled: dict[str, dict[Key, None]] = {}  # controller uid -> the keys it controls
        self.fields: dict[tuple[str, str, str], dict[Key, None]] = {}  # (kind, path, value) -> keys
        self.uids: dict[str, Key | None] = {}  # None: the object with that uid was deleted here
        self.named: dict[tuple[str, str, str], list[Key]] = {}  # (kind, namespace, name) -> keys in any group
        self.groups: dict[str, list[str]] = {}  # kind -> the groups holding objects of it
        self.seen = store.latest_version()  # the highest resourceVersion the cache is known to hold

    def key(self, key: Key) -> Key:
        """The Key object the cache holds an object by (this one, when it holds none), so that its answers
        and what the reconciler keeps share one: ~150,000 objects' keys were each held three to four times
        over (~25 MiB a process). Found through the object's uid, rather than a map of its own."""
        held = self.objects.get(key)
        if held is None:
            return key
        found = self.uids.get(held["metadata"].get("uid") or "")
        return found if found is not None and found == key else key

    # ---- reads

    def decode(self, body: str) -> Resource:
        """An object as the cache holds it: without managedFields, which the store keeps (Store.put) and
        nothing reading the cache reads."""
        return unmanaged(self.store.decode(body))

    def _take(self, rows: list[tuple[Key, int, str]]) -> list[Resource]:
        """The objects of store rows, each decoded only when the cache holds another version of it."""
        out = []
        for key, version, body in rows:
            held = self.objects.get(key)
            if held is None or resource_version(held) != str(version):
                held = self.decode(body)
                self._hold(key, self.objects.get(key), held)
            out.append(held)
        return out

    def get(self, key: Key) -> Resource | None:
        held = self.objects.get(key)
        if held is not None or key in self.absent:
            return held
        row = self.store.row(key)
        if row is None:
            self.absent.add(key)
            return None
        return self._take([row])[0]

    def of_kind(self, group: str, kind: str) -> list[Resource]:
        """Every object of a kind, in key order."""
        keys = self.sorted_kinds.get((group, kind))
        if keys is None:
            if (group, kind) not in self.kinds:
                self.kinds[(group, kind)] = {self.key(Key.of(o))
                                             for o in self._take(self.store.rows_of_kind(group, kind))}
            keys = self.sorted_kinds[(group, kind)] = sorted(self.kinds[(group, kind)])
        return [self.objects[key] for key in keys]

    def of_kind_named(self, kind: str) -> list[Resource]:
        """Every object of a kind in any group."""
        if kind not in self.groups:
            self.groups[kind] = self.store.groups_of(kind)
        return [obj for group in self.groups[kind] for obj in self.of_kind(group, kind)]

    def controlled_by(self, uid: str) -> list[Key]:
        """The keys of what the object with this uid controls, in key order."""
        if uid not in self.controlled:
            self.controlled[uid] = dict.fromkeys(self.key(Key.of(o))
                                                 for o in self._take(self.store.rows_controlled_by(uid)))
        return sorted(self.controlled[uid])

    def by_field(self, kind: str, path: str, value: str) -> list[Resource]:
        """The objects of a kind whose field at `path` (one of `field_indexes`) has this value."""
        assert (kind, path) in self.field_indexes, f"{kind} {path} is not indexed"
        if (kind, path, value) not in self.fields:
            self.fields[(kind, path, value)] = dict.fromkeys(self.key(Key.of(o)) for o in self._take(
                self.store.rows_by_field(kind, path, value)))
        return [self.objects[key] for key in sorted(self.fields[(kind, path, value)])]

    def key_of_uid(self, uid: str) -> Key | None:
        if uid in self.uids or not uid:
            return self.uids.get(uid)
        key = self.store.key_of_uid(uid)
        key = self.uids[uid] = self.key(key) if key is not None else None
        return key

    def cluster_scoped(self, kind: str, name: str) -> Key | None:
        """The cluster-scoped object of a kind with this name (the first group's, should two hold one)."""
        if (kind, "", name) not in self.named:
            self.named[(kind, "", name)] = [self.key(key) for key in self.store.keys_named(kind, "", name)]
        keys = self.named[(kind, "", name)]
        return keys[0] if keys else None

    # ---- what changed

    def watch(self) -> None:
        """Read what other processes wrote since the cache was last known to be current."""
        for key, version, body in self.store.rows_changed_since(self.seen):
            before = self.objects.get(key)
            if before is None or resource_version(before) != str(version):
                after = self.decode(body)
                self._hold(key, before, after)
                self.on_change(key, before, after)
            self.seen = max(self.seen, version)

    def remember(self, obj: Resource) -> None:
        """An object this process just wrote."""
        key, obj = Key.of(obj), unmanaged(obj)
        before = self.objects.get(key)
        self._hold(key, before, obj)
        self.on_change(key, before, obj)
        if int(resource_version(obj) or 0) == self.seen + 1:
            self.seen += 1  # our own write, and nobody else's came in between

    def forget(self, key: Key) -> Resource | None:
        """An object this process just deleted; what the cache held of it."""
        obj = self.objects.pop(key, None)
        self.absent.add(key)
        if obj is not None:
            self._unindex(key, obj)
            self.uids[obj["metadata"].get("uid", "")] = None
        self.controlled.pop(obj["metadata"].get("uid", "") if obj else "", None)
        self._name_gone(key)
        return obj

    def _hold(self, key: Key, before: Resource | None, after: Resource) -> None:
        key = self.key(key)
        self.objects[key] = after
        if before is not None:
            self._unindex(key, before)
        else:
            self.absent.discard(key)
            self._name_new(key)
        kind = (key.group, key.kind)
        if kind in self.kinds and key not in self.kinds[kind]:
            self.kinds[kind].add(key)
            self.sorted_kinds.pop(kind, None)
        for held in self._answers_by_value(key, after):
            held[key] = None
        uid = after["metadata"].get("uid")
        if uid:
            self.uids[uid] = key

    def _unindex(self, key: Key, obj: Resource) -> None:
        """Take an object's former version out of the answers that hold it by a value it may change."""
        for held in self._answers_by_value(key, obj):
            held.pop(key, None)

    def _answers_by_value(self, key: Key, obj: Resource) -> list[dict[Key, None]]:
        """The answers read so far that hold this version of the object by a value of it: its
        controller's, and each indexed field's."""
        controller = controller_of(obj)
        out = [self.controlled[controller]] if controller and controller in self.controlled else []
        for index_kind, path in self.field_indexes:
            value = field_value(obj, path) if index_kind == key.kind else None
            if value is not None and (key.kind, path, value) in self.fields:
                out.append(self.fields[(key.kind, path, value)])
        return out

    def _name_new(self, key: Key) -> None:
        named = self.named.get((key.kind, key.namespace, key.name))
        if named is not None and key not in named:
            named.append(key)
            named.sort()
        if key.kind in self.groups and key.group not in self.groups[key.kind]:
            self.groups[key.kind] = sorted({*self.groups[key.kind], key.group})

    def _name_gone(self, key: Key) -> None:
        named = self.named.get((key.kind, key.namespace, key.name))
        if named is not None and key in named:
            named.remove(key)
        kind = (key.group, key.kind)
        if kind in self.kinds and key in self.kinds[kind]:
            self.kinds[kind].discard(key)
            self.sorted_kinds.pop(kind, None)
        self.groups.pop(key.kind, None)  # the group may hold no other: read again when asked
