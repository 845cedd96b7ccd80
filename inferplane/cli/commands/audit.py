"""`inferplane audit`: the placement, toleration, claims and held audits over every simulated cluster
of the state, of a folder reconciled in memory, or of each test leg."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import STATE_OPTION
from inferplane.cli.output import table
from inferplane.cli.report import print_errors, refuse_nothing_found, report_convergence
from inferplane.cli.state import opened, progress_bar

Row = tuple[str, str, str, str]


@click.command()
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@click.option("--legs", is_flag=True, help="Audit each of the test legs (tests/legs/ in a source checkout) instead.")
@STATE_OPTION
def audit(folder: Path | None, legs: bool, state: Path | None) -> None:
    """Audit where every workload lands (placement, toleration, claims, held): the state's simulated
    clusters (--state), a folder of manifests reconciled in memory, or with --legs every test leg."""
    from inferplane.engine.legs import audit_clusters

    if folder is not None and legs:
        raise click.UsageError("give a FOLDER or --legs, not both")
    if folder is None and not legs:
        with opened(state, read_only=True) as runtime:
            rows, failed = _rows(*audit_clusters(runtime.list("InferenceCluster"), runtime.store.cluster_objects()))
        broken = False
    else:
        rows, failed, broken = _audit_folders(folder)
    # By cluster; each cluster's audits in their own order (the sort is stable).
    click.echo(table(("LEG" if legs else "CLUSTER", "AUDIT", "RESULT", "DETAIL"), sorted(rows, key=lambda row: row[0])))
    sys.exit(1 if failed or broken else 0)


def _audit_folders(folder: Path | None) -> tuple[list[Row], bool, bool]:
    """The folder (or, without one, each test leg) reconciled in memory and audited: (rows, whether an
    audit failed, whether a folder was refused or did not reach its fixpoint)."""
    from inferplane.engine.legs import audit_folder, leg_folders

    try:
        folders = [folder] if folder is not None else leg_folders()
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    rows: list[Row] = []
    failed = broken = False
    for each in folders:
        progress = progress_bar()
        audited = audit_folder(each, progress=progress)
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
