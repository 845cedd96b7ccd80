"""`inferplane completion`: the shell completion script (click completes commands and options; kinds
and names come from `inferplane.cli.completion`)."""

from __future__ import annotations

import click


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script (commands, kinds and names): eval "$(inferplane completion bash)"."""
    from click.shell_completion import get_completion_class

    # The script completes the whole command, the group this command is registered in.
    root = ctx.find_root().command
    click.echo(get_completion_class(shell)(root, {}, "inferplane", "_INFERPLANE_COMPLETE").source())
