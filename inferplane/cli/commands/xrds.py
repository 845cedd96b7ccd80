"""`inferplane xrds`: the Crossplane XRDs of every kind, written or checked against the files."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder to write the XRDs to (default: the package's crossplane/xrds).")
@click.option("--check", is_flag=True, help="Exit 1 if the files on disk differ from the generator's output.")
def xrds(out: Path | None, check: bool) -> None:
    """Generate the Crossplane CompositeResourceDefinitions of every kind."""
    from inferplane.api.xrd import xrd_files
    from inferplane.crossplane import XRD_DIR

    target = out or XRD_DIR
    files = xrd_files()
    if check:
        _check(target, files)
        return
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text)
    click.echo(f"wrote {len(files)} XRDs to {target}")


def _check(target: Path, files: dict[str, str]) -> None:
    """Exit 1 naming each file that differs from the generator's output, or is not one of its files."""
    stale = [name for name, text in files.items()
             if not (target / name).exists() or (target / name).read_text() != text]
    extra = sorted(p.name for p in target.glob("*.yaml") if p.name not in files) if target.exists() else []
    for name in stale + extra:
        click.echo(f"out of date: {target / name}", err=True)
    if stale or extra:
        click.echo("run `inferplane xrds` and commit the result", err=True)
        sys.exit(1)
    click.echo(f"{len(files)} XRDs up to date in {target}")
