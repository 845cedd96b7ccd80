"""`inferplane get`: objects of one or more kinds as kubectl lists them, from the control plane or a
target cluster's simulated objects (--cluster)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import NAMESPACE_OPTION, STATE_OPTION, complete_kind, complete_name
from inferplane.cli.output import check_output
from inferplane.cli.report import print_not_found
from inferplane.cli.state import read_store


@click.command()
@click.argument("kind", metavar="KIND[,KIND...]", shell_complete=complete_kind)
@click.argument("names", nargs=-1, metavar="[NAME...]", shell_complete=complete_name)
@NAMESPACE_OPTION
@click.option("-A", "--all-namespaces", is_flag=True, help="List namespaced kinds in every namespace.")
@click.option("-l", "--selector", default=None, help="Label selector: a=b, a!=b, 'a in (x,y)', a, !a; comma-joined.")
@click.option("-o", "--output", default=None, callback=lambda ctx, param, value: check_output(value),
              help="wide, name, json, yaml, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,... (kubectl's).")
@click.option("--sort-by", default=None, metavar="JSONPATH",
              help="Order the objects by a field, e.g. '{.metadata.name}' or .status.replicas (kubectl's).")
@click.option("--show-labels", is_flag=True, help="Add a LABELS column, as kubectl does.")
@click.option("--show-managed-fields", is_flag=True,
              help="Keep metadata.managedFields in -o json and -o yaml (left out otherwise, as kubectl does).")
@click.option("--no-headers", is_flag=True, help="Leave out the header line of tables and custom columns.")
@click.option("--cluster", default=None,
              help="Read a target cluster's simulated objects (nodes, pods, resourceslices, ...) instead.")
@click.option("--for", "for_object", default=None, metavar="KIND/NAME", help="With events: only that object's.")
@STATE_OPTION
def get(kind: str, names: tuple[str, ...], namespace: str | None, all_namespaces: bool, selector: str | None,
        output: str | None, sort_by: str | None, show_labels: bool, show_managed_fields: bool, no_headers: bool,
        cluster: str | None, for_object: str | None, state: Path | None) -> None:
    """List objects of one or more kinds (or some by name), as kubectl does."""
    from inferplane.cli.output import sort_objects

    types, ns = _types(kind, namespace, all_namespaces, sort_by, cluster, for_object)
    selection = _selection(state, types, names, ns, selector, cluster, for_object, namespace)
    if sort_by is not None:
        selection.found = [(type_, sort_objects(found, sort_by)) for type_, found in selection.found]
    # A Secret a composed Object carries to a cluster (a ModelCache's token) is never printed: its values
    # are masked as kubectl diff masks them. `get secret` prints a Secret of the state, as kubectl does.
    from inferplane.cli.diffs import carried_secrets_masked

    selection.found = [(type_, [carried_secrets_masked(o) for o in found]) for type_, found in selection.found]
    objects = [o for _, found in selection.found for o in found]
    if output in (None, "wide") or output.startswith("custom-columns="):
        _print_tables(selection, types, ns, output, show_labels, no_headers)
    elif objects or not selection.missing:
        from inferplane.cli.output import as_list, render_objects

        if output in ("json", "yaml") and not show_managed_fields:  # kubectl's printers drop them unless asked
            objects = [_without_managed_fields(o) for o in objects]
        single = len(types) == 1 and len(names) == 1 and len(objects) == 1
        click.echo(render_objects(objects[0] if single else as_list(objects), output))
    print_not_found(selection.missing)
    sys.exit(1 if selection.missing else 0)


def _without_managed_fields(obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    if "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _types(kind: str, namespace: str | None, all_namespaces: bool, sort_by: str | None, cluster: str | None,
           for_object: str | None):
    """The types asked for and the namespace to read them in; a command line that cannot be answered is
    refused before anything is read."""
    from inferplane.cli.output import compiled_path, relaxed_path
    from inferplane.cli.query import namespace_for
    from inferplane.cli.resources import resolve_many

    if sort_by is not None:
        compiled_path(relaxed_path(sort_by), "'--sort-by'")  # a syntax error is reported before anything is read
    types = resolve_many(kind)
    ns = namespace_for(types, namespace, all_namespaces)
    in_cluster = [t for t in types if t.in_cluster]
    if cluster is None and in_cluster:
        raise click.UsageError(f"{in_cluster[0].plural} live in a target cluster: pass --cluster NAME "
                               "(`inferplane fleet` lists the clusters)")
    if cluster is not None and len(in_cluster) != len(types):
        outside = next(t for t in types if not t.in_cluster)
        raise click.UsageError(f"{outside.plural} live in the control plane, not in a target cluster: drop --cluster")
    if for_object is not None and [t.kind for t in types] != ["Event"]:
        raise click.UsageError("--for goes with `get events`")
    return types, ns


def _selection(state: Path | None, types, names: tuple[str, ...], ns: str | None, selector: str | None,
               cluster: str | None, for_object: str | None, namespace: str | None):
    """The objects of each type the names and selector pick, read from the state."""
    from inferplane.cli.query import event_subject, select
    from inferplane.cli.views import event_objects

    with read_store(state) as store:
        if cluster is not None:
            held = _cluster_objects(store, cluster)
            objects_of = lambda t: held  # noqa: E731
        else:
            subject = event_subject(for_object, namespace) if for_object else None
            objects_of = lambda t: (event_objects(store.event_log.events(subject))  # noqa: E731
                                    if t.kind == "Event" else _stored(store, t, names, ns))
        return select(types, objects_of, names, None if for_object else ns, selector)


def _stored(store, type_, names: tuple[str, ...], ns: str | None) -> list[dict]:
    """The stored objects of a type `get` may show: those named, read by key where their namespace is
    known (a state of 10,000 clusters need not be read to show one), else every one of the kind."""
    from inferplane.runtime.store import Key

    if not names or (type_.namespaced and ns is None):
        return store.list(type_.kind)
    keys = [Key(type_.group, type_.kind, ns if type_.namespaced else "", name) for name in names]
    return [obj for key in keys if (obj := store.get(key)) is not None]


def _print_tables(selection, types, ns: str | None, output: str | None, show_labels: bool,
                  no_headers: bool) -> None:
    """The tables of kubectl's default, wide and custom-columns outputs; "No resources found" on
    standard error when there is nothing to show and nothing was missing."""
    from inferplane.cli.output import custom_columns_table
    from inferplane.cli.views import events_table, get_table

    objects = [o for _, found in selection.found for o in found]
    custom = output is not None and output.startswith("custom-columns=")
    tables = []
    if custom and objects:  # one table over every kind, as kubectl prints custom columns
        tables.append(custom_columns_table(objects, output[len("custom-columns="):], no_headers=no_headers))
    for type_, found in () if custom else selection.found:
        if found:
            show_ns = ns is None and type_.namespaced
            render = events_table if type_.kind == "Event" else get_table
            tables.append(render(found, wide=output == "wide", namespaces=show_ns, qualify=len(types) > 1,
                                 show_labels=show_labels, no_headers=no_headers))
    if tables:
        click.echo("\n\n".join(tables))
    elif not selection.missing:
        scoped = any(t.namespaced for t in types) and ns is not None
        click.echo(f"No resources found{f' in {ns} namespace' if scoped else ''}.", err=True)


def _cluster_objects(store, cluster: str) -> list[dict]:
    """A target cluster's simulated objects; a clear error where there is no such running cluster."""
    from inferplane import API_GROUP
    from inferplane.api.inference_cluster import CLUSTER_READY, InferenceCluster
    from inferplane.cli.views import condition
    from inferplane.runtime.store import Key
    from inferplane.simulator.cluster_objects import simulated_objects

    held = simulated_objects(store, cluster).get(cluster)
    if held:
        return held
    owner = store.get(Key(API_GROUP, InferenceCluster.KIND, "", cluster))
    if owner is None:
        raise click.ClickException(f"InferenceCluster {cluster!r} does not exist: `inferplane get inferenceclusters` "
                                   "lists them")
    ready = condition(owner, CLUSTER_READY)
    raise click.ClickException(f"InferenceCluster {cluster} has no running cluster: {CLUSTER_READY} is "
                               f"{ready.get('status', 'Unknown')} ({ready.get('reason', 'not reconciled')}): "
                               f"{ready.get('message', '')}: `inferplane describe icluster {cluster}` says more")
