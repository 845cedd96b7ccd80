"""Reads as kube-apiserver answers them: one object, or a list narrowed by namespace, label and field
selectors, in pages (`limit`, `continue`)."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from inferplane.api.selectors import SelectorError, parse_selector
from inferplane.apiserver.catalog import Served
from inferplane.apiserver.status import APIError, bad_request, not_found
from inferplane.runtime.cache import field_value
from inferplane.runtime.store import Key, Store

EVENT = "Event"


@dataclass(frozen=True)
class ListQuery:
    namespace: str | None  # None: every namespace
    labels: Callable[[Mapping[str, str]], bool]
    fields: Callable[[dict[str, Any]], bool]
    limit: int
    after: tuple[str, str] | None  # the (namespace, name) the previous page ended at


def field_selector(text: str | None) -> Callable[[dict[str, Any]], bool]:
    """`metadata.name=x,involvedObject.kind!=Y`: every term must hold; a field is any dotted path to a
    scalar (kube-apiserver takes only some per kind; the ones kubectl sends are among these)."""
    terms = []
    for term in filter(None, (text or "").split(",")):
        for operator in ("!=", "==", "="):
            if operator in term:
                path, value = term.split(operator, 1)
                terms.append((path.strip(), operator == "!=", value.strip()))
                break
        else:
            raise bad_request(f"invalid field selector {term!r}: write path=value, path==value or path!=value")
    return lambda obj: all((field_value(obj, path) or "") != value if negated else (field_value(obj, path) or "") == value
                           for path, negated, value in terms)


def list_query(served: Served, namespace: str | None, query: dict[str, str]) -> ListQuery:
    try:
        labels = parse_selector(query.get("labelSelector"))
    except SelectorError as error:
        raise bad_request(f"labelSelector: {error}") from None
    try:
        limit = int(query.get("limit") or 0)
    except ValueError:
        raise bad_request(f"limit: {query['limit']!r} is not a whole number") from None
    after = None
    if query.get("continue"):
        try:
            after = tuple(json.loads(base64.urlsafe_b64decode(query["continue"].encode())))
        except (ValueError, binascii.Error, TypeError):
            raise bad_request("continue: not a token this server gave: list again from the start") from None
    return ListQuery(namespace if served.namespaced else None, labels, field_selector(query.get("fieldSelector")),
                     max(limit, 0), after)


def continue_token(namespace: str, name: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([namespace, name]).encode()).decode()


def page(objects: list[dict[str, Any]], query: ListQuery) -> tuple[list[dict[str, Any]], str | None]:
    """The objects the query selects, in (namespace, name) order, from its `continue` on, at most `limit`
    of them; and the token for the next page (None: this is the last)."""
    where = lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"])  # noqa: E731
    chosen = [o for o in sorted(objects, key=where)
              if (query.namespace is None or o["metadata"].get("namespace") == query.namespace)
              and (query.after is None or where(o) > query.after)
              and query.labels(o["metadata"].get("labels") or {}) and query.fields(o)]
    if query.limit and len(chosen) > query.limit:
        last = chosen[query.limit - 1]
        return chosen[:query.limit], continue_token(*where(last))
    return chosen, None


def is_event(served: Served) -> bool:
    """Core Events, which the store keeps apart (`event_feed.py` serves them)."""
    return served.kind == EVENT and served.group == ""


def objects_of(store: Store, served: Served) -> list[dict[str, Any]]:
    """Every stored object of a type (not Events)."""
    return [store.decode(body) for _, _, body in store.rows_of_kind(served.group, served.kind)]


def one(store: Store, served: Served, namespace: str, name: str, events: list[dict[str, Any]] | None = None
        ) -> dict[str, Any]:
    """One object; an Event from `events` (the feed's)."""
    if events is not None:
        found = [e for e in events if e["metadata"]["name"] == name and e["metadata"]["namespace"] == namespace]
        if found:
            return found[0]
        raise not_found(served.plural, served.group, name)
    obj = store.get(Key(served.group, served.kind, namespace if served.namespaced else "", name))
    if obj is None:
        raise not_found(served.plural, served.group, name)
    return obj


def list_body(served: Served, items: list[dict[str, Any]], version: str, token: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": version}
    if token:
        metadata["continue"] = token
    return {"kind": f"{served.kind}List", "apiVersion": served.api_version, "metadata": metadata, "items": items}


def flag(query: dict[str, str], name: str) -> bool:
    """A boolean query parameter as Go's strconv.ParseBool reads it (`true`, `True`, `1`, ...)."""
    return (query.get(name) or "").lower() in ("1", "t", "true")


def parse_version(text: str | None) -> int | None:
    """A watch's resourceVersion: None (unset or "0": start from the current state) or the version."""
    if not text or text == "0":
        return None
    try:
        return int(text)
    except ValueError:
        raise APIError(400, "BadRequest", f"resourceVersion: {text!r} is not a version this server gave") from None
