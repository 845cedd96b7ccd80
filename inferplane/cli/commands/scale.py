"""`inferplane scale`: the replicas of a kind that serves the scale subresource, like `kubectl scale`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import TIMEOUT_OPTION, object_arguments
from inferplane.cli.report import EXIT_NOT_CONVERGED, print_errors, report_convergence
from inferplane.cli.state import opened


@click.command()
@object_arguments
@click.option("--replicas", type=int, required=True, help="The new replica count.")
@TIMEOUT_OPTION
def scale(kind: str, name: str, namespace: str | None, replicas: int, state: Path | None, timeout: float) -> None:
    """Set the replicas of an object that serves the scale subresource (a ModelDeployment), like kubectl scale."""
    from inferplane.cli.query import fetch
    from inferplane.runtime.store import Key

    with opened(state, timeout, create=False) as runtime:
        key = Key.of(fetch(runtime, kind, name, namespace))
        try:
            result = runtime.scale(key, replicas)
        except LookupError as exc:
            raise click.ClickException(str(exc)) from None
    print_errors(result.admission.errors)
    if result.admission.errors:
        sys.exit(1)
    click.echo(f"{key.qualified()} scaled")
    if not report_convergence(result.report):
        sys.exit(EXIT_NOT_CONVERGED)
