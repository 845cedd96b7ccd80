"""Token-level reading of CEL source: what the compiled program cannot tell us.

Two things are done on tokens, never on raw text, so nothing inside a string literal is touched:
- `device_domains`: the literal domains a selector looks up (`device.attributes["gpu.nvidia.com"]`),
  so a device can present an empty map for a domain it lacks, as Kubernetes does;
- `fold_constants`: `quantity("20Gi")` / `semver("1.2.3")` with a valid literal argument become
  the map literal the call would return. The call is pure, so the result is identical, and the
  selector no longer crosses into Python to build a constant on every evaluation (building a map
  in Python costs more than the whole rest of a typical selector).

Only syntactically valid expressions reach these functions (the caller compiles first).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterator

import cel

# Order matters: raw and triple-quoted strings before plain ones, strings before identifiers
# (an r or b prefix would otherwise read as an identifier).
_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<string>
        (?:[rR][bB]?|[bB][rR])(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\r\n]*"|'[^'\r\n]*')
      | [bB]?(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''
               |"(?:\\.|[^\\"\r\n])*"|'(?:\\.|[^\\'\r\n])*')
    )
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<quoted>`[^`]*`)
  | (?P<number>[0-9][0-9A-Za-z_]*(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?)?)
  | (?P<other>.)
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # string, ident, quoted, number, other
    text: str
    start: int
    end: int


def tokens(source: str) -> list[Token]:
    out = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        if kind != "space":
            out.append(Token(kind, match.group(), match.start(), match.end()))
    return out


@functools.lru_cache(maxsize=4096)
def string_value(literal: str) -> str | None:
    """The value of a CEL string literal token (None for bytes literals), decoded by CEL itself
    so escape handling is exactly the language's."""
    try:
        value = cel.evaluate(literal)
    except Exception:  # noqa: BLE001 - an undecodable literal is simply not folded
        return None
    return value if isinstance(value, str) else None


def _is_call_start(toks: list[Token], i: int, name: str) -> bool:
    # A global call `name(`: a method call `x.name(` or a field `x.name` is something else.
    return (toks[i].kind == "ident" and toks[i].text == name
            and (i == 0 or toks[i - 1].text != ".")
            and i + 1 < len(toks) and toks[i + 1].text == "(")


def device_domains(source: str) -> frozenset[str]:
    """Literal domains looked up as device.attributes["<d>"] or device.capacity["<d>"]."""
    toks = tokens(source)
    found = set()
    for i in range(len(toks) - 5):
        window = toks[i:i + 6]
        if (window[0].kind == "ident" and window[0].text == "device"
                and (i == 0 or toks[i - 1].text != ".")
                and window[1].text == "." and window[2].text in ("attributes", "capacity")
                and window[3].text == "[" and window[4].kind == "string" and window[5].text == "]"):
            value = string_value(window[4].text)
            if value is not None:
                found.add(value)
    return frozenset(found)


def device_fields(source: str) -> tuple[tuple[str, str, str], ...]:
    """(attributes|capacity, domain, name) for each literal `device.<map>["<domain>"].<name>` a
    selector reads, in order, once each: what an explanation shows the device's values of."""
    toks = tokens(source)
    found: dict[tuple[str, str, str], None] = {}
    for i in range(len(toks) - 7):
        window = toks[i:i + 8]
        if (window[0].kind == "ident" and window[0].text == "device"
                and (i == 0 or toks[i - 1].text != ".")
                and window[1].text == "." and window[2].text in ("attributes", "capacity")
                and window[3].text == "[" and window[4].kind == "string" and window[5].text == "]"
                and window[6].text == "." and window[7].kind == "ident"
                and (i + 8 == len(toks) or toks[i + 8].text != "(")):  # `.size()` is a call, not a field
            domain = string_value(window[4].text)
            if domain is not None:
                found[(window[2].text, domain, window[7].text)] = None
    return tuple(found)


def fold_constants(source: str, folders: dict[str, Callable[[list[Token]], str | None]]) -> str:
    """Replace global calls `name(<args>)` whose folder returns CEL source for the result.

    A folder gets the argument tokens (between the parentheses, commas included) and returns the
    replacement text, or None to leave the call alone (for instance a malformed literal, whose
    error must still surface at evaluation).
    """
    toks = tokens(source)
    pieces: list[str] = []
    last = 0
    for start, end, replacement in _foldable(toks, folders):
        pieces.append(source[last:start])
        pieces.append(replacement)
        last = end
    pieces.append(source[last:])
    return "".join(pieces)


def _foldable(toks: list[Token], folders) -> Iterator[tuple[int, int, str]]:
    i = 0
    while i < len(toks):
        folder = folders.get(toks[i].text) if toks[i].kind == "ident" else None
        if folder is not None and _is_call_start(toks, i, toks[i].text):
            close = _closing_paren(toks, i + 1)
            if close is not None:
                replacement = folder(toks[i + 2:close])
                if replacement is not None:
                    yield toks[i].start, toks[close].end, replacement
                    i = close + 1
                    continue
        i += 1


def _closing_paren(toks: list[Token], open_index: int) -> int | None:
    depth = 0
    for j in range(open_index, len(toks)):
        if toks[j].text in ("(", "[", "{"):
            depth += 1
        elif toks[j].text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return None


def cel_string(value: str) -> str:
    """A CEL double-quoted string literal for any Python string."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable() and ch not in "\r\n":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'
