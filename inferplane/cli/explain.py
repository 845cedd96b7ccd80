"""`inferplane explain KIND[.field.path]`: a kind's field documentation, as kubectl explain prints it.

kubectl (v1.27 and later) renders the server's OpenAPI v3 document through one Go template,
k8s.io/kubectl pkg/explain/v2/templates/plaintext.tmpl (as of v1.37: unchanged since its
`--max-depth` in v0.37.0-beta.0), with sprig-like helpers in funcs.go; its `wrap` is
github.com/mitchellh/go-wordwrap v1.0.1's WrapString. Each function below is one of the template's
`define`s, named alike, over the document `inferplane.crossplane.openapi` builds from our XRDs; the
tests run the real kubectl against the same document and compare the bytes.

Where we part from it: a field that does not exist is named with the fields there and the nearest
name (kubectl says only `field "x" does not exist`).
"""

from __future__ import annotations

import difflib
from decimal import Decimal
from typing import Any

Schema = dict[str, Any]


class FieldNotFound(Exception):
    """A field path that leads nowhere: the field, where it was looked for, and what is there."""

    def __init__(self, kind: str, path: list[str], fields: list[str], type_name: str, external: bool):
        where = ".".join([kind, *path[:-1]])
        message = f'field "{path[-1]}" does not exist in {where}'
        if fields:
            message += f": its fields are {', '.join(fields)}"
            nearest = difflib.get_close_matches(path[-1], fields, n=1, cutoff=0.6) or [
                f for f in fields if f.lower() == path[-1].lower()]
            if nearest:
                message += f'; did you mean "{nearest[0]}"?'
        elif external:
            message += f": it is Kubernetes' {type_name}, whose fields `kubectl explain` documents on a cluster"
        else:
            message += f": it is <{type_name}>, which has no fields"
        super().__init__(message)


def wrap(text: str, limit: int) -> str:
    """go-wordwrap's WrapString: breaks at white space only, a word longer than the limit stays whole."""
    out: list[str] = []
    word: list[str] = []
    space: list[str] = []
    current = 0
    for char in text:
        if char == "\n":
            if not word:
                if current + len(space) <= limit:
                    out += space
            else:
                out += space + word
                word = []
            space = []
            out.append(char)
            current = 0
        elif _is_space(char):
            if not space or word:
                current += len(space) + len(word)
                out += space + word
                space, word = [], []
            space.append(char)
        else:
            word.append(char)
            if current + len(word) + len(space) > limit and len(word) < limit:
                out.append("\n")
                current = 0
                space = []
    if not word:
        if current + len(space) <= limit:
            out += space
    else:
        out += space + word
    return "".join(out)


def _is_space(char: str) -> bool:
    # Go's unicode.IsSpace, less the no-break space WrapString keeps inside words.
    return char in "\t\n\v\f\r \x85\u1680\u2028\u2029\u202f\u205f\u3000" or "\u2000" <= char <= "\u200a"


def indent(amount: int, text: str) -> str:
    pad = " " * amount
    return pad + text.replace("\n", "\n" + pad)


