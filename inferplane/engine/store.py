"""The embedded runtime's store: every resource with generation, resourceVersion, owners and status.

SQLite in WAL mode; each `transaction()` commits atomically, so a process killed mid-apply leaves
every acknowledged write and nothing half-written. `path=None` keeps everything in memory (render).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

Resource = dict[str, Any]

# The layout of the tables below, recorded in the database (PRAGMA user_version). A store written by
# a newer layout is refused rather than misread; 0 is a store from before the layout was recorded,
# which is this same layout.
SCHEMA_VERSION = 1


class UnknownSchema(Exception):
    """The store was written with a layout this inferplane does not know."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    api_group TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (api_group, kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    api_group TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_object ON events (api_group, kind, namespace, name);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- What each simulated target cluster holds (nodes, pods, ResourceSlices), replaced as a whole.
CREATE TABLE IF NOT EXISTS cluster_objects (
    cluster TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (cluster, seq)
);
"""


@dataclass(frozen=True, order=True)
class Key:
    """Identity of an object: group (not version, as in Kubernetes), kind, namespace, name."""

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Resource) -> "Key":
        group = obj["apiVersion"].rsplit("/", 1)[0] if "/" in obj["apiVersion"] else ""
        meta = obj.get("metadata", {})
        return cls(group, obj["kind"], meta.get("namespace") or "", meta["name"])

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind}/{where}{self.name}"

    def qualified(self) -> str:
        """As kubectl prints it: kind.group/name, unambiguous across API groups."""
        group = f".{self.group}" if self.group else ""
        return f"{self.kind.lower()}{group}/{self.name}"


def uid_for(key: Key) -> str:
    """A stable uid: the same object gets the same uid on every run (renders are reproducible)."""
    digest = hashlib.sha256(f"{key.group}|{key.kind}|{key.namespace}|{key.name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _dumps(obj: Resource) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class Store:
    def __init__(self, path: Path | None = None):
        self.path = path
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path / "store.db", isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: a transaction acknowledged to the user survives power loss, not only a kill.
            self._db.execute("PRAGMA synchronous=FULL")
        else:
            self._db = sqlite3.connect(":memory:", isolation_level=None)
        found = self._db.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            self._db.close()
            raise UnknownSchema(f"its store has schema version {found} and this inferplane knows only up to "
                                f"{SCHEMA_VERSION}: use the inferplane that wrote it, or another --state")
        self._db.executescript(_SCHEMA)
        if found != SCHEMA_VERSION:
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._depth = 0

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator["Store"]:
        """Writes inside commit together or not at all; nested uses join the outer transaction."""
        if self._depth == 0:
            self._db.execute("BEGIN IMMEDIATE")
        self._depth += 1
        try:
            yield self
        except BaseException:
            self._depth -= 1
            if self._depth == 0 and self._db.in_transaction:  # SQLite rolls back itself on a full disk
                self._db.execute("ROLLBACK")
            raise
        self._depth -= 1
        if self._depth == 0:
            self._db.execute("COMMIT")

    # ---- reads

    def get(self, key: Key) -> Resource | None:
        row = self._db.execute(
            "SELECT body FROM resources WHERE api_group=? AND kind=? AND namespace=? AND name=?",
            (key.group, key.kind, key.namespace, key.name)).fetchone()
        return json.loads(row[0]) if row else None

    def list(self, kind: str | None = None, group: str | None = None) -> list[Resource]:
        query, args = "SELECT body FROM resources", []
        clauses = []
        if kind is not None:
            clauses.append("kind=?")
            args.append(kind)
        if group is not None:
            clauses.append("api_group=?")
            args.append(group)
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        query += " ORDER BY api_group, kind, namespace, name"
        return [json.loads(row[0]) for row in self._db.execute(query, args)]

    def events(self, key: Key) -> list[dict[str, str]]:
        rows = self._db.execute(
            "SELECT type, reason, message FROM events WHERE api_group=? AND kind=? AND namespace=? AND name=? "
            "ORDER BY seq", (key.group, key.kind, key.namespace, key.name))
        return [{"type": t, "reason": r, "message": m} for t, r, m in rows]

    # ---- writes

    def _next_version(self) -> int:
        row = self._db.execute(
            "INSERT INTO counters (name, value) VALUES ('resourceVersion', 1) "
            "ON CONFLICT(name) DO UPDATE SET value = value + 1 RETURNING value").fetchone()
        return row[0]

    def put(self, obj: Resource) -> tuple[Resource, bool]:
        """Create or update; bumps generation when the spec changes. Returns (stored, changed)."""
        key = Key.of(obj)
        with self.transaction():
            current = self.get(key)
            meta = dict(obj.get("metadata", {}))
            if current is None:
                meta["uid"] = uid_for(key)
                meta["generation"] = 1
            else:
                old_meta = current["metadata"]
                meta["uid"] = old_meta["uid"]
                meta["generation"] = old_meta["generation"] + (obj.get("spec") != current.get("spec"))
                meta.setdefault("ownerReferences", old_meta.get("ownerReferences"))
            meta = {k: v for k, v in meta.items() if v is not None}
            meta.pop("resourceVersion", None)
            stored = {**obj, "metadata": meta}
            if "status" not in obj and current is not None and "status" in current:
                stored["status"] = current["status"]
            if current is not None:
                unchanged = {**current, "metadata": {k: v for k, v in current["metadata"].items()
                                                     if k != "resourceVersion"}}
                if _dumps(unchanged) == _dumps(stored):
                    return current, False
            stored["metadata"]["resourceVersion"] = str(self._next_version())
            self._db.execute(
                "INSERT INTO resources (api_group, kind, namespace, name, body) VALUES (?,?,?,?,?) "
                "ON CONFLICT(api_group, kind, namespace, name) DO UPDATE SET body=excluded.body",
                (key.group, key.kind, key.namespace, key.name, _dumps(stored)))
            return stored, True

    def delete(self, key: Key) -> bool:
        with self.transaction():
            where = (key.group, key.kind, key.namespace, key.name)
            cursor = self._db.execute(
                "DELETE FROM resources WHERE api_group=? AND kind=? AND namespace=? AND name=?", where)
            # A later object of the same name starts with a history of its own.
            self._db.execute("DELETE FROM events WHERE api_group=? AND kind=? AND namespace=? AND name=?", where)
            return cursor.rowcount > 0

    def replace_cluster_objects(self, cluster: str, objects: list[Resource]) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM cluster_objects WHERE cluster=?", (cluster,))
            self._db.executemany("INSERT INTO cluster_objects (cluster, seq, body) VALUES (?,?,?)",
                                 [(cluster, i, _dumps(o)) for i, o in enumerate(objects)])

    def cluster_objects(self, cluster: str | None = None) -> dict[str, list[Resource]]:
        """Objects of every simulated cluster (or one), by cluster name."""
        query = "SELECT cluster, body FROM cluster_objects"
        args: tuple = ()
        if cluster is not None:
            query += " WHERE cluster=?"
            args = (cluster,)
        out: dict[str, list[Resource]] = {}
        for name, body in self._db.execute(query + " ORDER BY cluster, seq", args):
            out.setdefault(name, []).append(json.loads(body))
        return out

    def record_event(self, key: Key, type_: str, reason: str, message: str) -> None:
        """Record an event, unless it repeats the object's latest one: only consecutive repeats are
        dropped, so the same event after a different one is recorded again."""
        with self.transaction():
            last = self._db.execute(
                "SELECT type, reason, message FROM events WHERE api_group=? AND kind=? AND namespace=? AND name=? "
                "ORDER BY seq DESC LIMIT 1", (key.group, key.kind, key.namespace, key.name)).fetchone()
            if last == (type_, reason, message):
                return
            self._db.execute(
                "INSERT INTO events (api_group, kind, namespace, name, type, reason, message) VALUES (?,?,?,?,?,?,?)",
                (key.group, key.kind, key.namespace, key.name, type_, reason, message))


def explain(error: sqlite3.Error) -> str:
    """What a store failure means for the user, and what to do about it."""
    text = str(error)
    if "readonly" in text:
        return "the store is read-only: fix the folder's permissions, or pass --state with a writable folder"
    if "locked" in text:
        return "another inferplane command is writing this state: let it finish and run the command again"
    if "disk is full" in text or "disk I/O error" in text:
        return "the disk holding the store is full or failing: free some space and run the command again"
    return f"{text}: check the folder, or move the damaged store.db aside"
