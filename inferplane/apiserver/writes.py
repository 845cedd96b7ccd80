"""Writes as kube-apiserver takes them, through the engine's own admission: create (POST), update
(PUT), patch (PATCH) and delete, each with server-side dry run; the status subresource; optimistic
concurrency by resourceVersion (409 on a stale one); deletion with Crossplane's Usage protection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inferplane.admission.manifests import Manifest
from inferplane.admission.request_body import BodyRefused, read_body
from inferplane.api.json_data import json_copy
from inferplane.apiserver import patches, protobuf
from inferplane.apiserver.catalog import Served
from inferplane.apiserver.replay import RECORDED, Replays, record
from inferplane.apiserver.status import (APIError, already_exists, bad_request, conflict, invalid, not_found,
                                         unsupported_media_type)
from inferplane.engine.control_plane import ControlPlane
from inferplane.engine.in_use import InUse
from inferplane.engine.ownership import composed_refusal
from inferplane.fieldmanager import managers as fm
from inferplane.fieldmanager.fieldset import FieldError
from inferplane.fieldmanager.schema import shape_of
from inferplane.runtime.store import Key, controller_ref, now, resource_version

# kube-apiserver v1.37 reads apply patches in CBOR only with its alpha CBORServingAndStorage gate on (off
# by default: k8s.io/apiserver pkg/features/kube_features.go; pkg/endpoints/installer.go and
# pkg/endpoints/handlers/patch.go, v0.37.0-beta.0); otherwise it answers 415, as this server does.
APPLY_CBOR = "application/apply-patch+cbor"
STALE = "the object has been modified; please apply your changes to the latest version and try again"
# What a custom resource takes as a patch (k8s.io/apiextensions-apiserver pkg/apiserver/
# customresource_handler.go, v0.37.0-beta.0: supportedTypes); the core kinds take a strategic merge patch
# too (k8s.io/apiserver pkg/endpoints/installer.go, v0.37.0-beta.0). Apply patches are taken apart.
CUSTOM_PATCHES = [patches.JSON_PATCH, patches.MERGE]
CORE_PATCHES = [*CUSTOM_PATCHES, patches.STRATEGIC]


@dataclass
class Written:
    obj: dict[str, Any]
    created: bool
    warnings: list[str]


# The bodies this server reads: JSON, YAML, and protobuf for the core kinds kubectl creates itself.
BODY_TYPES = ["application/json", "application/yaml", protobuf.MEDIA_TYPE]


def decoded(raw: bytes, content_type: str) -> Any:
    """A request's body: JSON, or YAML or Kubernetes protobuf where the client says so."""
    media = content_type.split(";", 1)[0].strip()
    if media == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(raw)
        except protobuf.NotDecodable as error:
            raise APIError(415, "UnsupportedMediaType", str(error)) from None
    if media and media not in BODY_TYPES and not media.endswith("+json"):
        raise unsupported_media_type(media, BODY_TYPES)
    try:
        return read_body(raw, yaml="yaml" in media)
    except BodyRefused as error:
        raise bad_request(str(error)) from None


def checked_body(served: Served, namespace: str, name: str | None, body: Any) -> dict[str, Any]:
    """The sent object, its kind, version, namespace and name agreeing with the URL (as the API server
    requires); a namespaced object without a namespace takes the URL's."""
    if not isinstance(body, dict) or not isinstance(body.get("metadata", {}), dict):
        raise bad_request(f"the body is not a {served.kind} object: send a JSON object with metadata")
    body = json_copy(body)
    if body.get("kind", served.kind) != served.kind or body.get("apiVersion", served.api_version) != served.api_version:
        raise bad_request(f"the body is a {body.get('kind')} of {body.get('apiVersion')}, but it was sent to "
                          f"{served.plural} of {served.api_version}: send it to its own kind's URL")
    body["kind"], body["apiVersion"] = served.kind, served.api_version
    meta = body.setdefault("metadata", {})
    if served.namespaced:
        if meta.get("namespace") not in (None, "", namespace):
            raise bad_request(f"the namespace of the provided object ({meta['namespace']}) does not match the "
                              f"namespace sent on the request ({namespace})")
        meta["namespace"] = namespace
    if name is not None and meta.get("name", name) != name:
        raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    if name is not None:
        meta["name"] = name
    if meta.get("name") is not None and not isinstance(meta["name"], str):
        raise invalid(served.kind, served.group, "", [("metadata.name", "must be a string: quote it")])
    if not meta.get("name"):
        raise invalid(served.kind, served.group, "", [("metadata.name", "name is required: set metadata.name")])
    return body


