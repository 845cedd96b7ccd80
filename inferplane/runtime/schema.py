"""The layout of the store's tables (SQLite), and its version; and how an owner above the runtime
declares tables of its own (Tables: the simulator's clusters, admission's files)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

# The layout of the tables below, recorded in the database (PRAGMA user_version). A store written by
# a newer layout is refused rather than misread. 0 and 1 are stores from before resourceVersions were
# indexed and the work queue, requirements and lease tables existed: opening one adds them. Version 3
# gave events a count and the times they were first and last seen. Version 4 indexed each object's uid and
# its controller's uid, so that a reader finds an object's composed resources without reading the rest,
# and keeps the digest of what a user last wrote, so that writing it again is known unchanged unread.
# Version 5 packs a simulated cluster's objects (simulator/cluster_objects.py, whose tables it registers).
SCHEMA_VERSION = 5

SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    api_group TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    rv INTEGER NOT NULL DEFAULT 0,  -- metadata.resourceVersion, indexed: readers watch what changed since
    uid TEXT NOT NULL DEFAULT '',  -- metadata.uid
    controller TEXT NOT NULL DEFAULT '',  -- the uid of the object that controls it (composed it), if any
    written TEXT NOT NULL DEFAULT '',  -- the digest of what a user last wrote (see put's `written`)
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
    message TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    first_seen TEXT NOT NULL DEFAULT '',
    last_seen TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS events_by_object ON events (api_group, kind, namespace, name);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- The work queue: (work, object) once each, first in first out within a priority. `bumps` counts
-- enqueues, so that finishing an item that was enqueued again meanwhile leaves it queued.
CREATE TABLE IF NOT EXISTS work_queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    priority INTEGER NOT NULL,
    work TEXT NOT NULL,
    api_group TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    bumps INTEGER NOT NULL DEFAULT 0,
    UNIQUE (work, api_group, kind, namespace, name)
);
CREATE INDEX IF NOT EXISTS work_queue_order ON work_queue (priority, seq);
-- The first item of one kind of work (the reconciler works off every queued simulation in a row).
CREATE INDEX IF NOT EXISTS work_queue_work_order ON work_queue (work, priority, seq);
-- Which objects each composite required in its last reconcile: a change to one enqueues the composite.
CREATE TABLE IF NOT EXISTS requirements (
    watcher TEXT NOT NULL,
    api_group TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (api_group, kind, namespace, name, watcher)
);
CREATE INDEX IF NOT EXISTS requirements_by_watcher ON requirements (watcher);
CREATE TABLE IF NOT EXISTS leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    renewed REAL NOT NULL,
    duration REAL NOT NULL
);
"""

# The tables above, by name: a database with tables but none of these is another program's.
TABLES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", SCHEMA))


@dataclass(frozen=True)
class Tables:
    """Tables an owner above the runtime keeps in the store, registered with each store that holds them
    (Store.register_tables): the runtime knows none of them. `statements` make them where missing
    (CREATE ... IF NOT EXISTS); `outdated(store)` says whether an older layout of them is in the store,
    which `before(store)` sets aside before the statements run and `after(store)` moves in after."""

    owner: str
    statements: tuple[str, ...]
    outdated: Callable[[Any], bool] | None = None
    before: Callable[[Any], None] | None = None
    after: Callable[[Any], None] | None = None

    @property
    def names(self) -> frozenset[str]:
        return frozenset(name for statement in self.statements
                         for name in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", statement))

# A field path a field index may name: dotted JSON keys, as a field selector names them; and the kind it
# is over. Both are written into the index's SQL.
FIELD_PATH = re.compile(r"[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*")
KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def field_value(kind: str, path: str) -> str:
    """What a field index keeps for a row: the field's value in the indexed kind's rows only, so that
    writing another kind's row does not parse its body. (Not a partial index: where one exists, SQLite
    re-prepares every statement that binds `kind=?`, to decide whether the index applies.)"""
    return f"CASE WHEN kind='{kind}' THEN json_extract(body, '$.{path}') END"


def field_index(kind: str, path: str) -> tuple[str, list[str]]:
    """The name of the index of a kind's objects by a field, and the statements that make it (schema 4's
    index of the field over every kind's rows goes: it cost each write a parse of the body)."""
    if not FIELD_PATH.fullmatch(path) or not KIND.fullmatch(kind):
        raise ValueError(f"not a kind and field path: {kind!r} {path!r}")
    name = f"field_{kind}_" + path.replace(".", "_")
    return name, ["DROP INDEX IF EXISTS field_" + path.replace(".", "_"),
                  f"CREATE INDEX IF NOT EXISTS {name} ON resources ({field_value(kind, path)})"]
