"""JSON-like data (what manifests, stored objects and chart values are): dicts, lists and scalars."""

from __future__ import annotations

from typing import Any


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-like data, without deepcopy's memo bookkeeping (two to three times as fast)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value
