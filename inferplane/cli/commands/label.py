"""`inferplane label`: set and remove labels as `kubectl label` does; the changed objects go through
admission, then the fleet is reconciled."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import NAMESPACE_OPTION, STATE_OPTION, TIMEOUT_OPTION
from inferplane.cli.report import EXIT_NOT_CONVERGED, print_errors, print_not_found, report_convergence
from inferplane.cli.state import opened


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, required=True, metavar="(TYPE NAME... | TYPE/NAME...) KEY=VALUE... KEY-...")
@click.option("--overwrite", is_flag=True, help="Change labels that already have a value (refused otherwise).")
@click.option("-l", "--selector", default=None, help="Label the objects of TYPE that match this selector.")
@click.option("--all", "every", is_flag=True, help="Label every object of TYPE (in the namespace).")
@NAMESPACE_OPTION
@STATE_OPTION
@TIMEOUT_OPTION
def label(args: tuple[str, ...], overwrite: bool, selector: str | None, every: bool, namespace: str | None,
          state: Path | None, timeout: float) -> None:
    """Set (KEY=VALUE) or remove (KEY-) labels on objects, as kubectl label does; the changed objects go
    through admission and the fleet is reconciled."""
    from inferplane.cli.query import objects_named

    specs = tuple(a for a in args if "=" in a or (a.endswith("-") and "/" not in a))
    targets = tuple(a for a in args if a not in specs)
    if not specs:
        raise click.UsageError("give at least one label: KEY=VALUE sets it, KEY- removes it")
    new, remove = _label_changes(specs)
    with opened(state, timeout, create=False) as runtime:
        objects, missing = objects_named(runtime, targets, namespace, selector, every)
        changes, verbs, failed = _relabel(objects, new, remove, overwrite)
        result = runtime.update(changes, "label") if changes else None
    if result is not None:
        print_errors(result.admission.errors)
        if result.admission.errors:
            sys.exit(1)
    for name, verb in verbs.items():
        click.echo(f"{name} {verb}")
    print_not_found(missing)
    if failed or missing:
        sys.exit(1)
    if result is not None and not report_convergence(result.report):
        sys.exit(EXIT_NOT_CONVERGED)


def _label_changes(specs: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """KEY=VALUE to set and KEY- to remove, as kubectl label parses them."""
    new, remove = {}, []
    for spec in specs:
        if spec.endswith("-") and "=" not in spec:
            remove.append(spec[:-1])
        else:
            key, _, value = spec.partition("=")
            new[key] = value
    if set(new) & set(remove):
        raise click.UsageError("can not both modify and remove a label in the same command")
    return new, remove


def _relabel(objects: list[dict], new: dict[str, str], remove: list[str], overwrite: bool):
    """(the updates to make, each object's verb by name, whether a label with a value was refused)."""
    from inferplane.cli.output import qualified_name
    from inferplane.runtime.store import Key

    changes, verbs, failed = [], {}, False
    for obj in objects:
        labels = dict(obj["metadata"].get("labels") or {})
        clash = [k for k, v in new.items() if k in labels and labels[k] != v and not overwrite]
        if clash:
            click.echo(f"error: '{clash[0]}' already has a value ({labels[clash[0]]}), and --overwrite is false",
                       err=True)
            failed = True
            continue
        changed = {**{k: v for k, v in labels.items() if k not in remove}, **new}
        verbs[qualified_name(obj)] = ("not labeled" if changed == labels
                                      else "unlabeled" if remove and not new else "labeled")
        if changed != labels:
            def relabel(body: dict, labels: dict = changed) -> None:
                body["metadata"]["labels"] = labels
                if not labels:
                    del body["metadata"]["labels"]
            changes.append((Key.of(obj), relabel))
    return changes, verbs, failed
