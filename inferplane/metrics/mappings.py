"""Mappings: which series of an exporter become which `inferplane_gpu_*` series, in which unit.

A mapping is data, in a YAML document of kind `GPUMetricsMapping` (a file the CLI reads; it is not
an object stored in the control plane). The built-in ones, one per vendor, are in `builtin/`;
users add their own for another exporter with `--mapping FILE`. The schema (docs/metrics.md):

    apiVersion: inferplane.dev/v1alpha1
    kind: GPUMetricsMapping
    metadata: {name: NAME}
    spec:
      vendor: NAME              # the value of the `vendor` label
      driver: DRIVER            # optional: the DRA driver whose nodes run this exporter
      labels:                   # normalized label: its source labels, the first non-empty wins
        gpu: [gpu_id]
      series:                   # entries with the same target are alternatives, first match wins
      - source: SERIES          # or a list of series whose sum is the value
        target: inferplane_gpu_...
        fromUnit: UNIT
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from pydantic import Field, field_validator, model_validator

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import ApiModel, Name
from inferplane.metrics.series import SOURCE_LABELS, TARGETS, UNITS, Target, Unit

KIND = "GPUMetricsMapping"
MAPPING_API_VERSION = f"{API_GROUP}/{API_VERSION}"
BUILTIN_DIR = Path(__file__).parent / "builtin"

METRIC_NAME = r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"
LABEL_NAME = r"^[a-zA-Z_][a-zA-Z0-9_]*$"


class SeriesMapping(ApiModel):
    source: list[str] = Field(description="The source series; a list is summed (matching labels).")
    target: str
    from_unit: str

    @field_validator("source", mode="before")
    @classmethod
    def one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("source")
    @classmethod
    def series_names(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("names no series: give one series name or a list of them")
        bad = [name for name in value if not re.match(METRIC_NAME, name)]
        if bad:
            raise ValueError(f"{', '.join(map(repr, bad))} is not a Prometheus series name: use letters, digits, "
                             "_ and :, not starting with a digit")
        return value

    @field_validator("target")
    @classmethod
    def known_target(cls, value: str) -> str:
        if value not in TARGETS:
            raise ValueError(f"unknown target {value!r}: use one of {', '.join(TARGETS)}")
        return value

    @field_validator("from_unit")
    @classmethod
    def known_unit(cls, value: str) -> str:
        if value not in UNITS:
            raise ValueError(f"unknown unit {value!r}: use one of {', '.join(UNITS)}")
        return value

    @model_validator(mode="after")
    def unit_fits_target(self) -> "SeriesMapping":
        wanted = TARGETS[self.target].quantity
        if UNITS[self.from_unit].quantity is not wanted:
            fitting = [name for name, unit in UNITS.items() if unit.quantity is wanted]
            raise ValueError(f"fromUnit {self.from_unit} cannot feed {self.target}, which is in {wanted.value}: "
                             f"use one of {', '.join(fitting)}")
        return self

    @property
    def unit(self) -> Unit:
        return UNITS[self.from_unit]


class MappingSpec(ApiModel):
    vendor: Name
    driver: str | None = Field(None, description="The DRA driver whose nodes run this exporter.")
    labels: dict[str, list[str]] = Field(default_factory=dict)
    series: list[SeriesMapping] = Field(min_length=1)

    @field_validator("labels")
    @classmethod
    def known_labels(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for label, sources in value.items():
            if label not in SOURCE_LABELS:
                raise ValueError(f"unknown normalized label {label!r}: use {', '.join(SOURCE_LABELS)} "
                                 "(vendor is spec.vendor)")
            bad = [s for s in sources if not re.match(LABEL_NAME, s)]
            if not sources or bad:
                raise ValueError(f"label {label} needs a list of source label names, got {sources!r}")
            if label in sources[:-1]:
                raise ValueError(f"label {label} lists itself before other sources: list {label} last (the "
                                 "recording rules can only fall back to a label already in place)")
        return value


class Metadata(ApiModel):
    name: Name


class GPUMetricsMapping(ApiModel):
    api_version: str
    kind: str
    metadata: Metadata
    spec: MappingSpec

    @property
    def vendor(self) -> str:
        return self.spec.vendor

    def alternatives(self) -> dict[Target, list[SeriesMapping]]:
        """Each target this mapping feeds, with its entries in order of preference."""
        out: dict[Target, list[SeriesMapping]] = {}
        for entry in self.spec.series:
            out.setdefault(TARGETS[entry.target], []).append(entry)
        return out

    def sources(self) -> frozenset[str]:
        return frozenset(name for entry in self.spec.series for name in entry.source)


@cache
def builtin_mappings() -> tuple[GPUMetricsMapping, ...]:
    """The built-in mappings, one per vendor, in vendor order."""
    # Shipped with the package and checked by the tests, so a plain load is enough here; users'
    # files go through admission (inferplane.admission.mappings) for its limits and messages.
    mappings = [GPUMetricsMapping.model_validate(yaml.safe_load(path.read_text()))
                for path in sorted(BUILTIN_DIR.glob("*.yaml"))]
    return tuple(sorted(mappings, key=lambda m: m.vendor))


def mappings_for(drivers: frozenset[str] | set[str]) -> tuple[GPUMetricsMapping, ...]:
    """The built-in mappings of the exporters that run for those drivers."""
    return tuple(m for m in builtin_mappings() if m.spec.driver in drivers)
