"""Mappings rendered as Prometheus recording rules: one group per mapping, one rule per target.

Each rule carries the mapping's `vendor` as a static label. Each source series is relabelled to
the other normalized labels (`label_replace`, lowest precedence
first, so the first non-empty source label wins), reduced to exactly those labels (`max by`, which
drops `job`, `instance` and the exporter's own labels), summed when a target has several sources,
converted to the base unit, and the alternatives for one target are joined with `or` (first wins).
`convert.py` computes the same thing on one scrape; the promtool tests hold the two to the rules.
"""

from __future__ import annotations

from typing import Any, Iterable

from inferplane.metrics.mappings import GPUMetricsMapping, SeriesMapping
from inferplane.metrics.series import SOURCE_LABELS

RULE_GROUP_PREFIX = "inferplane-gpu-"


def _label_replace(expression: str, target: str, replacement: str, source: str, regex: str) -> str:
    return f'label_replace({expression}, "{target}", "{replacement}", "{source}", "{regex}")'


def normalized(mapping: GPUMetricsMapping, series: str) -> str:
    """One source series with exactly the normalized labels but `vendor` (the rule's own label)."""
    expression = series
    for label in SOURCE_LABELS:
        sources = mapping.spec.labels.get(label, [])
        if label not in sources:
            # A same-named label of the source means something else here: clear it.
            expression = _label_replace(expression, label, "", "", "")
        for source in reversed(sources):
            if source != label:  # a label that is its own source is already in place (and listed last)
                expression = _label_replace(expression, label, "$1", source, "(.+)")
    return f"max by ({', '.join(SOURCE_LABELS)}) ({expression})"


def entry_expression(mapping: GPUMetricsMapping, entry: SeriesMapping) -> str:
    parts = [normalized(mapping, series) for series in entry.source]
    summed = parts[0] if len(parts) == 1 else "(" + " + ".join(parts) + ")"
    return entry.unit.promql(summed)


def rule_group(mapping: GPUMetricsMapping) -> dict[str, Any]:
    rules = []
    for target, entries in mapping.alternatives().items():
        expressions = [entry_expression(mapping, e) for e in entries]
        expression = expressions[0] if len(expressions) == 1 else " or ".join(f"({e})" for e in expressions)
        # The vendor is a static label: it also tells apart the vendors' rules for one target.
        rules.append({"record": target.name, "expr": expression, "labels": {"vendor": mapping.vendor}})
    return {"name": f"{RULE_GROUP_PREFIX}{mapping.metadata.name}", "rules": rules}


def rule_file(mappings: Iterable[GPUMetricsMapping]) -> dict[str, Any]:
    """A Prometheus rule file (and a PrometheusRule's spec): `{groups: [...]}`."""
    return {"groups": [rule_group(m) for m in mappings]}
