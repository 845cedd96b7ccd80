"""What the server serves: each resource type with its URL's names, and how its rows print.

The command that starts the server hands these in (the CLI's table of types, kubectl's spellings,
and its printer columns), so that `kubectl get` and `inferplane get` name and print a kind alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from inferplane.api import KINDS_BY_NAME

# A printer column: its header and what it shows of an object.
Column = tuple[str, Callable[[dict[str, Any]], Any]]


@dataclass(frozen=True)
class Served:
    kind: str
    api_version: str  # "v1", "inferplane.dev/v1alpha1"
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    @property
    def version(self) -> str:
        return self.api_version.rsplit("/", 1)[-1]

    @property
    def scale(self) -> dict[str, str] | None:
        """The scale subresource's paths, for the kinds that serve one (ModelDeployment)."""
        kind = KINDS_BY_NAME.get(self.kind)
        return kind.SCALE if kind is not None and kind.api_version_string() == self.api_version else None


@dataclass(frozen=True)
class Catalog:
    types: tuple[Served, ...]
    # (kind, api version, wide) -> the columns after NAME, as `inferplane get` prints them.
    columns: Callable[[str, str, bool], list[Column]]

    def by_plural(self, api_version: str, plural: str) -> Served | None:
        return next((t for t in self.types if t.api_version == api_version and t.plural == plural), None)

    def group_versions(self) -> list[str]:
        """Every served GROUP/VERSION but the core group's v1, in order."""
        return sorted({t.api_version for t in self.types if t.group})

    def of(self, api_version: str) -> list[Served]:
        return [t for t in self.types if t.api_version == api_version]
