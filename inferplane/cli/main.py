"""The `inferplane` command: the click group and the registration of its commands, one module each
under `inferplane/cli/commands/`."""

from __future__ import annotations

import click

# Each command module imports only click and the CLI's light modules at import time: `inferplane --help`
# and shell completion must answer at once, so each command imports the engine, admission and YAML itself.
from inferplane.cli.commands.api_resources import api_resources
from inferplane.cli.commands.apply import apply
from inferplane.cli.commands.audit import audit
from inferplane.cli.commands.completion import completion
from inferplane.cli.commands.delete import delete
from inferplane.cli.commands.describe import describe
from inferplane.cli.commands.diff import diff
from inferplane.cli.commands.explain import explain
from inferplane.cli.commands.fleet import fleet
from inferplane.cli.commands.function import function
from inferplane.cli.commands.get import get
from inferplane.cli.commands.label import label
from inferplane.cli.commands.metrics import metrics
from inferplane.cli.commands.package import package
from inferplane.cli.commands.render import render
from inferplane.cli.commands.route import route
from inferplane.cli.commands.scale import scale
from inferplane.cli.commands.stacks import stacks
from inferplane.cli.commands.trace import trace
from inferplane.cli.commands.validate import validate
from inferplane.cli.commands.wait import wait
from inferplane.cli.commands.why import why
from inferplane.cli.commands.xrds import xrds


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="inferplane", prog_name="inferplane")
def cli() -> None:
    """inferplane: a fleet-level inference control plane."""


# `inferplane --help` lists them by name, whatever the order here.
for command in (validate, apply, diff, get, describe, trace, delete, label, wait, scale, fleet, explain, why, route,
                render, audit, stacks, api_resources, completion, metrics, xrds, function, package):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="inferplane")


if __name__ == "__main__":
    main()
