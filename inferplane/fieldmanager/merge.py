"""The applied configuration merged into the live object (TypedValue.Merge: typed/merge.go,
structured-merge-diff v6.4.2): the configuration's values win; maps merge key by key; a list-map's items
merge by their keys and a set's by their values; an atomic list or map, and a scalar, is the
configuration's, a merged list in visitListItems' order (_merged_list). And the removal of a field, by its
path."""

from __future__ import annotations

import copy
import json
from typing import Any

from inferplane.fieldmanager.fieldset import Path, item_element
from inferplane.fieldmanager.schema import Schema, Shape


def merged(live: Any, config: Any, shape: Shape, schema: Schema | None = None, path: Path = ()) -> Any:
    if not path:
        schema = shape.root
    if isinstance(live, dict) and isinstance(config, dict) and not shape.atomic_map(schema):
        out = dict(live)
        for key, value in config.items():
            child = shape.field(schema, key)[1]
            out[key] = merged(live[key], value, shape, child, path + ("f:" + key,)) if key in live else \
                copy.deepcopy(value)
        return out
    kind = shape.list_type(schema)
    if isinstance(live, list) and isinstance(config, list) and kind.kind != "atomic":
        return _merged_list(live, config, shape, schema, path)
    return copy.deepcopy(config)


def _merged_list(live: list, config: list, shape: Shape, schema: Schema | None, path: Path) -> list:
    """A list-map or set merged in typed/merge.go's visitListItems order (structured-merge-diff v6.4.2),
    walking both lists: the items both have in the configuration's order, merged; an item only the live
    list has where it stood; a new item where the configuration puts it. Live [a, b] and configuration
    [c, a] give [c, a, b]."""
    kind, items = shape.list_type(schema), shape.items(schema)
    live_elements = [_element_or_none(item, kind, path) for item in live]
    config_elements = [item_element(item, kind.keys, kind.kind, path) for item in config]
    in_live = {found: at for at, found in reversed(list(enumerate(live_elements))) if found is not None}
    in_config = set(config_elements)
    # The items both lists have, in the configuration's order: a live one met before its turn waits for it.
    shared = iter([found for found in config_elements if found in in_live])
    next_shared = next(shared, None)
    out: list = []
    done: set[str] = set()
    left, right = 0, 0
    while left < len(live) or right < len(config):
        here = live_elements[left] if left < len(live) else None
        if left < len(live) and right < len(config):
            if here is not None and here == config_elements[right]:
                done.add(here)
                out.append(merged(live[left], config[right], shape, items, path + (here,)))
                left, right = left + 1, right + 1
                next_shared = next(shared, None)
                continue
            if here in in_config and next_shared is not None and next_shared != here:
                left += 1
                continue
        if left < len(live):
            if here not in in_config:
                out.append(live[left])
                left += 1
                continue
            if here in done:
                left += 1
        if right < len(config):
            wanted = config_elements[right]
            done.add(wanted)
            out.append(merged(live[in_live[wanted]], config[right], shape, items, path + (wanted,))
                       if wanted in in_live else copy.deepcopy(config[right]))
            right += 1
            if next_shared == wanted:
                next_shared = next(shared, None)
    return out


def _element_or_none(item: Any, kind, path: Path) -> str | None:
    """A live item's path element; None for one the schema cannot key, which is left where it is."""
    try:
        return item_element(item, kind.keys, kind.kind, path)
    except ValueError:
        return None


def _matches(element: str, item: Any) -> bool:
    tag, rest = element[:1], element[2:]
    if tag == "k":
        return isinstance(item, dict) and all(item.get(k) == v for k, v in json.loads(rest).items())
    if tag == "v":
        return item == json.loads(rest)
    return False


def remove(obj: dict[str, Any], path: Path) -> None:
    """Remove what `path` names from `obj` (in place); a path to nothing removes nothing."""
    node: Any = obj
    for depth, element in enumerate(path):
        last = depth == len(path) - 1
        if element.startswith("f:") and isinstance(node, dict):
            name = element[2:]
            if name not in node:
                return
            if last:
                del node[name]
                return
            node = node[name]
        elif element.startswith("i:") and isinstance(node, list):
            at = int(element[2:])
            if at >= len(node):
                return
            if last:
                del node[at]
                return
            node = node[at]
        elif isinstance(node, list):
            at = next((i for i, item in enumerate(node) if _matches(element, item)), None)
            if at is None:
                return
            if last:
                del node[at]
                return
            node = node[at]
        else:
            return
