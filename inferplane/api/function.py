"""The contract every composition function follows: Crossplane's RunFunction request and response, in
plain Python. Both runtimes speak it (the embedded one, and the Crossplane one over gRPC), and the
composition functions implement it; it lives here, under all three, so that neither runtime imports
the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Resource = dict[str, Any]

# The condition types every composite and managed resource carries (Crossplane's), and the reasons a
# provider's Synced condition gives.
READY, SYNCED = "Ready", "Synced"
RECONCILE_SUCCESS, RECONCILE_ERROR = "ReconcileSuccess", "ReconcileError"

# Condition reasons that mean "on its way", not "stuck": a runtime derives readiness and event
# severity from them.
PROGRESS_REASONS = ("Creating", "Installing")


@dataclass(frozen=True)
class Requirement:
    """A resource the function needs before it can compose: Crossplane's required resources. Without
    a name, every object of the kind in every namespace (Crossplane's selector matching all labels):
    the runtime answers with a list, and any change to the kind calls the function again, unless
    `watch` narrows that to the (namespace, name) of the objects whose changes matter to it (an empty
    namespace for cluster-scoped kinds). With `match_labels`, every object of the kind in `namespace`
    carrying those labels: a list again, and any change to the kind in that namespace calls it again."""

    api_version: str
    kind: str
    name: str | None = None
    namespace: str | None = None
    watch: frozenset[tuple[str, str]] | None = None
    match_labels: tuple[tuple[str, str], ...] | None = None


@dataclass
class Request:
    composite: Resource
    # Composed resources as observed, keyed by the stable names the function gave them.
    observed: dict[str, Resource] = field(default_factory=dict)
    # Required resources by requirement name; a requirement that could not be found maps to None, one
    # without a name to the list of every object of its kind, one by labels to the list of what matches.
    required: dict[str, Any] = field(default_factory=dict)


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


# The reason on a composite that could not apply a composed resource because another composite
# controls it (the runtime sets it; composers pass it up).
CONFLICT = "ComposedResourceConflict"


def condition_of(resource: Resource | None, type_: str) -> dict[str, Any]:
    """A condition of an observed resource, or {} when it has none of that type."""
    for condition in ((resource or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return condition
    return {}


def is_ready(resource: Resource | None) -> bool:
    """A composed resource is ready when its observed status carries condition Ready=True."""
    return condition_of(resource, READY).get("status") == "True"
