"""The applied configuration merged into the live object (TypedValue.Merge: typed/merge.go,
structured-merge-diff v6.4.2): the configuration's values win; maps merge key by key; a list-map's items
merge by their keys and a set's by their values; an atomic list or map, and a scalar, is the
configuration's. The order of a merged list is ours: the live object's items kept in their order and new
ones added after. typed/merge.go's visitListItems orders by the configuration instead: items both have
come in the configuration's order, a new item where the configuration puts it, live-only items where they
stood. And the removal of a field, by its path."""

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
        items = shape.items(schema)
        out = list(live)
        index = {}
        for at, item in enumerate(live):
            try:
                index.setdefault(item_element(item, kind.keys, kind.kind, path), at)
            except ValueError:
                continue  # a live item the schema cannot key: left as it is
        for item in config:
            element = item_element(item, kind.keys, kind.kind, path)
            if element in index:
                out[index[element]] = merged(out[index[element]], item, shape, items, path + (element,))
            else:
                index[element] = len(out)
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(config)


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
