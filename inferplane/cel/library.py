"""The Kubernetes quantity and semver CEL libraries as plain Python callables.

Python objects cannot cross into the `cel` library, so a Quantity or Semver lives in CEL as a
one-entry map under a hidden tag key whose value is the canonical spelling ("1500m", "1.2.3-rc.1").
One spelling per value means CEL's own map equality is Kubernetes' semantic equality:
quantity("0.2G") == quantity("200M"), semver("1.0.0+a") == semver("1.0.0+b").

`x.f(y)` reaches the callable as f(x, y); each function checks its operands and raises TypeError
(no such overload) or ValueError (bad value) with a message a user can act on.
"""

from __future__ import annotations

import functools
import re

from fractions import Fraction
from typing import Any

import cel.stdlib

from . import quantity as q
from . import semver as sv
from .source import Token, cel_string, string_value

# A NUL byte starts both tags: no Kubernetes name or label can contain one, so user data is never
# mistaken for a quantity or semver.
QUANTITY_TAG = "\x00k8s.io/quantity"
SEMVER_TAG = "\x00k8s.io/semver"


def quantity_value(value: Fraction | int | str) -> dict[str, str]:
    """The CEL encoding of a quantity (a string is parsed as Kubernetes does)."""
    number = q.parse_quantity(value) if isinstance(value, str) else Fraction(value)
    return {QUANTITY_TAG: q.format_quantity(number)}


def semver_value(version: sv.Semver | str) -> dict[str, str]:
    """The CEL encoding of a semantic version (precedence only: build metadata is dropped)."""
    parsed = sv.parse_semver(version) if isinstance(version, str) else version
    return {SEMVER_TAG: parsed.core}


def _cel_type(value: Any) -> str:
    if isinstance(value, dict):
        if QUANTITY_TAG in value:
            return "Quantity"
        if SEMVER_TAG in value:
            return "Semver"
        return "map"
    return {bool: "bool", int: "int", float: "double", str: "string", list: "list",
            bytes: "bytes", type(None): "null"}.get(type(value), type(value).__name__)


def _no_overload(function: str, *args: Any) -> TypeError:
    types = ", ".join(_cel_type(a) for a in args)
    return TypeError(f"no such overload: {function}({types})")


def _as_quantity(value: Any, function: str, *args: Any) -> Fraction:
    if type(value) is dict:
        text = value.get(QUANTITY_TAG)
        if text is not None:
            return q.parse_quantity(text)  # cached: canonical spellings parse once
    raise _no_overload(function, *args)


def _as_semver(value: Any, function: str, *args: Any) -> sv.Semver:
    if type(value) is dict:
        text = value.get(SEMVER_TAG)
        if text is not None:
            return sv.parse_semver(text)
    raise _no_overload(function, *args)


def _compare(left: Any, right: Any, function: str) -> int:
    if type(left) is dict and QUANTITY_TAG in left:
        a, b = _as_quantity(left, function, left, right), _as_quantity(right, function, left, right)
        return (a > b) - (a < b)
    if type(left) is dict and SEMVER_TAG in left:
        return _as_semver(left, function, left, right).compare(_as_semver(right, function, left, right))
    raise _no_overload(function, left, right)


# --- quantity library -------------------------------------------------------------------------

def k8s_quantity(text: Any) -> dict[str, str]:
    if type(text) is not str:
        raise _no_overload("quantity", text)
    return quantity_value(text)


def k8s_is_quantity(text: Any) -> bool:
    if type(text) is not str:
        raise _no_overload("isQuantity", text)
    return q.is_quantity(text)


def k8s_compare_to(left: Any, right: Any) -> int:
    return _compare(left, right, "compareTo")


def k8s_is_greater_than(left: Any, right: Any) -> bool:
    return _compare(left, right, "isGreaterThan") > 0


def k8s_is_less_than(left: Any, right: Any) -> bool:
    return _compare(left, right, "isLessThan") < 0


def _plus(function: str, left: Any, right: Any, sign: int) -> dict[str, str]:
    a = _as_quantity(left, function, left, right)
    if type(right) is int:  # bool is not an int here: CEL has no bool arithmetic
        b = Fraction(right)
    else:
        b = _as_quantity(right, function, left, right)
    return {QUANTITY_TAG: q.format_quantity(a + sign * b)}


def k8s_add(left: Any, right: Any) -> dict[str, str]:
    return _plus("add", left, right, 1)


def k8s_sub(left: Any, right: Any) -> dict[str, str]:
    return _plus("sub", left, right, -1)


def _integer(value: Fraction) -> int | None:
    if value.denominator == 1 and q.INT64_MIN <= value.numerator <= q.INT64_MAX:
        return value.numerator
    return None


def k8s_as_integer(value: Any) -> int:
    number = _integer(_as_quantity(value, "asInteger", value))
    if number is None:
        raise ValueError("cannot convert value to integer")
    return number


