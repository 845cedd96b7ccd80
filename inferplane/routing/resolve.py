"""How a request travels through HTTPRoutes, with Gateway API's matching rules (HTTPRoute v1.5.1):

- a rule's match is Exact or PathPrefix on the path (a prefix matches whole path elements, a trailing
  `/` ignored: `/a/b` matches `/a/b/c` and `/a/b`, not `/a/bc`), plus a method, headers (names are
  case-insensitive) and query parameters, all Exact; a rule without matches is a prefix match on `/`;
- among every match of every route, precedence goes to an Exact path, then the longest prefix (in
  characters), then a method, then the most headers, then the most query parameters; then the oldest
  route, then `namespace/name` in alphabetical order, then the first rule and match of the route;
- the rule's backends share its traffic in proportion to their weights (default 1, 0 takes none);
- `ReplacePrefixMatch` replaces the matched prefix element-wise (`/a/b/c` with prefix `/a/b` and
  replacement `/x` becomes `/x/c`; an empty result is `/`); a backend's own URLRewrite applies to it
  instead of its rule's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

Resource = dict[str, Any]
ROOT_MATCH: dict[str, Any] = {"path": {"type": "PathPrefix", "value": "/"}}


@dataclass(frozen=True)
class HTTPRequest:
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Forward:
    """One backend a matched rule forwards to: its share of the rule's traffic and the path it receives."""

    namespace: str
    name: str
    port: int | None
    weight: int
    share: Fraction
    path: str
    kind: str = "Service"
    group: str = ""  # the core group's Service by default


@dataclass(frozen=True)
class Resolution:
    route: str  # namespace/name of the HTTPRoute
    rule: int
    match: dict[str, Any]
    forwards: list[Forward]


def _elements(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def prefix_matches(prefix: str, path: str) -> bool:
    """Gateway API's PathPrefix: whole path elements, a trailing `/` ignored."""
    wanted = _elements(prefix)
    return _elements(path)[:len(wanted)] == wanted


def replace_prefix(path: str, prefix: str, replacement: str) -> str:
    """ReplacePrefixMatch: the path's elements under `prefix` go under `replacement` instead."""
    rest = path[len(prefix.rstrip("/")):]  # "" or "/..." since the prefix matched element-wise
    return replacement.rstrip("/") + rest or "/"


def _matches(match: dict[str, Any], request: HTTPRequest) -> bool:
    path = match.get("path") or ROOT_MATCH["path"]
    kind, value = path.get("type", "PathPrefix"), path.get("value", "/")
    if kind == "Exact" and request.path != value:
        return False
    if kind == "PathPrefix" and not prefix_matches(value, request.path):
        return False
    if kind not in ("Exact", "PathPrefix"):
        return False  # RegularExpression is implementation-specific: inferplane composes none
    if match.get("method") and match["method"] != request.method:
        return False
    headers = {k.lower(): v for k, v in request.headers.items()}
    if any(headers.get(h["name"].lower()) != h["value"] for h in match.get("headers") or []):
        return False
    return all(request.query.get(q["name"]) == q["value"] for q in match.get("queryParams") or [])


def _precedence(match: dict[str, Any]) -> tuple[int, int, int, int, int]:
    """Higher wins: Exact path, prefix length, method, header count, query count."""
    path = match.get("path") or ROOT_MATCH["path"]
    return (int(path.get("type") == "Exact"), len(path.get("value", "/")), int(bool(match.get("method"))),
            len(match.get("headers") or []), len(match.get("queryParams") or []))


def _rewrite(filters: list[dict[str, Any]], match: dict[str, Any], path: str) -> str:
    for rewrite in (f.get("urlRewrite") or {} for f in filters if f.get("type") == "URLRewrite"):
        modifier = rewrite.get("path") or {}
        if modifier.get("type") == "ReplaceFullPath":
            return modifier.get("replaceFullPath", "/")
        if modifier.get("type") == "ReplacePrefixMatch":
            return replace_prefix(path, (match.get("path") or ROOT_MATCH["path"])["value"],
                                  modifier.get("replacePrefixMatch", "/"))
    return path


def resolve(routes: list[Resource], request: HTTPRequest) -> Resolution | None:
    """The rule a request reaches among `routes` (all attached to one listener), and where it goes;
    None when no rule matches (the gateway answers 404)."""
    candidates = []
    for route in routes:
        meta = route["metadata"]
        order = (meta.get("creationTimestamp") or "", f"{meta.get('namespace', '')}/{meta['name']}")
        for r, rule in enumerate((route.get("spec") or {}).get("rules") or []):
            for m, match in enumerate(rule.get("matches") or [ROOT_MATCH]):
                if _matches(match, request):
                    # Sorted ascending: negated precedence first, then age, name, rule, match.
                    key = (tuple(-p for p in _precedence(match)), order, r, m)
                    candidates.append((key, route, r, rule, match))
    if not candidates:
        return None
    _, route, index, rule, match = min(candidates, key=lambda c: c[0])
    refs = rule.get("backendRefs") or []
    total = sum(ref.get("weight", 1) for ref in refs)
    namespace = route["metadata"].get("namespace", "")
    forwards = [
        Forward(ref.get("namespace", namespace), ref["name"], ref.get("port"), ref.get("weight", 1),
                Fraction(ref.get("weight", 1), total) if total else Fraction(0),
                _rewrite(ref.get("filters") or rule.get("filters") or [], match, request.path),
                ref.get("kind", "Service"), ref.get("group", ""))
        for ref in refs]
    return Resolution(f"{namespace}/{route['metadata']['name']}", index, match, forwards)