def key_of(served: Served, namespace: str, name: str) -> Key:
    return Key(served.group, served.kind, namespace if served.namespaced else "", name)


def write(runtime: ControlPlane, served: Served, body: dict[str, Any], create: bool, dry_run: bool,
          replays: Replays | None = None, manager: str = "", recorded: list | None = None) -> Written:
    """Create (`create`) or replace an object through admission, as `inferplane apply` writes it; the
    fleet is reconciled by the server's reconciler, not here. An object being deleted (see `delete`)
    keeps its deletionTimestamp, may not gain finalizers, and is deleted once its last one is removed.
    `recorded`: the managedFields a server-side apply recorded; else the write is recorded as an Update of
    `manager` (applies.py)."""
    key = key_of(served, body["metadata"].get("namespace", ""), body["metadata"]["name"])
    current = runtime.get(key)
    if create and current is not None:
        raise already_exists(served.plural, served.group, key.name)
    if not create and current is None:
        raise not_found(served.plural, served.group, key.name)
    owner = controller_ref(current) if current is not None else None
    if owner is not None:  # whatever the write, as apply refuses it (before admission: a composed kind may
        # be one users cannot write at all)
        raise APIError(403, "Forbidden", f'{served.kind} "{key.name}": {composed_refusal(owner)}',
                       {"name": key.name, "group": served.group, "kind": served.plural})
    based_on = body["metadata"].pop("resourceVersion", None)
    if current is not None and based_on is not None and based_on != resource_version(current):
        raise conflict(served.plural, served.group, key.name, STALE)
    body.pop("status", None)
    deleting = (current or {}).get("metadata", {}).get("deletionTimestamp")
    if deleting:
        _check_finalizers(served, key, current, body)
    if recorded is None:
        recorded = recorded_update(served, current, body, manager)
    result = runtime.write([Manifest(f"{served.kind}/{key.name}", body)], reconcile=False, dry_run=dry_run,
                           managed=recorded)
    errors = result.admission.errors
    if errors:
        raise invalid(served.kind, served.group, key.name,
                      [(getattr(e, "path", ""), getattr(e, "message", str(e))) for e in errors])
    warnings = [f"{w.path}: {w.message}" if w.path else w.message for w in result.admission.warnings]
    if dry_run:
        would = _would_store(result, current)
        would["metadata"]["managedFields"] = recorded
        return Written(would, current is None, warnings)
    stored = runtime.get(key) or {}
    if deleting and stored:
        stored = _still_deleting(runtime, served, key, stored, deleting, replays)
    return Written(stored, current is None, warnings)


def recorded_update(served: Served, current: dict[str, Any] | None, body: dict[str, Any],
                    manager: str) -> list[dict[str, Any]]:
    """managedFields after a create, update or non-apply patch by `manager` (Updater.Update)."""
    before = fm.read(current)
    entry = fm.Entry(manager, fm.UPDATE, served.api_version)
    try:
        after = fm.update(fm.managed_part(current), fm.managed_part(body), before, entry,
                          shape_of(served.api_version, served.kind))
    except FieldError as error:
        raise invalid(served.kind, served.group, body["metadata"]["name"],
                      [(error.path.lstrip("."), error.message)]) from None
    return fm.written(fm.stamped(before, after, now()))


