"""`inferplane audit`: the placement, toleration, claims and held audits over every simulated cluster
of the state, or of each folder given, reconciled in memory."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import RECURSIVE_OPTION, STATE_OPTION
from inferplane.cli.output import table
from inferplane.cli.report import print_errors, refuse_nothing_found, report_convergence
from inferplane.cli.state import opened, progress_bar

Row = tuple[str, str, str, str]


@click.command()
@click.argument("folders", nargs=-1, type=click.Path(path_type=Path, readable=False))
@RECURSIVE_OPTION
@STATE_OPTION
def audit(folders: tuple[Path, ...], recursive: bool, state: Path | None) -> None:
    """Audit where every workload lands (placement, toleration, claims, held): the state's simulated
    clusters (--state), or each folder of manifests reconciled in memory on its own."""
    from inferplane.api.inference_cluster import InferenceCluster
    from inferplane.engine.audit import audit_clusters
    from inferplane.simulator.cluster_objects import simulated_objects

    if not folders:
        with opened(state, read_only=True) as runtime:
            rows, failed = _rows(*audit_clusters(runtime.list(InferenceCluster.KIND), simulated_objects(runtime.store)))
        broken = False
    else:
        rows, failed, broken = _audit_folders(folders, recursive)
    # By cluster; each cluster's audits in their own order (the sort is stable).
    click.echo(table(("CLUSTER", "AUDIT", "RESULT", "DETAIL"), sorted(rows, key=lambda row: row[0])))
    sys.exit(1 if failed or broken else 0)


def _audit_folders(folders: tuple[Path, ...], recursive: bool) -> tuple[list[Row], bool, bool]:
    """Each folder reconciled in its own in-memory state and audited: (rows, whether an audit failed,
    whether a folder was refused or did not reach its fixpoint)."""
    from inferplane.engine.audit import audit_folder

    rows: list[Row] = []
    failed = broken = False
    for each in folders:
        progress = progress_bar()
        audited = audit_folder(each, progress=progress, recursive=recursive)
        progress.finish()
        print_errors(audited.applied.admission.errors)
        refuse_nothing_found(audited.applied.admission, (each,))
        broken |= bool(audited.applied.admission.errors) or not report_convergence(audited.applied.report)
        found, failing = _rows(audited.results, audited.unprovisioned)
        rows += found
        failed |= failing
    return rows, failed, broken


def _rows(results, unprovisioned) -> tuple[list[Row], bool]:
    """One row per cluster the gate refused, per audit passed and per finding; whether any failed."""
    rows: list[Row] = [(cluster, "-", "Skipped", why) for cluster, why in unprovisioned]
    failed = False
    for result in results:
        if result.passed:
            rows.append((result.cluster, result.audit, "Pass", result.checked))
        for finding in result.findings:
            failed = True
            rows.append((result.cluster, result.audit, "Fail", f"{finding.reason}: {finding.message}"))
    return rows, failed
