"""JSON-like data (what manifests, stored objects and chart values are): dicts, lists and scalars."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from inferplane.kept import MIB, Kept


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-like data. Encoded and decoded by orjson (twice as fast as walking the tree
    in Python, itself two to three times as fast as deepcopy), and taken only if it equals the original:
    anything JSON would change (a tuple, a non-string key, an integer beyond 64 bits, NaN) is walked."""
    if isinstance(value, (dict, list)):
        try:
            copy = orjson.loads(orjson.dumps(value))
        except (orjson.JSONEncodeError, TypeError):
            return _walked_copy(value)
        return copy if copy == value else _walked_copy(value)
    return value


class _Refusing:
    """What SharedDict and SharedList share: every change in place refused; copies plain and changeable."""

    PLAIN: type = object

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("shared JSON data cannot be changed in place: json_copy it first")

    def __copy__(self) -> Any:
        return self.PLAIN(self)

    def __deepcopy__(self, memo: dict) -> Any:
        return json_copy(self)

    def __reduce__(self) -> Any:
        return self.PLAIN, (self.PLAIN(self),)


class SharedDict(_Refusing, dict):
    """A mapping of JSON data that equal data shares (shared_copy): it refuses to be changed, so that a
    change meant for one object cannot reach every object sharing it."""

    PLAIN = dict
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _Refusing._refuse  # type: ignore


class SharedList(_Refusing, list):
    """A list of JSON data that equal data shares: see SharedDict."""

    PLAIN = list
    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = clear = extend = insert = pop = remove = \
        reverse = sort = _Refusing._refuse  # type: ignore


def frozen(value: Any) -> Any:
    """JSON-like data in containers that refuse to be changed (SharedDict, SharedList), its scalars
    as they are: for data built once and handed to many objects."""
    if isinstance(value, dict):
        return SharedDict((k, frozen(v)) for k, v in value.items())
    if isinstance(value, list):
        return SharedList(frozen(v) for v in value)
    return value


# Copies that equal data shares, by its encoding: a fleet's stacks carry the same chart values and
# manifests (the Inference Extension's CRDs are ~60 KiB a cluster) cluster after cluster, a third of
# what a full apply holds.
SHARED = Kept(64 * MIB)


def shared_copy(value: Any) -> Any:
    """A copy of JSON-like data, one for all equal data written in the same key order (so that what is
    printed never depends on which came first), that refuses to be changed (SharedDict)."""
    if not isinstance(value, (dict, list)):
        return value
    try:
        encoded = orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return _walked_copy(value)
    found = SHARED.get(encoded)
    if found is None:
        copy = orjson.loads(encoded)  # json_copy's own check: kept only if JSON changed nothing
        found = frozen(copy if copy == value else _walked_copy(value))
        SHARED.put(encoded, found)
    return found


def _walked_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _walked_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_walked_copy(v) for v in value]
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: a map merges key by key, null removes a key, anything else replaces. Helm coalesces
    values over a chart's defaults the same way (accelerators/chart_values.py)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out
