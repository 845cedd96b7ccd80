"""`inferplane explain`: a kind's field documentation, as `kubectl explain` prints it (and, deprecated,
with a NAME, the placement explainer `why` now is)."""

from __future__ import annotations

from pathlib import Path

import click

from inferplane.cli.commands.why import print_why
from inferplane.cli.options import NAMESPACE_OPTION, STATE_OPTION, complete_kind, complete_name


@click.command()
@click.argument("kind", metavar="KIND[.FIELD.PATH]", shell_complete=complete_kind)
@click.argument("name", required=False, shell_complete=complete_name)
@click.option("-R", "--recursive", is_flag=True, help="Print the fields of fields.")
@click.option("--max-depth", type=int, default=0, show_default=True,
              help="With --recursive: how many levels of fields to print (0: every level).")
@click.option("--api-version", default=None, metavar="GROUP/VERSION",
              help="The API version of the kind to document.")
@NAMESPACE_OPTION
@STATE_OPTION
def explain(kind: str, name: str | None, recursive: bool, max_depth: int, api_version: str | None,
            namespace: str | None, state: Path | None) -> None:
    """A kind's fields and their documentation, from its OpenAPI schema (our XRDs', the provider configs'
    CRDs', Kubernetes' core kinds'), as kubectl explain prints them: `inferplane explain
    inferencecluster.spec.nodePools`, `inferplane explain secret`. With a NAME (deprecated), as `why`."""
    if name is not None:
        _deprecated_why(kind, name, namespace, state)
        return
    if max_depth < 0:
        raise click.UsageError("--max-depth must be non-negative")
    if max_depth and not recursive:
        raise click.UsageError("--max-depth requires --recursive")
    from inferplane.cli.explain import Explainer, FieldNotFound
    from inferplane.cli.resources import resolve_field_path
    from inferplane.crossplane.stored_openapi import documented_kinds, openapi_document

    resource, field_path = resolve_field_path(kind, documented_kinds(), api_version)
    try:
        text = Explainer(openapi_document(resource.api_version)).explain(
            resource.group, resource.api_version.rsplit("/", 1)[-1], resource.plural, field_path, recursive, max_depth)
    except FieldNotFound as error:
        raise click.ClickException(str(error)) from None
    click.echo(text, nl=False)


def _deprecated_why(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    # kubectl explain takes one word, so two can only mean this command's former placement explainer:
    # scripts that call it keep their output, and are told where it moved.
    if "." in kind:
        raise click.UsageError(f"explain takes one KIND[.FIELD.PATH], not also {name!r}: "
                               f"`inferplane why KIND NAME` explains a ModelDeployment's placement")
    moved = f"inferplane why {kind} {name}" + (f" -n {namespace}" if namespace else "")
    click.echo(f"Warning: `inferplane explain {kind} NAME` is deprecated: its placement explanation is now "
               f"`{moved}`; `explain` documents fields, as kubectl's does", err=True)
    print_why(kind, name, namespace, state)
