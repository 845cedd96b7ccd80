"""The fleet scheduler's filters over a cluster, one concept each, worded for `inferplane why`.

Each is a framework Filter whose subject is the deployment (a PlacementRequest) and whose target is a
Cluster; the cluster's taints are filtered by the TaintToleration plugin the node level uses too,
with the fleet's wording (`cluster_taint_reason`). The fleet's pools are filtered inside Fit
(`fleet.py`), whose reasons name the pool.
"""

from __future__ import annotations

from typing import Any, Mapping

from inferplane.api.common import taint_text

from .predicates import requirement_matches
from .snapshot import Cluster, PlacementRequest

# A NoSchedule or NoExecute taint keeps new replicas off; only NoExecute drains existing ones.
KEEPS_NEW_OFF = ("NoSchedule", "NoExecute")
DRAINS = ("NoExecute",)

# Why a cluster still coming up takes no replica: a wait, not a mismatch.
CLUSTER_NOT_READY = "cluster is not ready"


def selector_refusal(selector: Mapping[str, Any], labels: Mapping[str, str]) -> str | None:
    """Why a Kubernetes LabelSelector does not select these labels, or None when it does."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            has = f"{key}={labels[key]}" if key in labels else f"no label {key}"
            return f"not selected: clusterSelector wants {key}={value}, the cluster has {has}"
    for requirement in selector.get("matchExpressions") or []:
        if not requirement_matches(requirement, labels):
            values = ",".join(requirement.get("values") or [])
            return (f"not selected: clusterSelector wants {requirement.get('key')} {requirement.get('operator')}"
                    + (f" ({values})" if values else ""))
    return None


def cluster_taint_reason(taint: Mapping[str, Any]) -> str:
    return f"taint {taint_text(taint.get('key', ''), taint.get('value'), taint.get('effect', ''))} is not tolerated"


class ClusterSelected:
    name = "ClusterSelected"

    def filter(self, request: PlacementRequest, cluster: Cluster) -> tuple[str, ...]:
        refusal = selector_refusal(request.cluster_selector, cluster.labels)
        return () if refusal is None else (refusal,)


class ClusterReady:
    name = "ClusterReady"

    def filter(self, request: PlacementRequest, cluster: Cluster) -> tuple[str, ...]:
        return () if cluster.ready else (CLUSTER_NOT_READY,)


class ClusterNotExcluded:
    """The caller's exclusions: where the deployment's ModelCache does not stage."""

    name = "ClusterNotExcluded"

    def filter(self, request: PlacementRequest, cluster: Cluster) -> tuple[str, ...]:
        refusal = request.excluded.get(cluster.name)
        return (refusal,) if refusal else ()
