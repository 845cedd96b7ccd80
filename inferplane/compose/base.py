"""What the composition functions share: the contract they follow (api/function.py, read here too),
memos by resourceVersion, and the Composer they are built on.

A function is pure: the same request gives byte-identical output, and the request itself is left as
it was (the embedded runtime hands over its cache's objects, uncopied). It never raises for a user's
mistake; it reports it as a condition with a reason and a message naming the object and the fix.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from pydantic import ValidationError

from inferplane.api.function import (  # noqa: F401  (the composers read the contract here)
    CONFLICT, READY, RECONCILE_ERROR, SYNCED, Condition, Desired, Event, Request, Requirement, Resource, Response,
    condition_of, is_ready)
from inferplane.api.json_data import json_copy
from inferplane.kept import MIB, Kept, size_of
from inferplane.runtime.keys import stores_opened


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
        self.function, self.bound = function, bound
        self.memo, self.stores = Kept(bound), stores_opened()

    def __call__(self, obj: Resource) -> T:
        if self.stores != stores_opened():  # another store: its (uid, version) pairs name other objects
            self.memo, self.stores = Kept(self.bound), stores_opened()
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
        self.last: tuple[tuple[Any, ...], T] | None = None

    def __call__(self, objects: list[Resource]) -> T:
        try:
            key = (stores_opened(), *[(obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]) for obj in objects])
        except (KeyError, TypeError):
            return self.function(objects)
        if not all(isinstance(uid, str) and isinstance(version, str) for uid, version in key[1:]):
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


# The reason on a composed resource the provider failed to create (Synced=False: a cloud refusing a
# region, zone or machine it does not offer), which a cloud cluster passes up.


def refused_by_provider(resource: Resource | None) -> bool:
    """A composed resource its provider failed to create: not ready, Synced=False with ReconcileError."""
    synced = condition_of(resource, SYNCED)
    return not is_ready(resource) and synced.get("status") == "False" and synced.get("reason") == RECONCILE_ERROR


# What a composer re-declares of a composed resource it keeps: what composition set, never what the
# runtime added (uid, resourceVersion, owners, status). A plain Secret (Nebius's cloud-init) has its type and
# data where other kinds have a spec.
KEPT_FIELDS = ("apiVersion", "kind", "spec", "type", "data")
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
