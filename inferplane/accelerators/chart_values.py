"""Composed Helm values checked against the pinned chart's own values, fail closed.

Every chart the catalog pins has its `values.yaml` (and `values.schema.json` where the chart ships
one) vendored verbatim under `inferplane/data/charts/<chart>-<version>/`, with a `SOURCE` naming the
repository, commit, path and licence. A Release's values are checked against them:

- **Keys.** Every key must be one the chart's `values.yaml` declares at that path. A key the chart
  does not have is ignored by Helm without a word, so a misspelt or stale key silently configures
  nothing; here it is an error.
- **Types.** A value must have its default's type (mapping, list, string, boolean, number); a key
  whose default is null takes any type.
- **Open maps.** A mapping whose default is empty (`{}`) or null is the user's to fill: charts hand
  such maps to the pod as they are (`nodeSelector`, `affinity`, `podAnnotations`, `resources` where
  it is empty) or iterate them (`additionalPrometheusRulesMap`), so their keys are label keys,
  Kubernetes fields or the user's names, never the chart's, and anything under them is allowed.
  A mapping with defaults (e.g. dra-driver-nvidia-gpu's `resources: {gpus, computeDomains}`) is the
  chart's own structure and is checked key by key, whatever its name.
- **Passed-through maps.** A mapping the chart's templates render whole into another API object
  (gateway-helm's `config.envoyGateway` becomes the EnvoyGateway configuration) takes that API's
  fields, which its defaults only begin to list: the folder's `SOURCE` names such paths under
  `open`, citing the template, and anything under them is allowed.
- **Lists** (`tolerations`, `extraEnv`) replace the default whole in Helm's merge, so their items are
  not compared with the default's items; only that the value is a list.
- **Schema.** Where the chart has a `values.schema.json`, the values Helm validates (the chart's
  defaults with ours merged over them, as Helm merges) must satisfy it, as `helm install` requires.
- A chart with nothing vendored takes no values: any value composed for it is an error.
- **Usage only.** A chart whose values.yaml is in no public repository (Nebius's csi-mounted-fs-path,
  published only as a packaged chart) has instead a `usage.yaml`: the values another project's source
  sets for it, cited in its `SOURCE` (`checked_against: usage`). Its values are checked against those keys
  and types the same way, so any other key is refused until the chart's own values can be vendored.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from inferplane.accelerators.component import Chart
from inferplane import DATA, vendored_yaml
from inferplane.api.json_data import merge_patch

CHARTS_DIR = DATA / "charts"


@dataclass(frozen=True)
class PinnedValues:
    """A chart's vendored defaults and, where the chart has one, its values schema."""

    folder: Path
    defaults: dict[str, Any]
    schema: dict[str, Any] | None
    # Dotted paths the chart renders whole into another API object (SOURCE `open`).
    open_paths: frozenset[str] = frozenset()
    # The file the defaults come from: the chart's values.yaml, or usage.yaml (SOURCE `checked_against: usage`).
    file: str = "values.yaml"

    def where(self, file: str) -> str:
        """A vendored file as the repository names it."""
        return f"{_relative(self.folder)}/{file}"


def _relative(folder: Path) -> str:
    return str(folder.relative_to(CHARTS_DIR.parents[2]))


def chart_folder(chart: Chart) -> Path:
    """Where a pinned chart's values are vendored: one folder per chart and exact version."""
    return CHARTS_DIR / f"{chart.name}-{chart.version}"


# Bounded by what is vendored: one entry per chart and version asked about.
@functools.lru_cache(maxsize=64)
def pinned_values(chart: Chart) -> PinnedValues | None:
    """The vendored values of a chart at its pinned version, or None when nothing is vendored."""
    folder = chart_folder(chart)
    if not (folder / "SOURCE").is_file():
        return None
    source = vendored_yaml.load((folder / "SOURCE").read_text()) or {}
    file = "usage.yaml" if source.get("checked_against") == "usage" else "values.yaml"
    if not (folder / file).is_file():
        return None
    defaults = vendored_yaml.load((folder / file).read_text()) or {}
    schema_file = folder / "values.schema.json"
    schema = json.loads(schema_file.read_text()) if schema_file.is_file() else None
    return PinnedValues(folder, defaults, schema, frozenset(source.get("open") or ()), file)


def _kind(value: Any) -> str:
    """A value's type as a chart's values compare it (YAML's kinds; every number is a number)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return "null" if value is None else type(value).__name__


def key_errors(values: dict[str, Any], defaults: dict[str, Any], path: str = "",
               open_paths: frozenset[str] = frozenset()) -> list[str]:
    """Keys the defaults do not declare, and values whose type differs from their default's."""
    errors = []
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        if key not in defaults:
            errors.append(f"`{here}` is not a value the chart has")
            continue
        default = defaults[key]
        if default is None:
            continue  # no default to compare with: any type, any content
        if _kind(value) != _kind(default):
            errors.append(f"`{here}` is a {_kind(value)}, but the chart's default is a {_kind(default)}")
        elif isinstance(value, dict) and default and here not in open_paths:
            errors += key_errors(value, default, here, open_paths)
    return errors


def schema_errors(values: dict[str, Any], pinned: PinnedValues) -> list[str]:
    """Where the values Helm would validate break the chart's values.schema.json."""
    if pinned.schema is None:
        return []
    import jsonschema  # only where a pinned chart's schema is checked: admission never needs it

    validator_class = jsonschema.validators.validator_for(pinned.schema)
    validator = validator_class(pinned.schema, format_checker=validator_class.FORMAT_CHECKER)
    merged = merge_patch(pinned.defaults, values)
    where = pinned.where("values.schema.json")
    return [f"`{_dotted(error.absolute_path) or '(root)'}`: {error.message} ({where})"
            for error in sorted(validator.iter_errors(merged), key=lambda e: [str(p) for p in e.path])]


def _dotted(path: Any) -> str:
    """A value's path as Helm's --set writes it: `a.b[0].c`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def chart_value_errors(chart: Chart, values: dict[str, Any] | None) -> list[str]:
    """Everything in a Release's values that the pinned chart does not accept (empty when sound)."""
    name = f"chart {chart.name} {chart.version}"
    pinned = pinned_values(chart)
    if pinned is None:
        if values:
            return [f"{name} sets values, but the chart's values.yaml is not vendored under "
                    f"{_relative(chart_folder(chart))}/: vendor it (with its SOURCE) "
                    "so the values can be checked"]
        return []
    where = pinned.where(pinned.file)
    if pinned.file != "values.yaml":
        where += ": the values another project sets for it, the only ones checked, as its values.yaml is not public"
    problems = [f"{problem} ({where})" for problem in key_errors(values or {}, pinned.defaults,
                                                                  open_paths=pinned.open_paths)]
    problems += schema_errors(values or {}, pinned)
    return [f"{name}: {problem}: fix or remove it" for problem in problems]
