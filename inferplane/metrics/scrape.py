"""Where the serving stack's Prometheus finds GPU exporters, and the scrape job for each.

Discovery is by pod (label and named port), not by Service: the exporters' Service names depend on
the release or DeviceConfig name and are not part of either exporter's contract, while their pod
labels and port names are fixed by their charts and operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MetricsEndpoint:
    """One exporter of a driver's GPU metrics: its pods by label in a namespace, a named port."""

    job: str
    driver: str
    namespace: str
    pod_labels: tuple[tuple[str, str], ...]
    port_name: str
    path: str = "/metrics"


def scrape_job(endpoint: MetricsEndpoint) -> dict[str, Any]:
    """A Prometheus scrape_config for one exporter (kubernetes_sd, role pod)."""
    return {
        "job_name": endpoint.job,
        "metrics_path": endpoint.path,
        # The exporters' pod, namespace and container labels name the workload using the GPU, not the
        # exporter's pod: keep them as they are instead of renaming them exported_*.
        "honor_labels": True,
        "kubernetes_sd_configs": [{
            "role": "pod",
            "namespaces": {"names": [endpoint.namespace]},
            "selectors": [{"role": "pod", "label": ",".join(f"{k}={v}" for k, v in endpoint.pod_labels)}],
        }],
        "relabel_configs": [{"source_labels": ["__meta_kubernetes_pod_container_port_name"],
                             "regex": endpoint.port_name, "action": "keep"}],
    }
