"""The `inferplane` command: the click group and the registration of its commands, one module each
under `inferplane/cli/commands/`."""

from __future__ import annotations

import importlib

import click

# Every command, by name: the module under inferplane/cli/commands/ that defines it, as a command of
# the module's name. A command's module is imported only when the command runs (or --help lists it):
# `inferplane --version` and `inferplane get` must answer at once, so each command also imports the
# engine, admission and YAML itself.
COMMANDS = {name: name.replace("-", "_") for name in (
    "validate", "apply", "diff", "get", "describe", "trace", "delete", "label", "wait", "scale", "fleet", "explain",
    "why", "route", "render", "audit", "stacks", "api-resources", "completion", "metrics", "xrds", "function",
    "package", "serve")}


class _Commands(click.Group):
    """The group of COMMANDS, each imported when it is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        return getattr(importlib.import_module(f"inferplane.cli.commands.{module}"), module)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:  # "Did you mean" among every command, loaded or not
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=COMMANDS, ctx=ctx) from None


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="inferplane", prog_name="inferplane")
def cli() -> None:
    """inferplane: a fleet-level inference control plane."""


def main() -> None:
    cli(prog_name="inferplane")


if __name__ == "__main__":
    main()
