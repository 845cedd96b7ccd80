"""Caches bounded by bytes: at, below and above the bound."""

from __future__ import annotations

import sys
import threading

import pytest

from inferplane.kept import ENTRY_BYTES, Kept, kept, size_of

KEY = b"k" * 100


def room_for_value(bound: int, key: bytes = KEY) -> int:
    """The value bytes an entry under `key` may have to fit `bound` exactly."""
    return bound - ENTRY_BYTES - size_of(key)


def test_an_entry_exactly_at_the_bound_is_kept_and_one_byte_over_is_not():
    cache = Kept(10_000)
    assert cache.put(KEY, "at", room_for_value(10_000))
    assert (cache.get(KEY), cache.held) == ("at", 10_000)

    over = Kept(10_000)
    assert not over.put(KEY, "over", room_for_value(10_000) + 1)
    assert (over.get(KEY), over.held, len(over)) == (None, 0, 0)


def test_an_entry_at_the_bound_evicts_everything_else_and_one_over_evicts_nothing():
    cache = Kept(10_000)
    for index in range(3):
        cache.put(b"small-%d" % index, b"v")
    kept_before = cache.held
    assert not cache.put(KEY, "over", room_for_value(10_000) + 1)
    assert cache.held == kept_before and len(cache) == 3  # refused outright: nothing made room for it
    assert cache.put(KEY, "at", room_for_value(10_000))
    assert (len(cache), cache.held, cache.get(b"small-0")) == (1, 10_000, None)


def test_below_the_bound_entries_are_kept_and_the_least_recently_used_go_first():
    one = ENTRY_BYTES + size_of(b"key-0") + size_of(b"x" * 1000)
    cache = Kept(3 * one)
    for index in range(3):
        cache.put(b"key-%d" % index, b"x" * 1000)
    assert cache.held == 3 * one  # keys and values, each counted
    cache.get(b"key-0")  # now the most recently used
    cache.put(b"key-3", b"x" * 1000)
    assert [cache.get(b"key-%d" % i) is not None for i in range(4)] == [True, False, True, True]
    assert cache.held == 3 * one


def test_the_bound_counts_keys_as_well_as_values():
    cache = Kept(100_000)
    # A large key with a tiny value still costs its bytes: fifty of them do not fit.
    for index in range(50):
        cache.put(b"%d" % index + b"k" * 10_000, True)
    assert cache.held <= 100_000 < 50 * 10_000
    assert len(cache) == 100_000 // (ENTRY_BYTES + size_of(b"0" + b"k" * 10_000))


def test_size_of_counts_what_python_holds_node_by_node():
    assert size_of(b"x" * 1000) == sys.getsizeof(b"x" * 1000)
    empty_objects = [{} for _ in range(1000)]
    # A list of empty objects: 4 bytes each on the wire, some 70 each in Python.
    assert size_of(empty_objects) == sys.getsizeof(empty_objects) + 1000 * sys.getsizeof({})
    assert size_of({"a": [1, 2.5, "s", None, True]}) > size_of({"a": []})


def test_a_bound_of_zero_keeps_nothing_and_a_negative_one_is_refused():
    cache = Kept(0)
    assert not cache.put(b"", b"")
    assert len(cache) == 0
    with pytest.raises(ValueError, match="a cache's bound is a number of bytes, at least 0, got -1"):
        Kept(-1)


def test_a_kept_function_is_worked_out_once_per_argument_within_its_bound():
    calls = []

    @kept(3 * (ENTRY_BYTES + 2_000))
    def length(text: str) -> int | None:
        calls.append(text)
        return len(text) if text else None

    assert [length("a" * 500), length("a" * 500), length(""), length("")] == [500, 500, None, None]
    assert len(calls) == 2  # None is a result too, kept as one
    for size in range(1, 20):
        length("b" * 1000 * size)
    assert length.cache.held <= 3 * (ENTRY_BYTES + 2_000)
    length.cache_clear()
    assert length.cache.held == 0


def test_threads_sharing_a_cache_keep_its_bound():
    cache = Kept(50_000)

    def fill(offset: int) -> None:
        for index in range(2_000):
            cache.put(offset * 10_000 + index, b"v" * 100)
            cache.get(offset * 10_000 + index // 2)

    threads = [threading.Thread(target=fill, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 0 < cache.held <= 50_000
