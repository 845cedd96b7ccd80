"""Kubernetes CEL environment: quantity and semver libraries, DRA device selectors, and
x-kubernetes-validations rules, on the `cel` library (Rust core) with compile-once caching."""

import importlib
import sys
import types


def _defer_cel_cli() -> None:
    """The `cel` package's __init__ imports its own command line, which pulls in prompt_toolkit and
    rich: a third of a second, more than the rest of `inferplane validate`'s start. A stand-in is
    registered first; it imports the real module the first time something reads from it (nothing
    here does). importlib's LazyLoader cannot do this: the import system itself reads the module's
    __spec__, which loads it."""
    if "cel" in sys.modules or "cel.cli" in sys.modules:
        return
    stand_in = types.ModuleType("cel.cli", "Stand-in: imports the real cel.cli when first read.")

    def load(attribute: str):
        if sys.modules.get("cel.cli") is stand_in:
            del sys.modules["cel.cli"]
        return getattr(importlib.import_module("cel.cli"), attribute)

    stand_in.__getattr__ = load  # type: ignore[method-assign]
    sys.modules["cel.cli"] = stand_in


_defer_cel_cli()

from .device import Device, DeviceSelector, selector, split_qualified
from .env import CelError, Program, compile_expression, evaluate, evaluate_rule
from .rules import Document, rule_at
from .quantity import canonical_quantity, format_quantity, is_quantity, parse_quantity
from .semver import Semver, is_semver, parse_semver

__all__ = [
    "CelError", "Program", "Document", "rule_at", "compile_expression", "evaluate", "evaluate_rule",
    "Device", "DeviceSelector", "selector", "split_qualified",
    "parse_quantity", "is_quantity", "format_quantity", "canonical_quantity",
    "Semver", "parse_semver", "is_semver",
]
