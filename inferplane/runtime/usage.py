"""Crossplane's Usage, as the runtime applies it to a deletion, given the rules of what uses what
(runtime.controller.UsageRules): who still uses what a deletion would remove, and in which order
siblings go."""

from __future__ import annotations

from typing import Callable, Iterable

from inferplane.runtime.controller import UsageRules
from inferplane.runtime.store import Key, Resource


def users(rules: UsageRules, deleted: list[Resource], objects: Iterable[Resource]) -> list[Key]:
    """Objects outside `deleted` that use something in it: while any exists, the deletion waits."""
    gone = {k for obj in deleted for k in rules.provides(obj)}
    deleted_keys = {Key.of(obj) for obj in deleted}
    return sorted(Key.of(o) for o in objects if Key.of(o) not in deleted_keys and rules.references(o) & gone)


def deletion_order(rules: UsageRules, children: Iterable[Key], subtree: Callable[[Key], list[Resource]]) -> list[Key]:
    """Siblings in the order a real cloud needs them deleted: users before what they use (a serving
    stack's Helm releases before the cluster they run on; a release before its ProviderConfig)."""
    remaining = sorted(children)
    trees = {child: subtree(child) for child in remaining}
    uses = {child: {k for obj in trees[child] for k in rules.references(obj)} for child in remaining}
    gives = {child: {k for obj in trees[child] for k in rules.provides(obj)} for child in remaining}
    order = []
    while remaining:
        # The first sibling nothing else still uses; on a cycle (none), the first one.
        free = next((c for c in remaining if not any(gives[c] & uses[o] for o in remaining if o != c)), remaining[0])
        order.append(free)
        remaining.remove(free)
    return order
