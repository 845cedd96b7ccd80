"""`inferplane fleet`: what runs on each cluster and where each model's replicas run, as a table or
one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from inferplane.cli.options import STATE_OPTION
from inferplane.cli.state import opened


@click.command()
@click.option("--html", "html_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the fleet as one self-contained HTML page to FILE instead of printing the table.")
@STATE_OPTION
def fleet(html_file: Path | None, state: Path | None) -> None:
    """What runs on each cluster (cloud, readiness, drivers, pools, device stacks) and what is wanted; then,
    when models are deployed, where each model's replicas run."""
    from inferplane.cli.views import fleet_view

    with opened(state, read_only=True) as runtime:
        if html_file is None:
            click.echo(fleet_view(runtime.list()))
            return
        from inferplane.cli.fleet_page import CLUSTER_KINDS, PAGE_KINDS, fleet_page
        from inferplane.simulator.cluster_objects import simulated_objects

        page = fleet_page([o for kind in PAGE_KINDS for o in runtime.list(kind)],
                          simulated_objects(runtime.store, kinds=CLUSTER_KINDS), runtime.store.event_log.events())
    try:
        html_file.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write the fleet page to {html_file}: {exc.strerror}: pass --html "
                                   "with a path in a folder you can write to") from None
    click.echo(f"wrote {html_file}: open it in a browser (it needs no network)")
