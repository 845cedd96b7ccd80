"""The three patch types kube-apiserver applies (k8s.io/apiserver pkg/endpoints/handlers/patch.go,
v0.37.0): JSON merge patch (RFC 7386) for every kind, JSON patch (RFC 6902, by the `jsonpatch`
library), and strategic merge patch for the core kinds only (a custom resource answers 415 to it, as
kube-apiserver does, which is why kubectl sends its apply to our kinds as a merge patch).

Strategic merge (k8s.io/apimachinery pkg/util/strategicpatch/patch.go, v0.37.0) is a merge patch whose
lists merge where the kind's schema says so: the strategies are read from the vendored definitions
(`x-kubernetes-patch-strategy: merge` and `x-kubernetes-patch-merge-key`: a Namespace's
`status.conditions` by `type`, `metadata.ownerReferences` by `uid`, `metadata.finalizers` as a set).
Its directives are honoured: `$patch: replace|delete` on a map or a merged list's item, `$retainKeys`,
`$setElementOrder/FIELD` and `$deleteFromPrimitiveList/FIELD`; another `$` key is refused."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from inferplane.admission.limits import MAX_DEPTH
from inferplane.admission.object_meta import CORE_DEFINITIONS, DEFINITIONS
from inferplane.api.json_data import merge_patch  # noqa: F401  (a patch type's function, beside the others)

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class PatchError(ValueError):
    """A patch that cannot be applied: the message says which part and why."""


class PatchTooLarge(PatchError):
    """A JSON patch over the limits on its operations or what they add (413, as kube-apiserver answers)."""


# kube-apiserver's limit on a JSON patch's operations (k8s.io/apiserver pkg/endpoints/handlers/patch.go,
# v0.37.0: maxJSONPatchOperations = 10000, answered RequestEntityTooLarge).
MAX_OPERATIONS = 10_000
# What a JSON patch may add, copies included: the request limit (what a body may add by itself).
MAX_ADDED = 3 * 1024 * 1024


def json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902, operation by operation on one copy of the target, each bounded before it is applied:
    at most MAX_OPERATIONS of them; what they add (their values, and what `copy` duplicates) at most
    MAX_ADDED bytes, and never deeper than MAX_DEPTH (a `copy` of an object into itself doubles it; a
    chain of `add`s nests one level each). A refusal names the operation and never a value: the target
    may be a Secret."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch is a list of operations: send [{\"op\": ..., \"path\": ...}, ...]")
    if len(operations) > MAX_OPERATIONS:
        raise PatchTooLarge(f"The allowed count of operations in the patch is {MAX_OPERATIONS}, but received "
                            f"{len(operations)}: send the change in several patches")
    document, added = copy.deepcopy(target), 0
    for index, operation in enumerate(operations):
        where = f"operation {index}"
        if not isinstance(operation, dict) or not isinstance(operation.get("path"), str):
            raise PatchError(f"{where} is not an object with an op and a path: send {{\"op\": ..., \"path\": ...}}")
        where = f"operation {index} ({str(operation.get('op'))[:20]} {operation['path'][:200]})"
        try:
            grown = _growth(document, operation)
            if grown is not None:
                size, depth = grown
                added += size
                if added > MAX_ADDED:
                    raise PatchTooLarge(f"{where}: the patch adds more than {MAX_ADDED // 1024 // 1024} MiB (its "
                                        "values, and what its copy operations duplicate): send a smaller patch")
                if depth + operation["path"].count("/") > MAX_DEPTH:
                    raise PatchError(f"{where} would nest the object more than {MAX_DEPTH} levels deep (inferplane's "
                                     "limit): flatten the structure")
            document = jsonpatch.JsonPatch([operation]).apply(document, in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            raise PatchError(f"{where}: the test failed: the value there is not the one tested") from None
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError,
                ValueError):
            # The library's words may quote the document: only the operation is named.
            raise PatchError(f"{where} cannot be applied: its op, path or from names nothing there (or no "
                             "operation of RFC 6902): read the object again and fix the operation") from None
    return document


def _growth(document: Any, operation: dict[str, Any]) -> tuple[int, int] | None:
    """(bytes, depth) of what an operation puts into the document, or None for one that adds nothing."""
    op = operation.get("op")
    if op in ("add", "replace", "test") and "value" in operation:
        value = operation["value"]
    elif op == "copy" and isinstance(operation.get("from"), str):
        value = jsonpointer.resolve_pointer(document, operation["from"], None)
    else:
        return None
    if op == "test":
        return 0, _depth(value)  # compared, not added: bounded in depth only (comparing recurses)
    return len(orjson.dumps(value)), _depth(value)


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        if isinstance(node, dict):
            stack += [(child, depth + 1) for child in node.values()]
        elif isinstance(node, list):
            stack += [(child, depth + 1) for child in node]
    return deepest


@functools.cache
def list_strategies(kind: str) -> dict[tuple[str, ...], str | None]:
    """(field path) -> merge key (None: a set of primitives) of the lists a core kind's schema merges."""
    definitions = {**json.loads(DEFINITIONS.read_text())["$defs"], **json.loads(CORE_DEFINITIONS.read_text())["$defs"]}
    out: dict[tuple[str, ...], str | None] = {}

    def walk(name: str, path: tuple[str, ...], depth: int) -> None:
        for field, schema in (definitions.get(name, {}).get("properties") or {}).items():
            if schema.get("x-kubernetes-patch-strategy") == "merge":
                out[path + (field,)] = schema.get("x-kubernetes-patch-merge-key")
            reference = (schema.get("$ref") or (schema.get("items") or {}).get("$ref") or "").rsplit("/", 1)[-1]
            if reference and depth < 4 and schema.get("type") != "array":
                walk(reference, path + (field,), depth + 1)

    walk(f"io.k8s.api.core.v1.{kind}", (), 0)
    walk(_OBJECT_META, ("metadata",), 0)
    return out


