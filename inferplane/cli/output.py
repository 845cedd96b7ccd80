"""kubectl-like output: tables padded to the widest cell, the -o formats (json, yaml, name, jsonpath,
custom-columns), --sort-by and --show-labels."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Iterable, Sequence

import click

OUTPUT_FORMATS = ("wide", "name", "json", "yaml", "jsonpath=TEMPLATE", "custom-columns=HEADER:PATH[,...]")


def cell(value: object) -> str:
    """A value as a column shows it: a list comma-joined, nothing as <none>."""
    if isinstance(value, list):
        value = ",".join(map(str, value))
    return "<none>" if value in (None, "") else str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], no_headers: bool = False) -> str:
    cells = [list(map(str, headers))] + [[cell(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines[1:] if no_headers else lines)


def labels_text(obj: dict) -> str:
    """--show-labels' LABELS cell: key=value comma-joined in key order, as kubectl's FormatLabels."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels)) or "<none>"


def check_output(value: str | None) -> str | None:
    """The -o value, refused with the accepted ones when it is none of them."""
    if value is None or value in ("wide", "name", "json", "yaml"):
        return value
    if value.startswith("jsonpath="):
        template = value[len("jsonpath="):]
        _tokens(template)  # a syntax error is reported before anything is read
        return value
    if value.startswith("custom-columns="):
        custom_columns(value[len("custom-columns="):])  # likewise
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
def compiled_path(expression: str, hint: str = "'-o jsonpath'"):
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
    from jsonpath_ng.ext import parse

    text = expression.strip()
    text = "$" + text if text.startswith((".", "[")) else text
    try:
        return parse(text)
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # the library raises plain Exceptions too
        raise click.BadParameter(f"{{{expression}}} is not a JSONPath expression: {exc}",
                                 param_hint=hint) from None


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


# ---- -o custom-columns and --sort-by, as kubectl's get does them

def relaxed_path(expression: str) -> str:
    """kubectl's RelaxedJSONPathExpression: `{.a.b}`, `.a.b` and `a.b` all mean the path .a.b."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    return text if text.startswith((".", "[")) else "." + text


@lru_cache(maxsize=64)
def custom_columns(spec: str) -> tuple[tuple[str, str], ...]:
    """(header, path) per column of `HEADER:PATH,...`; a column without both is refused."""
    columns = []
    for part in spec.split(","):
        header, sep, path = part.partition(":")
        if not sep or not header or not path.strip():
            raise click.BadParameter(f"custom-columns {part!r}: each column is HEADER:JSONPATH, "
                                     "e.g. custom-columns=NAME:.metadata.name,READY:.status.conditions[0].status",
                                     param_hint="'-o' / '--output'")
        columns.append((header, relaxed_path(path)))
        compiled_path(columns[-1][1])
    return tuple(columns)


def go_text(value: Any) -> str:
    """A value as kubectl's custom-columns prints it: Go's %v (maps as map[k:v], lists as [a b])."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_text(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    return _text(value)


def custom_columns_table(objects: list[dict], spec: str, no_headers: bool = False) -> str:
    """One row per object; a path that finds nothing shows <none>, several values comma-joined."""
    columns = custom_columns(spec)
    rows = [[",".join(go_text(m.value) for m in compiled_path(path).find(obj)) or None for _, path in columns]
            for obj in objects]
    return table([header for header, _ in columns], rows, no_headers=no_headers)


_DIGITS = re.compile(r"(\d+)")


def _sort_key(value: Any) -> tuple:
    """Numbers by value, text in natural order (digits by number, as kubectl's sortorder.NaturalLess)."""
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, (int, float)):
        return (1, value)
    parts = _DIGITS.split(_text(value))
    return (2, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p))


def sort_objects(objects: list[dict], expression: str) -> list[dict]:
    """--sort-by: objects ordered by the field the expression finds (the first match); those without
    it first, as kubectl orders them; ties keep their order."""
    path = compiled_path(relaxed_path(expression), "'--sort-by'")

    def key(obj: dict) -> tuple:
        found = path.find(obj)
        return (0,) if not found else _sort_key(found[0].value)
    return sorted(objects, key=key)
