"""What the store keeps of files applied: the objects of files admitted whole, the count of users'
writes, and what the last set of files applied whole said (see inferplane.admission.admit_paths and
the engine's apply)."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson


class AppliedFiles:
    """The part of Store (store.py) that keeps what applies of files said."""

    _db: sqlite3.Connection

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
