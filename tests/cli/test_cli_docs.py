"""docs/cli.md's command table is the CLI's: every command, and every flag of each, is in it, and every
command it documents exists."""

import re
from pathlib import Path

import click
from click.testing import CliRunner

from inferplane.cli.main import cli

CLI_DOC = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()


def commands(group: click.Group, prefix: str = "inferplane") -> dict[str, click.Command]:
    out = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            out.update(commands(command, f"{prefix} {name}"))
        else:
            out[f"{prefix} {name}"] = command
    return out


def helped(args: tuple[str, ...] = ()) -> set[str]:
    """Every command `inferplane ARGS --help` lists, and those its groups' own `--help` list, as typed."""
    result = CliRunner().invoke(cli, [*args, "--help"])
    assert result.exit_code == 0, result.output
    listed = result.output.split("Commands:\n", 1)[1].splitlines() if "Commands:\n" in result.output else []
    out = set()
    for line in listed:
        match = re.match(r"  ([a-z][a-z-]*)\s", line)
        if match:
            path = (*args, match.group(1))
            sub = CliRunner().invoke(cli, [*path, "--help"])
            out |= helped(path) if "Commands:\n" in sub.output else {" ".join(("inferplane", *path))}
    return out


def documented_rows() -> dict[str, str]:
    """Command table rows by the command they document (the words before the first argument or flag)."""
    rows = {}
    for line in CLI_DOC.splitlines():
        match = re.match(r"\| `(inferplane(?: [a-z][a-z-]*)*)[^`]*` \|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_the_command_tree_is_what_help_lists():
    assert helped() == set(commands(cli))


def test_docs_cli_documents_every_command_and_nothing_else():
    documented = set(documented_rows()) - {"inferplane"}
    assert documented == set(commands(cli))


def test_docs_cli_names_every_flag_of_every_command():
    rows = documented_rows()
    missing = []
    for path, command in commands(cli).items():
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help":
                flags = param.opts
                if not any(f in rows[path] for f in flags) and not (param.name == "state" and "--state" in CLI_DOC):
                    missing.append(f"{path} {flags[0]}")
    assert missing == []
    assert "| `inferplane --version` |" in CLI_DOC
