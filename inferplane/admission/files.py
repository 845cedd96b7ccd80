"""Admitting manifests one by one, and many files on two cores.

A fleet's apply parses and checks thousands of files, each on its own: 4.9 s of a 10,000-cluster
apply's 7.7 s of admission, on one core while the other idles. With at least FORK_MIN files to admit, a
forked child admits the second half while this process admits the first; the child's objects come back
as JSON and are validated again here, as a file admitted before is (admit_paths' kept files). A child
that fails changes nothing: its files are admitted here.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

from inferplane.admission.install_objects import install_object_name, install_object_note
from inferplane.admission.limits import StreamLimits
from inferplane.admission.manifests import LoadError, Manifest, parse_input
from inferplane.admission.validate import AdmissionError, admit, admitted_kind

# Below this many files, forking costs more than half their admission saves.
FORK_MIN = 1000


@dataclass
class FileAdmission:
    """One file's admission: what reading it found, its objects (each with the JSON it is kept as) and
    its errors and notes; `whole`: every manifest of it admitted."""
    load_errors: list[LoadError]
    admitted: list[tuple[Manifest, Any, dict]]
    errors: list[AdmissionError]
    notes: list[AdmissionError]
    whole: bool


def admit_each(manifests: list[Manifest], admitted: list, errors: list, notes: list) -> bool:
    """Admit each manifest, appending (manifest, object) to `admitted`; whether every one was admitted."""
    whole = True
    for manifest in manifests:
        if install_object_note(manifest.body) is not None:
            _note_install_object(manifest, errors, notes)
            whole = False  # its note is printed on every apply: the file is read again
            continue
        obj, found = admit(manifest)
        errors.extend(found)
        if obj is not None:
            admitted.append((manifest, obj))
        else:
            whole = False
    return whole


def _note_install_object(manifest: Manifest, errors: list, notes: list) -> None:
    kind, name = manifest.body["kind"], install_object_name(manifest)
    if name is None:
        errors.append(AdmissionError(manifest.source, kind, "<unnamed>", "metadata.name",
                                     "required: every object has a name"))
        return
    why = install_object_note(manifest.body)
    notes.append(AdmissionError(manifest.source, kind, name, "",
                                f"not needed by the embedded engine, not stored: it {why}"))


def admit_file(source: str, data: bytes, limits: StreamLimits) -> FileAdmission:
    manifests, load_errors = parse_input(source, data, limits)
    admitted: list = []
    errors: list = []
    notes: list = []
    whole = admit_each(manifests, admitted, errors, notes)
    return FileAdmission(load_errors, [(m, obj, obj.model_dump(by_alias=True, mode="json")) for m, obj in admitted],
                         errors, notes, whole)


def admit_files(files: list[tuple[str, bytes]], limits: StreamLimits) -> list[FileAdmission]:
    """Each file (source, bytes) admitted, in order: on two cores when there are many (see the module)."""
    if len(files) < FORK_MIN or (os.cpu_count() or 1) < 2 or not hasattr(os, "fork") \
            or threading.active_count() > 1:  # a fork copies no other thread, nor the locks they hold
        return [admit_file(source, data, limits) for source, data in files]
    half = len(files) // 2
    with tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:  # the child: the second half, written as JSON-like data, then gone without cleanup
            code = 1
            try:
                pickle.dump([_as_data(admit_file(source, data, limits)) for source, data in files[half:]], out)
                out.flush()
                code = 0
            finally:
                os._exit(code)
        first = [admit_file(source, data, limits) for source, data in files[:half]]
        _, status = os.waitpid(pid, 0)
        second = None
        if os.waitstatus_to_exitcode(status) == 0:
            out.seek(0)
            second = [_from_data(one) for one in pickle.load(out)]
    return first + (second if second is not None else [admit_file(source, data, limits) for source, data in
                                                      files[half:]])


def _as_data(one: FileAdmission) -> FileAdmission:
    """What crosses from the child: each object as the JSON it is kept as, not its model."""
    return FileAdmission(one.load_errors, [(m, None, body) for m, _, body in one.admitted], one.errors, one.notes,
                         one.whole)


def _from_data(one: FileAdmission) -> FileAdmission:
    """A file the child admitted, its objects validated again from their JSON, as a kept file's are."""
    return FileAdmission(one.load_errors,
                         [(m, admitted_kind(body["apiVersion"], body["kind"]).model_validate(body), body)
                          for m, _, body in one.admitted], one.errors, one.notes, one.whole)
