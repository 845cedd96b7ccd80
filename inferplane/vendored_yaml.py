"""Reading the YAML inferplane ships (committed XRDs, vendored CRDs, chart values, tables): with libyaml,
which PyYAML bundles, ~10x faster than its pure-Python loader, which most commands would otherwise pay
for at start. Never for users' manifests: admission reads those with its own bounded loaders."""

from __future__ import annotations

from typing import Any, Iterator

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)


def load_all(text: str) -> Iterator[Any]:
    return yaml.load_all(text, Loader=_LOADER)
