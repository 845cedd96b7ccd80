"""DRA device selectors: the `device` variable Kubernetes builds for a ResourceSlice device.

    device.driver                                   string
    device.attributes["<domain>"].<name>            string, int, bool, or semver (version attributes)
    device.capacity["<domain>"].<name>              always a Quantity
    device.allowMultipleAllocations                 bool

A bare attribute or capacity name belongs to the driver's domain; a qualified one
(`resource.kubernetes.io/numaNode`) to its own. An unknown domain reads as an empty map; a missing
field is an evaluation error, which `matches` treats as "does not match" and `explain` reports.
(Kubernetes aborts the allocation on such an error; `DeviceSelector.evaluate` raises it for
callers that want that behaviour.)

Each Device builds its CEL Context once. Selectors name their domains as literals, so a device
lacking one of them gets a second Context with empty maps for the missing domains, also built once.
A domain computed at run time (not a literal) that the device lacks is an error, not an empty map.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

import cel

from .env import CelError, Program, compile_expression, describe, new_context
from .library import quantity_value, semver_value
from .quantity import INT64_MAX, INT64_MIN
from .semver import Semver, parse_semver
from .source import device_domains

AttributeValue = Union[str, int, bool, Semver]

# Warms a fresh Context so its CEL environment is built before two threads could race to build it.
_WARM = cel.compile("true")


def split_qualified(name: str, driver: str) -> tuple[str, str]:
    """`domain/name` -> (domain, name); a bare name belongs to the driver."""
    domain, slash, rest = name.partition("/")
    return (domain, rest) if slash else (driver, name)


def _attribute(value: AttributeValue, key: str) -> Any:
    if isinstance(value, Semver):
        return semver_value(value)
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"attribute {key!r}: {value} does not fit an int64")
        return value
    raise ValueError(f"attribute {key!r}: unsupported value {value!r} (string, int, bool or Semver)")


@dataclass(frozen=True, eq=False)
class Device:
    """A device as a selector sees it. Treat it as immutable: the CEL activation is built from
    the fields on first use and kept."""

    driver: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, str | int] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    name: str = ""

    @classmethod
    def from_resource_slice(cls, driver: str, device: Mapping[str, Any]) -> Device:
        """From a `resource.k8s.io/v1` ResourceSlice device: attributes are
        `{name: {string|int|bool|version: value}}`, capacity `{name: {value: quantity}}`."""
        attributes: dict[str, AttributeValue] = {}
        for key, typed in (device.get("attributes") or {}).items():
            if len(typed) != 1:
                raise ValueError(f"attribute {key!r} must set exactly one of string, int, bool, version")
            ((kind, value),) = typed.items()
            if kind == "version":
                attributes[key] = parse_semver(value)
            elif kind in ("string", "int", "bool"):
                attributes[key] = value
            else:
                raise ValueError(f"attribute {key!r} has unknown type {kind!r}")
        capacity = {key: spec["value"] for key, spec in (device.get("capacity") or {}).items()}
        return cls(driver=driver, attributes=attributes, capacity=capacity,
                   allow_multiple_allocations=bool(device.get("allowMultipleAllocations", False)),
                   name=device.get("name", ""))

    @functools.cached_property
    def activation(self) -> dict[str, Any]:
        """The `device` variable, CEL-ready (quantities and semvers encoded)."""
        attributes: dict[str, dict[str, Any]] = {}
        for key, value in self.attributes.items():
            domain, name = split_qualified(key, self.driver)
            into = attributes.setdefault(domain, {})
            if name in into:
                raise ValueError(f"device {self.name!r}: attribute {domain}/{name} is given twice")
            into[name] = _attribute(value, key)
        capacity: dict[str, dict[str, Any]] = {}
        for key, value in self.capacity.items():
            domain, name = split_qualified(key, self.driver)
            into = capacity.setdefault(domain, {})
            if name in into:
                raise ValueError(f"device {self.name!r}: capacity {domain}/{name} is given twice")
            try:
                if isinstance(value, bool) or not isinstance(value, (str, int)):
                    raise ValueError(f"expected a quantity string or an int, got {value!r}")
                into[name] = quantity_value(value)
            except ValueError as exc:
                raise ValueError(f"device {self.name!r}: capacity {key!r}: {exc}") from None
        return {"driver": self.driver, "attributes": attributes, "capacity": capacity,
                "allowMultipleAllocations": self.allow_multiple_allocations}

    @functools.cached_property
    def _contexts(self) -> dict[frozenset[str], cel.Context]:
        return {}

    @functools.cached_property
    def _lock(self) -> threading.RLock:
        return threading.RLock()

    def context(self, domains: frozenset[str] = frozenset()) -> cel.Context:
        """The Context binding `device`, with an empty map for each of `domains` it lacks."""
        context = self._contexts.get(domains)
        if context is None:
            with self._lock:
                context = self._contexts.get(domains)
                if context is None:
                    context = self._contexts[domains] = self._build_context(domains)
        return context

    def _build_context(self, domains: frozenset[str]) -> cel.Context:
        base = self.activation
        missing = {d for d in domains if d not in base["attributes"] or d not in base["capacity"]}
        if not missing:
            if domains:  # share the plain Context: nothing to add
                return self.context()
            variables = {"device": base}
        else:
            variables = {"device": {
                **base,
                "attributes": {**{d: {} for d in missing}, **base["attributes"]},
                "capacity": {**{d: {} for d in missing}, **base["capacity"]},
            }}
        context = new_context(variables)
        _WARM.execute(context)
        return context


class DeviceSelector:
    """A compiled DRA CEL selector. Build with `selector(expr)` to share compiled selectors."""

    __slots__ = ("expression", "program", "domains", "_run")

    def __init__(self, expression: str):
        self.expression = expression
        self.program: Program = compile_expression(expression)
        self.domains = device_domains(expression)
        self._run = self.program.program.execute

    def __repr__(self) -> str:
        return f"DeviceSelector({self.expression!r})"

    def evaluate(self, device: Device) -> bool:
        """True/False, or CelError for an evaluation error or a non-bool result."""
        context = device.context(self.domains)  # bad device data raises here, not as a mismatch
        try:
            result = self._run(context)
        except Exception as exc:  # noqa: BLE001 - any library error is an evaluation error
            raise CelError(describe(exc), self.expression) from None
        if result is True or result is False:
            return result
        raise CelError(f"selector must evaluate to a bool, got {type(result).__name__}", self.expression)

    def matches(self, device: Device) -> bool:
        """Whether the device is selected; an evaluation error means it is not.
        A non-bool result is a broken selector, not a mismatch: CelError."""
        context = device.context(self.domains)
        try:
            result = self._run(context)
        except Exception:  # noqa: BLE001
            return False
        if result is True or result is False:
            return result
        raise CelError(f"selector must evaluate to a bool, got {type(result).__name__}", self.expression)

    def explain(self, device: Device) -> str | None:
        """None if the device matches, otherwise why not, for a user-facing message."""
        try:
            if self.evaluate(device):
                return None
        except CelError as exc:
            return f"selector {self.expression!r} failed: {exc.message}"
        return f"selector {self.expression!r} is false"


@functools.lru_cache(maxsize=4096)
def selector(expression: str) -> DeviceSelector:
    """The compiled selector for this text (CelError on a syntax error)."""
    return DeviceSelector(expression)
