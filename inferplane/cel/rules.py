"""x-kubernetes-validations rules evaluated over a whole document bound once.

Converting a Python value into CEL costs far more than running a rule (about 45 us for a typical
InferenceClass spec against 0.3-4 us per rule), and a manifest has rules at many nodes. So the
document is bound once as one variable, and each rule is rewritten for the node it runs at:
`self` becomes the path from the document's root (`self.count` at spec.devices[0] reads
`__doc["spec"]["devices"][0].count`). Rewritten programs are cached by (rule, path): the paths of
real manifests repeat (devices[0], the same attribute names), so compilation is rare.
The rewrite also routes `.matches(...)` to a variant that caches the compiled regex.
"""

from __future__ import annotations

import functools
import threading
from typing import Any


from .env import CelError, Program, compile_expression, describe, new_context
from .library import CACHED_MATCHES, to_python
from .source import cel_string, tokens

DOCUMENT_VARIABLE = "__doc"
Path = tuple[str | int, ...]


# CEL's reserved words: a property so named is reached as `__<word>__` (Kubernetes' CEL escaping,
# apiserver/pkg/cel "Escaping"; the upjet CRDs' rules on a `namespace` field read `__namespace__`), so the
# bound document and the paths into it carry the escaped names.
RESERVED = frozenset({"as", "break", "const", "continue", "else", "false", "for", "function", "if", "import", "in",
                      "let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while"})


def escaped_name(name: str) -> str:
    return f"__{name}__" if name in RESERVED else name


def escaped(value: Any) -> Any:
    """`value` with every object property named by a reserved word renamed as Kubernetes escapes it."""
    if isinstance(value, dict):
        return {escaped_name(k): escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v) for v in value]
    return value


def _path_expression(path: Path, escape: bool) -> str:
    return DOCUMENT_VARIABLE + "".join(f"[{p}]" if isinstance(p, int)
                                       else f"[{cel_string(escaped_name(p) if escape else p)}]" for p in path)


@functools.lru_cache(maxsize=8192)
def rule_at(rule: str, path: Path, escape: bool = False) -> Program:
    """The rule with `self` bound to the node at `path` of the document."""
    compile_expression(rule)  # the rule as written must compile: its errors name what the author wrote
    toks = tokens(rule)
    out, last = [], 0
    for i, tok in enumerate(toks):
        after_dot = i > 0 and toks[i - 1].text == "."
        if tok.kind == "ident" and tok.text == "self" and not after_dot:
            out += [rule[last:tok.start], _path_expression(path, escape)]
            last = tok.end
        elif tok.kind == "ident" and tok.text == "matches" and after_dot and i + 1 < len(toks) \
                and toks[i + 1].text == "(":  # a call; `route.matches` without one is a field
            out += [rule[last:tok.start], CACHED_MATCHES]
            last = tok.end
    out.append(rule[last:])
    return compile_expression("".join(out))


_local = threading.local()


class Document:
    """One manifest bound for rule evaluation.

    The Context (with the library's functions, costly to wrap) is reused per thread; binding the
    document replaces the previous one, so a Document is valid until the next one is made.
    """

    def __init__(self, value: Any, escape: bool = False):
        context = getattr(_local, "context", None)
        if context is None:
            context = _local.context = new_context()
        try:
            context.add_variable(DOCUMENT_VARIABLE, escaped(value) if escape else value)
        except Exception as exc:  # noqa: BLE001 - values CEL cannot represent
            raise CelError(f"cannot bind the document: {describe(exc)}") from None
        self.context = context
        # Whether properties named by reserved words are bound escaped: only a schema whose rules read
        # one (`__namespace__`) pays for the copy.
        self.escape = escape

    def evaluate(self, expression: str, path: Path) -> Any:
        """Any expression over the node at `path` (e.g. a rule's messageExpression), as Python."""
        return to_python(rule_at(expression, path, self.escape).execute(self.context))

    def check(self, rule: str, path: Path) -> bool:
        result = rule_at(rule, path, self.escape).execute(self.context)
        if type(result) is not bool:
            raise CelError(f"rule must evaluate to a bool, got {type(result).__name__}: {result!r}", rule)
        return result


__all__ = ["Document", "rule_at", "describe"]
