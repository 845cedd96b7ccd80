"""One reconciler per state at a time: a lease, as Kubernetes controllers elect a leader.

The holder renews the lease while it works; a holder that crashed stops renewing and its lease
expires, so the next process takes over. Times are the machine's wall clock (as a Lease's renewTime),
which every process sharing a state folder reads alike.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Callable

from inferplane.runtime.store import Store

RECONCILER_LEASE = "reconciler"
# client-go's leader election defaults: a lease lasts 15 s and is renewed well before (every 5 s
# here: one reconcile or one cluster simulation takes milliseconds, so renewals are never late).
LEASE_DURATION = 15.0
RENEW_EVERY = 5.0


class LeaseLost(Exception):
    """Another process took the lease: this one stopped renewing in time and must stop writing."""


class Lease:
    def __init__(self, store: Store, name: str = RECONCILER_LEASE, duration: float = LEASE_DURATION,
                 clock: Callable[[], float] = time.time):
        self.store = store
        self.name = name
        self.duration = duration
        self.clock = clock
        # Who holds it, in words a user can act on; unique even for two commands in one process.
        self.holder = f"inferplane pid {os.getpid()} on {socket.gethostname()} ({uuid.uuid4().hex[:8]})"
        self.renewed = 0.0

    def current_holder(self) -> str | None:
        """Whoever holds the lease now (None when it is free or has expired)."""
        held = self._held()
        if held is None or self.clock() > held[1] + held[2]:
            return None
        return held[0]

    def try_acquire(self) -> bool:
        with self.store.transaction():
            holder = self.current_holder()
            if holder not in (None, self.holder):
                return False
            self._write()
        return True

    def renew_if_due(self) -> None:
        """Renew when a renewal is due; `LeaseLost` if someone else holds the lease now."""
        if self.clock() - self.renewed < RENEW_EVERY:
            return
        with self.store.transaction():
            held = self._held()
            if held is None or held[0] != self.holder:
                raise LeaseLost(f"the reconciler lease was taken by {held[0] if held else 'nobody'}")
            self._write()

    def release(self) -> None:
        with self.store.transaction():
            self.store.execute("DELETE FROM leases WHERE name=? AND holder=?", (self.name, self.holder))
        self.renewed = 0.0

    def _held(self) -> tuple[str, float, float] | None:
        """(holder, renewed at, duration) of the lease, or None when nobody holds it."""
        row = self.store.execute("SELECT holder, renewed, duration FROM leases WHERE name=?", (self.name,)).fetchone()
        return tuple(row) if row else None  # type: ignore[return-value]

    def _write(self) -> None:
        self.renewed = self.clock()
        write_lease(self.store, self.name, self.holder, self.renewed, self.duration)


def write_lease(store: Store, name: str, holder: str, renewed: float, duration: float) -> None:
    """The lease held by `holder`, renewed at `renewed` (a test writes a crashed holder's)."""
    store.execute("INSERT INTO leases (name, holder, renewed, duration) VALUES (?,?,?,?) ON CONFLICT(name) "
                  "DO UPDATE SET holder=excluded.holder, renewed=excluded.renewed, duration=excluded.duration",
                  (name, holder, renewed, duration))
