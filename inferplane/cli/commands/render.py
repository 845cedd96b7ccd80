"""`inferplane render`: a folder of manifests reconciled in memory, printed as the fleet or as JSON;
stateless."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import RECURSIVE_OPTION, limits, stream_limits
from inferplane.cli.report import exit_code, print_errors, print_notes, refuse_nothing_found, report_convergence
from inferplane.cli.state import progress_bar


@click.command()
@click.argument("folder", type=click.Path(path_type=Path, readable=False))
@RECURSIVE_OPTION
@click.option("-o", "--output", type=click.Choice(["fleet", "json"]), default="fleet",
              help="fleet: the fleet table; json: every resource, inputs with status and everything composed "
                   "(a Secret's values masked as ***).")
@stream_limits
def render(folder: Path, recursive: bool, output: str, max_bytes: int, max_documents: int) -> None:
    """Reconcile a folder of manifests in memory to its fixpoint and print the result (stateless)."""
    import json

    from inferplane.cli.diffs import masked_secrets
    from inferplane.cli.views import fleet_view
    from inferplane.engine.control_plane import ControlPlane

    runtime = ControlPlane(None, progress=progress_bar())  # in memory: nothing is kept
    try:
        result = runtime.apply([folder], limits=limits(max_bytes, max_documents), recursive=recursive)
        objects = runtime.list()
    finally:
        runtime.progress.finish()
        runtime.close()
    print_errors(result.admission.errors)
    print_notes(result.admission.notes)
    refuse_nothing_found(result.admission, (folder,))
    converged = report_convergence(result.report)
    if result.admission.admitted:
        # A view of the fleet, not a backup: a Secret's values read *** (`get secret -o json` prints them).
        shown = [masked_secrets(o, None)[0] for o in objects] if output == "json" else objects
        click.echo(json.dumps(shown, indent=2, sort_keys=True) if output == "json" else fleet_view(shown))
    sys.exit(exit_code(result.admission, converged))
