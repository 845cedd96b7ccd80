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

What keeps a state from being used is told apart, each with its fix (StoreError): a state this process
may not write (readers still read it), a file that is not an inferplane store (empty, cut short, not
SQLite, another program's: never taken for a new state), a store SQLite finds damaged, another
process's lock. No message quotes what the store holds.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import re
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import orjson

Resource = dict[str, Any]

# The layout of the tables below, recorded in the database (PRAGMA user_version). A store written by
# a newer layout is refused rather than misread. 0 and 1 are stores from before resourceVersions were
# indexed and the work queue, requirements and lease tables existed: opening one adds them. Version 3
# gave events a count and the times they were first and last seen. Version 4 indexed each object's uid and
# its controller's uid, so that a reader finds an object's composed resources without reading the rest,
# and keeps the digest of what a user last wrote, so that writing it again is known unchanged unread.
SCHEMA_VERSION = 4
STORE_FILE = "store.db"
# Held (flock) while a process opens the store and brings its schema up to date: two commands that
# start together on a new state folder would otherwise both switch it to WAL and create its tables,
# and SQLite refuses one of them at once, without waiting (its deadlock rule in rollback mode).
SETUP_LOCK_FILE = "store.lock"
# How often a process waiting for that lock looks again.
SETUP_LOCK_POLL = 0.005
# A new store is set up under this name and renamed to STORE_FILE once whole, so that a STORE_FILE
# that exists is always one inferplane finished setting up: an empty or cut-short one is never ours.
NEW_STORE_FILE = "store.db.new"
# Every SQLite database starts with these 16 bytes, in a header of 100 (sqlite.org/fileformat.html).
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_HEADER_SIZE = 100
# Beside a database in WAL mode: its write-ahead log and the log's shared index.
WAL_SUFFIXES = ("-wal", "-shm")


class StoreError(Exception):
    """A state that cannot be used as asked, in words a user can act on (never a row of it)."""


class UnknownSchema(StoreError):
    """The store was written with a layout this inferplane does not know."""


class NotAState(StoreError):
    """The state's file is not an inferplane store: empty, cut short, or something else's."""


class StoreDamaged(StoreError):
    """SQLite (or decoding a stored object) found the store's file corrupt."""


class StoreReadOnly(StoreError):
    """This process may read the state but not write it."""


# How long a write waits for another process's transaction before it is reported as busy. Every
# transaction inferplane opens is short (one object, one reconcile), so this is only ever reached
# when something outside inferplane holds the database.
DEFAULT_BUSY_TIMEOUT = 30.0

_SCHEMA = """
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
-- What each simulated target cluster holds (nodes, pods, ResourceSlices), replaced as a whole, and the
-- fingerprint of the inputs it was simulated from (rerun only when they change).
CREATE TABLE IF NOT EXISTS cluster_objects (
    cluster TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (cluster, seq)
);
CREATE TABLE IF NOT EXISTS simulations (cluster TEXT PRIMARY KEY, inputs TEXT NOT NULL);
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
-- Files admission accepted whole, by a hash of their path, bytes and the admitting code: the objects
-- they admitted to, so that applying an unchanged file again does not parse and check it again.
CREATE TABLE IF NOT EXISTS admitted_files (key BLOB PRIMARY KEY, objects BLOB NOT NULL);
-- Sets of files applied whole, by a digest of their files' keys: what the apply said (its warnings and
-- notes, the objects it named) and the count of users' writes after it. While that count stands, the
-- same set applied again changes nothing, and says the same.
CREATE TABLE IF NOT EXISTS applied_sets (key BLOB PRIMARY KEY, user_writes INTEGER NOT NULL, said BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    renewed REAL NOT NULL,
    duration REAL NOT NULL
);
"""

# The tables above, by name: a database with tables but none of these is another program's.
_TABLES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA))

# The reconciler's kind of work in the queue (a hosted controller's work is named by it).
RECONCILE = "reconcile"


class Conflict(Exception):
    """A write based on a resourceVersion that is no longer current: re-read and retry."""


class StoreBusy(StoreError):
    """Another process held the store for longer than the busy timeout."""


# The namespace and name of a requirement on every object of a kind (Key.every).
EVERY = "*"


class Key(NamedTuple):
    """Identity of an object: group (not version, as in Kubernetes), kind, namespace, name. A tuple: the
    engine makes, hashes and sorts hundreds of thousands of them in a full apply."""

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

    @classmethod
    def every(cls, group: str, kind: str) -> "Key":
        """Stands for every object of a kind, in every namespace, where a composite requires them all
        (Kubernetes names never contain `*`)."""
        return cls(group, kind, EVERY, EVERY)

    @classmethod
    def in_namespace(cls, group: str, kind: str, namespace: str) -> "Key":
        """Stands for every object of a kind in one namespace, where a composite requires them by labels."""
        return cls(group, kind, namespace, EVERY)

    def encode(self) -> str:
        """One string for a column: Kubernetes names and groups never contain `|`."""
        return "|".join((self.group, self.kind, self.namespace, self.name))

    @classmethod
    def decode(cls, text: str) -> "Key":
        return cls(*text.split("|"))


