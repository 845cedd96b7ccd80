"""A composite's status as a reconcile leaves it: what its function said, with Crossplane's Ready and
Synced conditions derived from the readiness of what it composed, and the events a recovery makes."""

from __future__ import annotations

from typing import Any

from inferplane.api.function import (CONFLICT, PROGRESS_REASONS, READY, RECONCILE_ERROR, RECONCILE_SUCCESS, SYNCED,
                                     Response, is_ready)
from inferplane.api.json_data import SharedDict, SharedList, json_copy
from inferplane.runtime.keys import Resource

# (reason, message) of a Normal event.
Recovery = tuple[str, str]


def failed_status(composite: Resource, exc: Exception) -> tuple[dict[str, Any], str]:
    """As Crossplane reports a function that failed: Synced=False with the error (the rest of the
    status as it was); and the error's message."""
    status = dict(composite.get("status") or {})
    conditions = {c["type"]: c for c in status.get("conditions", [])}
    message = f"composition function failed: {type(exc).__name__}: {exc}"
    conditions[SYNCED] = {"type": SYNCED, "status": "False", "reason": RECONCILE_ERROR, "message": message}
    status["conditions"] = [conditions[t] for t in sorted(conditions)]
    return status, message


def recovery(before: dict[str, Any] | None, after: dict[str, Any]) -> Recovery | None:
    """A condition that turns True after being False is a Normal event; after a real problem
    (not mere provisioning) it says what it recovered from."""
    if not before or before.get("status") != "False" or after["status"] != "True":
        return None
    message = after.get("message") or f"{after['type']} is True"
    if before.get("reason") not in PROGRESS_REASONS:
        message += f" (recovered from {before.get('reason')}: {before.get('message', '')})"
    return after["reason"], message


def composite_status(composite: Resource, response: Response, observed: dict[str, Resource],
                     conflicts: list[str]) -> tuple[dict[str, Any], list[Recovery]]:
    """The composite's new status, and the recoveries its conditions made, in order."""
    status: dict[str, Any] = dict(composite.get("status") or {})
    # Copied, but for what a function returned as a shared copy (json_data.shared_copy), which nothing
    # changes: equal ones stay one copy for every composite holding them.
    status.update({k: v if isinstance(v, (SharedDict, SharedList)) else json_copy(v)
                   for k, v in response.status.items()})
    conditions = {c["type"]: c for c in status.get("conditions", [])}
    recoveries = []
    for condition in response.conditions:
        if (recovered := recovery(conditions.get(condition.type), condition.to_dict())) is not None:
            recoveries.append(recovered)
        conditions[condition.type] = condition.to_dict()
    conditions[READY] = ready_condition(response, observed)
    if conflicts:
        conditions[SYNCED] = {"type": SYNCED, "status": "False", "reason": CONFLICT,
                              "message": "; ".join(conflicts)}
        conditions[READY] = {"type": READY, "status": "False", "reason": CONFLICT,
                             "message": "; ".join(conflicts)}
    else:
        conditions[SYNCED] = {"type": SYNCED, "status": "True", "reason": RECONCILE_SUCCESS, "message": ""}
    status["conditions"] = [conditions[t] for t in sorted(conditions)]
    return status, recoveries


def ready_condition(response: Response, observed: dict[str, Resource]) -> dict[str, Any]:
    """Ready once every desired resource is and no condition the function set is False."""
    pending = sorted(name for name, d in response.desired.items()
                     if not (d.ready if d.ready is not None else is_ready(observed.get(name))))
    failing = [c for c in response.conditions if c.status == "False"]
    if not (pending or failing):
        return {"type": READY, "status": "True", "reason": "Available", "message": ""}
    # A condition that says why (InvalidSpec, UnsupportedDevices) beats a generic "Creating".
    stuck = [c for c in failing if c.reason not in PROGRESS_REASONS]
    why = stuck[0].reason if stuck else failing[0].reason if failing and not pending else "Creating"
    message = stuck[0].message if stuck else (f"waiting for {', '.join(pending)}" if pending
                                              else failing[0].message)
    return {"type": READY, "status": "False", "reason": why, "message": message}
