"""A composition function's requirements, as the runtime answers them: the resources it asks for,
fetched and passed back until it asks for nothing new (as Crossplane does), and the keys whose changes
call it again."""

from __future__ import annotations

from typing import Any, Callable

from inferplane.api.function import Request, Requirement, Response
from inferplane.runtime.keys import Key, Resource, unmanaged

# Bounded so that a function which keeps asking for new resources cannot spin forever.
MAX_REQUIREMENT_ROUNDS = 5

Resolve = Callable[[Requirement], Any]


def call_with_requirements(resolve: Resolve, function: Callable[[Request], Response], composite: Resource,
                           observed: dict[str, Resource], known: dict[str, Requirement] | None = None
                           ) -> tuple[Response, set[Key]]:
    """Call a function, answering the resources it requires (`resolve`) until it asks for nothing new
    (bounded): its last response, and the keys whose changes call it again (Key.every for a whole kind,
    unless the requirement's `watch` narrows it), as its last word on each requirement says.

    `known`: what it asked for when it was last called. Those are answered up front (read afresh), so
    that a function whose needs did not change is called once rather than once per round. Its response
    stands only if it asks for exactly those again; otherwise it is called afresh, round by round, as
    if nothing were known: either way the last call is answered exactly what the rounds would answer."""
    resolve, composite = _unmanaged_answers(resolve), unmanaged(composite)
    if known:
        required = {name: resolve(requirement) for name, requirement in known.items()}
        response = function(Request(composite, observed, required))
        if response.requirements.keys() == known.keys() and all(
                same_answer(response.requirements[name], requirement) for name, requirement in known.items()):
            return response, watched_keys(response.requirements)
    required = {}
    asked: dict[str, Requirement] = {}
    response = function(Request(composite, observed, required))
    for _ in range(MAX_REQUIREMENT_ROUNDS):
        asked.update(response.requirements)
        wanted = {n: r for n, r in response.requirements.items() if n not in required}
        if not wanted:
            break
        for name, requirement in wanted.items():
            required[name] = resolve(requirement)
        response = function(Request(composite, observed, dict(required)))
    asked.update(response.requirements)
    return response, watched_keys(asked)


def _unmanaged_answers(resolve: Resolve) -> Resolve:
    def answered(requirement: Requirement) -> Any:
        found = resolve(requirement)
        return [unmanaged(o) for o in found] if isinstance(found, list) else unmanaged(found)
    return answered


def same_answer(one: Requirement, other: Requirement) -> bool:
    """Whether two requirements are answered alike (what they watch may differ)."""
    return (one.api_version, one.kind, one.name, one.namespace, one.match_labels) == \
        (other.api_version, other.kind, other.name, other.namespace, other.match_labels)


def watched_keys(asked: dict[str, Requirement]) -> set[Key]:
    return {key for requirement in asked.values() for key in watched(requirement)}


def requirement_kind(requirement: Requirement) -> tuple[str, str]:
    """(group, kind) of what a requirement asks for: the core group is "" (`v1`), as in a Key."""
    return requirement.api_version.rpartition("/")[0], requirement.kind


def resolver(objects: dict[Key, Resource]) -> Resolve:
    """Answers requirements from a plain map of objects (for a one-off call; the reconciler keeps an index)."""
    def resolve(requirement: Requirement) -> Any:
        group, kind = requirement_kind(requirement)
        return answer(requirement, [objects[k] for k in sorted(objects) if (k.group, k.kind) == (group, kind)],
                      objects.get)
    return resolve


def answer(requirement: Requirement, of_kind: list[Resource], get: Callable[[Key], Resource | None]) -> Any:
    """A requirement's answer, given every object of its kind in key order and a lookup by key: the named
    object (or None), every object of the kind, or those in its namespace carrying its labels."""
    group, kind = requirement_kind(requirement)
    namespace = requirement.namespace or ""
    if requirement.match_labels is not None:
        labels = dict(requirement.match_labels).items()
        return [obj for obj in of_kind if (obj["metadata"].get("namespace") or "") == namespace
                and labels <= (obj["metadata"].get("labels") or {}).items()]
    if requirement.name is None:
        return of_kind
    return get(Key(group, kind, namespace, requirement.name))


def watched(requirement: Requirement) -> set[Key]:
    group, _ = requirement_kind(requirement)
    if requirement.name is not None:
        return {Key(group, requirement.kind, requirement.namespace or "", requirement.name)}
    if requirement.match_labels is not None:
        return {Key.in_namespace(group, requirement.kind, requirement.namespace or "")}
    if requirement.watch is None:
        return {Key.every(group, requirement.kind)}
    return {Key(group, requirement.kind, namespace, name) for namespace, name in requirement.watch}
