"""The store's persistent work queue, keyed by object, and the requirements that tell which
composites watch what (written in the same transaction as the change that queues them, so a crash
loses no trigger)."""

from __future__ import annotations

from typing import Any, Iterable

from inferplane.runtime.keys import EVERY, Key, columns

# The reconciler's kind of work in the queue (a hosted controller's work is named by it).
RECONCILE = "reconcile"
# Added to the priority of an item set aside for another worker (Reconciler.run's `owns`): it stays
# queued, so that a crash loses no trigger, but a run that skips parked items does not see it.
PARKED = 1_000_000


class WorkQueue:
    """A store's work queue (`store.queue`), kept in its `work_queue` table through its public interface."""

    def __init__(self, store: Any):  # a Store (store.py imports this module)
        self.store = store

    def enqueue(self, work: str, keys: Iterable[Key], priority: int = 0) -> None:
        """Queue (work, object) items; an item already queued keeps its place."""
        with self.store.transaction():
            self.store.executemany(
                "INSERT INTO work_queue (priority, work, api_group, kind, namespace, name) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(work, api_group, kind, namespace, name) DO UPDATE SET bumps = bumps + 1",
                [(priority, work, *columns(key)) for key in keys])

    def next_item(self, work: str | None = None, unparked: bool = False) -> tuple[str, Key, int] | None:
        """The first queued (work, object, bumps), lowest priority first (of that `work` only, if given;
        `unparked`: not one parked); it stays queued until `done`."""
        clauses, args = (["work=?"], (work,)) if work is not None else ([], ())
        clauses += [f"priority < {PARKED}"] if unparked else []
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        row = self.store.execute("SELECT work, api_group, kind, namespace, name, bumps FROM work_queue "
                                 f"{where}ORDER BY priority, seq LIMIT 1", args).fetchone()
        return (row[0], Key(*row[1:5]), row[5]) if row else None

    def queued_of_kind(self, work: str, kind: str) -> list[Key]:
        """The objects of a kind queued for `work` and not parked."""
        return [Key(*row) for row in self.store.execute(
            f"SELECT api_group, kind, namespace, name FROM work_queue WHERE work=? AND kind=? AND priority < {PARKED}",
            (work, kind))]

    def park(self, work: str, keys: Iterable[Key]) -> None:
        """Park queued items (see PARKED); an item parked already stays as it is."""
        with self.store.transaction():
            self.store.executemany(f"UPDATE work_queue SET priority = priority + {PARKED} WHERE work=? AND "
                                   f"api_group=? AND kind=? AND namespace=? AND name=? AND priority < {PARKED}",
                                   [(work, *columns(key)) for key in keys])

    def unpark(self) -> None:
        """Every parked item queued as it was."""
        with self.store.transaction():
            self.store.execute(f"UPDATE work_queue SET priority = priority - {PARKED} WHERE priority >= {PARKED}")

    def done(self, work: str, key: Key, bumps: int | None) -> None:
        """Finish an item; unless `bumps` is None, only if nobody queued it again since it was read."""
        query = "DELETE FROM work_queue WHERE work=? AND api_group=? AND kind=? AND namespace=? AND name=?"
        args: tuple = (work, *columns(key))
        if bumps is not None:
            query, args = query + " AND bumps=?", (*args, bumps)
        with self.store.transaction():
            self.store.execute(query, args)

    def queued(self) -> int:
        return self.store.execute("SELECT COUNT(*) FROM work_queue").fetchone()[0]



class Requirements:
    """What each composite required in its last reconcile (`store.requirements`): which composites a write
    wakes."""

    def __init__(self, store: Any):  # a Store (store.py imports this module)
        self.store = store

    def set(self, watcher: Key, required: Iterable[Key]) -> None:
        with self.store.transaction():
            self.forget(watcher)
            self.store.executemany("INSERT OR IGNORE INTO requirements (watcher, api_group, kind, namespace, name) "
                                   "VALUES (?,?,?,?,?)", [(watcher.encode(), *columns(k)) for k in required])

    def forget(self, watcher: Key) -> None:
        """Drop what a composite required (it is deleted)."""
        self.store.execute("DELETE FROM requirements WHERE watcher=?", (watcher.encode(),))

    def of(self, watcher: Key) -> set[Key]:
        """What one composite required in its last reconcile."""
        return {Key(*row) for row in self.store.execute(
            "SELECT api_group, kind, namespace, name FROM requirements WHERE watcher=?", (watcher.encode(),))}

    def watchers_of(self, required: Key) -> set[Key]:
        """The composites that required exactly this key (an object, or Key.every / Key.in_namespace)."""
        return {Key.decode(row[0]) for row in self.store.execute(
            "SELECT watcher FROM requirements WHERE api_group=? AND kind=? AND namespace=? AND name=?",
            columns(required))}

    def keys(self) -> set[Key]:
        """Every key some composite required in its last reconcile (an object, or Key.every / Key.in_namespace)."""
        return {Key(*row) for row in self.store.execute(
            "SELECT DISTINCT api_group, kind, namespace, name FROM requirements")}

    def watchers(self, key: Key) -> list[Key]:
        """The composites that required `key` in their last reconcile: by name, among its namespace's, or
        among every object of its kind."""
        rows = self.store.execute("SELECT DISTINCT watcher FROM requirements WHERE api_group=? AND kind=? AND "
                                  "((namespace=? AND name IN (?, ?)) OR (namespace=? AND name=?)) ORDER BY watcher",
                                  (*columns(key), EVERY, EVERY, EVERY))
        return [Key.decode(row[0]) for row in rows]
