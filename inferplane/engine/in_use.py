"""Why a deletion is refused: what still uses the object, the ModelReplicas of deployments running on it
named by their deployment, and what those users were composed for."""

from __future__ import annotations

from inferplane.api.model_replica import ModelReplica
from inferplane.runtime.reconciler import Reconciler
from inferplane.runtime.store import Key

# How many users a refused deletion names (a Namespace's may be thousands).
IN_USE_NAMED = 20


class InUse(Exception):
    """A deletion refused because something outside it still uses what it would remove: other objects,
    or the ModelReplicas of deployments that run on it (deployment -> its replicas there)."""

    def __init__(self, key: Key, users: list[Key], serving: dict[Key, list[Key]] | None = None,
                 composed_for: dict[Key, Key] | None = None):
        serving, composed_for = serving or {}, composed_for or {}
        reasons = [f"ModelDeployment {deployment.namespace}/{deployment.name} runs replicas "
                   f"{', '.join(r.name for r in replicas)} on it" for deployment, replicas in sorted(serving.items())]
        if serving:
            reasons.append("move them first: a NoExecute taint in the cluster's spec.taints drains them, or narrow "
                           "each deployment's clusterSelector so that it no longer selects this cluster")
        if users:
            named = ", ".join(u.qualified() for u in users[:IN_USE_NAMED])
            more = f" and {len(users) - IN_USE_NAMED} more" if len(users) > IN_USE_NAMED else ""
            # A composed user is changed through what composed it (deleted, it would be composed again).
            fix = "delete those or change them to stop using it first"
            if composed_for:
                roots = ", ".join(r.qualified() for r in sorted(set(composed_for.values())))
                fix = (f"{'those not composed: ' + fix + '; the others' if len(composed_for) < len(users) else 'they'}"
                       f" are composed for {roots}: delete or change that first")
            reasons.append(f"{'it ' if serving else ''}is in use by {named}{more}: {fix}")
        super().__init__(f"{key.qualified()}{':' if serving else ''} {'; '.join(reasons)}; nothing was deleted")
        self.key = key
        self.users = users
        self.serving = serving


def serving_apart(reconciler: Reconciler, in_use: list[Key]) -> tuple[list[Key], dict[Key, list[Key]]]:
    """The users that are not a ModelReplica's workloads, and the replicas whose workloads use it, by
    deployment: a replica is moved by its deployment, never deleted from under it."""
    others, serving = [], {}
    for user in in_use:
        replica: Key | None = user
        while replica is not None and replica.kind != ModelReplica.KIND:
            replica = reconciler.controller_key(reconciler.get(replica) or {})
        if replica is None:
            others.append(user)
            continue
        deployment = reconciler.controller_key(reconciler.get(replica) or {}) or replica
        if replica not in serving.setdefault(deployment, []):
            serving[deployment].append(replica)
    return others, {d: sorted(r) for d, r in serving.items()}
