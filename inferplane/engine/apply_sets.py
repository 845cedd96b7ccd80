"""A set of files applied again: what the last set applied whole said is kept, file by file, so that
the same files unchanged say it again without being admitted, and a set of which few files changed
applies those alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from inferplane.admission import AdmissionResult
from inferplane.admission.manifests import source_name
from inferplane.admission.validate import AdmissionError
from inferplane.runtime.reconciler import RunReport
from inferplane.runtime.store import Key, Store

# The state keeps what the last set of files applied whole said, under this key.
LAST_SET = b"last"
# A set of which at most one file in this many changed since it was applied whole applies those files
# alone, the others saying what they said (a one-cluster change to a fleet's folder).
DELTA_SHARE = 4


@dataclass
class ApplyResult:
    admission: AdmissionResult
    applied: list[tuple[Key, str]] = field(default_factory=list)  # (object, "created" | "configured" | "unchanged")
    report: RunReport | None = None


def said_again(files: list[tuple[Path, str]], recorded: dict[str, dict], fresh: dict[str, dict],
               result: ApplyResult, on_applied: Callable[[Key, str], None] | None) -> ApplyResult:
    """The set's answer in file order: what each unchanged file said before (its objects unchanged),
    what each changed one says now (`result`, from applying those alone). Not reconciled: the caller does."""
    verbs = dict(result.applied)
    merged = AdmissionResult(errors=result.admission.errors, admitted=result.admission.admitted)
    out = ApplyResult(merged, report=result.report)
    for _, key in files:
        said = recorded.get(key) or fresh.get(key) or {"warnings": [], "notes": [], "applied": []}
        merged.warnings += [AdmissionError(*w) for w in said["warnings"]]
        merged.notes += [AdmissionError(*n) for n in said["notes"]]
        for applied in said["applied"]:
            verb = "unchanged" if key in recorded else verbs.get(Key(*applied), "unchanged")
            merged.unchanged += key in recorded
            out.applied.append((Key(*applied), verb))
            if on_applied:
                on_applied(Key(*applied), verb)
    return out


def keep_said(store: Store, files: list[tuple[Path, str]], recorded: dict[str, dict], fresh: dict[str, dict] | None,
              result: ApplyResult, before: int) -> None:
    """Keep what the set said, file by file (`recorded` for files unchanged, `fresh` for those applied),
    when every user write since `before` was this apply's own (another command's write in between
    would make it stale) and the fleet is at its fixpoint."""
    changed = sum(verb != "unchanged" for _, verb in result.applied)
    if fresh is None or not result.admission.ok or not result.report.converged or \
            store.user_writes() != before + changed:
        return
    store.keep_applied_set(LAST_SET, {"files": [[key, recorded.get(key) or fresh[key]] for _, key in files]})


def said_by_file(result: ApplyResult, files: list[tuple[Path, str]]) -> dict[str, dict] | None:
    """What an apply said, file by file (by file key): each file's warnings, notes and objects, as a state
    keeps them for the same files applied again; None when a source names no file of the set."""
    keys = {source_name(path): key for path, key in files}
    said = {key: {"warnings": [], "notes": [], "applied": []} for _, key in files}
    fields = lambda e: [e.source, e.kind, e.name, e.path, e.message]  # noqa: E731
    entries = [("warnings", w.source, fields(w)) for w in result.admission.warnings]
    entries += [("notes", n.source, fields(n)) for n in result.admission.notes]
    entries += [("applied", manifest.source, list(key))
                for (manifest, _), (key, _) in zip(result.admission.admitted, result.applied)]
    for part, source, entry in entries:
        key = keys.get(source.split("#", 1)[0].split(" items[", 1)[0])
        if key is None:
            return None
        said[key][part].append(entry)
    return said
