"""The embedded runtime as a user drives it: apply manifests, reconcile the fleet, read it back."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from inferplane.admission import AdmissionResult, admit_paths
from inferplane.api.inference_class import InferenceClass
from inferplane.engine.fleet import simulate_fleet
from inferplane.engine.reconciler import Reconciler, RunReport
from inferplane.engine.store import Key, Resource, Store

DEFAULT_STATE = Path(".inferplane")
STATE_ENV = "INFERPLANE_STATE"


def state_dir(option: Path | None) -> Path:
    """--state wins, then $INFERPLANE_STATE, then ./.inferplane."""
    if option is not None:
        return option
    return Path(os.environ[STATE_ENV]) if os.environ.get(STATE_ENV) else DEFAULT_STATE


@dataclass
class ApplyResult:
    admission: AdmissionResult
    applied: list[tuple[Key, str]] = field(default_factory=list)  # (object, "created" | "configured" | "unchanged")
    report: RunReport | None = None


class Runtime:
    def __init__(self, state: Path | None, progress: Callable[[int, int], None] | None = None):
        """`state=None` keeps everything in memory (render); otherwise the store lives in `state`."""
        self.store = Store(state)
        self.progress = progress

    def close(self) -> None:
        self.store.close()

    def known_classes(self) -> dict[str, InferenceClass]:
        return {o["metadata"]["name"]: InferenceClass.model_validate(o) for o in self.store.list("InferenceClass")}

    def apply(self, paths: list[Path], on_applied: Callable[[Key, str], None] | None = None) -> ApplyResult:
        """Admission first: nothing of a rejected manifest is stored. Then reconcile to a fixpoint.

        `on_applied` hears of each object once its write is committed (acknowledged)."""
        admission = admit_paths(paths, known_classes=self.known_classes())
        result = ApplyResult(admission)
        for _, obj in admission.admitted:
            body = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
            body.pop("status", None)
            key = Key.of(body)
            existed = self.store.get(key) is not None
            # Each object is its own transaction: acknowledged writes survive a kill mid-apply.
            _, changed = self.store.put(body)
            verb = "unchanged" if not changed else "configured" if existed else "created"
            result.applied.append((key, verb))
            if on_applied:
                on_applied(key, verb)
        result.report = self.reconcile()
        return result

    def reconcile(self) -> RunReport:
        report = Reconciler(self.store, progress=self.progress).run()
        simulate_fleet(self.store)
        return report

    def delete(self, key: Key) -> bool:
        deleted = Reconciler(self.store).delete(key)
        if deleted:
            self.reconcile()
        return deleted

    def get(self, key: Key) -> Resource | None:
        return self.store.get(key)

    def list(self, kind: str | None = None) -> list[Resource]:
        return self.store.list(kind)
