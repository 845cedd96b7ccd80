"""How the runtime marks what a composite composes, as Crossplane does: the composition key, the
composite's label and its controller reference, on each composed object.

The marks are built once and shared: every object a composite composes carries the same owner reference
and label, and every cluster's objects the same composition keys, so a fleet of 10,000 clusters holds
each once rather than once per object (a sixth of what a full apply's cache held). Shared copies refuse
to be changed (json_data.frozen), as nothing in the engine changes an object once built.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import orjson

from inferplane.api.json_data import frozen
from inferplane.api.managed import composed_name
from inferplane.runtime.keys import Resource

# Crossplane marks each composed resource with the key its function gave it.
COMPOSITION_KEY = "crossplane.io/composition-resource-name"
COMPOSITE_LABEL = "crossplane.io/composite"
# How many distinct marks of each sort are kept built: a reconcile applies a composite's objects one
# after another, so the marks of the last few composites are the ones asked for again.
MARKS_KEPT = 4096


def composed_metadata(composite: Resource, name: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The metadata of the object a composite's function desired under `name`, marked as composed by it
    (a new dict; what the function gave is not changed)."""
    meta = dict(metadata)
    composite_meta = composite["metadata"]
    # As Crossplane names what a function leaves unnamed: the composite's name and a hash.
    if "name" not in meta:
        meta["name"] = composed_name(composite_meta["name"], name, scope=composite["kind"])
    meta["annotations"] = _marked(meta.get("annotations"), COMPOSITION_KEY, name)
    meta["labels"] = _marked(meta.get("labels"), COMPOSITE_LABEL, composite_meta["name"])
    meta["ownerReferences"] = controller_reference(composite["apiVersion"], composite["kind"], composite_meta["name"],
                                                   composite_meta["uid"])
    meta.pop("resourceVersion", None)
    return meta


def _marked(given: Any, key: str, value: str) -> dict[str, Any]:
    """`given` (a function's labels or annotations) with key=value added: a shared copy when every
    value given is a string (as Kubernetes requires), else a dict of its own."""
    items = tuple((given or {}).items())
    if all(isinstance(v, str) for _, v in items):
        return _shared_marks(items, key, value)
    return {**given, key: value}


@functools.lru_cache(maxsize=MARKS_KEPT)
def _shared_marks(items: tuple[tuple[str, str], ...], key: str, value: str) -> dict[str, Any]:
    return frozen({**dict(items), key: value})


@functools.lru_cache(maxsize=MARKS_KEPT)
def controller_reference(api_version: str, kind: str, name: str, uid: str) -> list[dict[str, Any]]:
    """The ownerReferences of an object the composite composed: the composite, as its controller."""
    return frozen([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True,
                    "blockOwnerDeletion": True}])


def desired_digest(resource: Resource) -> bytes | None:
    """A digest of a desired resource as a function returned it, key order included (an equal resource
    in another order only misses the shortcut it serves); None when it does not encode as JSON."""
    try:
        # SHA-256 rather than BLAKE2: with the CPU's SHA instructions, half the time on a chart's values.
        return hashlib.sha256(orjson.dumps(resource)).digest()[:16]
    except (orjson.JSONEncodeError, TypeError):
        return None
