"""The serving stack's Prometheus values for GPU metrics: a scrape job per installed exporter and
the recording rules of the vendors those exporters serve, and nothing when there is none."""

from __future__ import annotations

import functools
from typing import Any, Iterable

from inferplane.metrics.mappings import mappings_for
from inferplane.metrics.rules import rule_file
from inferplane.metrics.scrape import MetricsEndpoint, scrape_job

# kube-prometheus-stack turns each entry of additionalPrometheusRulesMap into a PrometheusRule.
RULES_NAME = "inferplane-gpu"


def gpu_metrics_values(endpoints: Iterable[MetricsEndpoint]) -> dict[str, Any]:
    """Read only: shared between calls with equal endpoints (every stack of one cloud and driver set
    installs the same exporters, and the rules are most of a stack's values)."""
    return _gpu_metrics_values(tuple(sorted(endpoints, key=lambda e: e.job)))


# Bounded by the catalog: one entry per set of exporters a cloud's driver sets install.
@functools.lru_cache(maxsize=64)
def _gpu_metrics_values(endpoints: tuple[MetricsEndpoint, ...]) -> dict[str, Any]:
    if not endpoints:
        return {}
    return {
        "prometheus": {"prometheusSpec": {"additionalScrapeConfigs": [scrape_job(e) for e in endpoints]}},
        "additionalPrometheusRulesMap": {RULES_NAME: rule_file(mappings_for({e.driver for e in endpoints}))},
    }