def strategic_merge_patch(kind: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch is a JSON object")
    return _merge(target, patch, (), list_strategies(kind))


def _merge(target: Any, patch: dict[str, Any], path: tuple[str, ...],
           strategies: dict[tuple[str, ...], str | None]) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive is not None:
        raise PatchError(f"{_where(path)}: $patch: {directive!r} is not a directive: use replace or delete")
    out = dict(target) if isinstance(target, dict) else {}
    if "$retainKeys" in patch:
        kept = set(patch["$retainKeys"] or [])
        out = {k: v for k, v in out.items() if k in kept}
    orders = {}
    for key, value in patch.items():
        if key == "$retainKeys":
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            out[field] = [v for v in out.get(field) or [] if v not in (value or [])]
            continue
        if key.startswith("$"):
            raise PatchError(f"{_where(path + (key,))}: {key} is not a strategic merge directive this server "
                             "applies: send a JSON merge patch (--type merge) or a JSON patch (--type json)")
        out[key] = _merge_value(out.get(key), value, path + (key,), strategies)
        if out[key] is None:
            del out[key]
    for field, order in orders.items():
        if isinstance(out.get(field), list):
            out[field] = _ordered(out[field], order, strategies.get(path + (field,)))
    return out


def _merge_value(current: Any, value: Any, path: tuple[str, ...], strategies: dict[tuple[str, ...], str | None]) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        return _merge(current, value, path, strategies)
    if isinstance(value, list) and path in strategies:
        return _merge_list(current if isinstance(current, list) else [], value, strategies[path], path, strategies)
    return copy.deepcopy(value)


def _merge_list(current: list, patch: list, key: str | None, path: tuple[str, ...],
                strategies: dict[tuple[str, ...], str | None]) -> list:
    if key is None:  # a set of primitives: the patch's values are added
        return list(current) + [v for v in patch if v not in current]
    out = [dict(item) for item in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise PatchError(f"{_where(path)}: each item of a merged list names its {key}")
        at = next((i for i, old in enumerate(out) if old.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                out.pop(at)
        elif at is None:
            out.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            out[at] = _merge(out[at], item, path, strategies)
    return out


def _ordered(items: list, order: list, key: str | None) -> list:
    """A merged list in the order `$setElementOrder` gives; items it does not name keep their place after."""
    identity = (lambda item: item) if key is None else (lambda item: item.get(key) if isinstance(item, dict) else item)
    wanted = [o.get(key) if key is not None and isinstance(o, dict) else o for o in order]
    named = sorted((i for i in items if identity(i) in wanted), key=lambda i: wanted.index(identity(i)))
    return named + [i for i in items if identity(i) not in wanted]


def _where(path: tuple[str, ...]) -> str:
    return ".".join(path) or "the patch"
