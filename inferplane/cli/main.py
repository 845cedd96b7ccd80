"""The `inferplane` command."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.admission import admit_paths
from inferplane.cli.output import table


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """inferplane: a fleet-level inference control plane."""


@cli.command()
@click.option("-f", "--filename", "paths", multiple=True, required=True, type=click.Path(path_type=Path),
              help="A manifest file or a folder of them (repeatable).")
def validate(paths: tuple[Path, ...]) -> None:
    """Check manifests as the API server would; print every error, exit 1 if any."""
    result = admit_paths(list(paths))
    if result.admitted:
        rows = [(obj.kind, obj.metadata.name, manifest.source) for manifest, obj in result.admitted]
        click.echo(table(("KIND", "NAME", "SOURCE"), rows))
    for error in result.errors:
        click.echo(f"error: {error}", err=True)
    summary = f"{len(result.admitted)} valid, {len(result.errors)} error{'s' if len(result.errors) != 1 else ''}"
    click.echo(summary, err=bool(result.errors))
    sys.exit(1 if result.errors else 0)


@cli.command()
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
        stale = [name for name, text in files.items()
                 if not (target / name).exists() or (target / name).read_text() != text]
        extra = sorted(p.name for p in target.glob("*.yaml") if p.name not in files) if target.exists() else []
        for name in stale + extra:
            click.echo(f"out of date: {target / name}", err=True)
        if stale or extra:
            click.echo("run `inferplane xrds` and commit the result", err=True)
            sys.exit(1)
        click.echo(f"{len(files)} XRDs up to date in {target}")
        return
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text)
    click.echo(f"wrote {len(files)} XRDs to {target}")


@cli.command()
def stacks() -> None:
    """Per cloud: the drivers inferplane supports and the components that serve each."""
    from inferplane.accelerators.report import render_stacks_table

    click.echo(render_stacks_table())


def main() -> None:
    cli(prog_name="inferplane")


if __name__ == "__main__":
    main()
