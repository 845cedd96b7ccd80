"""What was worked out once, kept for when it is asked for again, within a bound in bytes.

Every cache whose keys come from outside (a request's resources, a class's JSON) is one of these: an
entry costs the bytes of its key and its value as Python holds them, so a stream of large, distinct
inputs evicts what came before instead of growing the process (an entry count bounds nothing when an
entry can be 4 MiB). The least recently used go first; an entry larger than the whole bound is not
kept at all (it is worked out again when asked for). Safe to share between threads.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable, Hashable, TypeVar

import cachetools

T = TypeVar("T")

# What one entry costs beyond its key and value: cachetools' bookkeeping (its data, size and order
# dicts, and the order's link), about 300 bytes measured with tracemalloc; rounded up.
ENTRY_BYTES = 512

MIB = 1024 * 1024


def size_of(data: Any) -> int:
    """The bytes JSON-like data (dicts, lists, tuples, strings, bytes, numbers) takes in this process,
    counted node by node with sys.getsizeof. A string or number shared by several nodes counts every
    time: an upper bound, which is what a bound needs. True, False and None are shared singletons."""
    if data is None or data is True or data is False:
        return 0
    if isinstance(data, dict):
        return sys.getsizeof(data) + sum(size_of(k) + size_of(v) for k, v in data.items())
    if isinstance(data, (list, tuple)):
        return sys.getsizeof(data) + sum(size_of(v) for v in data)
    return sys.getsizeof(data)


class Kept:
    """Values by key, the bytes of keys and values together at most `bound` (see the module)."""

    def __init__(self, bound: int):
        if bound < 0:
            raise ValueError(f"a cache's bound is a number of bytes, at least 0, got {bound}")
        self.bound = bound
        # An entry's value is stored with its cost: cachetools sizes values only.
        self._entries: cachetools.LRUCache = cachetools.LRUCache(bound, getsizeof=lambda entry: entry[1])
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        """The bytes the kept entries cost."""
        return self._entries.currsize

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Any:
        """The value kept for `key` (now the most recently used), or None."""
        with self._lock:
            entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def put(self, key: Hashable, value: Any, size: int | None = None) -> bool:
        """Keep `value` for `key`, evicting the least recently used to make room; whether it was kept.
        `size`: the value's bytes when size_of cannot count them (an object that is not JSON data)."""
        cost = ENTRY_BYTES + size_of(key) + (size_of(value) if size is None else size)
        if cost > self.bound:
            return False
        with self._lock:
            self._entries[key] = (value, cost)
        return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def kept(bound: int, value_size: Callable[..., int] | None = None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """A pure function's results kept by its arguments (strings, bytes, numbers), within `bound`
    bytes: functools.lru_cache bounded by bytes instead of entries. `value_size(*args, result)`: a
    result's bytes when it is not JSON data. `cache_clear()` forgets them, as lru_cache's does."""
    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        cache = Kept(bound)

        @functools.wraps(function)
        def call(*args: Any) -> T:
            found = cache.get(args)
            if found is not None:
                return found[0]
            result = function(*args)
            # (result,): None is a result too.
            cache.put(args, (result,), None if value_size is None else value_size(*args, result))
            return result

        call.cache = cache  # type: ignore[attr-defined]
        call.cache_clear = cache.clear  # type: ignore[attr-defined]
        return call
    return decorate
