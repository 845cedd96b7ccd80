"""Deletions refused because something still uses the object, recorded and done again once its users
are gone, as Crossplane's Usage does with `replayDeletion` (which every Usage Modelplane and inferplane
compose sets).

Crossplane v2: the usage webhook refuses the deletion (409) and records the attempt on the used object,
as the annotation `usage.crossplane.io/deletion-attempt-with-policy` holding the propagation policy
(crossplane/crossplane internal/webhook/protection/usage/handler.go; the key is
`protection.AnnotationKeyDeletionAttempt`); once the object's Usage is gone and it sets
`replayDeletion`, the usage controller deletes the object again with that policy
(internal/controller/protection/usage/reconciler.go). So `kubectl delete -f` of a folder that lists a
class before the clusters using it reports the class's refusal (exit 1), and the class goes by itself
once the clusters are gone. Here the server's reconciler thread tries the recorded deletions after each
round, and every few seconds while some remain (another process may remove their users)."""

from __future__ import annotations

import threading
from typing import Callable

from inferplane.api.json_data import json_copy
from inferplane.engine.control_plane import ControlPlane
from inferplane.engine.in_use import InUse
from inferplane.runtime.store import Key, resource_version

DELETION_ATTEMPT = "usage.crossplane.io/deletion-attempt-with-policy"
# How often recorded deletions are tried again while some remain (Crossplane replays about two seconds
# after the last Usage goes: the reconciler's `time.Sleep(2 * time.Second)`).
REPLAY_SECONDS = 2.0
# What the refusal adds, so that the user knows not to run the deletion again.
RECORDED = (f"the deletion is recorded ({DELETION_ATTEMPT}) and done by itself once its users are gone, as "
            "Crossplane's Usage replayDeletion does: no need to run it again")


def record(runtime: ControlPlane, key: Key, policy: str) -> bool:
    """Mark a refused deletion on the object (whoever controls it). False: it is gone or moved on."""
    current = runtime.get(key)
    if current is None:
        return False
    annotations = current["metadata"].get("annotations") or {}
    if annotations.get(DELETION_ATTEMPT) == policy:
        return True
    body = json_copy({k: v for k, v in current.items() if k != "status"})
    body["metadata"]["annotations"] = {**annotations, DELETION_ATTEMPT: policy}
    body["metadata"]["resourceVersion"] = resource_version(current)
    runtime.store.put(body, known=current)
    return True


class Replays:
    """The recorded deletions the server knows of: those it recorded, and those in the state at start."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log
        self.keys: set[Key] = set()
        self.lock = threading.Lock()

    def add(self, key: Key) -> None:
        with self.lock:
            self.keys.add(key)

    def load(self, runtime: ControlPlane) -> None:
        """Every stored object carrying a recorded deletion (another server's, before this one started)."""
        found = {key for key, _, body in runtime.store.rows() if DELETION_ATTEMPT in body
                 and DELETION_ATTEMPT in (runtime.store.decode(body)["metadata"].get("annotations") or {})}
        with self.lock:
            self.keys |= found

    def run(self, runtime: ControlPlane) -> bool:
        """Delete again each recorded object whose users are gone; those still in use stay. Repeated while
        a pass deletes something (one object's users may be another recorded one). Whether some remain."""
        progress = True
        while progress:
            progress = False
            with self.lock:
                keys = sorted(self.keys)
            for key in keys:
                done = self._replayed(runtime, key)
                progress = progress or done
        with self.lock:
            return bool(self.keys)

    def _replayed(self, runtime: ControlPlane, key: Key) -> bool:
        current = runtime.get(key)
        if current is None or DELETION_ATTEMPT not in (current["metadata"].get("annotations") or {}):
            self._drop(key)  # deleted meanwhile, or written again without the mark
            return False
        try:
            deleted, _ = runtime.delete(key)
        except InUse:
            return False
        if deleted:  # not deleted: the lease stayed busy; tried again later
            self.log(f"replayed the deletion of {key.qualified()}: its users are gone")
            self._drop(key)
        return deleted

    def _drop(self, key: Key) -> None:
        with self.lock:
            self.keys.discard(key)