def _check_finalizers(served: Served, key: Key, current: dict[str, Any], body: dict[str, Any]) -> None:
    """An object being deleted may lose finalizers, never gain one (k8s.io/apimachinery
    pkg/api/validation/objectmeta.go, v0.37.0-beta.0: ValidateObjectMetaAccessorUpdate, which
    ValidateObjectMetaUpdate calls, and ValidateNoNewFinalizers; upstream prints the names as a Go
    %#v, `[]string{"x"}`)."""
    before = current["metadata"].get("finalizers") or []
    added = [f for f in body["metadata"].get("finalizers") or [] if f not in before]
    if added:
        raise invalid(served.kind, served.group, key.name, [(
            "metadata.finalizers", f"Forbidden: no new finalizers can be added if the object is being deleted, found "
                                   f"new finalizers {added}: remove them from what you send")])


def _still_deleting(runtime: ControlPlane, served: Served, key: Key, stored: dict[str, Any], since: str,
                    replays: Replays | None) -> dict[str, Any]:
    """After an update of an object being deleted: deleted when its finalizers are gone (as kube-apiserver's
    registry deletes an object whose deletionTimestamp is set once its finalizers are empty:
    k8s.io/apiserver pkg/registry/generic/registry/store.go, v0.37.0-beta.0: Update, ShouldDeleteDuringUpdate),
    else marked again (admission drops a deletionTimestamp sent, as the API server does)."""
    if not stored["metadata"].get("finalizers"):
        marked = {**stored, "metadata": {**stored["metadata"], "deletionTimestamp": since}}
        _remove(runtime, served, key, "Background", replays)
        return marked
    if stored["metadata"].get("deletionTimestamp") == since:
        return stored
    marked = json_copy(stored)
    marked["metadata"]["deletionTimestamp"] = since
    return runtime.store.put(marked, known=stored)[0]


def _would_store(result, current: dict[str, Any] | None) -> dict[str, Any]:
    """What a dry run would have stored: the admitted object, with the stored one's identity."""
    [(_, obj)] = result.admission.admitted
    body = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    if current is not None:
        kept = {k: current["metadata"][k] for k in ("uid", "creationTimestamp", "generation", "resourceVersion")
                if k in current["metadata"]}
        body["metadata"] = {**body["metadata"], **kept}
        if "status" in current:
            body["status"] = current["status"]
    return body


def patched(served: Served, current: dict[str, Any], content_type: str, raw: bytes) -> dict[str, Any]:
    """The current object with the patch applied, by the patch's media type."""
    media = content_type.split(";", 1)[0].strip()
    accepted = CORE_PATCHES if served.group == "" else CUSTOM_PATCHES
    if media == APPLY_CBOR:
        raise APIError(415, "UnsupportedMediaType", "an apply patch in CBOR (application/apply-patch+cbor) is not "
                       "read by inferplane serve: send it as YAML or JSON (application/apply-patch+yaml)")
    if media not in accepted:
        raise unsupported_media_type(media, accepted)
    patch = decoded(raw, media)
    try:
        if media == patches.MERGE:
            return patches.merge_patch(current, patch)
        if media == patches.JSON_PATCH:
            return patches.json_patch(current, patch)
        return patches.strategic_merge_patch(served.kind, current, patch)
    except patches.PatchTooLarge as error:
        raise APIError(413, "RequestEntityTooLarge", str(error)) from None
    except patches.PatchError as error:
        raise APIError(422, "Invalid", f'{served.kind} "{current["metadata"]["name"]}": {error}') from None