def uid_for(key: Key, version: int) -> str:
    """The uid of the object created at `version`: one of its own for each time an object of that key is
    created, as Kubernetes gives (what knew the one deleted sees a new object, not the old one again),
    and the same on every run of the same writes (renders are reproducible)."""
    digest = hashlib.sha256(f"{key.group}|{key.kind}|{key.namespace}|{key.name}|{version}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def controller_ref(obj: Resource) -> dict[str, Any] | None:
    """The owner reference of the object that controls this one (composed it), if any."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def controller_of(obj: Resource) -> str | None:
    """The uid of the object that controls this one, if any."""
    ref = controller_ref(obj)
    return ref.get("uid") if ref else None


# A field path an index may name: dotted JSON keys, as a field selector names them.
FIELD_PATH = re.compile(r"[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*")


def written_digest(obj: Resource) -> str:
    """The digest of an object as a user writes it (its resourceVersion aside), key order aside."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return hashlib.blake2b(orjson.dumps({**obj, "metadata": meta}, option=orjson.OPT_SORT_KEYS),
                           digest_size=16).hexdigest()


def _dumps(obj: Resource) -> str:
    # Unsorted: key order means nothing to any reader. orjson encodes several times faster than json.
    return orjson.dumps(obj).decode()


_loads = orjson.loads


class Transaction:
    """`with store.transaction():` (a class rather than a generator: the reconciler opens tens of
    thousands, most of them nested in one that is already open)."""

    __slots__ = ("store", "durable")

    def __init__(self, store: "Store", durable: bool):
        self.store, self.durable = store, durable

    def __enter__(self) -> "Store":
        self.store._begin(self.durable)
        return self.store

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.store._finish(commit=exc_type is None)


def _where(key: Key) -> tuple[str, str, str, str]:
    return (key.group, key.kind, key.namespace, key.name)


def now() -> str:
    """The time the API server would stamp, in RFC 3339 as Kubernetes writes it (to the second)."""
    return _stamp(int(time.time()))


@functools.lru_cache(maxsize=1)
def _stamp(second: int) -> str:
    # Formatted once a second: a reconcile stamps thousands of events and objects within one.
    return datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_version(obj: Resource | None) -> str | None:
    return (obj or {}).get("metadata", {}).get("resourceVersion")


_IS_BUSY = ("database is locked", "database is busy")
# An OSError that means this process may not write (or read) a file.
_NOT_PERMITTED = (errno.EACCES, errno.EPERM, errno.EROFS)


def unwritable(folder: Path) -> str | None:
    """Why this process may not write the state in `folder` (None: it may). os.access asks the kernel
    with this process's own rights, so a read-only mount and root without CAP_DAC_OVERRIDE count."""
    if not folder.exists():
        parent = next(p for p in folder.absolute().parents if p.exists())
        return None if os.access(parent, os.W_OK | os.X_OK) else f"the folder {parent} is read-only to this process"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is read-only to this process"
    for name in (STORE_FILE, *(STORE_FILE + suffix for suffix in WAL_SUFFIXES), SETUP_LOCK_FILE):
        if (folder / name).exists() and not os.access(folder / name, os.W_OK):
            return f"{folder / name} is read-only to this process"
    return None


