"""What commands say on standard error, alike everywhere: errors, warnings, notes, objects not found,
an input with no objects, a fleet that did not reach its fixpoint; and the exit code for that."""

from __future__ import annotations

import sys
from pathlib import Path

import click

# Exit codes: 1 for a mistake in the input (or a state that cannot be used), 3 when the command did
# its writes but the fleet did not reach its fixpoint (click itself uses 2 for a bad command line).
EXIT_NOT_CONVERGED = 3


def print_errors(errors: list) -> None:
    for error in errors:
        click.echo(f"error: {error}", err=True)


def print_warnings(warnings: list) -> None:
    """What the API server would store but apply would hold, as kubectl prints a server's warnings."""
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)


def print_notes(notes: list) -> None:
    """Crossplane install objects accepted but not stored: one line each, on standard error."""
    for note in notes:
        click.echo(f"note: {note}", err=True)


def print_admission(admission) -> None:
    """An admission's errors, warnings and notes, in that order."""
    print_errors(admission.errors)
    print_warnings(admission.warnings)
    print_notes(admission.notes)


def print_not_found(messages: list[str]) -> None:
    """Objects named that do not exist, as kubectl says it."""
    for message in messages:
        click.echo(f"Error from server (NotFound): {message}", err=True)


def refuse_nothing_found(admission, paths: tuple[Path, ...], code: int = 1) -> None:
    """No objects in the input is an error, whatever the command (kubectl: "no objects passed to apply")."""
    if not admission.admitted and not admission.errors and not admission.notes and not admission.unchanged:
        click.echo(f"Error: no objects found in {', '.join(map(str, paths))}: a manifest needs apiVersion, kind "
                   "and metadata", err=True)
        sys.exit(code)


def report_convergence(report) -> bool:
    """Say clearly when the fleet is not at its fixpoint; whether it is."""
    if report is None or report.converged:
        return True
    if report.waited_for:
        click.echo(f"error: the fleet has not reached its fixpoint: {report.waited_for} is still reconciling this "
                   "state; your objects are stored and it reconciles them too: run the command again with a "
                   "longer --timeout to wait for it", err=True)
    else:
        click.echo("error: the fleet did not reach a fixpoint; still changing after the iteration bound: "
                   + ", ".join(f"{k} ({n} reconciles)" for k, n in sorted(report.unconverged.items())), err=True)
    return False


def exit_code(admission, converged: bool) -> int:
    """1 when admission refused something, else 3 when the fleet did not reach its fixpoint, else 0."""
    return 1 if admission.errors else 0 if converged else EXIT_NOT_CONVERGED
