"""`inferplane validate`: admission as the API server would do it, nothing stored."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import FILES_OPTION, RECURSIVE_OPTION, STATE_OPTION, limits, stream_limits
from inferplane.cli.output import table
from inferplane.cli.report import print_errors, print_notes, refuse_nothing_found
from inferplane.cli.state import opened


@click.command()
@FILES_OPTION
@RECURSIVE_OPTION
@click.option("--strict", is_flag=True, help="Count warnings (what apply would hold) as errors: exit 1 on any.")
@STATE_OPTION
@stream_limits
def validate(paths: tuple[Path, ...], recursive: bool, strict: bool, state: Path | None, max_bytes: int, max_documents: int) -> None:
    """Check manifests as the API server would; print every error, and as warnings what apply would
    hold (a missing class, drivers the cluster's cloud cannot serve); exit 1 on any error. Classes
    already applied to the state (where there is one) count as present."""
    from inferplane.cli.resources import display_kind

    result = _admitted(paths, recursive, state, limits(max_bytes, max_documents))
    refuse_nothing_found(result, paths)
    if result.admitted:
        rows = [(display_kind(obj.kind, obj.api_version), obj.metadata.name, manifest.source)
                for manifest, obj in result.admitted]
        click.echo(table(("KIND", "NAME", "SOURCE"), rows))
    print_errors(result.errors)
    for warning in result.warnings:
        click.echo(f"{'error' if strict else 'Warning'}: {warning}", err=True)
    print_notes(result.notes)
    failed = len(result.errors) + (len(result.warnings) if strict else 0)
    click.echo(_summary(result, failed, strict), err=bool(failed))
    sys.exit(1 if failed else 0)


def _admitted(paths: tuple[Path, ...], recursive: bool, state: Path | None, stream):
    """Admission as apply's: against the state where there is one (its classes count as present, and a
    manifest naming an object a composite controls is refused as apply refuses it). The engine is
    imported only where there is a state."""
    from inferplane import state_dir
    from inferplane.admission import admit_paths

    if not (state_dir(state) / "store.db").is_file():
        return admit_paths(list(paths), limits=stream, recursive=recursive)
    with opened(state, create=False, read_only=True) as runtime:
        result = admit_paths(list(paths), known_classes=runtime.known_classes(), limits=stream, recursive=recursive)
        from inferplane.engine.ownership import refuse_composed

        refuse_composed(runtime.store, result)
    return result


def _summary(result, failed: int, strict: bool) -> str:
    summary = f"{len(result.admitted)} valid, {failed} error{'s' if failed != 1 else ''}"
    if result.warnings and not strict:
        summary += f", {len(result.warnings)} warning{'s' if len(result.warnings) != 1 else ''}"
    if result.notes:
        summary += f", {len(result.notes)} not needed here (not stored)"
    return summary
