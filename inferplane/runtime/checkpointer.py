"""Checkpoints of the store's write-ahead log on a thread of their own, while the reconciler works.

In WAL mode every commit appends the pages it changed to the log, and by default the committing
connection then copies the log back into the database file once it holds over 1,000 pages (a
checkpoint, with an fsync of the log and of the database: sqlite.org/wal.html, "Checkpointing";
sqlite.org/pragma.html#pragma_synchronous). A full apply of 10,000 clusters commits ~700 batches of
several megabytes each, so nearly every commit checkpointed: 14 s of its 81 s wall, 8 s of it CPU. Here
the reconciler's connection stops checkpointing (PRAGMA wal_autocheckpoint=0) and a second connection
on a thread runs PASSIVE checkpoints after each commit: SQLite runs one without Python's global lock
(one C call), so it takes the machine's other core, and a PASSIVE checkpoint never blocks the writer.

The log restarts from its beginning only when a write transaction begins after a checkpoint copied all
of it (sqlite.org/wal.html, "Avoiding Excessively Large WAL Files"); as the reconciler begins its next
batch at once, that moment seldom comes by itself. So once the log holds more than RESTART_PAGES, the
next batch first waits for the checkpoint under way (one batch's pages), and the log starts over.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

# SQLite's default: a connection that commits checkpoints once the log holds this many pages.
AUTOCHECKPOINT_PAGES = 1000
# Past this many pages in the log (4 KiB each: 256 MiB), the next batch waits for the checkpoint under way:
# at 64 MiB a full apply of 10,000 clusters waited 4.0 s in all, at 256 MiB 1.3 s.
RESTART_PAGES = 65_536
# How long a batch waits at most for a checkpoint: past it, the log just grows until the next one.
WAIT_SECONDS = 30.0


class Checkpointer:
    def __init__(self, file: Path, busy_timeout: float):
        self.file, self.busy_timeout = file, busy_timeout
        self.log_pages = 0  # the log's size in pages when the last checkpoint ended
        self.failure: BaseException | None = None  # what stopped the thread (the log then grows: no harm)
        self._due = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="inferplane-checkpointer", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """The writer committed: copy what the log holds now into the database."""
        self._idle.clear()
        self._due.set()

    def before_write(self) -> None:
        """Before the writer's next transaction: let the log start over once it grew long."""
        if self.log_pages > RESTART_PAGES and self._thread.is_alive():
            self._idle.wait(WAIT_SECONDS)

    def stop(self) -> None:
        self._stopping = True
        self._due.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.file, isolation_level=None, timeout=self.busy_timeout)
        except BaseException as exc:  # noqa: BLE001 - without the thread the writer's log just grows
            self.failure = exc
            self._idle.set()
            return
        try:
            while True:
                self._due.wait()
                self._due.clear()
                if self._stopping:
                    return
                _, self.log_pages, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if not self._due.is_set():
                    self._idle.set()
        except BaseException as exc:  # noqa: BLE001 - as above
            self.failure = exc
        finally:
            self._idle.set()
            db.close()
