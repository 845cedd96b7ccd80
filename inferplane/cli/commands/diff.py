"""`inferplane diff`: what apply would change, as unified diffs; nothing stored."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import FILES_OPTION, RECURSIVE_OPTION, STATE_OPTION, limits, stream_limits
from inferplane.cli.report import print_admission, refuse_nothing_found
from inferplane.cli.state import scratch


@click.command()
@FILES_OPTION
@RECURSIVE_OPTION
@STATE_OPTION
@stream_limits
def diff(paths: tuple[Path, ...], recursive: bool, state: Path | None, max_bytes: int, max_documents: int) -> None:
    """What apply would change, per resource (inputs and everything composed), as unified diffs.

    Exit 0: no change; 1: changes; 2: the manifests were refused (or held no objects)."""
    from inferplane.cli.diffs import unified_diffs

    with scratch(state) as (runtime, before):
        result = runtime.apply(list(paths), limits=limits(max_bytes, max_documents), recursive=recursive)
        after = runtime.list()
    print_admission(result.admission)
    if result.admission.errors:
        sys.exit(2)
    refuse_nothing_found(result.admission, paths, code=2)
    text = unified_diffs(before, after)
    if text:
        click.echo(text, nl=False)
    sys.exit(1 if text else 0)
