"""Field sets, as structured-merge-diff keeps them (sigs.k8s.io/structured-merge-diff v6 fieldpath):
a path is a tuple of path elements, each written as FieldsV1 writes it (fieldpath/serialize-pe.go):
`f:name` a field or a map's key, `k:{"name":"x"}` the item of a list-map by its keys (sorted, compact
JSON), `v:"x"` the item of a set by its value, `i:3` a list item by index. A set of fields in FieldsV1
is a tree of those, `{}` a member, `.` a member that has members under it (fieldpath/serialize.go).

`fields_of` is typed.ToFieldSet (typed/tofieldset.go, v6.4.2): a scalar, an atomic list or map is owned
whole; a list-map's or a set's items are owned themselves and what is under them; a struct's declared
fields only through their leaves (or themselves, when null or an empty map: visitMapItems); a granular
map's keys themselves and what is under them. One difference: an empty list-map or set of a declared
field is owned here as itself, where ToFieldSet owns nothing for it (doList walks no items). It also
keeps each path's value, for comparisons (typed/compare.go)."""

from __future__ import annotations

import json
from typing import Any, Iterable

from inferplane.fieldmanager.schema import Schema, Shape

Path = tuple[str, ...]
# The value kept for an item or a key that is a container whose contents are walked: two of them are
# compared through what is under them, never whole.
CONTAINER = object()


class FieldError(ValueError):
    """An object that cannot be read as its schema says (a list-map item without its keys, a set
    holding an object, an item twice): `path` names where."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path or '.'}: {message}")
        self.path, self.message = path, message


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def item_element(item: Any, keys: tuple[str, ...], kind: str, where: Path) -> str:
    if kind == "set":
        if isinstance(item, (dict, list)):
            raise FieldError(path_string(where), "a set's items are values (strings, numbers), not objects or lists")
        return "v:" + _json(item)
    if not isinstance(item, dict) or any(k not in item for k in keys):
        raise FieldError(path_string(where), f"each item of this list names its {', '.join(keys)} (the list's "
                         "keys): add them")
    return "k:" + _json({k: item[k] for k in keys})


def fields_of(obj: dict[str, Any], shape: Shape, skip: Iterable[Path] = ()) -> dict[Path, Any]:
    """path -> value of every field the object sets, but those under `skip`."""
    out: dict[Path, Any] = {}
    skipped = set(skip)
    _walk(obj, shape.root, (), shape, out, skipped)
    return out


def _walk(value: Any, schema: Schema | None, path: Path, shape: Shape, out: dict, skip: set) -> None:
    if isinstance(value, dict):
        if shape.atomic_map(schema):
            out[path] = value
            return
        for key, child in value.items():
            at = path + ("f:" + key,)
            if at in skip:
                continue
            declared, child_schema = shape.field(schema, key)
            contained = isinstance(child, (dict, list)) and bool(child)
            _walk(child, child_schema, at, shape, out, skip)
            if not declared:
                out[at] = CONTAINER if contained else child
            elif not contained and at not in out:
                out[at] = child  # an empty or null value of a declared field: owned as itself
        return
    if isinstance(value, list):
        kind = shape.list_type(schema)
        if kind.kind == "atomic":
            out[path] = value
            return
        items, seen = shape.items(schema), set()
        for item in value:
            at = path + (item_element(item, kind.keys, kind.kind, path),)
            if at in seen:
                raise FieldError(path_string(at), "this item is in the list twice: keep one")
            seen.add(at)
            _walk(item, items, at, shape, out, skip)
            out[at] = CONTAINER if isinstance(item, (dict, list)) else item
        return
    out[path] = value


def path_string(path: Path) -> str:
    """A path as structured-merge-diff prints it (fieldpath/path.go, element.go): `.spec.pools[name="a"].x`."""
    parts = []
    for element in path:
        tag, rest = element[:1], element[2:]
        if tag == "f":
            parts.append("." + rest)
        elif tag == "k":
            parts.append("[" + ",".join(f"{k}={_json(v)}" for k, v in json.loads(rest).items()) + "]")
        elif tag == "v":
            parts.append(f"[={rest}]")
        else:
            parts.append(f"[{rest}]")
    return "".join(parts)


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """A set of paths as a FieldsV1 tree."""
    tree: dict[str, Any] = {}
    members: list[tuple[dict, Path]] = []
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        members.append((node, path))
    for node, _ in members:
        if node and "." not in node:
            node["."] = {}
    return _ordered(tree)


def _ordered(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _ordered(node[k]) for k in sorted(node, key=lambda k: (k != ".", k))}


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    """The paths a FieldsV1 tree holds (an entry that is not one holds none: it is dropped)."""
    out: set[Path] = set()
    if not isinstance(tree, dict):
        return out
    for key, child in tree.items():
        if key == ".":
            if prefix:
                out.add(prefix)
            continue
        if not isinstance(key, str) or key[:2] not in ("f:", "k:", "v:", "i:"):
            continue
        if isinstance(child, dict) and child:
            out |= from_fields_v1(child, prefix + (key,))
        else:
            out.add(prefix + (key,))
    return out


def with_prefixes(paths: Iterable[Path]) -> set[Path]:
    """The paths and every path above them (fieldpath Set.EnsureNamedFieldsAreMembers, and the add-back of
    what another manager owns under a removed field: merge/update.go, prune and addBackOwnedItems)."""
    out: set[Path] = set()
    for path in paths:
        for end in range(1, len(path) + 1):
            out.add(path[:end])
    return out
