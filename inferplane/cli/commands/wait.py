"""`inferplane wait`: until objects meet a condition, as `kubectl wait` does."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import NAMESPACE_OPTION, STATE_OPTION
from inferplane.cli.report import print_not_found
from inferplane.cli.state import opened


@click.command()
@click.argument("args", nargs=-1, metavar="TYPE NAME... | TYPE/NAME...")
@click.option("--for", "condition", required=True, metavar="CONDITION",
              help="delete, condition=TYPE[=VALUE] (VALUE defaults to true), or jsonpath='{.PATH}'[=VALUE].")
@click.option("--timeout", "timeout_text", default="30s", show_default=True,
              help="How long to wait: a duration such as 30s, 5m or 1h (0: check once).")
@click.option("-l", "--selector", default=None, help="Wait for the objects of TYPE that match this selector.")
@click.option("--all", "every", is_flag=True, help="Wait for every object of TYPE (in the namespace).")
@NAMESPACE_OPTION
@STATE_OPTION
def wait(args: tuple[str, ...], condition: str, timeout_text: str, selector: str | None, every: bool,
         namespace: str | None, state: Path | None) -> None:
    """Wait until objects meet a condition, as kubectl wait does: prints `... condition met` per object,
    exit 1 at --timeout naming the objects that did not."""
    import time

    from inferplane.cli.query import objects_named
    from inferplane.cli.resources import resolve
    from inferplane.runtime.store import Key

    holds, deleting = _wait_test(condition)
    deadline = time.monotonic() + _duration(timeout_text)
    with opened(state, create=False) as runtime:
        objects, missing = objects_named(runtime, args, namespace, selector, every)
    if missing and not deleting:
        print_not_found(missing)
        sys.exit(1)
    pending = _wait_until(state, {Key.of(o): o for o in objects}, holds, deadline)
    for key in pending:
        plural = next(t.plural for t in resolve(key.kind) if t.group == key.group)
        click.echo(f"error: timed out waiting for the condition on {plural}/{key.name}", err=True)
    sys.exit(1 if pending else 0)


def _wait_until(state: Path | None, pending: dict, holds, deadline: float) -> dict:
    """Print `... condition met` for each object as it meets the test; those that had not at the
    deadline."""
    import time

    from inferplane.cli.output import qualified_name

    names = {key: qualified_name(obj) for key, obj in pending.items()}
    while True:
        for key in [k for k, obj in pending.items() if holds(obj)]:
            click.echo(f"{names[key]} condition met")
            del pending[key]
        if not pending or time.monotonic() >= deadline:
            return pending
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        # Another inferplane command may be reconciling this state: read what it has written since.
        with opened(state, create=False) as runtime:
            pending = {key: runtime.get(key) for key in pending}


def _duration(value: str) -> float:
    """kubectl's --timeout: a Go duration (30s, 5m, 1h30m, 500ms); a bare number is seconds."""
    import re

    parts = re.fullmatch(r"((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)|(\d+(?:\.\d+)?)", value.strip())
    if not parts:
        raise click.BadParameter(f"{value!r}: write a duration such as 30s, 5m or 1h", param_hint="'--timeout'")
    if parts.group(2):
        return float(parts.group(2))
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", value))


def _wait_test(condition: str):
    """--for: a test of one object (None once it is gone) and whether it waits for a deletion."""
    from inferplane.cli.output import compiled_path, go_text, relaxed_path

    if condition == "delete":
        return (lambda obj: obj is None), True
    if condition.startswith("condition="):
        name, _, wanted = condition[len("condition="):].partition("=")
        wanted = wanted or "true"
        return (lambda obj: obj is not None and any(
            c.get("type", "").lower() == name.lower() and str(c.get("status", "")).lower() == wanted.lower()
            for c in (obj.get("status") or {}).get("conditions", []))), False
    if condition.startswith("jsonpath="):
        expression = condition[len("jsonpath="):]
        # The value follows the expression's closing brace: {.status.phase}=Running (none: the field exists).
        path, _, wanted = expression.rpartition("}=") if "}=" in expression else (expression, "", None)
        path = compiled_path(relaxed_path(path + "}" if wanted is not None else path))

        def holds(obj):
            found = [m.value for m in path.find(obj)] if obj is not None else []
            if wanted is None:
                return bool(found)
            return bool(found) and all(go_text(v) == wanted for v in found)
        return holds, False
    raise click.BadParameter(f"{condition!r}: use delete, condition=TYPE[=VALUE] or jsonpath='{{PATH}}'[=VALUE]",
                             param_hint="'--for'")
