"""`inferplane trace`: the tree of everything composed under an object, like `crossplane beta trace`."""

from __future__ import annotations

from pathlib import Path

import click

from inferplane.cli.options import object_arguments
from inferplane.cli.state import opened


@click.command()
@object_arguments
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def trace(kind: str, name: str, namespace: str | None, output: str, state: Path | None) -> None:
    """The tree of everything composed under an object, with each one's readiness."""
    import json

    from inferplane.cli.query import fetch
    from inferplane.cli.views import trace_table, trace_tree

    with opened(state, read_only=True) as runtime:
        tree = trace_tree(fetch(runtime, kind, name, namespace), runtime.list())
    click.echo(json.dumps(tree, indent=2) if output == "json" else trace_table(tree))
