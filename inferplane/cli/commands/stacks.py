"""`inferplane stacks`: per cloud, the supported drivers and the components that serve each."""

from __future__ import annotations

import click

from inferplane.cli.output import table


@click.command()
def stacks() -> None:
    """Per cloud: the drivers inferplane supports and the components that serve each."""
    from inferplane.accelerators.report import stacks_rows

    click.echo(table(("CLOUD", "DRIVER", "COMPONENTS"), stacks_rows()))
