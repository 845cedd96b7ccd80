"""The embedded runtime's store: every resource with generation, resourceVersion, owners and status.

It keeps the API server's rules, so that several `inferplane` processes can share one state:
- every write carries the resourceVersion it was based on (none: a create); a write based on a stale
  version is refused with `Conflict`, and the writer re-reads and retries;
- `put` writes what users write (spec, metadata) and keeps the status; `put_status` writes only the
  status: neither overwrites the other;
- a persistent work queue, keyed by object, holds what changed (written in the same transaction as the
  change, so a crash loses no trigger), with the requirements that tell which composites watch what;
- a lease names the one process reconciling the state (see lease.py).

SQLite in WAL mode; each `transaction()` commits atomically, so a process killed mid-apply leaves
every acknowledged write and nothing half-written. `path=None` keeps everything in memory (render).

A state that cannot be used is told apart, with its fix (StoreError: unwritable, not a store, damaged,
locked); no message quotes what the store holds. Its parts: keys.py, schema.py, and the objects
`database` (store_file.py), `queue` and `requirements` (work_queue.py) and `event_log` (event_log.py); an
owner above the runtime registers its own tables (register_tables).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson

from inferplane.runtime.checkpointer import AUTOCHECKPOINT_PAGES, Checkpointer
from inferplane.runtime.event_log import EventLog
from inferplane.runtime.keys import (EVERY, Key, Resource, columns, controller_of, controller_ref,  # noqa: F401
                                     resource_version, store_opened, uid_for, unmanaged, written_digest,
                                     MANAGED_FIELDS)
from inferplane.runtime.schema import SCHEMA_VERSION  # noqa: F401  (the store's callers read it here)
from inferplane.runtime.schema import Tables, field_index, field_value
from inferplane.runtime.transaction import Transaction, now  # noqa: F401  (callers read `now` here)
from inferplane.runtime.store_file import (DEFAULT_BUSY_TIMEOUT, NotAState, StoreBusy, StoreDamaged,  # noqa: F401
                                           Database, StoreError, StoreReadOnly, UnknownSchema, STORE_FILE)
from inferplane.runtime.work_queue import RECONCILE, Requirements, WorkQueue


class Conflict(Exception):
    """A write based on a resourceVersion that is no longer current: re-read and retry."""


def _dumps(obj: Resource) -> str:
    # Unsorted: key order means nothing to any reader. orjson encodes several times faster than json.
    return orjson.dumps(obj).decode()


class Store:
    def __init__(self, path: Path | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
                 read_only: bool = False):
        """A store in `path`, or in memory (its `database`: see store_file.Database, which opens it or
        refuses it with the fix). In memory nothing is stamped with the time, so that a render is
        byte-for-byte reproducible."""
        store_opened()
        self.path = path
        self.clock = now if path is not None else (lambda: "")
        self._depth = 0
        self._durable = True
        # Within a write transaction (which holds SQLite's write lock, so nobody else can write), the
        # resourceVersion counter lives here and is stored once at commit, not once per write.
        self._version: int | None = None
        self._version_dirty = False
        # Set by `trust_cached_copies` for the rest of the transaction.
        self._cache_trusted = False
        self._field_indexes: set[str] = set()  # made by index_field
        self._registered: set[str] = set()  # the owners whose tables this store holds (register_tables)
        self._checkpointer: Checkpointer | None = None  # see checkpoints_in_background
        self.queue, self.requirements, self.event_log = WorkQueue(self), Requirements(self), EventLog(self)
        self.database = Database(path, busy_timeout, read_only)
        self.file = self.database.file  # None in memory
        self._db = self.database.db  # every read and write goes through it: one attribute, not two

    def index_field(self, kind: str, path: str) -> None:
        """Index the objects of a kind by the value at a field path (`spec.clusterName`), as an API server
        indexes the fields its field selectors name: `by_field` then finds them without reading the rest.
        The index lives in the store, so every process's writes keep it current."""
        name, statements = field_index(kind, path)
        if name not in self._field_indexes:
            with self.database.busy_reported():
                for statement in statements:
                    self._db.execute(statement)
            self._field_indexes.add(name)

    def register_tables(self, tables: Tables) -> None:
        """Hold an owner's tables: made where missing and an older layout of them brought up to date (in
        one transaction, only when either is needed), once per store. A store opened read-only is read
        as its writer left it."""
        if tables.owner in self._registered:
            return
        self._registered.add(tables.owner)
        if not self.database.writable:
            return
        present = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables.names <= present and not (tables.outdated and tables.outdated(self)):
            return
        with self.database.errors_explained(), self.transaction(durable=False):  # a StoreError, with its fix
            if tables.before is not None:
                tables.before(self)
            for statement in tables.statements:
                self._db.execute(statement)
            if tables.after is not None:
                tables.after(self)

    def execute(self, statement: str, args: tuple | dict = ()) -> sqlite3.Cursor:
        """SQL on the store's own connection, for what keeps tables of its own in the store or merges
        another copy of it (engine/shards.py); writes only inside `transaction()`."""
        return self._db.execute(statement, args)

    def executemany(self, statement: str, rows: Iterable[tuple]) -> sqlite3.Cursor:
        return self._db.executemany(statement, rows)

    def close(self) -> None:
        self.database.close()

    def snapshot(self) -> "Store":
        """An in-memory copy, for a dry run: what is done to it never reaches this store."""
        copy = Store(None)
        self._db.backup(copy._db)
        return copy

    @contextlib.contextmanager
    def checkpoints_in_background(self) -> Iterator[None]:
        """While a long run of commits lasts, checkpoint the write-ahead log on a thread (checkpointer.py)."""
        if self.file is None or self._checkpointer is not None or self.database.private:
            yield  # no log to checkpoint (a private copy keeps none)
            return
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointer = Checkpointer(self.file, self.database.busy_timeout)
        try:
            yield
        finally:
            self._checkpointer.stop()
            self._checkpointer = None
            self._db.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")

    def transaction(self, durable: bool = True) -> "Transaction":
        """Writes inside commit together or not at all; nested uses join the outer transaction.

        A durable transaction survives power loss once committed (what users write, and are told is
        written). One that is not (the reconciler's) survives a crash but may be lost with power, which
        costs nothing: its queue items are lost with it, so the work is done again. It spares the
        reconciler an fsync per commit (~5 ms each on this machine's disk)."""
        return Transaction(self, durable)

    @contextlib.contextmanager
    def reading(self) -> Iterator["Store"]:
        """Several reads that see one version of the store (a deferred transaction: SQLite's WAL gives it a
        snapshot and takes no write lock, so writers are never held up by a reader)."""
        assert self._depth == 0, "not inside a write transaction"
        self._db.execute("BEGIN DEFERRED")
        try:
            yield self
        finally:
            self._db.execute("COMMIT")

    def _begin(self, durable: bool) -> None:
        if self._depth == 0:
            if durable != self._durable:
                if not self.database.private:  # a private copy never syncs
                    self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
                self._durable = durable
            if durable:  # a user's write (the reconciler's transactions are not durable): announced
                self.database.announce_writer(True)
            elif self._checkpointer is not None:
                self._checkpointer.before_write()
            try:
                with self.database.busy_reported():
                    self._db.execute("BEGIN IMMEDIATE")
            except BaseException:
                if durable:
                    self.database.announce_writer(False)
                raise
        self._depth += 1

    def _finish(self, commit: bool) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        try:
            if not commit:
                if self._db.in_transaction:  # SQLite rolls back itself on a full disk
                    self._db.execute("ROLLBACK")
                self._registered.clear()  # tables made in it are gone: looked for again
                return
            with self.database.busy_reported():
                if self._version_dirty:
                    self._db.execute("INSERT INTO counters (name, value) VALUES ('resourceVersion', ?) "
                                     "ON CONFLICT(name) DO UPDATE SET value = excluded.value", (self._version,))
                self._db.execute("COMMIT")
            if self._checkpointer is not None:
                self._checkpointer.committed()
        finally:
            self._end_transaction()

    def _end_transaction(self) -> None:
        self._version, self._version_dirty, self._cache_trusted = None, False, False
        if self._durable:
            self.database.announce_writer(False)

    def trust_cached_copies(self) -> None:
        """For the rest of this transaction, a `known` copy a caller passes to `put`/`put_status` is taken
        as current without reading its version back (and no copy as no object). Only for a caller whose cache read every write up to
        `latest_version()` inside this transaction (nobody else can write until it commits) and that
        remembers its own writes, as the reconciler does."""
        assert self._depth > 0, "only inside a transaction"
        self._cache_trusted = True

    # ---- reads

    def get(self, key: Key) -> Resource | None:
        row = self._db.execute(
            "SELECT body FROM resources WHERE api_group=? AND kind=? AND namespace=? AND name=?",
            columns(key)).fetchone()
        try:
            return orjson.loads(row[0]) if row else None
        except orjson.JSONDecodeError:
            raise self.database.undecodable() from None

    def count(self) -> int:
        """How many objects the store holds (none decoded)."""
        return self._db.execute("SELECT COUNT(*) FROM resources").fetchone()[0]

    def keys(self) -> set[Key]:
        """The key of every object, read without their bodies."""
        return {Key(*row) for row in self._db.execute("SELECT api_group, kind, namespace, name FROM resources")}

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
        try:
            return [orjson.loads(row[0]) for row in self._db.execute(query, args)]
        except orjson.JSONDecodeError:
            raise self.database.undecodable() from None

    # Rows of the resources table as the cache reads them: key, version and body (decoded by the reader,
    # which skips the versions it holds).
    _ROW = "SELECT api_group, kind, namespace, name, rv, body FROM resources"

    def rows(self, where: str = "", args: tuple = (),
             order: str = "api_group, kind, namespace, name") -> list[tuple[Key, int, str]]:
        """(key, resourceVersion, undecoded body) of the objects a WHERE clause selects, in key order."""
        query = f"{self._ROW} {'WHERE ' + where if where else ''} ORDER BY {order}"
        return [(Key(g, k, ns, n), rv, body) for g, k, ns, n, rv, body in self._db.execute(query, args)]

    def row(self, key: Key) -> tuple[Key, int, str] | None:
        found = self.rows("api_group=? AND kind=? AND namespace=? AND name=?", columns(key))
        return found[0] if found else None

    def rows_of_kind(self, group: str, kind: str) -> list[tuple[Key, int, str]]:
        return self.rows("api_group=? AND kind=?", (group, kind))

    def rows_changed_since(self, version: int) -> list[tuple[Key, int, str]]:
        """The objects written after `version`, oldest first: how a reader with a cache watches the store."""
        return self.rows("rv > ?", (version,), order="rv")

    def rows_controlled_by(self, uid: str) -> list[tuple[Key, int, str]]:
        """The objects whose controller has this uid: what it composed."""
        return self.rows("controller=?", (uid,))

    def controlled_by(self, uid: str) -> list[Resource]:
        """What the object with this uid controls (composed), in key order, read by the controller index."""
        return [self.decode(body) for _, _, body in self.rows_controlled_by(uid)]

    def rows_by_field(self, kind: str, path: str, value: str) -> list[tuple[Key, int, str]]:
        """The objects of a kind whose field at `path` (indexed by `index_field`) has this value."""
        self.index_field(kind, path)
        return self.rows(f"{field_value(kind, path)}=?", (value,))

    def _column(self, key: Key, expression: str) -> tuple[Any] | None:
        """One column (or expression) of an object's row, read without decoding its body; None: no such object."""
        return self._db.execute(f"SELECT {expression} FROM resources WHERE api_group=? AND kind=? AND namespace=? "
                                "AND name=?", columns(key)).fetchone()

    def written(self, key: Key) -> str | None:
        """The digest of what a user last wrote to the object (`put`'s `written`); None without one."""
        row = self._column(key, "written")
        return (row[0] or None) if row else None

    def conditions(self, key: Key) -> list[dict[str, Any]] | None:
        """An object's status conditions, read without decoding the rest of it (None: no such object)."""
        row = self._column(key, "json_extract(body, '$.status.conditions')")
        if row is None:
            return None
        conditions = self.decode(row[0]) if isinstance(row[0], str) else []
        return conditions if isinstance(conditions, list) else []

    def controller_uid(self, key: Key) -> str | None:
        """The uid of what controls the object (None: nothing, or no such object)."""
        row = self._column(key, "controller")
        return (row[0] or None) if row else None

    def key_of_uid(self, uid: str) -> Key | None:
        row = self._db.execute("SELECT api_group, kind, namespace, name FROM resources WHERE uid=?", (uid,)).fetchone()
        return Key(*row) if row else None

    def keys_named(self, kind: str, namespace: str, name: str) -> list[Key]:
        """The objects of a kind with this namespace and name, in any group."""
        return [Key(*row) for row in self._db.execute(
            "SELECT api_group, kind, namespace, name FROM resources WHERE kind=? AND namespace=? AND name=? "
            "ORDER BY api_group", (kind, namespace, name))]

    def groups_of(self, kind: str) -> list[str]:
        """The API groups that hold objects of a kind."""
        return [row[0] for row in self._db.execute(
            "SELECT DISTINCT api_group FROM resources WHERE kind=? ORDER BY api_group", (kind,))]

    def decode(self, body: str) -> Resource:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            raise self.database.undecodable() from None

    def latest_version(self) -> int:
        if self._version is not None:
            return self._version
        row = self._db.execute("SELECT value FROM counters WHERE name='resourceVersion'").fetchone()
        return row[0] if row else 0

    # ---- writes

    def _upcoming_version(self) -> int:
        """The resourceVersion the next write gets (inside a write transaction: see `_version`)."""
        if self._version is None:
            self._version = self.latest_version()
        return self._version + 1

    def _next_version(self) -> int:
        """The next resourceVersion (inside a write transaction: see `_version`)."""
        self._version = self._upcoming_version()
        self._version_dirty = True
        return self._version

    def skip_versions_to(self, version: int) -> None:
        """Inside a write transaction, number the next write after `version` if it is later (a copy's writes
        merged in keep their versions: engine/shards.py)."""
        assert self._depth > 0, "only inside a transaction"
        if version > self.latest_version():
            self._version, self._version_dirty = version, True

    def _check_based_on(self, key: Key, current: Resource | None, based_on: str | None) -> None:
        if based_on != resource_version(current):
            now = "it does not exist" if current is None else f"it is at {resource_version(current)}"
            raise Conflict(f"{key}: the write was based on resourceVersion {based_on or '(none: a create)'}, "
                           f"but {now}")

    def _write(self, key: Key, current: Resource | None, stored: Resource,
               status: Callable[[Resource], dict[str, Any]] | None = None, written: str | None = None
               ) -> tuple[Resource, bool]:
        """Store `stored` unless it equals `current` (resourceVersion aside); bumps the version. `status`,
        `written`: see `put` (None, for a status, keeps the digest stored). A user's object written without
        managedFields (its status, a finalizer removed: the reconciler's cache holds none) keeps those stored."""
        kept = self._kept_managed_fields(key, current, stored)
        if current is not None:
            unchanged = {**stored, "metadata": {**stored["metadata"], "resourceVersion": resource_version(current)}}
            if unchanged == (current if kept is None else unmanaged(current)):
                if written and written != self.written(key):
                    self._db.execute("UPDATE resources SET written=? WHERE api_group=? AND kind=? AND namespace=? "
                                     "AND name=?", (written, *columns(key)))
                return current, False
        if status is not None:
            stored["status"] = status(stored)
        version = self._next_version()
        stored["metadata"]["resourceVersion"] = str(version)
        self._db.execute(
            "INSERT INTO resources (api_group, kind, namespace, name, body, rv, uid, controller, written) "
            "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,IFNULL(?9,'')) ON CONFLICT(api_group, kind, namespace, name) DO UPDATE "
            "SET body=excluded.body, rv=excluded.rv, uid=excluded.uid, controller=excluded.controller, "
            "written=IFNULL(?9, written)",
            (*columns(key), _dumps(stored if kept is None else {
                **stored, "metadata": {**stored["metadata"], MANAGED_FIELDS: orjson.Fragment(kept)}}),
             version, stored["metadata"].get("uid") or "", controller_of(stored) or "", written))
        return stored, True

    def _kept_managed_fields(self, key: Key, current: Resource | None, stored: Resource) -> str | None:
        """The stored managedFields (JSON) a write of a user's object without them keeps."""
        if current is None or MANAGED_FIELDS in stored["metadata"] or controller_of(stored) is not None:
            return None
        found = self._column(key, f"json_extract(body, '$.metadata.{MANAGED_FIELDS}')")
        return found[0] if found is not None else None

    def _current(self, key: Key, known: Resource | None) -> Resource | None:
        """The stored object: `known` (a caller's cached copy) if it is still at the stored version,
        which spares reading and decoding the body. With cached copies trusted, `known` is the stored
        object, None included (the cache holds no such object: it is a create)."""
        if self._cache_trusted:
            return known
        if known is not None:
            row = self._db.execute("SELECT rv FROM resources WHERE api_group=? AND kind=? AND namespace=? AND name=?",
                                   columns(key)).fetchone()
            if row is not None and str(row[0]) == resource_version(known):
                return known
        return self.get(key)

    def put(self, obj: Resource, known: Resource | None = None,
            status: Callable[[Resource], dict[str, Any]] | None = None, written: str = ""
            ) -> tuple[Resource, bool]:
        """Create or update what a user writes: spec and metadata, never status (the current one is
        kept). `metadata.resourceVersion` is the version the write is based on: absent for a create,
        else it must be the current one (`Conflict` otherwise). Bumps generation when the spec changes.
        `known`: the caller's copy of the stored object, if it has one. `status`: when the write changes
        the object, its status is what this says of the object as stored, written in the same version
        (a provider that reports on what it was just given). `written`: the digest of what a user wrote
        (`written_digest`), kept with the object: the same write again is known unchanged by it alone
        (any other write of spec or metadata forgets it).
        Returns (stored, changed)."""
        key = Key.of(obj)
        with self.transaction():
            current = self._current(key, known)
            meta = dict(obj.get("metadata", {}))
            self._check_based_on(key, current, meta.pop("resourceVersion", None))
            if current is None:
                meta["uid"] = uid_for(key, self._upcoming_version())
                meta["generation"] = 1
                meta["creationTimestamp"] = self.clock() or None
            else:
                old_meta = current["metadata"]
                meta["uid"] = old_meta["uid"]
                meta["creationTimestamp"] = old_meta.get("creationTimestamp")
                meta["generation"] = old_meta["generation"] + (obj.get("spec") != current.get("spec"))
                meta.setdefault("ownerReferences", old_meta.get("ownerReferences"))
            stored = {k: v for k, v in obj.items() if k != "status"}
            stored["metadata"] = {k: v for k, v in meta.items() if v is not None}
            if current is not None and "status" in current:
                stored["status"] = current["status"]
            stored, changed = self._write(key, current, stored, status, written)
            if changed and (controller_of(stored) is None or (current is not None and controller_of(current) is None)):
                self._count_user_write()
            return stored, changed

    def put_status(self, key: Key, status: dict[str, Any], known: Resource) -> tuple[Resource, bool]:
        """Replace only the status of `known`, the object as the caller read it (`Conflict` if it has
        moved on or is gone). Returns (stored, changed)."""
        with self.transaction():
            current = self._current(key, known)
            self._check_based_on(key, current, resource_version(known))
            assert current is not None
            return self._write(key, current, {**current, "metadata": dict(current["metadata"]), "status": status})

    def delete(self, key: Key) -> bool:
        with self.transaction():
            found = self._column(key, "controller")
            if found is not None and not found[0]:
                self._count_user_write()  # an object users write is gone
            cursor = self._db.execute(
                "DELETE FROM resources WHERE api_group=? AND kind=? AND namespace=? AND name=?", columns(key))
            self.event_log.forget(key)  # a later object of the same name starts with a history of its own
            self.requirements.forget(key)
            if cursor.rowcount:  # whoever deleted it, what required it notices
                self.queue.enqueue(RECONCILE, self.requirements.watchers(key))
            return cursor.rowcount > 0

    # ---- users' writes, counted

    def _count_user_write(self) -> None:
        """One more write of what users write (spec or metadata of an object no composite controls, or
        its deletion): what was said of a state before it (admission's applied sets) no longer stands."""
        self._db.execute("INSERT INTO counters (name, value) VALUES ('userWrites', 1) "
                         "ON CONFLICT(name) DO UPDATE SET value = value + 1")

    def user_writes(self) -> int:
        row = self._db.execute("SELECT value FROM counters WHERE name='userWrites'").fetchone()
        return row[0] if row else 0
