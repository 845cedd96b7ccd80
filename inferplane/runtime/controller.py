"""What the reconciler hosts beside the composition functions, each a protocol that knows no kind of
ours: the provider that reports on managed resources, the usage rules that keep a deletion from
removing what something else uses, and further controllers (the simulator) that own a kind of work in
the queue."""

from __future__ import annotations

from typing import Callable, Iterable, Protocol

from inferplane.api.function import READY, RECONCILE_SUCCESS, SYNCED
from inferplane.runtime.cache import FieldIndex
from inferplane.runtime.store import Key, Resource, Store

# Lists the control plane's objects of a kind, in any group.
OfKind = Callable[[str], list[Resource]]


class Provider(Protocol):
    """Reports on a managed resource (one no composition function composes), as a Crossplane provider
    does once the external resource exists."""

    def observe(self, obj: Resource, of_kind: OfKind) -> dict:
        """The status the provider reports for the resource as applied."""

    def observes_others(self, obj: Resource) -> bool:
        """Whether what it reports depends on other objects, so that it is observed on every apply."""


class ReportsReady:
    """A provider for tests and for resources with no provider: every resource is Ready as applied."""

    def observe(self, obj: Resource, of_kind: OfKind) -> dict:
        return {**(obj.get("status") or {}), "conditions": [
            {"type": READY, "status": "True", "reason": "Available", "message": ""},
            {"type": SYNCED, "status": "True", "reason": RECONCILE_SUCCESS, "message": ""}]}

    def observes_others(self, obj: Resource) -> bool:
        return False


class UsageRules(Protocol):
    """Crossplane's Usage, as rules over objects: what an object uses, and what goes when it goes."""

    def references(self, obj: Resource) -> set[Key]:
        """Every object `obj` uses (whether or not it exists)."""

    def provides(self, obj: Resource) -> set[Key]:
        """The object itself and what goes with it when it is deleted."""


class View(Protocol):
    """What a hosted controller reads of the reconciler's cache, and how it reports on an object."""

    store: Store

    def get(self, key: Key) -> Resource | None: ...

    def lookup(self, kind: str, name: str) -> Resource | None: ...

    def children(self, uid: str) -> list[Resource]: ...

    def by_field(self, kind: str, path: str, value: str) -> list[Resource]: ...

    def root(self, key: Key) -> Key: ...

    def report_status(self, key: Key, status: dict) -> None: ...


# The work queue's priorities, lowest first (first in, first out within one):
# 0: a composite whose own inputs changed (a user's write, or its composite just composed it);
# 1 to OWNER_DEPTHS + 1: a composite some of whose composed resources (or of the objects it required by
# name) changed, the deepest first (a cluster's serving stack before the cluster), so that it reconciles
# once what it reads settled, once for all of it, rather than once per level on the way;
# DEPENDENT_PRIORITY: a composite that requires every object of a kind (a ModelDeployment reads every
# cluster), after those objects settled;
# HOSTED_PRIORITY: a hosted controller's work (the simulator's), after every reconcile.
OWNER_DEPTHS = 3
DEPENDENT_PRIORITY = OWNER_DEPTHS + 2
HOSTED_PRIORITY = DEPENDENT_PRIORITY + 1


def owner_priority(depth: int) -> int:
    """The priority of a composite at `depth` (0: composed under nothing) whose composed resources changed."""
    return 1 + max(0, OWNER_DEPTHS - depth)


class Controller(Protocol):
    """A second controller the reconciler hosts: it owns the queue items of one kind of work, which run
    after every reconcile (`priority`), and says which of its items a reconcile or a deletion makes due."""

    work: str
    priority: int
    field_indexes: tuple[FieldIndex, ...]

    def due_after_reconcile(self, view: View, key: Key) -> Iterable[Key]: ...

    def due_on_delete(self, view: View, key: Key) -> Iterable[Key]:
        """Called before the object is deleted (it is still readable)."""

    def run(self, view: View, key: Key) -> bool:
        """Do the work for one object; whether it ran (False: nothing had changed)."""
