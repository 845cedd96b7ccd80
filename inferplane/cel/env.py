"""Compile-once CEL programs and evaluation over JSON-like activations.

The `cel` library builds its CEL-side environment (converted variables, wrapped functions) once
per Context and reuses it until the Context changes. So: programs are compiled once and cached
by source text; device activations get a Context each, built once (see device.py); ad-hoc
activations reuse a per-thread Context for the same set of variable names, since wrapping the
functions again costs more than most evaluations.

`self` is an ordinary variable name in this library, so x-kubernetes-validations rules are
evaluated as written; no renaming is needed.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from typing import Any

import cel

from .library import FOLDERS, FUNCTIONS, to_python
from .source import fold_constants


class CelError(Exception):
    """A CEL expression failed to compile or to evaluate; the message says why."""

    def __init__(self, message: str, expression: str | None = None):
        super().__init__(message)
        self.message = message
        self.expression = expression


class Program:
    """A compiled expression. `source` is what the user wrote; `program` runs the same
    expression with constant quantity()/semver() calls folded into literals."""

    __slots__ = ("source", "program", "variables")

    def __init__(self, source: str, program: cel.Program):
        self.source = source
        self.program = program
        # Names the expression reads (comprehension variables included, as the library reports them).
        self.variables = frozenset(program.variables())

    def __repr__(self) -> str:
        return f"Program({self.source!r})"

    def execute(self, context: cel.Context) -> Any:
        """Run against a prepared Context; raw CEL result, CelError on failure."""
        try:
            return self.program.execute(context)
        except Exception as exc:  # noqa: BLE001 - the library raises KeyError, TypeError, RuntimeError, ...
            raise CelError(describe(exc), self.source) from None

    def evaluate(self, activation: dict[str, Any]) -> Any:
        """Evaluate with JSON-like variables; returns plain Python values."""
        return to_python(self.execute(_context_for(activation)))


@functools.lru_cache(maxsize=4096)
def compile_expression(expr: str) -> Program:
    """Compile (once per distinct text) or raise CelError with the parser's message."""
    if not isinstance(expr, str) or not expr.strip():
        raise CelError("expression is empty", expr if isinstance(expr, str) else None)
    try:
        cel.compile(expr)  # the user's text first, so syntax errors point into what they wrote
    except Exception as exc:  # noqa: BLE001
        raise CelError(describe(exc), expr) from None
    return Program(expr, cel.compile(fold_constants(expr, FOLDERS)))


def evaluate(expr: str, activation: dict[str, Any] | None = None) -> Any:
    """Evaluate `expr` over JSON-like variables; quantities and semvers come back as strings."""
    return compile_expression(expr).evaluate(activation or {})


def evaluate_rule(expr: str, self_value: Any, old_self: Any = None) -> bool:
    """Evaluate an x-kubernetes-validations rule: `self` is the value at the rule's field and
    `oldSelf` (bound only when given) its previous value. Non-bool results are an error."""
    activation = {"self": self_value}
    if old_self is not None:
        activation["oldSelf"] = old_self
    result = compile_expression(expr).evaluate(activation)
    if type(result) is not bool:
        raise CelError(f"rule must evaluate to a bool, got {type(result).__name__}: {result!r}", expr)
    return result


def new_context(variables: dict[str, Any] | None = None) -> cel.Context:
    """A Context holding every library function, plus the given (already CEL-ready) variables."""
    try:
        return cel.Context(variables=variables or {}, functions=FUNCTIONS)
    except Exception as exc:  # noqa: BLE001 - unconvertible variable values
        raise CelError(f"cannot bind variables: {exc}") from None


_local = threading.local()


def _context_for(activation: dict[str, Any]) -> cel.Context:
    # One Context per thread and per set of names: rebinding every name each time leaves no
    # variable from a previous evaluation visible (the library cannot remove a variable).
    contexts = getattr(_local, "contexts", None)
    if contexts is None:
        contexts = _local.contexts = {}
    names = frozenset(activation)
    context = contexts.get(names)
    if context is None:
        if len(contexts) >= 64:  # bound the cache; distinct name sets are few in practice
            contexts.clear()
        context = contexts[names] = new_context()
    try:
        for name, value in activation.items():
            context.add_variable(name, value)
    except Exception as exc:  # noqa: BLE001
        contexts.pop(names, None)
        raise CelError(f"cannot bind variables: {exc}") from None
    return context


# --- readable errors --------------------------------------------------------------------------

_PYTHON_FAILURE = re.compile(r"Python function call failed: \w+: (?P<reason>.*?)\. Check function arguments", re.S)
_FUNCTION_ERROR = re.compile(r"Function '(?P<name>[^']+)' error: (?P<reason>.*?)\. Check function arguments", re.S)
_HINT = re.compile(r"\. (?:Check|CEL does not coerce|Convert explicitly)\b.*", re.S)


def describe(exc: BaseException) -> str:
    """The `cel` library's exception as one readable sentence."""
    if isinstance(exc, KeyError):
        return f"no such key: {exc.args[0]}" if exc.args else "no such key"
    text = str(exc)
    match = _PYTHON_FAILURE.search(text)
    if match:
        return match["reason"]
    match = _FUNCTION_ERROR.search(text)
    if match:
        return f"{match['name']}: {match['reason']}"
    return _HINT.sub("", text).strip()


class _QuietLibraryFunctions(logging.Filter):
    """The `cel` library logs a warning whenever a Python function raises. For ours that is the
    normal way to report a bad quantity or a type mismatch, already carried by the exception."""

    _FAILED = re.compile(r"Python function '([^']+)' failed")

    def filter(self, record: logging.LogRecord) -> bool:
        match = self._FAILED.match(record.getMessage())
        return not (match and match.group(1) in FUNCTIONS)


logging.getLogger("cel").addFilter(_QuietLibraryFunctions())
