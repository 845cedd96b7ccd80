"""`inferplane metrics map`: one scrape in Prometheus' text format, through the mappings, as the
normalized series, with the recording rules' semantics (see `rules.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from prometheus_client.core import Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from inferplane.metrics.mappings import GPUMetricsMapping
from inferplane.metrics.series import LABELS, SOURCE_LABELS, TARGETS

LabelSet = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


class ScrapeError(ValueError):
    """The text is not in Prometheus' exposition format."""


def parse_scrape(text: str) -> dict[str, list[Sample]]:
    """Samples by series name, read by prometheus_client's parser."""
    out: dict[str, list[Sample]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                names = [sample.name]
                # The parser renames a counter's samples to OpenMetrics' `<name>_total`; Prometheus
                # keeps the name as exposed (dcgm-exporter's energy counter has no suffix).
                if family.type == "counter" and sample.name == f"{family.name}_total":
                    names.append(family.name)
                for name in names:
                    out.setdefault(name, []).append(Sample(name, dict(sample.labels), sample.value))
    except ValueError as error:
        raise ScrapeError(f"not Prometheus text format: {error}") from None
    return out


def normalized_labels(mapping: GPUMetricsMapping, labels: dict[str, str]) -> LabelSet:
    out = {"vendor": mapping.vendor}
    for label in SOURCE_LABELS:
        value = next((labels[s] for s in mapping.spec.labels.get(label, []) if labels.get(s)), None)
        if value:
            out[label] = value
    return tuple((label, out[label]) for label in LABELS if label in out)


def map_samples(scrape: dict[str, list[Sample]], mappings: Iterable[GPUMetricsMapping]) -> list[Sample]:
    """The normalized samples of every mapping whose source series are in the scrape, by target
    then labels."""
    out: list[Sample] = []
    for mapping in mappings:
        if not mapping.sources() & scrape.keys():
            continue
        for target, entries in mapping.alternatives().items():
            found: dict[LabelSet, float] = {}
            for entry in entries:  # alternatives: a label set already found keeps its first value
                parts = [_max_by_labels(mapping, scrape.get(series, [])) for series in entry.source]
                for key in sorted(set.intersection(*(set(p) for p in parts)) - found.keys()):
                    found[key] = entry.unit.convert(sum(p[key] for p in parts))
            out += [Sample(target.name, dict(key), value) for key, value in sorted(found.items())]
    order = list(TARGETS)
    return sorted(out, key=lambda s: (order.index(s.name), s.labels.get("vendor", "")))


def _max_by_labels(mapping: GPUMetricsMapping, samples: list[Sample]) -> dict[LabelSet, float]:
    out: dict[LabelSet, float] = {}
    for sample in samples:
        key = normalized_labels(mapping, sample.labels)
        out[key] = max(out.get(key, sample.value), sample.value)
    return out


def exposition(samples: list[Sample]) -> str:
    """The samples in Prometheus' text format, with each target's HELP and TYPE."""
    families: dict[str, Metric] = {}
    for sample in samples:
        target = TARGETS[sample.name]
        family = families.get(sample.name)
        if family is None:
            # prometheus_client names a counter family without `_total` and adds it back on output.
            family = families[sample.name] = Metric(sample.name.removesuffix("_total"), target.help, target.type)
        family.add_sample(sample.name, sample.labels, sample.value)

    class Collected:
        def collect(self):
            return list(families.values())

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collected())  # type: ignore[arg-type]
    return generate_latest(registry).decode()
