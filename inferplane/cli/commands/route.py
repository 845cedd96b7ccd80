"""`inferplane route`: how a request to a ModelService travels, rule by rule and backend by backend."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import STATE_OPTION
from inferplane.cli.state import opened


@click.command()
@click.argument("service", metavar="NAMESPACE/SERVICE")
@click.option("--path", default="/v1/completions", show_default=True,
              help="The path after the service's address, as a client sends it.")
@click.option("--method", default="POST", show_default=True, help="The request's HTTP method.")
@STATE_OPTION
def route(service: str, path: str, method: str, state: Path | None) -> None:
    """Where a request to a ModelService goes: the matched route rule, each backend's share and URL."""
    from inferplane.cli.route_report import route_report

    namespace, _, name = service.rpartition("/")
    if not namespace or not name or not path.startswith("/"):
        raise click.UsageError("name the service as NAMESPACE/SERVICE (e.g. ml-team/qwen-cpu) and give --path "
                               "starting with / (e.g. /v1/completions)")
    with opened(state, read_only=True) as runtime:
        objects = runtime.list()
    report, routed = route_report(objects, namespace, name, path, method.upper())
    click.echo(report, err=not routed)
    sys.exit(0 if routed else 1)
