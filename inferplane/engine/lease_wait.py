"""One reconciler at a time over a shared state: the command holding the reconciler lease works off the
queue, and the others wait for it to finish (or take the lease over when it is free or its holder died)."""

from __future__ import annotations

import time
from typing import Callable

from inferplane.runtime.lease import Lease, LeaseLost
from inferplane.runtime.reconciler import Reconciler, RunReport
from inferplane.runtime.store import Store

# How long a command waits for another command's reconcile before it gives up and says so. A fleet
# of a thousand clusters converges in well under this on a small machine.
DEFAULT_WAIT = 300.0
# How often a waiting command looks at the lease again.
POLL_EVERY = 0.1


def as_reconciler(store: Store, wait: float, reconciler_for: Callable[[Lease | None], Reconciler],
                   first: Callable[[Reconciler], object]) -> RunReport:
    """Hold the lease, do `first`, then run the queue dry. A busy lease is waited for, up to `wait`.
    `reconciler_for` makes the reconciler that holds the given lease (None: an in-memory store)."""
    if store.path is None:  # in memory: no other process can see this store
        reconciler = reconciler_for(None)
        first(reconciler)
        return reconciler.run()
    lease = Lease(store)
    deadline = time.monotonic() + wait
    done_first = False
    while True:
        if lease.try_acquire():
            try:
                reconciler = reconciler_for(lease)
                if not done_first:
                    first(reconciler)
                    done_first = True
                return reconciler.run()
            except LeaseLost:
                pass  # another process took over: wait for it like any other holder
            finally:
                lease.release()
        if time.monotonic() > deadline:
            return RunReport(converged=False, waited_for=lease.current_holder() or "another process")
        time.sleep(POLL_EVERY)
