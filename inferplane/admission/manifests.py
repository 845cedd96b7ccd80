"""Reading manifests from files and folders: every document with where it came from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Manifest:
    source: str  # "path" or "path#2" for the third document of a file
    body: dict[str, Any]


@dataclass(frozen=True)
class LoadError:
    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


def manifest_files(path: Path) -> list[Path]:
    """A file as given, or every manifest file under a folder, in a stable order."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    return [path]


def load(paths: list[Path]) -> tuple[list[Manifest], list[LoadError]]:
    manifests: list[Manifest] = []
    errors: list[LoadError] = []
    for root in paths:
        if not root.exists():
            errors.append(LoadError(str(root), "no such file or folder"))
            continue
        for path in manifest_files(root):
            _load_file(path, manifests, errors)
    return manifests, errors


def _load_file(path: Path, manifests: list[Manifest], errors: list[LoadError]) -> None:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(LoadError(str(path), f"cannot read: {exc}"))
        return
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        errors.append(LoadError(where, f"malformed YAML: {problem}: fix the syntax at this line"))
        return
    many = sum(d is not None for d in documents) > 1
    for index, document in enumerate(documents):
        source = f"{path}#{index}" if many else str(path)
        if document is None:
            continue
        if not isinstance(document, dict):
            errors.append(LoadError(source, f"a manifest must be a mapping with apiVersion, kind and metadata, "
                                            f"not a {type(document).__name__}"))
            continue
        manifests.append(Manifest(source, document))