def write_status(runtime: ControlPlane, served: Served, key: Key, body: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    """The status subresource: only the status of what was sent is written (spec and metadata stay)."""
    current = runtime.get(key)
    if current is None:
        raise not_found(served.plural, served.group, key.name)
    based_on = (body.get("metadata") or {}).get("resourceVersion")
    if based_on is not None and based_on != resource_version(current):
        raise conflict(served.plural, served.group, key.name, STALE)
    status = body.get("status")
    if not isinstance(status, dict):
        raise invalid(served.kind, served.group, key.name, [("status", "status must be an object")])
    if dry_run:
        return {**current, "status": status}
    stored, _ = runtime.store.put_status(key, status, current)
    return stored


def check_propagation(propagation: str | None) -> str:
    """The propagation policy asked for (Background unless said); Orphan is refused: a composite's
    composed objects never outlive it."""
    if propagation not in (None, "Background", "Foreground"):
        raise bad_request(f"propagationPolicy {propagation} is not supported: what a composite composed goes with "
                          "it; use Background or Foreground")
    return propagation or "Background"


def delete(runtime: ControlPlane, served: Served, key: Key, dry_run: bool, propagation: str,
           replays: Replays) -> dict[str, Any]:
    """Delete an object and what it composed (Background and Foreground alike: both are gone when this
    answers). One still in use is refused, its deletion recorded in `replays` to be done once its users
    are gone (`replay.py`)."""
    current = runtime.get(key)
    if current is None:
        raise not_found(served.plural, served.group, key.name)
    if current["metadata"].get("finalizers"):
        # Not deleted yet: marked (metadata.deletionTimestamp), Terminating until an update removes its last
        # finalizer, and answered 200 with the object, as kube-apiserver does (k8s.io/apiserver
        # pkg/registry/generic/registry/store.go, v0.37.0-beta.0: Delete, updateForGracefulDeletionAndFinalizers,
        # markAsDeleting; pkg/endpoints/handlers/delete.go: 200 unless orphanDependents=false). markAsDeleting
        # also sets deletionGracePeriodSeconds to 0 and adds 1 to a positive generation; this does neither.
        if current["metadata"].get("deletionTimestamp") or dry_run:
            return current
        marked = json_copy(current)
        marked["metadata"]["deletionTimestamp"] = now()
        return runtime.store.put(marked, known=current)[0]
    if dry_run:
        return current
    _remove(runtime, served, key, propagation, replays)
    return current


def _remove(runtime: ControlPlane, served: Served, key: Key, propagation: str, replays: Replays | None) -> None:
    try:
        runtime.delete(key)
    except InUse as refused:
        # Crossplane's Usage webhook answers 409 (crossplane/crossplane internal/webhook/protection/usage/
        # handler.go, v2, read at 0be002d0a370: `Code: int32(http.StatusConflict)`, the first usage named
        # in the Status's reason by inUseMessage).
        message = str(refused)
        if replays is not None and record(runtime, key, propagation):
            replays.add(key)
            message += f"; {RECORDED}"
        raise APIError(409, "Conflict", message, {"name": key.name, "group": served.group,
                                                  "kind": served.plural}) from None


def _at(obj: dict[str, Any], path: str) -> Any:
    node: Any = obj
    for part in path.strip(".").split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def scale_of(served: Served, obj: dict[str, Any]) -> dict[str, Any]:
    """The scale subresource of an object (autoscaling/v1 Scale), by its kind's specReplicasPath and
    statusReplicasPath, as kube-apiserver serves a custom resource's."""
    paths = served.scale or {}
    meta = {k: obj["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in obj["metadata"]}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta,
            "spec": {"replicas": _at(obj, paths["specReplicasPath"]) or 0},
            "status": {"replicas": _at(obj, paths["statusReplicasPath"]) or 0}}


def scaled(served: Served, current: dict[str, Any], scale: Any) -> dict[str, Any]:
    """The object with the replicas a Scale asks for, to be written as any update (admission checks them)."""
    spec = scale.get("spec") if isinstance(scale, dict) else None
    replicas = spec.get("replicas") if isinstance(spec, dict) else None
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise invalid("Scale", "autoscaling", current["metadata"]["name"],
                      [("spec.replicas", "spec.replicas must be a whole number")])
    body = json_copy({k: v for k, v in current.items() if k != "status"})
    meta = scale.get("metadata")
    based_on = meta.get("resourceVersion") if isinstance(meta, dict) else None
    if based_on is not None:
        body["metadata"]["resourceVersion"] = based_on
    *parents, leaf = (served.scale or {})["specReplicasPath"].strip(".").split(".")
    node = body
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = replicas
    return body
