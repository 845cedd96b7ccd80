"""Kubernetes label selectors as `-l` takes them: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`,
`a` (exists) and `!a` (does not exist), comma-separated, all of which must hold. One home for the
command line's `-l` and the API server's `labelSelector`."""

from __future__ import annotations

import re
from typing import Callable, Mapping


class SelectorError(ValueError):
    """A selector that is not one: the message says how to write it."""


Requirement = Callable[[Mapping[str, str]], bool]

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_EQUALITY = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


def _terms(selector: str) -> list[str]:
    """Split at the commas outside parentheses."""
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    return terms + [current]


def _requirement(term: str) -> Requirement:
    if m := _EQUALITY.match(term):
        key, op, value = m.group(1), m.group(3), m.group(4)
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _SET.match(term):
        key, op = m.group(1), m.group(3)
        values = {v.strip() for v in m.group(4).split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _EXISTS.match(term):
        negated, key = m.group(1) == "!", m.group(2)
        return lambda labels: (key in labels) != negated
    raise SelectorError(f"{term.strip()!r} is not a label requirement: write key=value, key!=value, "
                        "'key in (a,b)', 'key notin (a)', key or !key")


def parse_selector(selector: str | None) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over an object's labels; every term must hold (no selector matches everything)."""
    if not selector:
        return lambda labels: True
    requirements = [_requirement(t) for t in _terms(selector)]
    return lambda labels: all(r(labels) for r in requirements)