def k8s_is_integer(value: Any) -> bool:
    # The documented contract: true iff asInteger succeeds, i.e. the value is an integer that fits
    # an int64. (Go answers from its internal representation, so there "1.0" and "1.5Gi", held as
    # scaled or big decimals, report false although their values are integers.)
    return _integer(_as_quantity(value, "isInteger", value)) is not None


def k8s_as_approximate_float(value: Any) -> float:
    number = _as_quantity(value, "asApproximateFloat", value)
    try:
        return float(number)
    except OverflowError:  # Kubernetes returns +Inf/-Inf beyond the float64 range
        return float("inf") if number > 0 else float("-inf")


def k8s_sign(value: Any) -> int:
    number = _as_quantity(value, "sign", value)
    return (number > 0) - (number < 0)


# --- semver library ---------------------------------------------------------------------------

def _normalize_flag(function: str, text: Any, rest: tuple) -> bool:
    # semver(string) and semver(string, bool), likewise isSemver.
    if type(text) is str and (not rest or (len(rest) == 1 and type(rest[0]) is bool)):
        return bool(rest and rest[0])
    raise _no_overload(function, text, *rest)


def k8s_semver(text: Any, *normalize: Any) -> dict[str, str]:
    return semver_value(sv.parse_semver(text, _normalize_flag("semver", text, normalize)))


def k8s_is_semver(text: Any, *normalize: Any) -> bool:
    return sv.is_semver(text, _normalize_flag("isSemver", text, normalize))


def _semver_part(function: str, value: Any, part: str) -> int:
    number = getattr(_as_semver(value, function, value), part)
    if number > q.INT64_MAX:
        raise ValueError(f"{function}: {number} does not fit a CEL int")
    return number


def k8s_major(value: Any) -> int:
    return _semver_part("major", value, "major")


def k8s_minor(value: Any) -> int:
    return _semver_part("minor", value, "minor")


def k8s_patch(value: Any) -> int:
    return _semver_part("patch", value, "patch")


KUBERNETES_FUNCTIONS = {
    "quantity": k8s_quantity,
    "isQuantity": k8s_is_quantity,
    "compareTo": k8s_compare_to,
    "isGreaterThan": k8s_is_greater_than,
    "isLessThan": k8s_is_less_than,
    "add": k8s_add,
    "sub": k8s_sub,
    "asInteger": k8s_as_integer,
    "isInteger": k8s_is_integer,
    "asApproximateFloat": k8s_as_approximate_float,
    "sign": k8s_sign,
    "semver": k8s_semver,
    "isSemver": k8s_is_semver,
    "major": k8s_major,
    "minor": k8s_minor,
    "patch": k8s_patch,
}

# cel-go's string, math, sets, lists and encoder extensions, which Kubernetes environments also
# carry (lowerAscii, split, math.greatest, sets.contains, ...), followed by ours.
@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def cached_matches(text: Any, pattern: Any) -> bool:
    """`matches` with the compiled pattern cached: the core library compiles the regex on every
    call (15-80 us), which dominated admission. Rules' patterns are RE2-compatible, which
    Python's `re` reads the same way; `matches` is a search, as in CEL."""
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise _no_overload("matches", text, pattern)
    return _regex(pattern).search(text) is not None


# The name rule programs call instead of `matches` (see rules.py); not for user expressions.
CACHED_MATCHES = "inferplaneCachedMatches"

FUNCTIONS = {**cel.stdlib.STDLIB_FUNCTIONS, **KUBERNETES_FUNCTIONS, CACHED_MATCHES: cached_matches}


# --- constant folding -------------------------------------------------------------------------

def _fold_quantity(args: list[Token]) -> str | None:
    if len(args) != 1 or args[0].kind != "string":
        return None
    text = string_value(args[0].text)
    if text is None or not q.is_quantity(text):
        return None
    return _map_literal(quantity_value(text))


def _fold_semver(args: list[Token]) -> str | None:
    if len(args) == 1:
        normalize = False
    elif len(args) == 3 and args[1].text == "," and args[2].text in ("true", "false"):
        normalize = args[2].text == "true"
    else:
        return None
    if args[0].kind != "string":
        return None
    text = string_value(args[0].text)
    if text is None or not sv.is_semver(text, normalize):
        return None
    return _map_literal(semver_value(sv.parse_semver(text, normalize)))


def _map_literal(encoded: dict[str, str]) -> str:
    ((key, value),) = encoded.items()
    return "{" + cel_string(key) + ": " + cel_string(value) + "}"


FOLDERS = {"quantity": _fold_quantity, "semver": _fold_semver}


# --- results back to Python -------------------------------------------------------------------

def to_python(value: Any) -> Any:
    """A CEL result as plain Python: tagged maps become their canonical strings."""
    if type(value) is dict:
        if len(value) == 1:
            if QUANTITY_TAG in value:
                return value[QUANTITY_TAG]
            if SEMVER_TAG in value:
                return value[SEMVER_TAG]
        return {k: to_python(v) for k, v in value.items()}
    if type(value) is list:
        return [to_python(v) for v in value]
    return value
