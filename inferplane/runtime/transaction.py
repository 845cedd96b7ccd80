"""A store's transaction as a context manager, and the time the store stamps."""

from __future__ import annotations

import functools
import time
from datetime import datetime, timezone
from typing import Any


class Transaction:
    """`with store.transaction():` (a class rather than a generator: the reconciler opens tens of
    thousands, most of them nested in one that is already open)."""

    __slots__ = ("store", "durable")

    def __init__(self, store: Any, durable: bool):  # a Store (store.py imports this module)
        self.store, self.durable = store, durable

    def __enter__(self) -> Any:
        self.store._begin(self.durable)
        return self.store

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.store._finish(commit=exc_type is None)


def now() -> str:
    """The time the API server would stamp, in RFC 3339 as Kubernetes writes it (to the second)."""
    return _stamp(int(time.time()))


@functools.lru_cache(maxsize=1)
def _stamp(second: int) -> str:
    # Formatted once a second: a reconcile stamps thousands of events and objects within one.
    return datetime.fromtimestamp(second, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
