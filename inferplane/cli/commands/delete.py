"""`inferplane delete`: an object, or every object a manifest file names, with everything composed
under each, users before what they use."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import NAMESPACE_OPTION, RECURSIVE_OPTION, STATE_OPTION, TIMEOUT_OPTION, complete_kind, complete_name
from inferplane.cli.report import EXIT_NOT_CONVERGED, print_errors, report_convergence
from inferplane.cli.state import opened


@click.command()
@click.argument("kind", required=False, shell_complete=complete_kind)
@click.argument("name", required=False, shell_complete=complete_name)
@click.option("-f", "--filename", "paths", multiple=True, type=click.Path(path_type=Path, readable=False),
              help="Delete the objects a manifest file (a folder of them, or - for standard input) names.")
@RECURSIVE_OPTION
@click.option("--ignore-not-found", is_flag=True, help="With -f: an object that does not exist is no error.")
@NAMESPACE_OPTION
@STATE_OPTION
@TIMEOUT_OPTION
def delete(kind: str | None, name: str | None, paths: tuple[Path, ...], recursive: bool, ignore_not_found: bool,
           namespace: str | None, state: Path | None, timeout: float) -> None:
    """Delete an object (KIND NAME) or every object a file names (-f), and everything composed under
    each, users first; refused while something else uses it."""
    from inferplane.cli.query import fetch, object_key

    if bool(paths) == bool(kind or name) or (kind and not name):
        raise click.UsageError("give KIND NAME, or -f FILE for the objects a manifest names")
    keys = _keys_in_files(paths, recursive) if paths else [object_key(kind, name, namespace)]
    with opened(state, timeout, create=False) as runtime:
        if not paths:
            fetch(runtime, kind, name, namespace)  # not found: says where else to look
        found = [key for key in keys if runtime.get(key) is not None]
        failed = _report_missing([key for key in keys if key not in found], ignore=bool(paths) and ignore_not_found)
        refused = _delete_in_order(runtime, found)
    if refused and not paths:
        raise click.ClickException(str(next(iter(refused.values()))))
    for exc in refused.values():
        click.echo(f"error: {exc}", err=True)
    if failed or refused:
        sys.exit(1)


def _report_missing(missing: list, ignore: bool) -> bool:
    """Objects not found, said as kubectl says them (unless ignored); whether that is a failure."""
    if ignore:
        return False
    for key in missing:
        where = f" in namespace {key.namespace}" if key.namespace else ""
        click.echo(f'Error from server (NotFound): {key.kind.lower()}{"." + key.group if key.group else ""} '
                   f'"{key.name}" not found{where}', err=True)
    return bool(missing)


def _delete_in_order(runtime, found: list) -> dict:
    """Delete the objects in their order, except that one another of them still uses waits for that
    one (a fleet's file lists classes before the clusters that use them); the refusals left at the end.
    Exits when another command's reconcile keeps the state, or the fleet does not reach its fixpoint."""
    from inferplane.engine.in_use import InUse

    refused: dict = {}
    deleted_any = False
    while found:
        progress, later = False, []
        for key in found:
            try:
                deleted, report = runtime.delete(key)
            except InUse as exc:
                refused[key] = exc
                later.append(key)
                continue
            if not deleted and report.waited_for:
                what = f"{key.qualified()} and what follows it not deleted" if deleted_any else "nothing deleted"
                click.echo(f"error: {what}: {report.waited_for} is still reconciling this state: run the command "
                           "again with a longer --timeout to wait for it", err=True)
                sys.exit(EXIT_NOT_CONVERGED)
            refused.pop(key, None)
            progress = deleted_any = True
            where = f" (namespace {key.namespace})" if key.namespace else ""
            click.echo(f"{key.qualified()} deleted{where}")
            if not report_convergence(report):
                sys.exit(EXIT_NOT_CONVERGED)
        if not progress:
            break
        found = later
    return refused


def _keys_in_files(paths: tuple[Path, ...], recursive: bool) -> list:
    """The objects a manifest file names, for `delete -f`: kind, name and namespace only, as kubectl
    reads them (the rest of each document is not checked)."""
    from inferplane.admission.install_objects import install_object_note
    from inferplane.admission.manifests import load
    from inferplane.cli.query import object_key

    manifests, errors = load(list(paths), recursive=recursive)
    if errors:
        print_errors(errors)
        sys.exit(1)
    keys, problems = [], []
    for manifest in manifests:
        body = manifest.body if isinstance(manifest.body, dict) else {}
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        kind, version, name = body.get("kind"), body.get("apiVersion"), metadata.get("name")
        if not all(isinstance(v, str) and v for v in (kind, version, name)):
            problems.append(f"{manifest.source}: a document to delete needs apiVersion, kind and metadata.name")
            continue
        if install_object_note(body) is not None:
            click.echo(f"note: {manifest.source}: {kind}/{name}: never stored (not needed by the embedded "
                       "engine): nothing to delete", err=True)
            continue
        group = version.rsplit("/", 1)[0] if "/" in version else ""
        keys.append(object_key(f"{kind}.{group}" if group else kind, name, metadata.get("namespace")))
    if problems or not (keys or len(manifests)):
        print_errors(problems or [f"no objects passed to delete in {', '.join(map(str, paths))}"])
        sys.exit(1)
    return keys
