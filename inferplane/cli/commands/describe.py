"""`inferplane describe`: one object's essentials, status, conditions, composed resources and events."""

from __future__ import annotations

from pathlib import Path

import click

from inferplane.cli.commands.why import placement
from inferplane.cli.options import object_arguments
from inferplane.cli.state import opened


@click.command()
@object_arguments
def describe(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    """Spec essentials, status, conditions, composed resources and events of one object."""
    from inferplane.api.model_deployment import ModelDeployment
    from inferplane.cli.query import fetch
    from inferplane.cli.diffs import carried_secrets_masked
    from inferplane.cli.views import describe as render
    from inferplane.compose.model_deployment import verdict
    from inferplane.runtime.store import Key

    with opened(state, read_only=True) as runtime:
        obj = fetch(runtime, kind, name, namespace)
        composed = runtime.store.controlled_by(obj["metadata"]["uid"])
        shown = placement(runtime, obj, verdict) if obj["kind"] == ModelDeployment.KIND else None
        click.echo(render(carried_secrets_masked(obj), composed, runtime.store.event_log.events(Key.of(obj)), shown))
