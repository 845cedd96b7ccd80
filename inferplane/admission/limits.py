"""What any manifest must be before its kind's schema is even consulted: JSON, bounded, storable.

The API server decodes a request into JSON values and etcd stores the object; inferplane's engine
does the same with Python values and SQLite. Every limit here is one an object can break while
looking harmless in a file, and each is refused with the field and the limit, never discovered
later by a crash inside apply.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Iterator

from inferplane import DOCUMENTS_ENV, DOCUMENTS_FLAG, MAX_DOCUMENTS, MAX_STREAM_BYTES, STREAM_BYTES_ENV, \
    STREAM_BYTES_FLAG

# etcd refuses a request larger than its --max-request-bytes, 1.5 MiB by default: that is the
# largest object a Kubernetes cluster stores (a custom resource is stored as JSON).
MAX_OBJECT_BYTES = 1536 * 1024
# Kubernetes' JSON decoder stops at 10,000 levels; inferplane's stops at 100, because every layer
# (defaulting, schema, CEL, the models) walks an object recursively. Real manifests use about 15.
MAX_DEPTH = 100
# Kubernetes keeps integers as int64 (a ResourceSlice int, an integer field, a quantity's value).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class HugeInteger:
    """An integer literal too long for Python to convert (over 4,300 digits); kept to be refused."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"an integer of {len(self.text.lstrip('+-'))} digits"


def _join(path: str, step: str | int) -> str:
    if isinstance(step, int):
        return f"{path}[{step}]"
    return f"{path}.{step}" if path else step


_SURROGATE = ("a key or value holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), which is "
              "not Unicode text and cannot be stored: escape the whole character, or write it as UTF-8")


def _is_unicode(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _describe_int(value: int) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"an integer of {len(text.lstrip('-'))} digits"


def _describe(value: Any) -> str:
    if isinstance(value, HugeInteger):
        return repr(value)
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def shape_problems(body: Any) -> Iterator[tuple[str, str]]:
    """(field path, message) for every value the API server could not decode or store.

    Iterative, so that a document of any depth is reported rather than crashing the walk itself.
    """
    stack: list[tuple[Any, str, int]] = [(body, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            yield path, (f"nested more than {MAX_DEPTH} levels deep (inferplane's limit; Kubernetes' JSON "
                         f"decoder stops at 10,000): flatten the structure")
            continue
        if isinstance(value, dict):
            children = []
            for key, item in value.items():
                if not isinstance(key, str):
                    yield _join(path, str(key)), (f"key {key!r} is a {type(key).__name__}: JSON keys are strings; "
                                                  f"quote it")
                    continue
                if not key.isascii() and not _is_unicode(key):
                    yield path, _SURROGATE
                    continue
                children.append((item, _join(path, key), depth + 1))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(item, _join(path, i), depth + 1) for i, item in enumerate(value)]))
        elif isinstance(value, str):
            if not value.isascii() and not _is_unicode(value):
                yield path, _SURROGATE
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                yield path, (f"{_describe_int(value)} does not fit an int64 (Kubernetes stores integers as 64-bit, "
                             f"{INT64_MIN} to {INT64_MAX}): use a smaller number, or quote it if it is text")
        elif isinstance(value, float):
            if not math.isfinite(value):
                yield path, f"{value} is not a JSON number: use a finite number"
        elif isinstance(value, HugeInteger):
            yield path, (f"{_describe(value)} does not fit an int64 (Kubernetes stores integers as 64-bit, "
                         f"{INT64_MIN} to {INT64_MAX}): use a smaller number, or quote it if it is text")
        else:
            yield path, (f"{_describe(value)} is not a JSON value (string, number, bool, null, list or mapping): "
                         "quote it to keep it as a string")


def stored_size(body: Any) -> int:
    """Bytes the object takes as stored JSON (only for bodies free of shape problems)."""
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


def size_problem(size: int, what: str = "the object") -> str | None:
    if size <= MAX_OBJECT_BYTES:
        return None
    return (f"{what} is {size / 1024 / 1024:.1f} MiB as stored JSON, over the 1.5 MiB Kubernetes stores (etcd's "
            f"default --max-request-bytes): split it into smaller objects")


@dataclass(frozen=True)
class StreamLimits:
    """What one file, or standard input, of manifests may hold (the defaults and their flags are the
    package's constants: the command line names them before it imports admission)."""

    max_bytes: int = MAX_STREAM_BYTES
    max_documents: int = MAX_DOCUMENTS

    def bytes_problem(self) -> str:
        return (f"is larger than {amount(self.max_bytes)} (inferplane's limit on a file or standard input of "
                f"manifests): split it into several files, or raise the limit with {STREAM_BYTES_FLAG} or "
                f"{STREAM_BYTES_ENV}")

    def documents_problem(self) -> str:
        return (f"holds more than {self.max_documents:,} documents (inferplane's limit on a file or standard input; "
                f"each item of a List counts as one): split it into several files, or raise the limit with "
                f"{DOCUMENTS_FLAG} or {DOCUMENTS_ENV}")


def amount(size: int) -> str:
    """A size as a person writes it: 64 MiB, 2 KiB, 1,000 bytes."""
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale:,} {unit}"
    return f"{size:,} bytes"
