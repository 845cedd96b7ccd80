"""The store's events: what happened to each object, aggregated as Kubernetes aggregates repeats."""

from __future__ import annotations

from typing import Any

from inferplane.runtime.keys import Key, columns


class EventLog:
    """A store's events (`store.event_log`), kept in its `events` table through its public interface."""

    def __init__(self, store: Any):  # a Store (store.py imports this module)
        self.store = store

    def events(self, key: Key | None = None) -> list[dict[str, Any]]:
        """One object's events (or every event), oldest first, each with its count and the times it
        was first and last seen."""
        query = ("SELECT api_group, kind, namespace, name, type, reason, message, count, first_seen, last_seen "
                 "FROM events")
        args: tuple = ()
        if key is not None:
            query += " WHERE api_group=? AND kind=? AND namespace=? AND name=?"
            args = columns(key)
        rows = self.store.execute(query + " ORDER BY last_seen, seq", args)
        return [{"involvedObject": Key(g, k, ns, n), "type": t, "reason": r, "message": m, "count": c,
                 "firstTimestamp": first, "lastTimestamp": last}
                for g, k, ns, n, t, r, m, c, first, last in rows]

    def record(self, key: Key, type_: str, reason: str, message: str) -> None:
        """Record an event; one the object already has (same type, reason and message) counts once
        more and is seen again now, as Kubernetes aggregates repeated events."""
        seen = self.store.clock()
        with self.store.transaction():
            where = (*columns(key), type_, reason, message)
            repeated = self.store.execute(
                "UPDATE events SET count = count + 1, last_seen = ? "
                "WHERE api_group=? AND kind=? AND namespace=? AND name=? AND type=? AND reason=? AND message=?",
                (seen, *where))
            if repeated.rowcount == 0:
                self.store.execute(
                    "INSERT INTO events (api_group, kind, namespace, name, type, reason, message, first_seen, "
                    "last_seen) VALUES (?,?,?,?,?,?,?,?,?)", (*where, seen, seen))

    def forget(self, key: Key) -> None:
        """Drop one object's events (it is deleted)."""
        self.store.execute("DELETE FROM events WHERE api_group=? AND kind=? AND namespace=? AND name=?", columns(key))
