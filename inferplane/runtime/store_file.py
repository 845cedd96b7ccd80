"""The store's file: opening, creating and checking it, bringing its tables up to date, and what an
error of SQLite or of the file means for the user (StoreError, each with its fix)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterator

from inferplane.runtime.schema import SCHEMA, SCHEMA_VERSION, TABLES

STORE_FILE = "store.db"
# Held (flock) while a process opens the store and brings its schema up to date: two commands that
# start together on a new state folder would otherwise both switch it to WAL and create its tables,
# and SQLite refuses one of them at once, without waiting (its deadlock rule in rollback mode).
SETUP_LOCK_FILE = "store.lock"
# How often a process waiting for that lock looks again.
SETUP_LOCK_POLL = 0.005
# The same file, held shared, says that a process waits for (or holds) the write lock for a user's
# write: the reconciler, between its batches, lets such writers in before taking the lock again, and
# otherwise goes straight on (see Database.let_writers_in). At most this long, so that a writer stopped
# while it held the file (SIGSTOP) delays the fleet by no more; it goes on waiting in SQLite meanwhile.
WRITERS_WAIT_SECONDS = 1.0
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
# SQLite's page cache of a store's connection (see _connect).
CACHE_KIB = 16_384


class StoreBusy(StoreError):
    """Another process held the store for longer than the busy timeout."""


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


# How many open stores of this process use each database file (by resolved path): see Database._check_file.
_OPEN_FILES: dict[str, int] = {}
_OPEN_LOCK = threading.Lock()


class Database:
    """A store's SQLite database (`store.database`), in `path` or in memory: opened and checked to be an
    inferplane store of a layout this inferplane knows, its tables brought up to date; the writers'
    announcements; and what an error means for the user.

    A writer (the default) creates the folder and a new store where there is none, and is refused at once
    (StoreReadOnly) where this process may not write them. A reader (`read_only`) needs a store; where it
    may not write the folder or its files, it reads through SQLite's read-only mode, so that reading commands
    work on a state they cannot change. A file that is not an inferplane store is refused (NotAState), never
    taken for a new state."""

    def __init__(self, path: Path | None, busy_timeout: float, read_only: bool = False):
        self.path, self.busy_timeout = path, busy_timeout
        self.file: Path | None = path / STORE_FILE if path is not None else None
        self.db: sqlite3.Connection
        self.private = False  # see private_copy
        self.writable = True  # False: opened through SQLite's read-only mode (_open_read_only)
        self._counted = False  # counted in _OPEN_FILES (see _check_file)
        self._writers_fd: int | None = None  # see _writers_file
        if path is None:
            self.db = sqlite3.connect(":memory:", isolation_level=None)
            self._set_up()
            return
        cannot_write = unwritable(path)
        if read_only and self._opened_for_reading(cannot_write):
            return
        if cannot_write:
            raise StoreReadOnly(self._read_only_message(cannot_write))
        path.mkdir(parents=True, exist_ok=True)
        with self._setup_lock(), self.errors_explained():
            if not self.file.exists():
                if read_only:
                    raise NotAState(f"{self.file} does not exist: `inferplane apply` creates it")
                self._create()
            self._open_file()

    def close(self) -> None:
        self._close_writers_file()
        self.db.close()
        self._forget_open()

    def _connect(self, file: Path) -> None:
        # Any thread may use the connection, one at a time: `inferplane serve` lends a store to each request.
        self.db = sqlite3.connect(file, isolation_level=None, timeout=self.busy_timeout, check_same_thread=False)
        self._layout()  # before anything is written to a file that may be another program's
        self.db.execute("PRAGMA journal_mode=WAL")
        # FULL: a transaction acknowledged to the user survives power loss, not only a kill.
        self.db.execute("PRAGMA synchronous=FULL")
        # 16 MiB of pages in SQLite's own cache, not its default 2 MiB (sqlite.org/pragma.html#pragma_cache_size):
        # a reconciler's batch touches megabytes of pages, which a smaller cache reads again and again
        # from the file: a full apply of 5,000 clusters ~4% faster, for 15 MiB.
        self.set_page_cache(CACHE_KIB)

    def private_copy(self) -> None:
        """From now on this store is a copy no other process opens and nobody needs after a crash (a
        scale-out helper's working copy): each commit writes the file in place, its rollback journal in memory, never
        synced (sqlite.org/pragma.html#pragma_journal_mode). A write-ahead log would have every page
        written twice, to the log and then back into the file. Only while no other connection is open."""
        self.db.execute("PRAGMA journal_mode=MEMORY")
        self.db.execute("PRAGMA synchronous=OFF")  # for every transaction (Store's transactions leave it so)
        self.private = True

    def set_page_cache(self, kib: int) -> None:
        """The size of SQLite's page cache of this connection, in KiB."""
        self.db.execute(f"PRAGMA cache_size=-{kib}")

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
            self.db.close()  # the last connection to close folds the WAL into the file and removes it
        os.replace(new, self.file)
        folder = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(folder)  # the rename itself survives power loss
        finally:
            os.close(folder)

    def _open_file(self) -> None:
        """Open the store's file for writing (the setup lock held), counted among this process's (_check_file)."""
        self._check_file()
        self._connect(self.file)
        self._remember_open()
        try:
            self._set_up()
        except BaseException:
            self._forget_open()
            raise

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
        with self.errors_explained():
            self.db = sqlite3.connect(f"{self.file.absolute().as_uri()}?{options}", uri=True, isolation_level=None,
                                       timeout=self.busy_timeout)
            self.writable = False
            self._remember_open()
            found = self._layout()
            if found != SCHEMA_VERSION:
                self.db.close()
                raise StoreReadOnly(f"{self.file} has schema version {found}, older than this inferplane's "
                                    f"{SCHEMA_VERSION}, and {why}: this inferplane reads it once a command that may "
                                    "write the folder (`inferplane apply`) has brought it up to date; or read it with "
                                    "the inferplane that wrote it")

    def _opened_for_reading(self, cannot_write: str | None) -> bool:
        """For a reader: the store opened read-only where this process may not write it (True); else
        nothing opened (False), the store left for opening as a writer does, unless its layout is older
        (refused: opened as a writer, it would be migrated)."""
        if not self.file.is_file():
            return False
        if cannot_write:
            self._open_read_only(cannot_write)
            return True
        self._refuse_an_older_layout()
        return False

    def _refuse_an_older_layout(self) -> None:
        """A reader leaves the store as it is: one of an older layout, which opening it for writing
        would migrate, is refused with what brings it up to date. Read through its own read-only
        connection (which sees the write-ahead log too), except where this process holds the file open
        already (see _check_file: closing another descriptor would drop that connection's locks)."""
        if _OPEN_FILES.get(self._file_id(), 0):
            return
        self._check_file()
        with self.errors_explained():
            self.db = sqlite3.connect(f"{self.file.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None,
                                       timeout=self.busy_timeout)
            try:
                found = self._layout()  # a newer layout, or another program's database, refused as ever
            finally:
                self.db.close()
        if found < SCHEMA_VERSION:
            raise StoreReadOnly(f"{self.file} has schema version {found}, older than this inferplane's "
                                f"{SCHEMA_VERSION}: this command only reads, and leaves the store as it is: run a "
                                "command that writes it (`inferplane apply`) to bring it up to date, then read it; "
                                "or read it with the inferplane that wrote it")

    def _check_file(self) -> None:
        """Refuse a file that cannot be an inferplane store before SQLite reads it: SQLite takes an empty
        file for a new database and would set it up as one.

        Not where this process already holds a connection to the file (a server's threads each open one):
        closing any other descriptor of a file drops every POSIX lock the process holds on it, SQLite's
        included, and another process closing its last connection would then take itself for the last one
        and remove the write-ahead log from under ours (sqlite.org/howtocorrupt.html, section 2.2). That
        connection's file passed this check when it was opened."""
        if _OPEN_FILES.get(self._file_id(), 0):
            return
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

    def _file_id(self) -> str:
        return str(self.file.resolve()) if self.file is not None else ""

    def _remember_open(self) -> None:
        if self.file is not None and not self._counted:
            with _OPEN_LOCK:
                _OPEN_FILES[self._file_id()] = _OPEN_FILES.get(self._file_id(), 0) + 1
            self._counted = True

    def _forget_open(self) -> None:
        if self._counted:
            with _OPEN_LOCK:
                _OPEN_FILES[self._file_id()] -= 1
            self._counted = False

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

    def _writers_file(self) -> int | None:
        """This store's own descriptor of SETUP_LOCK_FILE, for flock (None: a store in memory)."""
        if self.path is None:
            return None
        if self._writers_fd is None:
            self._writers_fd = os.open(self.path / SETUP_LOCK_FILE, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return self._writers_fd

    def announce_writer(self, waiting: bool) -> None:
        """Hold SETUP_LOCK_FILE shared while this store waits for and holds the write lock (or stop)."""
        fd = self._writers_file()
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_SH if waiting else fcntl.LOCK_UN)

    def let_writers_in(self) -> bool:
        """Between two of the reconciler's transactions: wait (up to WRITERS_WAIT_SECONDS) while another
        process or store announces a write (or sets the store up), so that it gets the write lock before the
        reconciler takes it again. Whether anybody was waiting. Costs one system call when nobody is."""
        fd = self._writers_file()
        if fd is None:
            return False
        deadline = time.monotonic() + WRITERS_WAIT_SECONDS
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return waited
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return True
                waited = True
                time.sleep(SETUP_LOCK_POLL)

    def _close_writers_file(self) -> None:
        if self._writers_fd is not None:
            os.close(self._writers_fd)
            self._writers_fd = None

    def _layout(self) -> int:
        """The store's schema version, once it is known to be an inferplane store of a layout this
        inferplane knows."""
        found = self.db.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            self.db.close()
            raise UnknownSchema(f"its store has schema version {found} and this inferplane knows only up to "
                                f"{SCHEMA_VERSION}: use the inferplane that wrote it, or another --state")
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        # No tables at all: a store whose set-up died before making them (from before NEW_STORE_FILE).
        if tables and not tables & TABLES:
            self.db.close()
            raise NotAState(self._not_a_state("it is another program's SQLite database (none of its tables is "
                                              "inferplane's)"))
        return found

    def _set_up(self) -> None:
        """Refuse a newer layout or another program's database; create or migrate the tables to this one."""
        with self.busy_reported():
            found = self._layout()
            # The migrations below write in transactions of their own (_migrating): a store's durable one
            # announces itself on the setup lock's file, which this process holds, and would wait for itself.
            self._add_event_counts()
            self.db.executescript(SCHEMA)
            self._add_version_column()
            self._add_owner_columns()
            if found != SCHEMA_VERSION:
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _migrating(self) -> Iterator[None]:
        """One migration's transaction (on opening: nobody else writes while this process holds the setup lock)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _add_event_counts(self) -> None:
        """Events written before they were counted get a count of 1 and no times."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(events)")}
        if columns and "count" not in columns:
            self.db.executescript("ALTER TABLE events ADD COLUMN count INTEGER NOT NULL DEFAULT 1;"
                                   "ALTER TABLE events ADD COLUMN first_seen TEXT NOT NULL DEFAULT '';"
                                   "ALTER TABLE events ADD COLUMN last_seen TEXT NOT NULL DEFAULT '';")

    def _add_version_column(self) -> None:
        """A state written before resourceVersions were indexed gets the column, filled from the bodies."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(resources)")}
        if "rv" not in columns:
            with self._migrating():
                self.db.execute("ALTER TABLE resources ADD COLUMN rv INTEGER NOT NULL DEFAULT 0")
                self.db.execute("UPDATE resources SET rv = "
                                 "CAST(json_extract(body, '$.metadata.resourceVersion') AS INTEGER)")
        self.db.execute("CREATE INDEX IF NOT EXISTS resources_by_version ON resources (rv)")

    def _add_owner_columns(self) -> None:
        """A state written before uids and controllers were indexed gets the columns, filled from the
        bodies; and the indexes that find an object by uid, its composed resources by their controller's
        uid, and an object by kind and name whatever its group."""
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(resources)")}
        if "written" not in columns:
            self.db.execute("ALTER TABLE resources ADD COLUMN written TEXT NOT NULL DEFAULT ''")
        if "controller" not in columns:
            with self._migrating():
                self.db.execute("ALTER TABLE resources ADD COLUMN uid TEXT NOT NULL DEFAULT ''")
                self.db.execute("ALTER TABLE resources ADD COLUMN controller TEXT NOT NULL DEFAULT ''")
                self.db.execute(
                    "UPDATE resources SET uid = COALESCE(json_extract(body, '$.metadata.uid'), ''), controller = "
                    "COALESCE((SELECT json_extract(ref.value, '$.uid') FROM json_each(body, '$.metadata.ownerReferences')"
                    " AS ref WHERE json_extract(ref.value, '$.controller') LIMIT 1), '')")
        self.db.execute("CREATE INDEX IF NOT EXISTS resources_by_uid ON resources (uid)")
        self.db.execute("CREATE INDEX IF NOT EXISTS resources_by_controller ON resources (controller)")
        self.db.execute("CREATE INDEX IF NOT EXISTS resources_by_kind ON resources (kind, namespace, name)")

    @contextlib.contextmanager
    def busy_reported(self) -> Iterator[None]:
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
    def errors_explained(self) -> Iterator[None]:
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

    def undecodable(self) -> StoreDamaged:
        """A stored body that is not the JSON this store wrote (the bytes of a damaged page)."""
        return StoreDamaged(self._damaged_message("a stored object does not read as JSON"))

    def _damaged_message(self, why: str) -> str:
        return (f"{self.file or 'the in-memory store'} is damaged: {why}: move {self.path} aside (keep it: "
                f"`sqlite3 {self.file} .recover` may save what it held) and apply your manifests again to start a "
                "new state")
