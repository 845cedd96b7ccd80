"""The contract every composition function follows (Crossplane's RunFunction, in plain Python).

A function is pure: the same request gives byte-identical output, and the request itself is left as
it was (the embedded runtime hands over its cache's objects, uncopied). It never raises for a user's
mistake; it reports it as a condition with a reason and a message naming the object and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from pydantic import ValidationError

from inferplane.api.json_data import json_copy
from inferplane.kept import MIB, Kept, size_of

Resource = dict[str, Any]


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




T = TypeVar("T")


class ByVersion(Generic[T]):
    """A pure function of a stored object, remembered by the object's uid and resourceVersion: the store
    (as the API server) gives every change a new version, so one (uid, version) is one content. A
    function that reads the whole fleet on every call (the fleet scheduler's snapshot) so converts
    only the objects that changed. An object without both is converted every time. Remembered within
    `bound` bytes, each conversion counted as the bytes of the object it was made from (what it keeps
    of it is no more): the function server's requests name uids of their own, as many as they like."""

    # Far more than a fleet's objects of one kind (a stored InferenceCluster is some KiB).
    BOUND = 64 * MIB

    def __init__(self, function: Callable[[Resource], T], bound: int = BOUND):
        self.function = function
        self.memo = Kept(bound)

    def __call__(self, obj: Resource) -> T:
        metadata = obj.get("metadata")
        uid = metadata.get("uid") if isinstance(metadata, dict) else None
        version = metadata.get("resourceVersion") if isinstance(metadata, dict) else None
        if not isinstance(uid, str) or not isinstance(version, str):
            return self.function(obj)
        found = self.memo.get((uid, version))
        if found is None:
            found = (self.function(obj),)  # (result,): None is a result too
            self.memo.put((uid, version), found, size_of(obj))
        return found[0]


class ByVersions(Generic[T]):
    """A pure function of a list of stored objects, remembered for the last list by its objects' (uid,
    resourceVersion) in order (ByVersion's rule, for all of them at once): a fleet read again with nothing
    changed gives the same result, the same object (read only). A list holding an object without both is
    converted every time."""

    def __init__(self, function: Callable[[list[Resource]], T]):
        self.function = function
        self.last: tuple[tuple[tuple[str, str], ...], T] | None = None

    def __call__(self, objects: list[Resource]) -> T:
        try:
            key = tuple([(obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]) for obj in objects])
        except (KeyError, TypeError):
            return self.function(objects)
        if not all(isinstance(uid, str) and isinstance(version, str) for uid, version in key):
            return self.function(objects)
        last = self.last  # read once: the function server calls from several threads
        if last is None or last[0] != key:
            last = self.last = (key, self.function(objects))
        return last[1]


def composite_name(composite: Resource) -> str:
    """The composite's name, read without trusting its shape (it may be what failed validation)."""
    metadata = composite.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else "<unnamed>"


def validation_problems(error: ValidationError) -> str:
    """A model's validation errors on one line: `field.path: message; ...`."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())


# The reason on a composite that could not apply a composed resource because another composite
# controls it (the runtime sets it; composers pass it up).
CONFLICT = "ComposedResourceConflict"
# The reason on a composed resource the provider failed to create (Synced=False: a cloud refusing a
# region, zone or machine it does not offer), which a cloud cluster passes up.
PROVIDER_ERROR = "ReconcileError"


def condition_of(resource: Resource | None, type_: str) -> dict[str, Any]:
    """A condition of an observed resource, or {} when it has none of that type."""
    for condition in ((resource or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return condition
    return {}


def is_ready(resource: Resource | None) -> bool:
    """A composed resource is ready when its observed status carries condition Ready=True."""
    return condition_of(resource, "Ready").get("status") == "True"


def refused_by_provider(resource: Resource | None) -> bool:
    """A composed resource its provider failed to create: not ready, Synced=False with ReconcileError."""
    synced = condition_of(resource, "Synced")
    return not is_ready(resource) and synced.get("status") == "False" and synced.get("reason") == PROVIDER_ERROR


# What a composer re-declares of a composed resource it keeps: what composition set, never what the
# runtime added (uid, resourceVersion, owners, status).
KEPT_FIELDS = ("apiVersion", "kind", "spec")
KEPT_METADATA = ("name", "namespace", "labels", "annotations")


class Composer:
    """What every composition function shares: its request, its response, and how it fills it in."""

    def __init__(self, request: Request):
        self.request = request
        self.response = Response()

    def desire(self, key: str, resource: Resource) -> None:
        """Desire a composed resource; it is ready when its observed self is."""
        self.response.desired[key] = Desired(resource, ready=is_ready(self.request.observed.get(key)))

    def keep_observed(self, only_undesired: bool = False) -> None:
        """Desire every observed composed resource exactly as it was composed: nothing new, nothing
        deleted. A function that cannot compose does this, so that garbage collection keeps what runs;
        with `only_undesired`, what it does compose stays as composed and only the rest is kept."""
        for key in sorted(self.request.observed):
            if not (only_undesired and key in self.response.desired):
                self.keep(key)

    def keep(self, key: str) -> None:
        """Desire one observed composed resource exactly as it was composed."""
        observed = self.request.observed[key]
        metadata = observed.get("metadata") or {}
        kept = {k: json_copy(observed[k]) for k in KEPT_FIELDS if k in observed}
        kept["metadata"] = {k: json_copy(metadata[k]) for k in KEPT_METADATA if k in metadata}
        self.response.desired[key] = Desired(kept, ready=is_ready(observed))

    def condition(self, type_: str, status: str, reason: str, message: str) -> None:
        self.response.conditions.append(Condition(type_, status, reason, message))

    def warn(self, type_: str, reason: str, message: str) -> None:
        """A condition that is False for a reason someone must act on, and the Warning event that
        `describe` and `get events` show for it (counted, as Kubernetes counts a repeated event)."""
        self.condition(type_, "False", reason, message)
        self.response.events.append(Event("Warning", reason, message))
