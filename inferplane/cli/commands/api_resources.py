"""`inferplane api-resources`: every kind the CLI knows, as `kubectl api-resources` lists them."""

from __future__ import annotations

import click

from inferplane.cli.output import table


@click.command("api-resources")
def api_resources() -> None:
    """Every kind the CLI knows: name, short names, API version, whether namespaced, kind."""
    from inferplane.cli.resources import resource_types

    rows = [(t.plural, ",".join(t.short_names), t.api_version, str(t.namespaced).lower(), t.kind)
            for t in sorted(resource_types(), key=lambda t: (t.group, t.plural))]
    click.echo(table(("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"), rows))
