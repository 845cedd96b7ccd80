"""`inferplane apply`: admit manifests, store them and reconcile the fleet to a fixpoint (or, with
--dry-run, in memory)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from inferplane.cli.options import FILES_OPTION, RECURSIVE_OPTION, STATE_OPTION, TIMEOUT_OPTION, limits, stream_limits
from inferplane.cli.report import exit_code, print_admission, refuse_nothing_found, report_convergence
from inferplane.cli.state import opened, scratch


@click.command()
@FILES_OPTION
@RECURSIVE_OPTION
@click.option("--dry-run", is_flag=True,
              help="Admit and compose in memory; print what would be created, configured or deleted; store nothing.")
@STATE_OPTION
@TIMEOUT_OPTION
@stream_limits
def apply(paths: tuple[Path, ...], recursive: bool, dry_run: bool, state: Path | None, timeout: float, max_bytes: int,
          max_documents: int) -> None:
    """Admit manifests, store them and reconcile the fleet to a fixpoint.

    Exit 1 if a manifest is rejected (nothing of it is stored), 3 if the fleet did not reach its fixpoint."""
    stream = limits(max_bytes, max_documents)
    started = time.monotonic()
    if dry_run:
        _dry_run(paths, recursive, state, stream, started)

    def acknowledge(key, verb: str) -> None:
        # Printed once the write is committed: every line on screen survives a crash.
        click.echo(f"{key.qualified()} {verb}")
        sys.stdout.flush()

    with opened(state, timeout) as runtime:
        result = runtime.apply(list(paths), on_applied=acknowledge, limits=stream, recursive=recursive)
        summary = _apply_summary(runtime, result, started)
    print_admission(result.admission)
    refuse_nothing_found(result.admission, paths)
    converged = report_convergence(result.report)
    click.echo(summary, err=True)
    sys.exit(exit_code(result.admission, converged))


def _dry_run(paths: tuple[Path, ...], recursive: bool, state: Path | None, stream, started: float) -> None:
    """Admit and compose on a copy of the state, print what would change, and exit."""
    from inferplane.cli.diffs import changes

    with scratch(state) as (runtime, before):
        result = runtime.apply(list(paths), limits=stream, recursive=recursive)
        after = runtime.list()
        summary = _apply_summary(runtime, result, started, dry_run=True)
    print_admission(result.admission)
    refuse_nothing_found(result.admission, paths)
    for name, verb in changes(before, after):
        click.echo(f"{name} {verb} (dry run)")
    converged = report_convergence(result.report)
    click.echo(summary, err=True)
    sys.exit(exit_code(result.admission, converged))


def _apply_summary(runtime, result, started: float, dry_run: bool = False) -> str:
    """The line that ends an apply: time taken, what changed, and which applied objects are not ready, why."""
    from inferplane.api.function import READY
    from inferplane.cli.progress import apply_summary

    not_ready = []
    for key, _ in result.applied:
        conditions = runtime.store.conditions(key) or []
        ready = next((c for c in conditions if isinstance(c, dict) and c.get("type") == READY), None)
        if ready is not None and ready.get("status") != "True":
            not_ready.append((str(key), ready.get("reason") or "NotReady"))
        elif ready is None and key.kind in runtime.functions:  # a composite no reconcile reached yet
            not_ready.append((str(key), "not reconciled yet"))
    # An object refused for several reasons counts once; a file that could not be read, once.
    refused = len({(e.source, getattr(e, "kind", ""), getattr(e, "name", "")) for e in result.admission.errors})
    return apply_summary(time.monotonic() - started, [verb for _, verb in result.applied], refused, not_ready, dry_run)
