"""Admission: every manifest checked against its kind's schema and rules before anything stores it."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

import inferplane
from inferplane.admission.files import admit_each, admit_files
from inferplane.admission.limits import StreamLimits
from inferplane.admission.object_meta import CORE_DEFINITIONS, DEFINITIONS
from inferplane.admission.manifests import STDIN, LoadError, Manifest, inputs, load, read_input, source_name
from inferplane.admission.shares import share_problems
from inferplane.admission.stored_kinds import provider_config_crds
from inferplane.admission.validate import AdmissionError, admitted_kind
from inferplane.api.cloud import block_name
from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.api.common import Resource
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.model_deployment import ModelDeployment
from inferplane.clouds import CLOUD_MODULES
from inferplane.clouds.kubernetes_version import kubernetes_version_problems
from inferplane.clouds.offerings import machine_problems, placement_problems
from inferplane.nearest import did_you_mean


@dataclass
class AdmissionResult:
    # Once the engine stored them, only the manifests' sources are kept (ControlPlane._store): the object None.
    admitted: list[tuple[Manifest, Resource | None]] = field(default_factory=list)
    errors: list[AdmissionError | LoadError] = field(default_factory=list)
    # What apply would hold, though the API server would store it (its warnings): printed as
    # `Warning:` lines; `validate --strict` counts them as errors.
    warnings: list[AdmissionError] = field(default_factory=list)
    # Crossplane install objects (packages, RBAC) the embedded engine does not need: accepted, not stored,
    # each named in a note on standard error.
    notes: list[AdmissionError] = field(default_factory=list)
    # Objects of a set of files applied before and unchanged since, not admitted again (ControlPlane.apply).
    unchanged: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


def admit_manifests(manifests: list[Manifest],
                    known_classes: Mapping[str, InferenceClass] | None = None) -> AdmissionResult:
    """Admit each manifest, then check clusters against the classes (this batch's over `known_classes`)."""
    result = AdmissionResult()
    admit_each(manifests, result.admitted, result.errors, result.notes)
    return _checked_across(result, known_classes)


def _checked_across(result: AdmissionResult, known_classes: Mapping[str, InferenceClass] | None) -> AdmissionResult:
    """Clusters checked against the classes (this batch's over `known_classes`): the checks that read
    more than one object, run at every admission."""
    classes = dict(known_classes or {})
    classes.update({o.metadata.name: o for _, o in result.admitted if isinstance(o, InferenceClass)})
    rejected = set()
    for manifest, obj in result.admitted:
        if isinstance(obj, InferenceCluster):
            problems = [(p.path, p.message) for p in kubernetes_version_problems(obj, classes)]
        elif isinstance(obj, ModelDeployment):
            problems = share_problems(obj, classes)
        else:
            continue
        result.errors += [AdmissionError(manifest.source, obj.kind, obj.metadata.name, path, message)
                          for path, message in problems]
        if problems:
            rejected.add(id(obj))
    result.admitted = [(m, o) for m, o in result.admitted if id(o) not in rejected]
    for manifest, obj in result.admitted:
        held = _held_by_apply(obj, classes) if isinstance(obj, InferenceCluster) else []
        result.warnings += [AdmissionError(manifest.source, obj.kind, obj.metadata.name, path, message)
                            for path, message in [*held, *_unoffered(obj), *_class_advice(obj)]]
    return result


def _class_advice(obj: Resource) -> list[tuple[str, str]]:
    """What a class states of its devices that their drivers' tables say otherwise or cannot check."""
    if not isinstance(obj, InferenceClass):
        return []
    from inferplane.accelerators.registry import class_advice  # the catalog: only where a class is admitted
    from inferplane.clouds import class_gpu

    return class_advice(obj, class_gpu(obj))


# The cloud cluster kinds' provider, by kind.
_CLOUD_OF_KIND = {kind: cloud for cloud, kind in CLOUD_CLUSTER_KINDS.items()}


def _unoffered(obj: Resource) -> list[tuple[str, str]]:
    """(field path, message) for each region, zone, machine or accelerator type an object names that its
    cloud's table of offerings lacks (`inferplane/clouds/offerings/`): warnings, since tables age."""
    if isinstance(obj, InferenceCluster):
        source = obj.spec.cluster.source
        zones = [(f"spec.nodePools[{i}].zones", pool.zones) for i, pool in enumerate(obj.spec.node_pools)]
        return placement_problems(source, obj.spec.cluster.settings(), f"spec.cluster.{block_name(source)}", zones)
    if isinstance(obj, InferenceClass):
        provisioning = obj.spec.provisioning
        if provisioning is None:
            return []
        return machine_problems(CLOUD_MODULES[provisioning.provider], provisioning.machine(),
                                f"spec.provisioning.{block_name(provisioning.provider)}")
    cloud = _CLOUD_OF_KIND.get(type(obj))
    if cloud is None:
        return []
    pools = obj.spec.node_pools
    out = placement_problems(cloud, obj.spec, "spec", [(f"spec.nodePools[{i}].zones", p.zones)
                                                       for i, p in enumerate(pools)])
    for index, pool in enumerate(pools):
        out += machine_problems(CLOUD_MODULES[cloud], pool.machine, f"spec.nodePools[{index}].machine")
    return out


def _held_by_apply(cluster: InferenceCluster, classes: Mapping[str, InferenceClass]) -> list[tuple[str, str]]:
    """(field path, message) for what the reconciler would hold the cluster for: a pool's class that
    exists nowhere (with the nearest name), or drivers its classes claim that the gate refuses."""
    out = []
    for index, pool in enumerate(cluster.spec.node_pools):
        if pool.class_name not in classes:
            near = did_you_mean(pool.class_name, classes)
            hint = f": {near}" if near else ": apply the class, or name one that exists"
            out.append((f"spec.nodePools[{index}].className",
                        f"no InferenceClass {pool.class_name} among these manifests or those applied; apply holds "
                        f"the cluster until it exists{hint}"))
    from inferplane.accelerators import unsupported_devices_message  # the catalog: only where a cluster is admitted

    named = {p.class_name: classes[p.class_name] for p in cluster.spec.node_pools if p.class_name in classes}
    message = unsupported_devices_message(cluster, named)
    if message:
        out.append(("spec.nodePools", f"the supported-drivers gate will hold this cluster (UnsupportedDevices), "
                                      f"provisioning nothing: {message}"))
    return out


# Files read once for an apply (`applied_files`), by path: their bytes and their keys, for admission.
ReadFiles = dict[Path, tuple[bytes | bytearray, bytes]]


class AdmittedFiles(Protocol):
    """Where the objects of files admitted whole are kept (the state's store), by AdmittedFiles key."""

    def admitted_objects(self, key: bytes) -> list[dict[str, Any]] | None: ...

    def keep_admitted(self, files: dict[bytes, list[dict[str, Any]]]) -> None: ...


@functools.cache
def admission_code() -> bytes:
    """What a file's verdict depends on besides the file: inferplane's own code (its kinds, schemas,
    rules and checks, and the ObjectMeta definitions it vendors) and the version of every library it runs
    on. Any change to either admits every file afresh."""
    digest = hashlib.sha256()
    package = Path(inferplane.__file__).parent
    for path in sorted([*package.rglob("*.py"), DEFINITIONS, CORE_DEFINITIONS, *provider_config_crds()]):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    for requirement in sorted(importlib.metadata.distribution("inferplane").requires or ()):
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group(0)  # PEP 508: the name comes first
        try:
            digest.update(f"{name}=={importlib.metadata.version(name)}\n".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{name} absent\n".encode())
    return digest.digest()


def admit_paths(paths: list[Path], known_classes: Mapping[str, InferenceClass] | None = None,
                kept: AdmittedFiles | None = None, limits: StreamLimits = StreamLimits(),
                read: ReadFiles | None = None, recursive: bool = True) -> AdmissionResult:
    """Admit every manifest under `paths`. With `kept`, a file admitted whole before, unchanged, at the
    same path, by the same code and under the same limits, yields the objects it admitted to without
    being parsed and checked again (a no-op re-apply of a fleet is mostly that); the checks across
    objects run every time. `read`: files already read, with their keys (`applied_files`), not read again.
    `recursive`: a folder's subfolders too (-R)."""
    if kept is None:
        manifests, load_errors = load(paths, limits, recursive)
        result = admit_manifests(manifests, known_classes)
        result.errors[:0] = load_errors
        return result
    # Each input read, then those not admitted whole before admitted (on two cores when many: files.py),
    # then everything taken in the inputs' order.
    # (a LoadError or the objects it was admitted to before, its key, (source, bytes) to admit afresh)
    taken: list[tuple[LoadError | list[dict] | None, bytes | None, tuple[str, bytes] | None]] = []
    for path in inputs(paths, recursive):
        keyed = path if isinstance(path, LoadError) else _read_keyed(path, limits, read)
        if isinstance(keyed, LoadError):
            taken.append((keyed, None, None))
            continue
        data, key = keyed
        objects = kept.admitted_objects(key) if key is not None else None
        taken.append((objects, key, None if objects is not None else (source_name(path), data)))
    admitted = iter(admit_files([new for _, _, new in taken if new is not None], limits))
    result, load_errors, newly_admitted = AdmissionResult(), [], {}
    for found, key, new in taken:
        if isinstance(found, LoadError):
            load_errors.append(found)
        elif new is None:
            result.admitted += [(Manifest(o["source"], o["body"]),
                                 admitted_kind(o["body"]["apiVersion"], o["body"]["kind"]).model_validate(o["body"]))
                                for o in found]
        else:
            one = next(admitted)
            load_errors += one.load_errors
            result.errors += one.errors
            result.notes += one.notes
            result.admitted += [(manifest, obj) for manifest, obj, _ in one.admitted]
            if one.whole and not one.load_errors and key is not None:
                newly_admitted[key] = [{"source": manifest.source, "body": body} for manifest, _, body in one.admitted]
    kept.keep_admitted(newly_admitted)
    result.errors[:0] = load_errors
    return _checked_across(result, known_classes)


def applied_files(paths: list[Path], limits: StreamLimits = StreamLimits(), read: ReadFiles | None = None,
                  recursive: bool = True) -> list[tuple[Path, str]] | None:
    """The inputs of a set applied whole, in order, each with its file's key (path, bytes, limits, admitting
    code) as hex; None for standard input or an input that cannot be read (nothing to recognise them by).
    `read` gets each file read, with its key, for admission (`admit_paths`) to admit what was read here."""
    out = []
    for path in inputs(paths, recursive):
        if isinstance(path, LoadError) or str(path) == STDIN:
            return None
        found = _read_keyed(path, limits, read)
        if isinstance(found, LoadError):
            return None
        out.append((path, found[1].hex()))
    return out


def _read_keyed(path: Path, limits: StreamLimits, read: ReadFiles | None
                ) -> tuple[bytes | bytearray, bytes | None] | LoadError:
    """An input's bytes and key, or why it cannot be read; through `read`, each file is read once per
    apply. Standard input has no key: it is read once, with nothing to recognise it by next time."""
    if read is not None and path in read:
        return read[path]
    data = read_input(path, limits)
    if isinstance(data, LoadError):
        return data
    if str(path) == STDIN:
        return data, None
    key = _file_key(path, data, limits)
    if read is not None:
        read[path] = (data, key)
    return data, key


def _file_key(path: Path, data: bytes | bytearray, limits: StreamLimits) -> bytes:
    """A file's key among admitted files: its path, bytes, the limits it was read under and the
    admitting code."""
    return hashlib.sha256(admission_code() + repr(limits).encode() + str(path).encode() + b"\0" + data).digest()