class Store:
    def __init__(self, path: Path | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
                 read_only: bool = False):
        """A store in `path`, or in memory. In memory nothing is stamped with the time, so that a
        render is byte-for-byte reproducible.

        A writer (the default) creates the folder and a new store where there is none, and is refused
        at once (StoreReadOnly) where this process may not write them. A reader (`read_only`) needs a
        store; where it may not write the folder or its files, it reads through SQLite's read-only mode,
        so that reading commands work on a state they cannot change. A file that is not an inferplane
        store is refused (NotAState), never taken for a new state."""
        self.path = path
        self.file: Path | None = None
        self.clock = now if path is not None else (lambda: "")
        self.busy_timeout = busy_timeout
        self._depth = 0
        self._durable = True
        # Within a write transaction (which holds SQLite's write lock, so nobody else can write), the
        # resourceVersion counter lives here and is stored once at commit, not once per write.
        self._version: int | None = None
        self._version_dirty = False
        # Set by `trust_cached_copies` for the rest of the transaction.
        self._cache_trusted = False
        self._field_indexes: set[str] = set()  # made by index_field
        if path is None:
            self._db = sqlite3.connect(":memory:", isolation_level=None)
            self._set_up()
            return
        self.file = path / STORE_FILE
        cannot_write = unwritable(path)
        if cannot_write and read_only and self.file.is_file():
            self._open_read_only(cannot_write)
            return
        if cannot_write:
            raise StoreReadOnly(self._read_only_message(cannot_write))
        path.mkdir(parents=True, exist_ok=True)
        with self._setup_lock(), self._errors_explained():
            if not self.file.exists():
                if read_only:
                    raise NotAState(f"{self.file} does not exist: `inferplane apply` creates it")
                self._create()
            self._check_file()
            self._connect(self.file)
            self._set_up()

    def _connect(self, file: Path) -> None:
        self._db = sqlite3.connect(file, isolation_level=None, timeout=self.busy_timeout)
        self._layout()  # before anything is written to a file that may be another program's
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: a transaction acknowledged to the user survives power loss, not only a kill.
        self._db.execute("PRAGMA synchronous=FULL")

    def _create(self) -> None:
        """Set up a new store as NEW_STORE_FILE and rename it into place once whole."""
        assert self.path is not None
        new = self.path / NEW_STORE_FILE
        for leftover in (new, *(self.path / (NEW_STORE_FILE + suffix) for suffix in WAL_SUFFIXES)):
            leftover.unlink(missing_ok=True)  # from a set-up that died (this process holds the setup lock)
        self._connect(new)
        try:
            self._set_up()
        finally:
            self._db.close()  # the last connection to close folds the WAL into the file and removes it
        os.replace(new, self.file)
        folder = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(folder)  # the rename itself survives power loss
        finally:
            os.close(folder)

    def _open_read_only(self, why: str) -> None:
        """Read a state this process may not write. SQLite's read-only mode needs the WAL's index file
        (-shm) beside the database, or a folder it may create it in; without either the file is read as
        immutable, which is exact while its write-ahead log holds nothing (a process that may write the
        folder would have left the index beside it): a log with writes in it is refused instead."""
        self._check_file()
        wal, index = (self.file.with_name(STORE_FILE + suffix) for suffix in WAL_SUFFIXES)
        options = "mode=ro"
        if not index.exists() and not os.access(self.file.parent, os.W_OK | os.X_OK):
            if wal.exists() and wal.stat().st_size > 0:
                raise StoreReadOnly(f"{wal} holds writes not yet in {self.file}, and {why}: only a process that may "
                                    f"write the folder reads them; make {self.file.parent} writable to this user, or "
                                    "read it as the user who owns it")
            options += "&immutable=1"
        with self._errors_explained():
            self._db = sqlite3.connect(f"{self.file.absolute().as_uri()}?{options}", uri=True, isolation_level=None,
                                       timeout=self.busy_timeout)
            found = self._layout()
            if found != SCHEMA_VERSION:
                self._db.close()
                raise StoreReadOnly(f"{self.file} has schema version {found}, older than this inferplane's "
                                    f"{SCHEMA_VERSION}, and {why}: this inferplane reads it once a command that may "
                                    "write the folder (`inferplane apply`) has brought it up to date; or read it with "
                                    "the inferplane that wrote it")

    def _check_file(self) -> None:
        """Refuse a file that cannot be an inferplane store before SQLite reads it: SQLite takes an empty
        file for a new database and would set it up as one."""
        try:
            with open(self.file, "rb") as handle:
                head = handle.read(SQLITE_HEADER_SIZE)
        except PermissionError:
            raise StoreError(f"{self.file} is not readable by this process: make it readable to this user (or run "
                             "as its owner), or pass --state with a folder this user may read") from None
        if not head:
            raise NotAState(self._not_a_state("it is empty (0 bytes)"))
        if not (head.startswith(SQLITE_MAGIC) or SQLITE_MAGIC.startswith(head)):
            raise NotAState(self._not_a_state("it is not a SQLite database"))
        if len(head) < SQLITE_HEADER_SIZE:
            raise NotAState(self._not_a_state(f"it is cut short: {len(head)} bytes, less than a database's "
                                              f"{SQLITE_HEADER_SIZE}-byte header"))

    def _not_a_state(self, why: str) -> str:
        return (f"{self.file} is not an inferplane state: {why}: if --state names the wrong folder, pass the right "
                f"one; otherwise move {self.path} aside and apply your manifests again to start a new state")

    def _read_only_message(self, why: str) -> str:
        return (f"cannot write the state in {self.path}: {why}; commands that only read it (get, describe, trace, "
                "explain, route, fleet, diff) still work: to change it, make the folder and its files writable to "
                "this user (or run as their owner), or copy the folder somewhere writable and pass --state there")

    @contextlib.contextmanager
    def _setup_lock(self) -> Iterator[None]:
        """Hold SETUP_LOCK_FILE, waiting up to the busy timeout (flock: the kernel frees it when a
        holder dies, so a crashed process never leaves it taken)."""
        assert self.path is not None
        with open(self.path / SETUP_LOCK_FILE, "a") as handle:
            deadline = time.monotonic() + self.busy_timeout
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise StoreBusy(self._busy_message()) from None
                    time.sleep(SETUP_LOCK_POLL)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _layout(self) -> int:
        """The store's schema version, once it is known to be an inferplane store of a layout this
        inferplane knows."""
        found = self._db.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            self._db.close()
            raise UnknownSchema(f"its store has schema version {found} and this inferplane knows only up to "
                                f"{SCHEMA_VERSION}: use the inferplane that wrote it, or another --state")
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        # No tables at all: a store whose set-up died before making them (from before NEW_STORE_FILE).
        if tables and not tables & _TABLES:
            self._db.close()
            raise NotAState(self._not_a_state("it is another program's SQLite database (none of its tables is "
                                              "inferplane's)"))
        return found

    def _set_up(self) -> None:
        """Refuse a newer layout or another program's database; create or migrate the tables to this one."""
        with self._busy_reported():
            found = self._layout()
            self._add_event_counts()
            self._db.executescript(_SCHEMA)
            self._add_version_column()
            self._add_owner_columns()
            if found != SCHEMA_VERSION:
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _add_event_counts(self) -> None:
        """Events written before they were counted get a count of 1 and no times."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(events)")}
        if columns and "count" not in columns:
            self._db.executescript("ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 1;"
                                   "ALTER TABLE events ADD COLUMN first_seen TEXT NOT NULL DEFAULT '';"
                                   "ALTER TABLE events ADD COLUMN last_seen TEXT NOT NULL DEFAULT '';")

    def _add_version_column(self) -> None:
        """A state written before resourceVersions were indexed gets the column, filled from the bodies."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(resources)")}
        if "rv" not in columns:
            with self.transaction():
                self._db.execute("ALTER TABLE resources ADD COLUMN rv INTEGER NOT NULL DEFAULT 0")
                self._db.execute("UPDATE resources SET rv = "
                                 "CAST(json_extract(body, '$.metadata.resourceVersion') AS INTEGER)")
        self._db.execute("CREATE INDEX IF NOT EXISTS resources_by_version ON resources (rv)")

    def _add_owner_columns(self) -> None:
        """A state written before uids and controllers were indexed gets the columns, filled from the
        bodies; and the indexes that find an object by uid, its composed resources by their controller's
        uid, and an object by kind and name whatever its group."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(resources)")}
        if "written" not in columns:
            self._db.execute("ALTER TABLE resources ADD COLUMN written TEXT NOT NULL DEFAULT ''")
        if "controller" not in columns:
            with self.transaction():
                self._db.execute("ALTER TABLE resources ADD COLUMN uid TEXT NOT NULL DEFAULT ''")
                self._db.execute("ALTER TABLE resources ADD COLUMN controller TEXT NOT NULL DEFAULT ''")
                self._db.execute(
                    "UPDATE resources SET uid = COALESCE(json_extract(body, '$.metadata.uid'), ''), controller = "
                    "COALESCE((SELECT json_extract(ref.value, '$.uid') FROM json_each(body, '$.metadata.ownerReferences')"
                    " AS ref WHERE json_extract(ref.value, '$.controller') LIMIT 1), '')")
        self._db.execute("CREATE INDEX IF NOT EXISTS resources_by_uid ON resources (uid)")
        self._db.execute("CREATE INDEX IF NOT EXISTS resources_by_controller ON resources (controller)")
        self._db.execute("CREATE INDEX IF NOT EXISTS resources_by_kind ON resources (kind, namespace, name)")

    def index_field(self, path: str) -> None:
        """Index objects by the value at a field path (`spec.clusterName`), as an API server indexes the
        fields its field selectors name: `by_field` then finds them without reading the rest. The index
        lives in the store, so every process's writes keep it current."""
        if not FIELD_PATH.fullmatch(path):
            raise ValueError(f"not a field path: {path!r}")
        name = "field_" + path.replace(".", "_")
        if name in self._field_indexes:
            return
        with self._busy_reported():
            self._db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON resources (kind, json_extract(body, '$.{path}'))")
        self._field_indexes.add(name)

    def close(self) -> None:
        self._db.close()

    def snapshot(self) -> "Store":
        """An in-memory copy, for a dry run: what is done to it never reaches this store."""
        copy = Store(None)
        self._db.backup(copy._db)
        return copy

    @contextlib.contextmanager
    def _busy_reported(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            if str(exc) not in _IS_BUSY:
                raise
            raise StoreBusy(self._busy_message()) from None

    def _busy_message(self) -> str:
        where = self.file or "the in-memory store"
        return (f"{where} stayed locked by another process for {self.busy_timeout:g} s: wait for the other "
                "inferplane command (or whatever holds the file) to finish, then run this command again")

    @contextlib.contextmanager
    def _errors_explained(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            failure = self.failure(exc)
            if failure is None or failure is exc:
                raise
            raise failure from None

    def failure(self, error: BaseException) -> StoreError | None:
        """What an error raised while using this store means for the user, as a StoreError whose message
        names the file and the fix (None: the error is not the store's). SQLite's own messages never
        hold stored data, so they are quoted; nothing else an error carries is."""
        if isinstance(error, StoreError):
            return error
        where = self.file or "the in-memory store"
        if isinstance(error, OSError) and error.errno in _NOT_PERMITTED and self.path is not None \
                and error.filename and Path(error.filename).absolute().parent == self.path.absolute():
            return StoreReadOnly(self._read_only_message(unwritable(self.path) or f"{error.strerror}: {error.filename}"))
        if not isinstance(error, sqlite3.Error):
            return None
        if str(error).startswith("Could not decode to UTF-8"):  # Python's sqlite3, quoting the row: never shown
            return StoreDamaged(self._damaged_message("a stored text is not UTF-8"))
        code = getattr(error, "sqlite_errorcode", None)
        if code is None:  # Python's sqlite3 used wrongly: a defect of ours, not of the store
            return None
        said = f"SQLite says {error} ({error.sqlite_errorname})"
        primary = code & 0xFF  # SQLite's extended result codes keep the primary one in the low byte
        if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return StoreDamaged(self._damaged_message(said))
        if primary == sqlite3.SQLITE_READONLY:
            return StoreReadOnly(self._read_only_message(
                (unwritable(self.path) if self.path is not None else None) or said))
        if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return StoreBusy(self._busy_message())
        if primary in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR):
            return StoreError(f"the state in {self.path} could not be written: the disk holding the store is full or "
                              "failing: free some space and run the command again; every write acknowledged before "
                              "this one is kept")
        return StoreError(f"{where} could not be used: {said}: check the folder and run the command again")

    def _undecodable(self) -> StoreDamaged:
        """A stored body that is not the JSON this store wrote (the bytes of a damaged page)."""
        return StoreDamaged(self._damaged_message("a stored object does not read as JSON"))

    def _damaged_message(self, why: str) -> str:
        return (f"{self.file or 'the in-memory store'} is damaged: {why}: move {self.path} aside (keep it: "
                f"`sqlite3 {self.file} .recover` may save what it held) and apply your manifests again to start a "
                "new state")

    # ---- admitted files (see inferplane.admission.admit_paths)

    ADMITTED_FILES_KEPT = 20_000

    def admitted_objects(self, key: bytes) -> list[dict[str, Any]] | None:
        row = self._db.execute("SELECT objects FROM admitted_files WHERE key = ?", (key,)).fetchone()
        try:
            return None if row is None else orjson.loads(row[0])
        except orjson.JSONDecodeError:
            raise self._undecodable() from None

    # ---- users' writes, counted, and the sets of files applied whole

    def _count_user_write(self) -> None:
        """One more write of what users write (spec or metadata of an object no composite controls, or
        its deletion): what an applied set's answer was given under no longer stands."""
        self._db.execute("INSERT INTO counters (name, value) VALUES ('userWrites', 1) "
                         "ON CONFLICT(name) DO UPDATE SET value = value + 1")

    def user_writes(self) -> int:
        row = self._db.execute("SELECT value FROM counters WHERE name='userWrites'").fetchone()
        return row[0] if row else 0

    def applied_set(self, key: bytes) -> Any:
        """What the apply of this set of files said, while no user has written anything since; else None."""
        row = self._db.execute("SELECT user_writes, said FROM applied_sets WHERE key = ?", (key,)).fetchone()
        return self.decode(row[1]) if row is not None and row[0] == self.user_writes() else None

    def keep_applied_set(self, key: bytes, said: Any) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM applied_sets")  # only the last set applied: the one re-applied
            self._db.execute("INSERT INTO applied_sets (key, user_writes, said) VALUES (?, ?, ?)",
                             (key, self.user_writes(), orjson.dumps(said)))

    def keep_admitted(self, files: dict[bytes, list[dict[str, Any]]]) -> None:
        """Remember files admitted whole; the oldest go beyond ADMITTED_FILES_KEPT."""
        if not files:
            return
        with self.transaction():
            self._db.executemany("INSERT OR REPLACE INTO admitted_files (key, objects) VALUES (?, ?)",
                                 [(key, orjson.dumps(objects)) for key, objects in files.items()])
            self._db.execute("DELETE FROM admitted_files WHERE rowid <= "
                             "(SELECT MAX(rowid) FROM admitted_files) - ?", (self.ADMITTED_FILES_KEPT,))

    def transaction(self, durable: bool = True) -> "Transaction":
        """Writes inside commit together or not at all; nested uses join the outer transaction.

        A durable transaction survives power loss once committed (what users write, and are told is
        written). One that is not (the reconciler's) survives a crash but may be lost with power, which
        costs nothing: its queue items are lost with it, so the work is done again. It spares the
        reconciler an fsync per commit (~5 ms each on this machine's disk)."""
        return Transaction(self, durable)

    def _begin(self, durable: bool) -> None:
        if self._depth == 0:
            if durable != self._durable:
                self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
                self._durable = durable
            with self._busy_reported():
                self._db.execute("BEGIN IMMEDIATE")
        self._depth += 1

    def _finish(self, commit: bool) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        try:
            if not commit:
                if self._db.in_transaction:  # SQLite rolls back itself on a full disk
                    self._db.execute("ROLLBACK")
                return
            with self._busy_reported():
                if self._version_dirty:
                    self._db.execute("INSERT INTO counters (name, value) VALUES ('resourceVersion', ?) "
                                     "ON CONFLICT(name) DO UPDATE SET value = excluded.value", (self._version,))
                self._db.execute("COMMIT")
        finally:
            self._end_transaction()

    def _end_transaction(self) -> None:
        self._version, self._version_dirty, self._cache_trusted = None, False, False

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
            _where(key)).fetchone()
        try:
            return _loads(row[0]) if row else None
        except orjson.JSONDecodeError:
            raise self._undecodable() from None

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
            return [_loads(row[0]) for row in self._db.execute(query, args)]
        except orjson.JSONDecodeError:
            raise self._undecodable() from None

    # Rows of the resources table as the cache reads them: key, version and body (decoded by the reader,
    # which skips the versions it holds).
    _ROW = "SELECT api_group, kind, namespace, name, rv, body FROM resources"

    def rows(self, where: str = "", args: tuple = (),
             order: str = "api_group, kind, namespace, name") -> list[tuple[Key, int, str]]:
        """(key, resourceVersion, undecoded body) of the objects a WHERE clause selects, in key order."""
        query = f"{self._ROW} {'WHERE ' + where if where else ''} ORDER BY {order}"
        return [(Key(g, k, ns, n), rv, body) for g, k, ns, n, rv, body in self._db.execute(query, args)]

    def row(self, key: Key) -> tuple[Key, int, str] | None:
        found = self.rows("api_group=? AND kind=? AND namespace=? AND name=?", _where(key))
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
        self.index_field(path)
        return self.rows(f"kind=? AND json_extract(body, '$.{path}')=?", (kind, value))

    def _column(self, key: Key, expression: str) -> tuple[Any] | None:
        """One column (or expression) of an object's row, read without decoding its body; None: no such object."""
        return self._db.execute(f"SELECT {expression} FROM resources WHERE api_group=? AND kind=? AND namespace=? "
                                "AND name=?", _where(key)).fetchone()

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
            return _loads(body)
        except orjson.JSONDecodeError:
            raise self._undecodable() from None

    def latest_version(self) -> int:
        if self._version is not None:
            return self._version
        row = self._db.execute("SELECT value FROM counters WHERE name='resourceVersion'").fetchone()
        return row[0] if row else 0

    def events(self, key: Key | None = None) -> list[dict[str, Any]]:
        """One object's events (or every event), oldest first, each with its count and the times it
        was first and last seen."""
        query = ("SELECT api_group, kind, namespace, name, type, reason, message, count, first_seen, last_seen "
                 "FROM events")
        args: tuple = ()
        if key is not None:
            query += " WHERE api_group=? AND kind=? AND namespace=? AND name=?"
            args = _where(key)
        rows = self._db.execute(query + " ORDER BY last_seen, seq", args)
        return [{"involvedObject": Key(g, k, ns, n), "type": t, "reason": r, "message": m, "count": c,
                 "firstTimestamp": first, "lastTimestamp": last}
                for g, k, ns, n, t, r, m, c, first, last in rows]

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

    def _check_based_on(self, key: Key, current: Resource | None, based_on: str | None) -> None:
        if based_on != resource_version(current):
            now = "it does not exist" if current is None else f"it is at {resource_version(current)}"
            raise Conflict(f"{key}: the write was based on resourceVersion {based_on or '(none: a create)'}, "
                           f"but {now}")

    def _write(self, key: Key, current: Resource | None, stored: Resource,
               status: Callable[[Resource], dict[str, Any]] | None = None, written: str | None = None
               ) -> tuple[Resource, bool]:
        """Store `stored` unless it equals `current` (resourceVersion aside); bumps the version. `status`,
        `written`: see `put` (None, for a status, keeps the digest stored)."""
        if current is not None:
            unchanged = {**stored, "metadata": {**stored["metadata"], "resourceVersion": resource_version(current)}}
            if unchanged == current:
                if written and written != self.written(key):
                    self._db.execute("UPDATE resources SET written=? WHERE api_group=? AND kind=? AND namespace=? "
                                     "AND name=?", (written, *_where(key)))
                return current, False
        if status is not None and (reported := status(stored)):  # nothing reported (a plain Secret): no status
            stored["status"] = reported
        version = self._next_version()
        stored["metadata"]["resourceVersion"] = str(version)
        self._db.execute(
            "INSERT INTO resources (api_group, kind, namespace, name, body, rv, uid, controller, written) "
            "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,IFNULL(?9,'')) ON CONFLICT(api_group, kind, namespace, name) DO UPDATE "
            "SET body=excluded.body, rv=excluded.rv, uid=excluded.uid, controller=excluded.controller, "
            "written=IFNULL(?9, written)",
            (*_where(key), _dumps(stored), version, stored["metadata"].get("uid") or "", controller_of(stored) or "",
             written))
        return stored, True

    def _current(self, key: Key, known: Resource | None) -> Resource | None:
        """The stored object: `known` (a caller's cached copy) if it is still at the stored version,
        which spares reading and decoding the body. With cached copies trusted, `known` is the stored
        object, None included (the cache holds no such object: it is a create)."""
        if self._cache_trusted:
            return known
        if known is not None:
            row = self._db.execute("SELECT rv FROM resources WHERE api_group=? AND kind=? AND namespace=? AND name=?",
                                   _where(key)).fetchone()
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
                "DELETE FROM resources WHERE api_group=? AND kind=? AND namespace=? AND name=?", _where(key))
            # A later object of the same name starts with a history of its own.
            self._db.execute("DELETE FROM events WHERE api_group=? AND kind=? AND namespace=? AND name=?",
                             _where(key))
            self._db.execute("DELETE FROM requirements WHERE watcher=?", (key.encode(),))
            if cursor.rowcount:  # whoever deleted it, what required it notices
                self.enqueue(RECONCILE, self.watchers(key))
            return cursor.rowcount > 0

    def record_event(self, key: Key, type_: str, reason: str, message: str) -> None:
        """Record an event; one the object already has (same type, reason and message) counts once
        more and is seen again now, as Kubernetes aggregates repeated events."""
        seen = self.clock()
        with self.transaction():
            where = (*_where(key), type_, reason, message)
            repeated = self._db.execute(
                "UPDATE events SET count = count + 1, last_seen = ? "
                "WHERE api_group=? AND kind=? AND namespace=? AND name=? AND type=? AND reason=? AND message=?",
                (seen, *where))
            if repeated.rowcount == 0:
                self._db.execute(
                    "INSERT INTO events (api_group, kind, namespace, name, type, reason, message, first_seen, "
                    "last_seen) VALUES (?,?,?,?,?,?,?,?,?)", (*where, seen, seen))

    # ---- simulated target clusters

    def replace_cluster_objects(self, cluster: str, objects: list[Resource], inputs: str | None) -> None:
        """A cluster's simulated objects and the fingerprint of their inputs (None: forget both)."""
        with self.transaction():
            self._db.execute("DELETE FROM cluster_objects WHERE cluster=?", (cluster,))
            self._db.executemany("INSERT INTO cluster_objects (cluster, seq, body) VALUES (?,?,?)",
                                 [(cluster, i, _dumps(o)) for i, o in enumerate(objects)])
            self._db.execute("DELETE FROM simulations WHERE cluster=?", (cluster,))
            if inputs is not None:
                self._db.execute("INSERT INTO simulations (cluster, inputs) VALUES (?,?)", (cluster, inputs))

    def simulated_inputs(self, cluster: str) -> str | None:
        row = self._db.execute("SELECT inputs FROM simulations WHERE cluster=?", (cluster,)).fetchone()
        return row[0] if row else None

    def cluster_objects(self, cluster: str | None = None,
                        kinds: Iterable[str] | None = None) -> dict[str, list[Resource]]:
        """Objects of every simulated cluster (or one), by cluster name; with `kinds`, only those kinds
        (read by SQLite, so the rest, most of a big fleet's pods, are never decoded)."""
        query = "SELECT cluster, body FROM cluster_objects"
        clauses, args = [], []
        if cluster is not None:
            clauses.append("cluster=?")
            args.append(cluster)
        if kinds is not None:
            wanted = list(kinds)
            clauses.append(f"json_extract(body, '$.kind') IN ({','.join('?' * len(wanted))})")
            args += wanted
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        out: dict[str, list[Resource]] = {}
        try:
            for name, body in self._db.execute(query + " ORDER BY cluster, seq", args):
                out.setdefault(name, []).append(_loads(body))
        except orjson.JSONDecodeError:
            raise self._undecodable() from None
        return out

    # ---- the work queue

    def enqueue(self, work: str, keys: Iterable[Key], priority: int = 0) -> None:
        """Queue (work, object) items; an item already queued keeps its place."""
        with self.transaction():
            self._db.executemany(
                "INSERT INTO work_queue (priority, work, api_group, kind, namespace, name) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(work, api_group, kind, namespace, name) DO UPDATE SET bumps = bumps + 1",
                [(priority, work, *_where(key)) for key in keys])

    def next_item(self, work: str | None = None) -> tuple[str, Key, int] | None:
        """The first queued (work, object, bumps), lowest priority first (of that `work` only, if given);
        it stays queued until `done`."""
        where, args = ("WHERE work=? ", (work,)) if work is not None else ("", ())
        row = self._db.execute("SELECT work, api_group, kind, namespace, name, bumps FROM work_queue "
                               f"{where}ORDER BY priority, seq LIMIT 1", args).fetchone()
        return (row[0], Key(*row[1:5]), row[5]) if row else None

    def done(self, work: str, key: Key, bumps: int | None) -> None:
        """Finish an item; unless `bumps` is None, only if nobody queued it again since it was read."""
        query = "DELETE FROM work_queue WHERE work=? AND api_group=? AND kind=? AND namespace=? AND name=?"
        args: tuple = (work, *_where(key))
        if bumps is not None:
            query, args = query + " AND bumps=?", (*args, bumps)
        with self.transaction():
            self._db.execute(query, args)

    def queued(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM work_queue").fetchone()[0]

    def set_requirements(self, watcher: Key, required: Iterable[Key]) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM requirements WHERE watcher=?", (watcher.encode(),))
            self._db.executemany("INSERT OR IGNORE INTO requirements (watcher, api_group, kind, namespace, name) "
                                 "VALUES (?,?,?,?,?)", [(watcher.encode(), *_where(k)) for k in required])

    def required_by_watcher(self, watcher: Key) -> set[Key]:
        """What one composite required in its last reconcile."""
        return {Key(*row) for row in self._db.execute(
            "SELECT api_group, kind, namespace, name FROM requirements WHERE watcher=?", (watcher.encode(),))}

    def watchers_of(self, required: Key) -> set[Key]:
        """The composites that required exactly this key (an object, or Key.every / Key.in_namespace)."""
        return {Key.decode(row[0]) for row in self._db.execute(
            "SELECT watcher FROM requirements WHERE api_group=? AND kind=? AND namespace=? AND name=?",
            _where(required))}

    def watchers(self, key: Key) -> list[Key]:
        """The composites that required `key` in their last reconcile: by name, among its namespace's, or
        among every object of its kind."""
        rows = self._db.execute("SELECT DISTINCT watcher FROM requirements WHERE api_group=? AND kind=? AND "
                                "((namespace=? AND name IN (?, ?)) OR (namespace=? AND name=?)) ORDER BY watcher",
                                (*_where(key), EVERY, EVERY, EVERY))
        return [Key.decode(row[0]) for row in rows]

    # ---- leases

    def lease(self, name: str) -> tuple[str, float, float] | None:
        """(holder, renewed at, duration) of a lease, or None when nobody holds it."""
        row = self._db.execute("SELECT holder, renewed, duration FROM leases WHERE name=?", (name,)).fetchone()
        return tuple(row) if row else None  # type: ignore[return-value]

    def write_lease(self, name: str, holder: str, renewed: float, duration: float) -> None:
        self._db.execute("INSERT INTO leases (name, holder, renewed, duration) VALUES (?,?,?,?) ON CONFLICT(name) "
                         "DO UPDATE SET holder=excluded.holder, renewed=excluded.renewed, duration=excluded.duration",
                         (name, holder, renewed, duration))

    def drop_lease(self, name: str, holder: str) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM leases WHERE name=? AND holder=?", (name, holder))