def _go_text(value: Any) -> str:
    """How a Go template prints a JSON value: fmt's %v, numbers being float64 (strconv's shortest 'g',
    whose exponent form starts below 1e-4 and at 1e6)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, (dict, list)):
        raise ValueError(f"an enum of objects or lists is not printed: {value!r}")
    if not isinstance(value, (int, float)):
        return str(value)
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # where the decimal point goes among the digits
    text = "-" if sign else ""
    if not -4 <= point - 1 < 6:
        power = point - 1
        return f"{text}{digits[0]}{'.' + digits[1:] if digits[1:] else ''}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{text}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return text + digits + "0" * (point - len(digits))
    return f"{text}{digits[:point]}.{digits[point:]}"


class Explainer:
    """One OpenAPI v3 document, rendered as kubectl's plaintext template renders it."""

    def __init__(self, document: Schema):
        self.document = document

    def resolve(self, ref: Any) -> Schema | None:
        """The template's resolveRef: a `#/...` fragment within the document, else None."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        current: Any = self.document
        for part in ref[1:].split("/"):
            if part:
                current = current.get(part) if isinstance(current, dict) else None
                if not isinstance(current, dict):
                    return None
        return current

    # -- the document's entry point

    def gvk(self, group: str, version: str, plural: str) -> dict[str, str] | None:
        """The GVK of the operations on a resource's paths, as the template finds it."""
        prefix = f"/apis/{group}" if group else "/api"
        found = None
        for path in (f"{prefix}/{version}/{plural}", f"{prefix}/{version}/{plural}/{{name}}",
                     f"{prefix}/{version}/namespaces/{{namespace}}/{plural}",
                     f"{prefix}/{version}/namespaces/{{namespace}}/{plural}/{{name}}"):
            element = self.document.get("paths", {}).get(path)
            for method in ("get", "post", "put", "patch", "delete"):
                operation = (element or {}).get(method) or {}
                if operation.get("x-kubernetes-group-version-kind"):
                    found = operation["x-kubernetes-group-version-kind"]
                    break
        return found

    def explain(self, group: str, version: str, plural: str, field_path: list[str], recursive: bool = False,
                max_depth: int = 0) -> str:
        gvk = self.gvk(group, version, plural)
        if not gvk:
            raise LookupError(f"{plural}.{group}/{version} is not in the OpenAPI document")
        head = (f"GROUP:      {gvk['group']}\n" if gvk.get("group") else "") + (
            f"KIND:       {gvk['kind']}\nVERSION:    {gvk['version']}\n\n")
        for schema in (s for _, s in sorted(self.document.get("components", {}).get("schemas", {}).items())):
            if gvk in (schema.get("x-kubernetes-group-version-kind") or []):
                body = self.output(schema, {}, field_path, recursive, max_depth)
                if not body:
                    path, parent = self._missing(schema, field_path)
                    raise FieldNotFound(gvk["kind"], path, sorted(self._fields(parent)), self.type_guess(parent),
                                        self._external(parent))
                return head + body + "\n"
        raise LookupError(f"GVK {gvk} not found in OpenAPI schema")

    # -- the template's defines

    def output(self, schema: Schema, history: dict[str, int], field_path: list[str], recursive: bool,
               max_depth: int) -> str:
        ref = schema.get("$ref") or ""
        next_history = {**history, ref: 1}
        resolved = self.resolve(ref) or schema
        if not field_path:
            text = "DESCRIPTION:\n" + indent(4, wrap(self.description(resolved) or "<empty>", 76)) + "\n"
            fields = self.field_list(resolved, 1, {}, recursive, max_depth)
            return text + ("FIELDS:\n" + fields if fields else "")
        if ref and history.get(ref):
            return ""  # a cycle
        properties = resolved.get("properties") or {}
        if properties and properties.get(field_path[0]):
            sub = properties[field_path[0]]
            text = ""
            if len(field_path) == 1:
                text = f"FIELD: {field_path[0]} <{self.type_guess(sub)}>\n" + self.extract_enum(sub, True, -1) + "\n\n"
            return text + self.output(sub, {}, field_path[1:], recursive, max_depth)
        if resolved.get("items"):
            return self.output(resolved["items"], next_history, field_path, recursive, max_depth)
        if _is_map(resolved.get("additionalProperties")):
            return self.output(resolved["additionalProperties"], next_history, field_path, recursive, max_depth)
        for sub in resolved.get("allOf") or []:
            text = self.output(sub, next_history, field_path, recursive, max_depth)
            if text:
                return text
        return ""

    def field_list(self, schema: Schema, level: int, history: dict[str, int], recursive: bool, max_depth: int) -> str:
        ref = schema.get("$ref") or ""
        if ref and history.get(ref):
            return ""
        history = {**history, ref: 1}
        resolved = self.resolve(ref) or schema
        out = []
        for name, sub in sorted((resolved.get("properties") or {}).items()):
            out.append(self.field_detail(name, resolved, recursive, level))
            if recursive and (max_depth == 0 or level < max_depth):
                out.append(self.field_list(sub, level + 1, history, recursive, max_depth))
        for sub in resolved.get("allOf") or []:
            out.append(self.field_list(sub, level, history, recursive, max_depth))
        if resolved.get("items"):
            out.append(self.field_list(resolved["items"], level, history, recursive, max_depth))
        if _is_map(resolved.get("additionalProperties")):
            out.append(self.field_list(resolved["additionalProperties"], level, history, recursive, max_depth))
        return "".join(out)

    def field_detail(self, name: str, schema: Schema, short: bool, level: int) -> str:
        amount = level * 2
        field = schema["properties"][name]
        text = indent(amount, name) + f"\t<{self.type_guess(field)}>"
        if name in (schema.get("required") or []):
            text += " -required-"
        text += self.extract_enum(field, False, 4, amount) + "\n"
        if not short:
            text += indent(amount + 2, wrap(field.get("description") or "<no description>", 78 - amount)) + "\n\n"
        return text

    def description(self, schema: Schema) -> str:
        resolved = self.resolve(schema.get("$ref")) or schema
        text = resolved["description"] + "\n" if resolved.get("description") else ""
        for sub in resolved.get("allOf") or []:
            text += self.description(sub)
        if resolved.get("items"):
            text += self.description(resolved["items"])
        if _is_map(resolved.get("additionalProperties")):
            text += self.description(resolved["additionalProperties"])
        return text

    def type_guess(self, schema: Schema) -> str:
        if schema.get("items"):
            return "[]" + self.type_guess(schema["items"])
        if _is_map(schema.get("additionalProperties")):
            return "map[string]" + self.type_guess(schema["additionalProperties"])
        if schema.get("allOf") and not schema.get("properties") and len(schema["allOf"]) == 1:
            return self.type_guess(schema["allOf"][0])
        if schema.get("$ref"):
            target = self.resolve(schema["$ref"])
            if not target or not target.get("type") or target["type"] == "object":
                return schema["$ref"].split("/")[-1].split(".")[-1] or "Object"
            return target["type"]
        return "Object" if schema.get("type") in ("object", None, "") else schema["type"]

    def extract_enum(self, schema: Schema, long_view: bool, limit: int, amount: int = 0) -> str:
        values = schema.get("enum")
        if not values:
            return ""
        limit = limit or -1
        text = "ENUM:" if long_view else "\n" + " " * amount + "enum: "
        for index, value in enumerate(values):
            if limit > -1 and index >= limit:
                text += ", ...."
                break
            if index > 0 and not long_view:
                text += ", "
            elif long_view:
                text += "\n    "
            text += '""' if value == "" else _go_text(value)
        return text

    # -- our error for a path that leads nowhere

    def _missing(self, schema: Schema, field_path: list[str]) -> tuple[list[str], Schema]:
        """The path up to the first field that does not exist, and the schema it was looked for in."""
        for depth, name in enumerate(field_path):
            found = self._property(schema, name)
            if found is None:
                return field_path[:depth + 1], schema
            schema = found
        raise AssertionError(f"{'.'.join(field_path)} exists")  # output() found nothing where this finds it

    def _external(self, schema: Schema) -> bool:
        """Whether a schema is a reference this document does not hold (ObjectMeta)."""
        refs = [schema.get("$ref"), *(s.get("$ref") for s in schema.get("allOf") or [])]
        return any(ref and self.resolve(ref) is None for ref in refs)

    def _property(self, schema: Schema, name: str) -> Schema | None:
        """The field `name` of a schema, looked for where output() looks."""
        resolved = self.resolve(schema.get("$ref")) or schema
        if (resolved.get("properties") or {}).get(name):
            return resolved["properties"][name]
        for sub in [resolved.get("items"), resolved.get("additionalProperties"), *(resolved.get("allOf") or [])]:
            if _is_map(sub) and (found := self._property(sub, name)) is not None:
                return found
        return None

    def _fields(self, schema: Schema) -> set[str]:
        resolved = self.resolve(schema.get("$ref")) or schema
        names = set(resolved.get("properties") or {})
        for sub in [resolved.get("items"), resolved.get("additionalProperties"), *(resolved.get("allOf") or [])]:
            if _is_map(sub):
                names |= self._fields(sub)
        return names


def _is_map(value: Any) -> bool:
    """A schema (not `true`/`false`): the template's `not (eq "bool" (printf "%T" ...))`."""
    return isinstance(value, dict) and bool(value)
