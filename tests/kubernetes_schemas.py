"""Kubernetes objects (a simulated cluster's, the manifests composed Objects apply) checked against
Kubernetes' published OpenAPI schemas, for the tests.

The schemas come from the `kubernetes-validate` package (its strict variant: an unknown field is an
error), read directly and compiled once per kind: its own `validate()` re-reads a 1.5 MB file on
every call and stops at the first error. Without the package (or a schema for the version asked)
`schema_errors` raises `SchemaUnavailable`: the tests install it and fail, never skip, without it.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, Iterable

import jsonschema
from referencing import Registry, Resource

from inferplane.api.cloud import DEFAULT_MINOR
from inferplane.clouds.kubernetes_version import minor


class SchemaUnavailable(RuntimeError):
    """kubernetes-validate is not installed, or has no schema for that Kubernetes version."""


def schema_errors(objects: Iterable[dict[str, Any]], kubernetes_version: str = DEFAULT_MINOR) -> list[str]:
    """Every schema error of every object, as `<kind>/<name>: <path>: <message>`; empty when valid."""
    errors = []
    for obj in objects:
        validator = _validator(_schema_dir(kubernetes_version), obj["kind"], obj["apiVersion"])
        for error in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
            path = ".".join(map(str, error.absolute_path)) or "<root>"
            errors.append(f"{obj['kind']}/{obj['metadata'].get('name')}: {path}: {error.message}")
    return errors


@functools.lru_cache(maxsize=8)
def _schema_dir(kubernetes_version: str) -> Path:
    """The strict schema folder of the newest schema release not newer than the version asked for."""
    try:
        import kubernetes_validate
    except ImportError:
        raise SchemaUnavailable("kubernetes-validate is not installed") from None
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    wanted = minor(kubernetes_version)
    candidates = sorted((minor(d.name[1:]), d) for d in root.iterdir()
                        if re.fullmatch(r"v\d+\.\d+\.\d+-local-strict", d.name) and minor(d.name[1:]) <= wanted)
    if not candidates:
        raise SchemaUnavailable(f"kubernetes-validate has no schemas for Kubernetes {kubernetes_version}")
    return candidates[-1][1]


@functools.lru_cache(maxsize=64)
def _validator(schema_dir: Path, kind: str, api_version: str) -> jsonschema.protocols.Validator:
    # rbac.authorization.k8s.io/v1 -> rbac-v1; v1 -> v1 (the package's file naming).
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema_file = schema_dir / f"{kind.lower()}-{group_version}.json"
    if not schema_file.exists():
        raise SchemaUnavailable(f"no schema for {kind} {api_version} in {schema_dir.name}")
    schema = json.loads(schema_file.read_text())
    definitions = json.loads((schema_dir / "_definitions.json").read_text())
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)
