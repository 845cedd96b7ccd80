"""Admission: every manifest checked against its kind's schema and rules before anything stores it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from inferplane.admission.manifests import LoadError, Manifest, load
from inferplane.admission.validate import AdmissionError, admit
from inferplane.api.common import Resource
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.clouds.kubernetes_version import kubernetes_version_problems


@dataclass
class AdmissionResult:
    admitted: list[tuple[Manifest, Resource]] = field(default_factory=list)
    errors: list[AdmissionError | LoadError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def admit_manifests(manifests: list[Manifest],
                    known_classes: Mapping[str, InferenceClass] | None = None) -> AdmissionResult:
    """Admit each manifest, then check clusters against the classes (this batch's over `known_classes`)."""
    result = AdmissionResult()
    for manifest in manifests:
        obj, errors = admit(manifest)
        result.errors.extend(errors)
        if obj is not None:
            result.admitted.append((manifest, obj))
    classes = dict(known_classes or {})
    classes.update({o.metadata.name: o for _, o in result.admitted if isinstance(o, InferenceClass)})
    rejected = set()
    for manifest, obj in result.admitted:
        if isinstance(obj, InferenceCluster):
            problems = kubernetes_version_problems(obj, classes)
            for problem in problems:
                result.errors.append(AdmissionError(
                    manifest.source, obj.kind, obj.metadata.name, problem.path, problem.message))
            if problems:
                rejected.add(id(obj))
    result.admitted = [(m, o) for m, o in result.admitted if id(o) not in rejected]
    return result


def admit_paths(paths: list[Path], known_classes: Mapping[str, InferenceClass] | None = None) -> AdmissionResult:
    manifests, load_errors = load(paths)
    result = admit_manifests(manifests, known_classes)
    result.errors[:0] = load_errors
    return result
