"""Kubernetes CEL environment: quantity and semver libraries, DRA device selectors, and
x-kubernetes-validations rules, on the `cel` library (Rust core) with compile-once caching."""

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
