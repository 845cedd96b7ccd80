"""The README's command table is the CLI's: every command, and every flag of each, is in it."""

import re
from pathlib import Path

import click

from inferplane.cli.main import cli

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


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


def readme_rows() -> dict[str, str]:
    """Command table rows by the command they document (the words before the first argument or flag)."""
    rows = {}
    for line in README.splitlines():
        match = re.match(r"\| `(inferplane(?: [a-z][a-z-]*)*)[^`]*` \|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_the_readme_documents_every_command_and_nothing_else():
    documented = set(readme_rows()) - {"inferplane"}
    assert documented == set(commands(cli))


def test_the_readme_names_every_flag_of_every_command():
    rows = readme_rows()
    missing = []
    for path, command in commands(cli).items():
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help":
                flags = param.opts
                if not any(f in rows[path] for f in flags) and not (param.name == "state" and "--state" in README):
                    missing.append(f"{path} {flags[0]}")
    assert missing == []
    assert "| `inferplane --version` |" in README
