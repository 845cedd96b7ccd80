"""Crossplane's ownership, as the API refuses a write: an object a composite controls is changed through
the composite, and an immutable core object is not changed at all."""

from __future__ import annotations

from inferplane.admission import AdmissionResult
from inferplane.admission.stored_kinds import update_problem
from inferplane.admission.validate import AdmissionError
from inferplane.runtime.store import Key, Resource, Store, controller_ref


def refuse_composed(store: Store, admission: AdmissionResult) -> list[Resource]:
    """The admitted objects' bodies, less those naming an object a composite controls: each of those
    becomes an admission error naming the composite (its next reconcile would write the object back,
    or delete and compose it again, as Crossplane's ownership does). Decided per object: a kind may be
    both composed and written by users (a ModelEndpoint)."""
    bodies, admitted = [], []
    for manifest, obj in admission.admitted:
        body = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
        key = Key.of(body)
        # Only what may refuse the write is read whole: a controlled object, a core object (which may
        # be immutable); most objects are neither, and are not decoded.
        current = store.get(key) if key.group == "" or store.controller_uid(key) else None
        owner = controller_ref(current) if current is not None else None
        refused = update_problem(current, body) if current is not None else None
        if refused is not None:
            admission.errors.append(AdmissionError(manifest.source, body["kind"], body["metadata"]["name"],
                                                   "immutable", refused))
            continue
        if owner is None:
            bodies.append(body)
            admitted.append((manifest, obj))
            continue
        admission.errors.append(AdmissionError(manifest.source, body["kind"], body["metadata"]["name"], "",
                                               composed_refusal(owner)))
    admission.admitted = admitted
    return bodies


def composed_refusal(owner: dict) -> str:
    """Why a write to an object a composite controls is refused (`owner`: its controller reference)."""
    composite = f"{owner['kind']}/{owner['name']}"
    return (f"composed and controlled by {composite}, whose next reconcile would undo any change made here: "
            f"change {composite} instead (nothing was written)")
