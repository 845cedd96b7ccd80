"""Server-side apply, and the field ownership every write records, as kube-apiserver keeps them
(k8s.io/apiserver pkg/endpoints/handlers/patch.go, and the field manager in k8s.io/apimachinery
pkg/util/managedfields/internal, both read at v0.37.0-beta.0): a PATCH of
`application/apply-patch+yaml` merges the applied configuration into the object (creating it when
missing) as the field manager named by `fieldManager` (required), refused with 409 for fields another
manager owns with another value unless `force=true`; every other write (create, update, the other
patches) is recorded as an Update of its manager (`fieldManager`, else the User-Agent's prefix).
The result is written as any other write: admission, the ownership checks, the fixpoint."""

from __future__ import annotations

from typing import Any

from inferplane.apiserver import writes
from inferplane.apiserver.catalog import Served
from inferplane.apiserver.replay import Replays
from inferplane.apiserver.status import APIError, invalid
from inferplane.engine.control_plane import ControlPlane
from inferplane.fieldmanager import managers as fm
from inferplane.fieldmanager.fieldset import FieldError, path_string
from inferplane.fieldmanager.schema import shape_of
from inferplane.runtime.store import now

_PATCH_OPTIONS = ("PatchOptions", "meta.k8s.io")


def _options_invalid(causes: list[tuple[str, str]]) -> APIError:
    return invalid(*_PATCH_OPTIONS, "", causes)


def manager_of(query: dict[str, str], user_agent: str, apply: bool) -> str:
    """The request's field manager: `fieldManager`, required for apply (422 without, as
    ValidatePatchOptions answers: k8s.io/apimachinery pkg/apis/meta/v1/validation/validation.go,
    v0.37.0-beta.0, called by k8s.io/apiserver pkg/endpoints/handlers/patch.go); for other writes, the
    User-Agent's prefix when none is named (k8s.io/apiserver pkg/endpoints/handlers/create.go:
    managerOrUserAgent)."""
    manager = query.get("fieldManager", "")
    if apply and not manager:
        raise _options_invalid([("fieldManager", "Required value: is required for apply patch: name the field "
                                 "manager (kubectl apply --server-side --field-manager=NAME)")])
    if len(manager.encode()) > fm.MAX_MANAGER or any(not c.isprintable() for c in manager):
        raise _options_invalid([("fieldManager", f"Invalid value: must be at most {fm.MAX_MANAGER} bytes of "
                                 "printable characters: send a shorter name")])
    return manager or fm.manager_from_user_agent(user_agent)


def force_of(query: dict[str, str], apply: bool) -> bool:
    force = query.get("force")
    if force is None:
        return False
    if not apply:
        raise _options_invalid([("force", "Forbidden: may not be specified for non-apply patch: drop force, or "
                                 "send an apply patch (application/apply-patch+yaml)")])
    if force not in ("true", "false"):
        raise APIError(400, "BadRequest", f"force: {force[:40]!r} is not true or false")
    return force == "true"


def conflict(error: fm.Conflicts) -> APIError:
    """409 Conflict with one cause per field (k8s.io/apimachinery pkg/util/managedfields/internal/conflict.go,
    v0.37.0-beta.0: NewConflictError; kubectl prints the message and how to resolve the conflicts:
    k8s.io/kubectl pkg/cmd/apply/apply.go, v0.37.0-beta.0)."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {entry.describe()}",
               "field": path_string(path)} for path, entry in error.conflicts]
    return APIError(409, "Conflict", error.message(), {"causes": causes})


def apply(runtime: ControlPlane, served: Served, config: dict[str, Any], manager: str, force: bool, dry_run: bool,
          replays: Replays) -> writes.Written:
    """Apply `config` (checked_body) as `manager`: created when missing, merged otherwise."""
    meta = config["metadata"]
    key = writes.key_of(served, meta.get("namespace", ""), meta["name"])
    current = runtime.get(key)
    before = fm.read(current)
    entry = fm.Entry(manager, fm.APPLY, served.api_version)
    live = fm.managed_part(current)
    try:
        out, after = fm.apply(live, fm.managed_part(config), before, entry, shape_of(served.api_version, served.kind),
                              force)
    except fm.Conflicts as error:
        raise conflict(error) from None
    except FieldError as error:
        raise invalid(served.kind, served.group, key.name, [(error.path.lstrip("."), error.message)]) from None
    if current is not None and out == live and fm.same(before, after):
        return writes.Written(current, False, [])  # nothing changed: nothing is written
    body = {"apiVersion": served.api_version, "kind": served.kind, **out}
    body["metadata"] = {**out.get("metadata", {}), "name": key.name}
    if served.namespaced:
        body["metadata"]["namespace"] = key.namespace
    if "resourceVersion" in meta:
        body["metadata"]["resourceVersion"] = meta["resourceVersion"]
    return writes.write(runtime, served, body, create=current is None, dry_run=dry_run, replays=replays,
                        recorded=fm.written(fm.stamped(before, after, now())))
