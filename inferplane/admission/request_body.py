"""A request's body (what `inferplane serve` is sent) read by the same bounded reader as a manifest file.

YAML goes through `parse_input`, as `inferplane apply -f` reads a file: aliases measured before they
are expanded, nesting capped, duplicate keys found, Kubernetes' scalars. JSON (every body kubectl
sends, and every patch) is read by the standard library's decoder within the same limits: its nesting
is counted on the text before the decoder (which recurses) sees it, a repeated key is found as each
object is built, an integer too long to convert is kept to be refused, not converted. Then both are
checked for what JSON cannot store (`shape_problems`). Every refusal names the limit or the field and
the fix; none echoes a value of the body (a Secret's data is sent in one).
"""

from __future__ import annotations

import json
import re

import yaml as yaml_events
from dataclasses import dataclass
from typing import Any

from inferplane.admission.limits import MAX_DEPTH, HugeInteger, StreamLimits, _join, shape_problems
from inferplane.admission.manifests import LoadError, decode, parse_input
from inferplane.admission.stored_kinds import is_secret, without_secret_values

BODY = "the request's body"


class BodyRefused(ValueError):
    """A body that is not read: the message says what is wrong with it and what to send instead."""


@dataclass(frozen=True)
class BodyLimits(StreamLimits):
    """A body is one object (its byte limit is the server's, applied before it is read)."""

    max_documents: int = 1

    def documents_problem(self) -> str:
        return ("holds more than one object: a request's body is one object; send each object in a request of "
                "its own (kubectl apply -f does)")


# The values (scalars, lists, mappings, aliases) a body may hold: each costs a few hundred bytes as
# Python builds it (a YAML node, a dict), so a 3 MiB body of 1.5 million one-byte values would take
# ~500 MiB. A storable object (1.5 MiB of JSON) of real fields holds far fewer; this bounds a body's
# cost to ~70 MiB whatever it holds.
MAX_VALUES = 200_000


def read_body(data: bytes, yaml: bool) -> Any:
    """The value a JSON (or, with `yaml`, YAML) body holds; BodyRefused when it cannot be read or holds
    what JSON cannot store (a repeated key included: the API server's strict decoding refuses it)."""
    if len(data) > MAX_VALUES:  # a shorter text cannot hold more values than it has bytes
        _count_values(data, yaml)
    if yaml:
        value, problems = _read_yaml(data)
    else:
        value, problems = _read_json(data)
    problems += list(shape_problems(value))
    if problems:
        message = "; ".join(f"{path}: {message}" if path else message for path, message in problems)
        # A value a message quotes (a YAML !!binary where text belongs) may be a Secret's: hidden as ***.
        raise BodyRefused(without_secret_values(value, message) if is_secret(value) else message)
    return value


def _read_yaml(data: bytes) -> tuple[Any, list[tuple[str, str]]]:
    manifests, errors = parse_input(BODY, data, BodyLimits())
    if errors:
        raise BodyRefused("; ".join(str(error) for error in errors))
    if len(manifests) != 1:
        raise BodyRefused(f"{BODY} holds {len(manifests)} objects: send one object, a mapping with apiVersion, kind "
                          "and metadata")
    return manifests[0].body, list(manifests[0].problems)


# A JSON string (escapes included) or a bracket: the tokens that nesting is counted on.
_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_OPENS = frozenset("[{")
# A string or a separator: a JSON text's values are at most its separators and opening brackets, plus one.
_JSON_SEPARATORS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{,]', re.DOTALL)
_YAML_VALUES = (yaml_events.ScalarEvent, yaml_events.AliasEvent, yaml_events.SequenceStartEvent,
                yaml_events.MappingStartEvent)


def _count_values(data: bytes, is_yaml: bool) -> None:
    """Refuse a body of more than MAX_VALUES values before any is built: JSON by its separators outside
    strings (a quick count of every separator settles most), YAML on libyaml's event stream, which
    builds nothing (a text it cannot parse is left to the reader, which says why)."""
    too_many = BodyRefused(f"{BODY} holds more than {MAX_VALUES:,} values (inferplane serve's limit on a request, "
                           "which bounds what reading it costs): send a smaller object")
    if not is_yaml:
        if data.count(b",") + data.count(b"[") + data.count(b"{") < MAX_VALUES:
            return
        count = 0
        for token in _JSON_SEPARATORS.finditer(data):
            if token.end() - token.start() == 1:
                count += 1
                if count >= MAX_VALUES:
                    raise too_many
        return
    count = 0
    try:
        for event in yaml_events.parse(data, Loader=yaml_events.CSafeLoader):
            if isinstance(event, _YAML_VALUES):
                count += 1
                if count > MAX_VALUES:
                    raise too_many
    except yaml_events.YAMLError:
        return


def _read_json(data: bytes) -> tuple[Any, list[tuple[str, str]]]:
    text = decode(BODY, data) if data else "null"
    if isinstance(text, LoadError):
        raise BodyRefused(str(text))
    _check_depth(text)
    repeated: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        built = dict(items)
        if len(built) < len(items):
            seen: set[str] = set()
            repeated[id(built)] = [k for k, _ in items if k in seen or seen.add(k)]
        return built

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_int=_integer, parse_constant=_constant)
    except json.JSONDecodeError as error:
        raise BodyRefused(f"{BODY} is not JSON: {error.msg} at line {error.lineno} column {error.colno}: send a JSON "
                          "object (or set Content-Type: application/yaml for YAML)") from None
    return value, _duplicates(value, repeated) if repeated else []


def _check_depth(text: str) -> None:
    """Refuse a text nested deeper than MAX_DEPTH before the decoder recurses into it: a bracket count
    settles most bodies at once; the rest are walked token by token, strings skipped whole."""
    if text.count("[") + text.count("{") < MAX_DEPTH:
        return
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        mark = token.group()
        if mark in _OPENS:
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, token.start()) + 1
                raise BodyRefused(f"{BODY} is nested more than {MAX_DEPTH} levels deep at line {line} (inferplane's "
                                  f"limit; Kubernetes' JSON decoder stops at 10,000): flatten the structure")
        elif mark in "]}":
            depth -= 1


def _integer(text: str) -> int | HugeInteger:
    try:
        return int(text)
    except ValueError:  # beyond Python's 4,300-digit limit on converting text to int: refused by its field
        return HugeInteger(text)


def _constant(name: str) -> float:
    return float(name)  # NaN and ±Infinity, which JSON does not have: refused by their field (not finite)


def _duplicates(root: Any, repeated: dict[int, list[str]]) -> list[tuple[str, str]]:
    """(field path, message) for each key an object of the body repeats, found by walking to the objects
    the decoder saw them in (iterative: the depth is bounded, but the walk never recurses anyway)."""
    found = []
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            for name in repeated.get(id(value), ()):
                found.append((_join(path, name), f"duplicate field \"{name}\": a key appears once in an object (the "
                                                 "API server refuses a repeated one): remove one of them"))
            stack += [(item, _join(path, key)) for key, item in value.items() if isinstance(item, (dict, list))]
        elif isinstance(value, list):
            stack += [(item, _join(path, index)) for index, item in enumerate(value) if isinstance(item, (dict, list))]
    return found
