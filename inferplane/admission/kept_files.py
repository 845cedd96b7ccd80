"""What the store keeps of files applied, in tables of admission's own (registered with the store:
TABLES): the objects of files admitted whole, and what the last set of files applied whole said (see
admit_paths and the engine's apply)."""

from __future__ import annotations

from typing import Any

import orjson

from inferplane.runtime.schema import Tables
from inferplane.runtime.store import Store

TABLES = Tables("admission", (
    # Files admission accepted whole, by a hash of their path, bytes and the admitting code: the objects
    # they admitted to, so that applying an unchanged file again does not parse and check it again.
    "CREATE TABLE IF NOT EXISTS admitted_files (key BLOB PRIMARY KEY, objects BLOB NOT NULL)",
    # Sets of files applied whole, by a digest of their files' keys: what the apply said (its warnings and
    # notes, the objects it named) and the count of users' writes after it. While that count stands, the
    # same set applied again changes nothing, and says the same.
    "CREATE TABLE IF NOT EXISTS applied_sets (key BLOB PRIMARY KEY, user_writes INTEGER NOT NULL, said BLOB NOT NULL)",
))


class KeptFiles:
    """Admission's tables in one store (admit_paths' AdmittedFiles)."""

    ADMITTED_FILES_KEPT = 20_000

    def __init__(self, store: Store):
        self.store = store
        store.register_tables(TABLES)

    # ---- admitted files (see admit_paths)

    def admitted_objects(self, key: bytes) -> list[dict[str, Any]] | None:
        row = self.store.execute("SELECT objects FROM admitted_files WHERE key = ?", (key,)).fetchone()
        try:
            return None if row is None else orjson.loads(row[0])
        except orjson.JSONDecodeError:
            raise self.store.database.undecodable() from None

    def keep_admitted(self, files: dict[bytes, list[dict[str, Any]]]) -> None:
        """Remember files admitted whole; the oldest go beyond ADMITTED_FILES_KEPT."""
        if not files:
            return
        with self.store.transaction():
            self.store.executemany("INSERT OR REPLACE INTO admitted_files (key, objects) VALUES (?, ?)",
                                   [(key, orjson.dumps(objects)) for key, objects in files.items()])
            self.store.execute("DELETE FROM admitted_files WHERE rowid <= "
                               "(SELECT MAX(rowid) FROM admitted_files) - ?", (self.ADMITTED_FILES_KEPT,))

    # ---- the sets of files applied whole

    def applied_set(self, key: bytes) -> Any:
        """What the apply of this set of files said, while no user has written anything since; else None."""
        row = self.store.execute("SELECT user_writes, said FROM applied_sets WHERE key = ?", (key,)).fetchone()
        return self.store.decode(row[1]) if row is not None and row[0] == self.store.user_writes() else None

    def keep_applied_set(self, key: bytes, said: Any) -> None:
        with self.store.transaction():
            self.store.execute("DELETE FROM applied_sets")  # only the last set applied: the one re-applied
            self.store.execute("INSERT INTO applied_sets (key, user_writes, said) VALUES (?, ?, ?)",
                               (key, self.store.user_writes(), orjson.dumps(said)))
