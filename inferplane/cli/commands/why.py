"""`inferplane why`: where a ModelDeployment's replicas run and why some fit nowhere; the placement
`describe` prints comes from here too."""

from __future__ import annotations

from pathlib import Path

import click

from inferplane.cli.options import object_arguments
from inferplane.cli.state import opened


@click.command()
@object_arguments
def why(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    """Where a ModelDeployment's replicas run and, for those that fit nowhere, each cluster and the step
    that refused it."""
    print_why(kind, name, namespace, state)


def print_why(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    """Every step of the placement of the ModelDeployment KIND NAME names (`explain KIND NAME` too)."""
    from inferplane.api.model_deployment import ModelDeployment
    from inferplane.cli.query import fetch
    from inferplane.compose.model_deployment import explain as explain_placement

    with opened(state, read_only=True) as runtime:
        obj = fetch(runtime, kind, name, namespace)
        if obj["kind"] != ModelDeployment.KIND:
            raise click.ClickException(f"{obj['kind']} has no placement to explain: name a ModelDeployment (md)")
        click.echo("\n".join(placement(runtime, obj, explain_placement)))


def placement(runtime, obj: dict, lines) -> list[str]:
    """A ModelDeployment's placement as the scheduler decides it over the fleet now, told by `lines`
    (the explainer `why` prints, or describe's verdict) from the request that carries every resource
    the function requires."""
    from inferplane.compose.model_deployment import compose_model_deployment
    from inferplane.runtime.requirements import call_with_requirements, resolver
    from inferplane.runtime.store import Key

    fleet = {Key.of(o): o for o in runtime.list()}
    answered = []

    def answering(request):
        answered.append(request)  # the last request is the one with every requirement answered
        return compose_model_deployment(request)

    call_with_requirements(resolver(fleet), answering, obj, {})
    return lines(answered[-1])
