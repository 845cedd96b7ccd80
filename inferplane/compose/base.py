"""The contract every composition function follows (Crossplane's RunFunction, in plain Python).

A function is pure: the same request gives byte-identical output. It never raises for a user's
mistake; it reports it as a condition with a reason and a message naming the object and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Resource = dict[str, Any]


@dataclass(frozen=True)
class Requirement:
    """A resource the function needs before it can compose: Crossplane's required resources."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None


@dataclass
class Request:
    composite: Resource
    # Composed resources as observed, keyed by the stable names the function gave them.
    observed: dict[str, Resource] = field(default_factory=dict)
    # Required resources by requirement name; a requirement that could not be found maps to None.
    required: dict[str, Resource | None] = field(default_factory=dict)


@dataclass
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str  # CamelCase
    message: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}


@dataclass
class Event:
    type: str  # "Normal" | "Warning"
    reason: str
    message: str


@dataclass
class Desired:
    resource: Resource
    ready: bool | None = None  # None: readiness is derived by the runtime from the observed resource


@dataclass
class Response:
    desired: dict[str, Desired] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    conditions: list[Condition] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    requirements: dict[str, Requirement] = field(default_factory=dict)

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


def is_ready(resource: Resource | None) -> bool:
    """A composed resource is ready when its observed status carries condition Ready=True."""
    if not resource:
        return False
    for condition in resource.get("status", {}).get("conditions", []) or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False
