"""`inferplane audit`'s engine: the audits over a state's clusters, or over a folder of manifests.

`audit_folder` reconciles a folder to its fixpoint in its own in-memory state, so that one folder's
deployments can never place onto another folder's cluster, and runs every audit over each simulated
cluster (simulator/audits.py); `audit_clusters` runs them over clusters already simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferplane.api.inference_cluster import CLUSTER_READY, InferenceCluster
from inferplane.simulator.audits import AuditResult, audit_cluster
from inferplane.simulator.cluster_objects import simulated_objects
from inferplane.runtime.reconciler import ProgressReport
from inferplane.engine.apply_sets import ApplyResult
from inferplane.engine.control_plane import ControlPlane

@dataclass(frozen=True)
class FolderAudit:
    folder: Path
    applied: ApplyResult
    results: tuple[AuditResult, ...]
    # Clusters with nothing simulated (the gate refused them before anything ran): name -> why.
    unprovisioned: tuple[tuple[str, str], ...]


def audit_folder(folder: Path, progress: ProgressReport | None = None, recursive: bool = True) -> FolderAudit:
    """Reconcile one folder in memory (its subfolders too when `recursive`) and audit every cluster it
    simulates."""
    runtime = ControlPlane(None, progress=progress)
    try:
        applied = runtime.apply([folder], recursive=recursive)
        simulated = simulated_objects(runtime.store)
        clusters = runtime.store.list(InferenceCluster.KIND)
    finally:
        runtime.close()
    results, unprovisioned = audit_clusters(clusters, simulated)
    return FolderAudit(folder, applied, results, unprovisioned)


def audit_clusters(clusters: list[dict[str, Any]], simulated: dict[str, list[dict[str, Any]]]
                   ) -> tuple[tuple[AuditResult, ...], tuple[tuple[str, str], ...]]:
    """Every cluster's audits over its simulated objects, and the clusters with nothing simulated (why)."""
    results: list[AuditResult] = []
    unprovisioned = []
    for cluster in sorted(clusters, key=lambda c: c["metadata"]["name"]):
        name = cluster["metadata"]["name"]
        if simulated.get(name):
            results += audit_cluster(name, simulated[name])
        else:
            unprovisioned.append((name, _why_nothing_runs(cluster)))
    return tuple(results), tuple(unprovisioned)


def _why_nothing_runs(cluster: dict[str, Any]) -> str:
    ready = next((c for c in (cluster.get("status") or {}).get("conditions") or [] if c.get("type") == CLUSTER_READY),
                 None)
    if ready is None:
        return "nothing provisioned yet"
    return f"nothing runs: {CLUSTER_READY} {ready.get('status')} ({ready.get('reason')}): {ready.get('message', '')}"
