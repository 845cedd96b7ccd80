"""`inferplane package build`: the Crossplane Configuration package."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def package() -> None:
    """The Crossplane Configuration package: XRDs, Compositions, Usages and the Function."""


@package.command("build")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option("--image", default=None, metavar="REF",
              help="The Function's image, as crossplane.yaml and the install manifests name it "
                   "(default: the registry and version in inferplane/crossplane/package.py).")
def package_build(folder: Path, image: str | None) -> None:
    """Write the Configuration package into FOLDER (created; files of the package are replaced)."""
    from inferplane.crossplane.package import build

    try:
        written = build(folder, image)
    except OSError as exc:
        raise click.ClickException(f"{folder}: cannot write the package: {exc.strerror or exc}") from None
    for path in written:
        click.echo(str(path))
    click.echo(f"wrote {len(written)} files to {folder}", err=True)
