"""Users' own GPUMetricsMapping files (`inferplane metrics ... --mapping FILE`), read like any manifest:
the loader's limits, and every problem at once with file, Kind/name, field path and fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from inferplane.admission.manifests import Manifest, load
from inferplane.admission.validate import AdmissionError
from inferplane.metrics.mappings import KIND, MAPPING_API_VERSION, GPUMetricsMapping


@dataclass(frozen=True)
class MappingErrors(Exception):
    errors: tuple[AdmissionError, ...]

    def __str__(self) -> str:
        return "\n".join(map(str, self.errors))


def read_mappings(paths: list[Path]) -> list[GPUMetricsMapping]:
    """Every GPUMetricsMapping in those files; MappingErrors with all the problems at once."""
    manifests, load_errors = load(paths)
    errors = [AdmissionError(e.source, KIND, "<unknown>", "", e.message) for e in load_errors]
    mappings = []
    for manifest in manifests:
        mapping, problems = parse_mapping(manifest)
        errors += problems
        if mapping is not None:
            mappings.append(mapping)
    names = [m.metadata.name for m in mappings]
    for name in sorted({n for n in names if names.count(n) > 1}):
        errors.append(AdmissionError(str(paths[0]), KIND, name, "metadata.name",
                                     "two mappings have this name: rename one"))
    if errors:
        raise MappingErrors(tuple(errors))
    return mappings


def parse_mapping(manifest: Manifest) -> tuple[GPUMetricsMapping | None, list[AdmissionError]]:
    body = manifest.body
    metadata = body.get("metadata")
    name = str(metadata.get("name", "<unnamed>")) if isinstance(metadata, dict) else "<unnamed>"
    kind = body.get("kind", "<no kind>")
    # What reading found (a key written twice) keeps the mapping out, beside its other errors.
    errors = [AdmissionError(manifest.source, KIND, name, path, message) for path, message in manifest.problems]
    if kind != KIND or body.get("apiVersion") != MAPPING_API_VERSION:
        return None, errors + [AdmissionError(manifest.source, str(kind), name, "kind",
                                              f"expected apiVersion {MAPPING_API_VERSION} and kind {KIND}, got "
                                              f"{body.get('apiVersion')!r} {kind!r}: a mapping file holds only "
                                              "mappings")]
    try:
        mapping = GPUMetricsMapping.model_validate(body)
        return (None, errors) if errors else (mapping, [])
    except ValidationError as error:
        for problem in error.errors():
            path = ".".join(str(p) for p in problem["loc"])
            message = problem["msg"].removeprefix("Value error, ")
            if problem["type"] == "extra_forbidden":
                message = "unknown field: remove it (see docs/metrics.md for the schema)"
            elif problem["type"] == "missing":
                message = "required: set it (see docs/metrics.md for the schema)"
            errors.append(AdmissionError(manifest.source, KIND, name, path, message))
        return None, errors
