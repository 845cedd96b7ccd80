"""kubectl-like output: tables padded to the widest cell, and the -o formats (json, yaml, name, jsonpath)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterable, Sequence

import click

OUTPUT_FORMATS = ("wide", "name", "json", "yaml", "jsonpath=TEMPLATE")


def cell(value: object) -> str:
    """A value as a column shows it: a list comma-joined, nothing as <none>."""
    if isinstance(value, list):
        value = ",".join(map(str, value))
    return "<none>" if value in (None, "") else str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [list(map(str, headers))] + [[cell(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def check_output(value: str | None) -> str | None:
    """The -o value, refused with the accepted ones when it is none of them."""
    if value is None or value in ("wide", "name", "json", "yaml"):
        return value
    if value.startswith("jsonpath="):
        template = value[len("jsonpath="):]
        _tokens(template)  # a syntax error is reported before anything is read
        return value
    raise click.BadParameter(f"{value!r}: use one of {', '.join(OUTPUT_FORMATS)}", param_hint="'-o' / '--output'")


def as_list(objects: list[dict]) -> dict:
    """Several objects as kubectl prints them: one `kind: List`."""
    return {"apiVersion": "v1", "kind": "List", "items": objects, "metadata": {"resourceVersion": ""}}


def qualified_name(obj: dict) -> str:
    """kind.group/name, as apply, delete and `-o name` print an object."""
    version = obj["apiVersion"]
    group = version.rsplit("/", 1)[0] if "/" in version else ""
    return f"{obj['kind'].lower()}{'.' + group if group else ''}/{obj['metadata']['name']}"


def render_objects(document: dict, output: str) -> str:
    """A single object or a List as json, yaml or a jsonpath template."""
    import yaml

    if output == "json":
        return json.dumps(document, indent=4, sort_keys=True)
    if output == "yaml":
        return yaml.safe_dump(document, sort_keys=True).rstrip("\n")
    if output == "name":
        items = document["items"] if document.get("kind") == "List" else [document]
        return "\n".join(qualified_name(o) for o in items)
    return jsonpath_template(output[len("jsonpath="):], document)


# ---- kubectl's jsonpath templates: {.a.b}, literal text, {"\n"}, {range EXPR}...{end}

_TOKEN = re.compile(r"\{((?:[^{}\"]|\"(?:[^\"\\]|\\.)*\")*)\}")


@lru_cache(maxsize=64)
def compiled_path(expression: str):
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.ext import parse

    text = expression.strip()
    text = "$" + text if text.startswith((".", "[")) else text
    try:
        return parse(text)
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # the library raises plain Exceptions too
        raise click.BadParameter(f"{{{expression}}} is not a JSONPath expression: {exc}",
                                 param_hint="'-o jsonpath'") from None


def _tokens(template: str) -> list[tuple[str, str]]:
    """(kind, text) pieces: ("text", literal), ("expr", path), ("range", path), ("end", "")."""
    out, at = [], 0
    for m in _TOKEN.finditer(template):
        if m.start() > at:
            out.append(("text", template[at:m.start()]))
        body = m.group(1).strip()
        if body.startswith('"') and body.endswith('"'):
            out.append(("text", json.loads(body)))
        elif body == "end":
            out.append(("end", ""))
        elif body.startswith("range "):
            out.append(("range", body[len("range "):]))
            compiled_path(out[-1][1])
        else:
            out.append(("expr", body))
            compiled_path(body)
        at = m.end()
    if template[at:]:
        out.append(("text", template[at:]))
    depth = 0
    for kind, _ in out:
        depth += (kind == "range") - (kind == "end")
        if depth < 0:
            break
    if depth != 0:
        raise click.BadParameter("every {range ...} needs its {end}", param_hint="'-o jsonpath'")
    return out


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def jsonpath_template(template: str, data: Any) -> str:
    tokens = _tokens(template)

    def run(start: int, node: Any) -> tuple[str, int]:
        out, i = "", start
        while i < len(tokens):
            kind, text = tokens[i]
            if kind == "text":
                out += text
            elif kind == "expr":
                out += " ".join(_text(m.value) for m in compiled_path(text).find(node))
            elif kind == "range":
                body_end = i
                matches = [m.value for m in compiled_path(text).find(node)]
                for item in matches:
                    piece, body_end = run(i + 1, item)
                    out += piece
                if not matches:
                    _, body_end = run(i + 1, None)
                i = body_end
            elif kind == "end":
                return out, i
            i += 1
        return out, i

    return run(0, data)[0]
