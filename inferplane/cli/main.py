"""The `inferplane` command."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import click

# Only click and our light output module at import time: `inferplane --help` and shell completion must
# answer at once, so each command imports the engine, admission and YAML itself.
from inferplane import DOCUMENTS_ENV, DOCUMENTS_FLAG, MAX_DOCUMENTS, MAX_STREAM_BYTES, STREAM_BYTES_ENV, \
    STREAM_BYTES_FLAG
from inferplane.cli.output import check_output, table

if TYPE_CHECKING:
    from inferplane.engine.runtime import Runtime


STATE_OPTION = click.option(
    "--state", type=click.Path(path_type=Path), default=None,
    help="State folder (default: $INFERPLANE_STATE, else ./.inferplane).")
FILES_OPTION = click.option("-f", "--filename", "paths", multiple=True, required=True,
                            type=click.Path(path_type=Path),
                            help="A manifest file, a folder of them, or - for standard input (repeatable).")
NAMESPACE_OPTION = click.option("-n", "--namespace", default=None,
                                help="Namespace of a namespaced kind (default: default).")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="inferplane", prog_name="inferplane")
def cli() -> None:
    """inferplane: a fleet-level inference control plane."""


class ByteSize(click.ParamType):
    """A number of bytes, plain or with a binary suffix: 67108864, 64Mi, 1Gi."""

    name = "BYTES"
    _SCALES = {"": 1, "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3}

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+)\s*([KMG]i)?\s*", str(value))
        if match is None or int(match.group(1)) == 0:
            self.fail(f"{value!r} is not a size: write a number of bytes, or one with Ki, Mi or Gi, e.g. 128Mi",
                      param, ctx)
        return int(match.group(1)) * self._SCALES[match.group(2) or ""]


def stream_limits(command):
    """--max-file-bytes and --max-documents (or their environment variables): how large a file, or
    standard input, of manifests may be."""
    command = click.option(
        STREAM_BYTES_FLAG, "max_bytes", type=ByteSize(), default=MAX_STREAM_BYTES, envvar=STREAM_BYTES_ENV,
        show_envvar=True, help=f"Refuse a manifest file, or standard input, larger than this (default "
                               f"{MAX_STREAM_BYTES // 1024 ** 2}Mi).")(command)
    return click.option(
        DOCUMENTS_FLAG, "max_documents", type=click.IntRange(min=1), default=MAX_DOCUMENTS, envvar=DOCUMENTS_ENV,
        show_envvar=True, help=f"Refuse a manifest file, or standard input, of more documents than this, a List's "
                               f"items counting one each (default {MAX_DOCUMENTS:,}).")(command)


def _limits(max_bytes: int, max_documents: int):
    from inferplane.admission.limits import StreamLimits

    return StreamLimits(max_bytes, max_documents)


def _refuse_nothing_found(admission, paths: tuple[Path, ...], code: int = 1) -> None:
    """No objects in the input is an error, whatever the command (kubectl: "no objects passed to apply")."""
    if not admission.admitted and not admission.errors and not admission.notes:
        click.echo(f"Error: no objects found in {', '.join(map(str, paths))}: a manifest needs apiVersion, kind "
                   "and metadata", err=True)
        sys.exit(code)


@cli.command()
@click.option("-f", "--filename", "paths", multiple=True, required=True, type=click.Path(path_type=Path),
              help="A manifest file, a folder of them, or - for standard input (repeatable).")
@click.option("--strict", is_flag=True, help="Count warnings (what apply would hold) as errors: exit 1 on any.")
@STATE_OPTION
@stream_limits
def validate(paths: tuple[Path, ...], strict: bool, state: Path | None, max_bytes: int, max_documents: int) -> None:
    """Check manifests as the API server would; print every error, and as warnings what apply would
    hold (a missing class, drivers the cluster's cloud cannot serve); exit 1 on any error. Classes
    already applied to the state (where there is one) count as present."""
    from inferplane import state_dir
    from inferplane.admission import admit_paths

    known = None
    if (state_dir(state) / "store.db").is_file():  # the engine is imported only where there is a state
        with opened(state, create=False) as runtime:
            known = runtime.known_classes()
    from inferplane.cli.resources import display_kind

    result = admit_paths(list(paths), known_classes=known, limits=_limits(max_bytes, max_documents))
    _refuse_nothing_found(result, paths)
    if result.admitted:
        rows = [(display_kind(obj.kind, obj.api_version), obj.metadata.name, manifest.source)
                for manifest, obj in result.admitted]
        click.echo(table(("KIND", "NAME", "SOURCE"), rows))
    for error in result.errors:
        click.echo(f"error: {error}", err=True)
    for warning in result.warnings:
        click.echo(f"{'error' if strict else 'Warning'}: {warning}", err=True)
    _print_notes(result.notes)
    failed = len(result.errors) + (len(result.warnings) if strict else 0)
    summary = f"{len(result.admitted)} valid, {failed} error{'s' if failed != 1 else ''}"
    if result.warnings and not strict:
        summary += f", {len(result.warnings)} warning{'s' if len(result.warnings) != 1 else ''}"
    if result.notes:
        summary += f", {len(result.notes)} not needed here (not stored)"
    click.echo(summary, err=bool(failed))
    sys.exit(1 if failed else 0)


@cli.command()
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder to write the XRDs to (default: the package's crossplane/xrds).")
@click.option("--check", is_flag=True, help="Exit 1 if the files on disk differ from the generator's output.")
def xrds(out: Path | None, check: bool) -> None:
    """Generate the Crossplane CompositeResourceDefinitions of every kind."""
    from inferplane.api.xrd import xrd_files
    from inferplane.crossplane import XRD_DIR

    target = out or XRD_DIR
    files = xrd_files()
    if check:
        stale = [name for name, text in files.items()
                 if not (target / name).exists() or (target / name).read_text() != text]
        extra = sorted(p.name for p in target.glob("*.yaml") if p.name not in files) if target.exists() else []
        for name in stale + extra:
            click.echo(f"out of date: {target / name}", err=True)
        if stale or extra:
            click.echo("run `inferplane xrds` and commit the result", err=True)
            sys.exit(1)
        click.echo(f"{len(files)} XRDs up to date in {target}")
        return
    target.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (target / name).write_text(text)
    click.echo(f"wrote {len(files)} XRDs to {target}")


def _complete_kind(ctx, param, incomplete: str):
    from inferplane.cli.completion import complete_kinds

    return complete_kinds(incomplete)


def _complete_name(ctx, param, incomplete: str):
    from inferplane.cli.completion import complete_names

    return complete_names(ctx.params, incomplete)


def object_arguments(command):
    """KIND NAME [-n NAMESPACE] [--state DIR]: how every single-object command names its object."""
    for decorator in reversed((click.argument("kind", shell_complete=_complete_kind),
                               click.argument("name", shell_complete=_complete_name), NAMESPACE_OPTION,
                               STATE_OPTION)):
        command = decorator(command)
    return command


# Exit codes: 1 for a mistake in the input (or a state that cannot be used), 3 when the command did
# its writes but the fleet did not reach its fixpoint (click itself uses 2 for a bad command line).
EXIT_NOT_CONVERGED = 3
TIMEOUT_OPTION = click.option(
    "--timeout", type=click.FloatRange(min=0), default=300.0, show_default=True,
    help="Seconds to wait for another inferplane command working on the same state.")


@contextlib.contextmanager
def opened(state: Path | None, wait: float | None = None, create: bool = True,
           read_only: bool = False) -> Iterator["Runtime"]:
    """The runtime on the state folder, closed however the command ends; whatever keeps the state
    from being used (another process's lock, a read-only folder, a file that is not a state or is
    damaged) is reported with its fix, never a traceback. A command that does not create (create=False)
    refuses a folder with no store rather than create an empty one; one that only reads (read_only)
    works on a state it may not write."""
    from inferplane.engine.runtime import DEFAULT_WAIT, Runtime, state_dir
    from inferplane.runtime.store import STORE_FILE, StoreError, UnknownSchema

    folder = state_dir(state)
    if (read_only or not create) and not (folder / STORE_FILE).is_file():
        raise click.ClickException(
            f"no inferplane state in {folder}: `inferplane apply -f FILE --state {folder}` creates it; or pass "
            "--state (or set $INFERPLANE_STATE) to the folder you applied to")
    try:
        runtime = Runtime(folder, progress=_progress_bar(), wait=DEFAULT_WAIT if wait is None else wait,
                          read_only=read_only)
    except UnknownSchema as exc:
        raise click.ClickException(f"cannot open the state in {folder}: {exc}") from None
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot open the state in {folder}: {exc.strerror}: {exc.filename}: pass "
                                   "--state with a folder this user may read and write") from None
    try:
        yield runtime
        runtime.progress.finish()
    except Exception as exc:
        failure = runtime.store.failure(exc)
        if failure is None:
            raise
        raise click.ClickException(str(failure)) from None
    finally:
        runtime.close()


@contextlib.contextmanager
def scratch(state: Path | None) -> Iterator[tuple["Runtime", list[dict]]]:
    """An in-memory copy of the state (empty where there is none) and what the state holds now: for
    dry runs and diffs, which store nothing."""
    from inferplane.engine.runtime import Runtime, state_dir
    from inferplane.runtime.store import STORE_FILE

    if (state_dir(state) / STORE_FILE).is_file():
        with opened(state, read_only=True) as runtime:
            before, copy = runtime.list(), runtime.scratch_copy()
    else:
        before, copy = [], Runtime(None)
    try:
        yield copy, before
    finally:
        copy.close()


def _progress_bar():
    """Progress on standard error: a bar on a terminal, a plain line every few seconds elsewhere."""
    from inferplane.cli.progress import Progress

    return Progress(lambda text, newline: click.echo(text, nl=newline, err=True), terminal=sys.stderr.isatty())


def _apply_summary(runtime, result, started: float, dry_run: bool = False) -> str:
    """The line that ends an apply: time taken, what changed, and which applied objects are not ready, why."""
    from inferplane.cli.progress import apply_summary

    not_ready = []
    for key, _ in result.applied:
        conditions = runtime.store.conditions(key) or []
        ready = next((c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)
        if ready is not None and ready.get("status") != "True":
            not_ready.append((str(key), ready.get("reason") or "NotReady"))
        elif ready is None and key.kind in runtime.functions:  # a composite no reconcile reached yet
            not_ready.append((str(key), "not reconciled yet"))
    # An object refused for several reasons counts once; a file that could not be read, once.
    refused = len({(e.source, getattr(e, "kind", ""), getattr(e, "name", "")) for e in result.admission.errors})
    return apply_summary(time.monotonic() - started, [verb for _, verb in result.applied], refused, not_ready, dry_run)


def _print_errors(errors: list) -> None:
    for error in errors:
        click.echo(f"error: {error}", err=True)


def _print_warnings(warnings: list) -> None:
    """What the API server would store but apply would hold, as kubectl prints a server's warnings."""
    for warning in warnings:
        click.echo(f"Warning: {warning}", err=True)


def _print_notes(notes: list) -> None:
    """Crossplane install objects accepted but not stored: one line each, on standard error."""
    for note in notes:
        click.echo(f"note: {note}", err=True)


def _report_convergence(report) -> bool:
    """Say clearly when the fleet is not at its fixpoint; whether it is."""
    if report is None or report.converged:
        return True
    if report.waited_for:
        click.echo(f"error: the fleet has not reached its fixpoint: {report.waited_for} is still reconciling this "
                   "state; your objects are stored and it reconciles them too: run the command again with a "
                   "longer --timeout to wait for it", err=True)
    else:
        click.echo("error: the fleet did not reach a fixpoint; still changing after the iteration bound: "
                   + ", ".join(f"{k} ({n} reconciles)" for k, n in sorted(report.unconverged.items())), err=True)
    return False


@cli.command()
@FILES_OPTION
@click.option("--dry-run", is_flag=True,
              help="Admit and compose in memory; print what would be created, configured or deleted; store nothing.")
@STATE_OPTION
@TIMEOUT_OPTION
@stream_limits
def apply(paths: tuple[Path, ...], dry_run: bool, state: Path | None, timeout: float, max_bytes: int,
          max_documents: int) -> None:
    """Admit manifests, store them and reconcile the fleet to a fixpoint.

    Exit 1 if a manifest is rejected (nothing of it is stored), 3 if the fleet did not reach its fixpoint."""
    limits = _limits(max_bytes, max_documents)
    started = time.monotonic()
    if dry_run:
        from inferplane.cli.views import changes

        with scratch(state) as (runtime, before):
            result = runtime.apply(list(paths), limits=limits)
            after = runtime.list()
            summary = _apply_summary(runtime, result, started, dry_run=True)
        _print_errors(result.admission.errors)
        _print_warnings(result.admission.warnings)
        _print_notes(result.admission.notes)
        _refuse_nothing_found(result.admission, paths)
        for name, verb in changes(before, after):
            click.echo(f"{name} {verb} (dry run)")
        converged = _report_convergence(result.report)
        click.echo(summary, err=True)
        sys.exit(1 if result.admission.errors else 0 if converged else EXIT_NOT_CONVERGED)

    def acknowledge(key, verb: str) -> None:
        # Printed once the write is committed: every line on screen survives a crash.
        click.echo(f"{key.qualified()} {verb}")
        sys.stdout.flush()

    with opened(state, timeout) as runtime:
        result = runtime.apply(list(paths), on_applied=acknowledge, limits=limits)
        summary = _apply_summary(runtime, result, started)
    _print_errors(result.admission.errors)
    _print_warnings(result.admission.warnings)
    _print_notes(result.admission.notes)
    _refuse_nothing_found(result.admission, paths)
    converged = _report_convergence(result.report)
    click.echo(summary, err=True)
    sys.exit(1 if result.admission.errors else 0 if converged else EXIT_NOT_CONVERGED)


@cli.command()
@FILES_OPTION
@STATE_OPTION
@stream_limits
def diff(paths: tuple[Path, ...], state: Path | None, max_bytes: int, max_documents: int) -> None:
    """What apply would change, per resource (inputs and everything composed), as unified diffs.

    Exit 0: no change; 1: changes; 2: the manifests were refused (or held no objects)."""
    from inferplane.cli.views import unified_diffs

    with scratch(state) as (runtime, before):
        result = runtime.apply(list(paths), limits=_limits(max_bytes, max_documents))
        after = runtime.list()
    _print_errors(result.admission.errors)
    _print_warnings(result.admission.warnings)
    _print_notes(result.admission.notes)
    if result.admission.errors:
        sys.exit(2)
    _refuse_nothing_found(result.admission, paths, code=2)
    text = unified_diffs(before, after)
    if text:
        click.echo(text, nl=False)
    sys.exit(1 if text else 0)


@cli.command()
@click.argument("kind", metavar="KIND[,KIND...]", shell_complete=_complete_kind)
@click.argument("names", nargs=-1, metavar="[NAME...]", shell_complete=_complete_name)
@NAMESPACE_OPTION
@click.option("-A", "--all-namespaces", is_flag=True, help="List namespaced kinds in every namespace.")
@click.option("-l", "--selector", default=None, help="Label selector: a=b, a!=b, 'a in (x,y)', a, !a; comma-joined.")
@click.option("-o", "--output", default=None, callback=lambda ctx, param, value: check_output(value),
              help="wide, name, json, yaml, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,... (kubectl's).")
@click.option("--sort-by", default=None, metavar="JSONPATH",
              help="Order the objects by a field, e.g. '{.metadata.name}' or .status.replicas (kubectl's).")
@click.option("--show-labels", is_flag=True, help="Add a LABELS column, as kubectl does.")
@click.option("--no-headers", is_flag=True, help="Leave out the header line of tables and custom columns.")
@click.option("--cluster", default=None,
              help="Read a target cluster's simulated objects (nodes, pods, resourceslices, ...) instead.")
@click.option("--for", "for_object", default=None, metavar="KIND/NAME", help="With events: only that object's.")
@STATE_OPTION
def get(kind: str, names: tuple[str, ...], namespace: str | None, all_namespaces: bool, selector: str | None,
        output: str | None, sort_by: str | None, show_labels: bool, no_headers: bool, cluster: str | None,
        for_object: str | None, state: Path | None) -> None:
    """List objects of one or more kinds (or some by name), as kubectl does."""
    from inferplane.cli.output import compiled_path, custom_columns_table, relaxed_path, sort_objects
    from inferplane.cli.query import event_subject, namespace_for, select
    from inferplane.cli.resources import resolve_many
    from inferplane.cli.views import carried_secrets_masked, event_objects, events_table, get_table

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

    with opened(state, read_only=True) as runtime:
        if cluster is not None:
            held = _cluster_objects(runtime, cluster)
            objects_of = lambda t: held  # noqa: E731
        else:
            subject = event_subject(for_object, namespace) if for_object else None
            objects_of = lambda t: (event_objects(runtime.store.events(subject))  # noqa: E731
                                    if t.kind == "Event" else runtime.list(t.kind))
        selection = select(types, objects_of, names, None if for_object else ns, selector)

    if sort_by is not None:
        selection.found = [(type_, sort_objects(found, sort_by)) for type_, found in selection.found]
    # A Secret a composed Object carries to a cluster (a ModelCache's token) is never printed: its values
    # are masked as kubectl diff masks them. `get secret` prints a Secret of the state, as kubectl does.
    selection.found = [(type_, [carried_secrets_masked(o) for o in found]) for type_, found in selection.found]
    objects = [o for _, found in selection.found for o in found]
    custom = output is not None and output.startswith("custom-columns=")
    if output in (None, "wide") or custom:
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
    elif objects or not selection.missing:
        from inferplane.cli.output import as_list, render_objects

        single = len(types) == 1 and len(names) == 1 and len(objects) == 1
        click.echo(render_objects(objects[0] if single else as_list(objects), output))
    for missing in selection.missing:
        click.echo(f"Error from server (NotFound): {missing}", err=True)
    sys.exit(1 if selection.missing else 0)


def _cluster_objects(runtime, cluster: str) -> list[dict]:
    """A target cluster's simulated objects; a clear error where there is no such running cluster."""
    from inferplane.cli.views import condition
    from inferplane.runtime.store import Key
    from inferplane import API_GROUP

    held = runtime.store.cluster_objects(cluster).get(cluster)
    if held:
        return held
    owner = runtime.get(Key(API_GROUP, "InferenceCluster", "", cluster))
    if owner is None:
        raise click.ClickException(f"InferenceCluster {cluster!r} does not exist: `inferplane get inferenceclusters` "
                                   "lists them")
    ready = condition(owner, "ClusterReady")
    raise click.ClickException(f"InferenceCluster {cluster} has no running cluster: ClusterReady is "
                               f"{ready.get('status', 'Unknown')} ({ready.get('reason', 'not reconciled')}): "
                               f"{ready.get('message', '')}: `inferplane describe icluster {cluster}` says more")


@cli.command()
@object_arguments
def describe(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    """Spec essentials, status, conditions, composed resources and events of one object."""
    from inferplane.cli.query import fetch
    from inferplane.cli.views import carried_secrets_masked, describe as render
    from inferplane.compose.model_deployment import verdict
    from inferplane.runtime.store import controller_of
    from inferplane.runtime.store import Key

    with opened(state, read_only=True) as runtime:
        obj = fetch(runtime, kind, name, namespace)
        composed = [o for o in runtime.list() if controller_of(o) == obj["metadata"]["uid"]]
        placement = _placement(runtime, obj, verdict) if obj["kind"] == "ModelDeployment" else None
        click.echo(render(carried_secrets_masked(obj), composed, runtime.store.events(Key.of(obj)), placement))


def _placement(runtime, obj: dict, lines) -> list[str]:
    """A ModelDeployment's placement as the scheduler decides it over the fleet now, told by `lines`
    (the explainer `why` prints, or describe's verdict) from the request that carries every resource
    the function requires."""
    from inferplane.compose.model_deployment import compose_model_deployment
    from inferplane.runtime.reconciler import call_with_requirements, resolver
    from inferplane.runtime.store import Key

    fleet = {Key.of(o): o for o in runtime.list()}
    answered = []

    def answering(request):
        answered.append(request)  # the last request is the one with every requirement answered
        return compose_model_deployment(request)

    call_with_requirements(resolver(fleet), answering, obj, {})
    return lines(answered[-1])


def _why(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    from inferplane.cli.query import fetch
    from inferplane.compose.model_deployment import explain as explain_placement

    with opened(state, read_only=True) as runtime:
        obj = fetch(runtime, kind, name, namespace)
        if obj["kind"] != "ModelDeployment":
            raise click.ClickException(f"{obj['kind']} has no placement to explain: name a ModelDeployment (md)")
        click.echo("\n".join(_placement(runtime, obj, explain_placement)))


@cli.command()
@object_arguments
def why(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    """Where a ModelDeployment's replicas run and, for those that fit nowhere, each cluster and the step
    that refused it."""
    _why(kind, name, namespace, state)


@cli.command()
@click.argument("kind", metavar="KIND[.FIELD.PATH]", shell_complete=_complete_kind)
@click.argument("name", required=False, shell_complete=_complete_name)
@click.option("-R", "--recursive", is_flag=True, help="Print the fields of fields.")
@click.option("--max-depth", type=int, default=0, show_default=True,
              help="With --recursive: how many levels of fields to print (0: every level).")
@click.option("--api-version", default=None, metavar="GROUP/VERSION",
              help="The API version of the kind to document.")
@NAMESPACE_OPTION
@STATE_OPTION
def explain(kind: str, name: str | None, recursive: bool, max_depth: int, api_version: str | None,
            namespace: str | None, state: Path | None) -> None:
    """A kind's fields and their documentation, from its XRD's OpenAPI schema, as kubectl explain prints
    them: `inferplane explain inferencecluster.spec.nodePools`. With a NAME (deprecated), as `why`."""
    if name is not None:
        # kubectl explain takes one word, so two can only mean this command's former placement explainer:
        # scripts that call it keep their output, and are told where it moved.
        if "." in kind:
            raise click.UsageError(f"explain takes one KIND[.FIELD.PATH], not also {name!r}: "
                                   f"`inferplane why KIND NAME` explains a ModelDeployment's placement")
        moved = f"inferplane why {kind} {name}" + (f" -n {namespace}" if namespace else "")
        click.echo(f"Warning: `inferplane explain {kind} NAME` is deprecated: its placement explanation is now "
                   f"`{moved}`; `explain` documents fields, as kubectl's does", err=True)
        _why(kind, name, namespace, state)
        return
    if max_depth < 0:
        raise click.UsageError("--max-depth must be non-negative")
    if max_depth and not recursive:
        raise click.UsageError("--max-depth requires --recursive")
    from inferplane.cli.explain import Explainer, FieldNotFound
    from inferplane.cli.resources import resolve_field_path
    from inferplane.crossplane.openapi import published

    resource, field_path = resolve_field_path(kind, published().group_versions(), api_version)
    try:
        text = Explainer(published().openapi_v3(resource.api_version)).explain(
            resource.group, resource.api_version.rsplit("/", 1)[1], resource.plural, field_path, recursive, max_depth)
    except FieldNotFound as error:
        raise click.ClickException(str(error)) from None
    click.echo(text, nl=False)


@cli.command()
@object_arguments
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def trace(kind: str, name: str, namespace: str | None, output: str, state: Path | None) -> None:
    """The tree of everything composed under an object, with each one's readiness."""
    import json

    from inferplane.cli.query import fetch
    from inferplane.cli.views import trace_table, trace_tree

    with opened(state, read_only=True) as runtime:
        tree = trace_tree(fetch(runtime, kind, name, namespace), runtime.list())
    click.echo(json.dumps(tree, indent=2) if output == "json" else trace_table(tree))


def _keys_in_files(paths: tuple[Path, ...]) -> list:
    """The objects a manifest file names, for `delete -f`: kind, name and namespace only, as kubectl
    reads them (the rest of each document is not checked)."""
    from inferplane.admission.install_objects import install_object_note
    from inferplane.admission.manifests import load
    from inferplane.cli.query import object_key

    manifests, errors = load(list(paths))
    if errors:
        _print_errors(errors)
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
        _print_errors(problems or [f"no objects passed to delete in {', '.join(map(str, paths))}"])
        sys.exit(1)
    return keys


@cli.command()
@click.argument("kind", required=False, shell_complete=_complete_kind)
@click.argument("name", required=False, shell_complete=_complete_name)
@click.option("-f", "--filename", "paths", multiple=True, type=click.Path(path_type=Path),
              help="Delete the objects a manifest file (a folder of them, or - for standard input) names.")
@click.option("--ignore-not-found", is_flag=True, help="With -f: an object that does not exist is no error.")
@NAMESPACE_OPTION
@STATE_OPTION
@TIMEOUT_OPTION
def delete(kind: str | None, name: str | None, paths: tuple[Path, ...], ignore_not_found: bool,
           namespace: str | None, state: Path | None, timeout: float) -> None:
    """Delete an object (KIND NAME) or every object a file names (-f), and everything composed under
    each, users first; refused while something else uses it."""
    from inferplane.cli.query import fetch, object_key
    from inferplane.engine.runtime import InUse

    if bool(paths) == bool(kind or name) or (kind and not name):
        raise click.UsageError("give KIND NAME, or -f FILE for the objects a manifest names")
    keys = _keys_in_files(paths) if paths else [object_key(kind, name, namespace)]
    failed = False
    with opened(state, timeout, create=False) as runtime:
        if not paths:
            fetch(runtime, kind, name, namespace)  # not found: says where else to look
        found = [key for key in keys if runtime.get(key) is not None]
        for key in keys:
            if key not in found and not (paths and ignore_not_found):
                where = f" in namespace {key.namespace}" if key.namespace else ""
                click.echo(f'Error from server (NotFound): {key.kind.lower()}{"." + key.group if key.group else ""} '
                           f'"{key.name}" not found{where}', err=True)
                failed = True
        # A file's objects in its order, except that one another of them still uses waits for that one:
        # a fleet's file lists classes before the clusters that use them.
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
                if not _report_convergence(report):
                    sys.exit(EXIT_NOT_CONVERGED)
            if not progress:
                break
            found = later
    if refused and not paths:
        raise click.ClickException(str(next(iter(refused.values()))))
    for exc in refused.values():
        click.echo(f"error: {exc}", err=True)
    if failed or refused:
        sys.exit(1)


@cli.command()
@object_arguments
@click.option("--replicas", type=int, required=True, help="The new replica count.")
@TIMEOUT_OPTION
def scale(kind: str, name: str, namespace: str | None, replicas: int, state: Path | None, timeout: float) -> None:
    """Set the replicas of an object that serves the scale subresource (a ModelDeployment), like kubectl scale."""
    from inferplane.cli.query import fetch
    from inferplane.runtime.store import Key

    with opened(state, timeout, create=False) as runtime:
        key = Key.of(fetch(runtime, kind, name, namespace))
        try:
            result = runtime.scale(key, replicas)
        except LookupError as exc:
            raise click.ClickException(str(exc)) from None
    _print_errors(result.admission.errors)
    if result.admission.errors:
        sys.exit(1)
    click.echo(f"{key.qualified()} scaled")
    if not _report_convergence(result.report):
        sys.exit(EXIT_NOT_CONVERGED)


def _objects_named(runtime, args: tuple[str, ...], namespace: str | None, selector: str | None = None,
                   every: bool = False) -> tuple[list[dict], list[str]]:
    """kubectl's TYPE NAME..., TYPE/NAME... or TYPE with -l/--all: (objects found, not-found messages)."""
    from inferplane.cli.query import namespace_for, one_type, select

    if not args:
        raise click.UsageError("name the objects: TYPE NAME..., TYPE/NAME..., or TYPE with -l SELECTOR or --all")
    if all("/" in a for a in args):
        pairs = [a.split("/", 1) for a in args]
    elif "/" in "".join(args):
        raise click.UsageError("write either TYPE NAME... or TYPE/NAME..., not both")
    else:
        if len(args) == 1 and not (selector or every):
            raise click.UsageError(f"name the {args[0]} objects, or pass -l SELECTOR or --all")
        pairs = [(args[0], name) for name in args[1:]] or [(args[0], None)]
    objects, missing = [], []
    for typed, name in pairs:
        type_ = one_type(typed)
        ns = namespace_for([type_], namespace)
        selection = select([type_], lambda t: runtime.list(t.kind), (name,) if name else (), ns, selector)
        objects += [o for _, found in selection.found for o in found]
        missing += selection.missing
    return objects, missing


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


@cli.command(context_settings={"ignore_unknown_options": True})
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
    from inferplane.cli.output import qualified_name
    from inferplane.runtime.store import Key

    specs = tuple(a for a in args if "=" in a or (a.endswith("-") and "/" not in a))
    targets = tuple(a for a in args if a not in specs)
    if not specs:
        raise click.UsageError("give at least one label: KEY=VALUE sets it, KEY- removes it")
    new, remove = _label_changes(specs)
    failed = False
    with opened(state, timeout, create=False) as runtime:
        objects, missing = _objects_named(runtime, targets, namespace, selector, every)
        changes, verbs = [], {}
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
        result = runtime.update(changes, "label") if changes else None
    if result is not None:
        _print_errors(result.admission.errors)
        if result.admission.errors:
            sys.exit(1)
    for name, verb in verbs.items():
        click.echo(f"{name} {verb}")
    for message in missing:
        click.echo(f"Error from server (NotFound): {message}", err=True)
    if failed or missing:
        sys.exit(1)
    if result is not None and not _report_convergence(result.report):
        sys.exit(EXIT_NOT_CONVERGED)


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


@cli.command()
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

    from inferplane.cli.output import qualified_name
    from inferplane.cli.resources import resolve
    from inferplane.runtime.store import Key

    holds, deleting = _wait_test(condition)
    deadline = time.monotonic() + _duration(timeout_text)
    with opened(state, create=False) as runtime:
        objects, missing = _objects_named(runtime, args, namespace, selector, every)
    if missing and not deleting:
        for message in missing:
            click.echo(f"Error from server (NotFound): {message}", err=True)
        sys.exit(1)
    names = {Key.of(o): qualified_name(o) for o in objects}
    pending: dict = {Key.of(o): o for o in objects}
    while True:
        for key in [k for k, obj in pending.items() if holds(obj)]:
            click.echo(f"{names[key]} condition met")
            del pending[key]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        # Another inferplane command may be reconciling this state: read what it has written since.
        with opened(state, create=False) as runtime:
            pending = {key: runtime.get(key) for key in pending}
    for key in pending:
        plural = next(t.plural for t in resolve(key.kind) if t.group == key.group)
        click.echo(f"error: timed out waiting for the condition on {plural}/{key.name}", err=True)
    sys.exit(1 if pending else 0)


@cli.command()
@click.option("--html", "html_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the fleet as one self-contained HTML page to FILE instead of printing the table.")
@STATE_OPTION
def fleet(html_file: Path | None, state: Path | None) -> None:
    """What runs on each cluster (cloud, readiness, drivers, pools, device stacks) and what is wanted; then,
    when models are deployed, where each model's replicas run."""
    from inferplane.cli.views import fleet_view

    with opened(state, read_only=True) as runtime:
        if html_file is None:
            click.echo(fleet_view(runtime.list()))
            return
        from inferplane.cli.fleet_page import CLUSTER_KINDS, PAGE_KINDS, fleet_page

        page = fleet_page([o for kind in PAGE_KINDS for o in runtime.list(kind)],
                          runtime.store.cluster_objects(kinds=CLUSTER_KINDS), runtime.store.events())
    try:
        html_file.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write the fleet page to {html_file}: {exc.strerror}: pass --html "
                                   "with a path in a folder you can write to") from None
    click.echo(f"wrote {html_file}: open it in a browser (it needs no network)")


@cli.command()
@click.argument("service", metavar="NAMESPACE/SERVICE")
@click.option("--path", default="/v1/completions", show_default=True,
              help="The path after the service's address, as a client sends it.")
@click.option("--method", default="POST", show_default=True, help="The request's HTTP method.")
@STATE_OPTION
def route(service: str, path: str, method: str, state: Path | None) -> None:
    """Where a request to a ModelService goes: the matched route rule, each backend's share and URL."""
    from inferplane.cli.views import route_report

    namespace, _, name = service.rpartition("/")
    if not namespace or not name or not path.startswith("/"):
        raise click.UsageError("name the service as NAMESPACE/SERVICE (e.g. ml-team/qwen-cpu) and give --path "
                               "starting with / (e.g. /v1/completions)")
    with opened(state, read_only=True) as runtime:
        objects = runtime.list()
    report, routed = route_report(objects, namespace, name, path, method.upper())
    click.echo(report, err=not routed)
    sys.exit(0 if routed else 1)


@cli.command("api-resources")
def api_resources() -> None:
    """Every kind the CLI knows: name, short names, API version, whether namespaced, kind."""
    from inferplane.cli.resources import resource_types

    rows = [(t.plural, ",".join(t.short_names), t.api_version, str(t.namespaced).lower(), t.kind)
            for t in sorted(resource_types(), key=lambda t: (t.group, t.plural))]
    click.echo(table(("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"), rows))


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script (commands, kinds and names): eval "$(inferplane completion bash)"."""
    from click.shell_completion import get_completion_class

    click.echo(get_completion_class(shell)(cli, {}, "inferplane", "_INFERPLANE_COMPLETE").source())


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice(["fleet", "json"]), default="fleet",
              help="fleet: the fleet table; json: every resource, inputs with status and everything composed "
                   "(a Secret's values masked as ***).")
@stream_limits
def render(folder: Path, output: str, max_bytes: int, max_documents: int) -> None:
    """Reconcile a folder of manifests in memory to its fixpoint and print the result (stateless)."""
    import json

    from inferplane.cli.views import fleet_view, masked_secrets
    from inferplane.engine.runtime import Runtime

    runtime = Runtime(None, progress=_progress_bar())  # in memory: nothing is kept
    try:
        result = runtime.apply([folder], limits=_limits(max_bytes, max_documents))
        objects = runtime.list()
    finally:
        runtime.progress.finish()
        runtime.close()
    _print_errors(result.admission.errors)
    _print_notes(result.admission.notes)
    _refuse_nothing_found(result.admission, (folder,))
    converged = _report_convergence(result.report)
    if result.admission.admitted:
        # A view of the fleet, not a backup: a Secret's values read *** (`get secret -o json` prints them).
        shown = [masked_secrets(o, None)[0] for o in objects] if output == "json" else objects
        click.echo(json.dumps(shown, indent=2, sort_keys=True) if output == "json" else fleet_view(shown))
    sys.exit(1 if result.admission.errors else 0 if converged else EXIT_NOT_CONVERGED)


@cli.command()
@click.argument("folder", required=False, type=click.Path(path_type=Path))
@click.option("--legs", is_flag=True, help="Audit each of the test legs (tests/legs/ in a source checkout) instead.")
@STATE_OPTION
def audit(folder: Path | None, legs: bool, state: Path | None) -> None:
    """Audit where every workload lands (placement, toleration, claims, held): the state's simulated
    clusters (--state), a folder of manifests reconciled in memory, or with --legs every test leg."""
    from inferplane.engine.legs import audit_clusters, audit_folder, leg_folders

    if folder is not None and legs:
        raise click.UsageError("give a FOLDER or --legs, not both")
    rows: list[tuple[str, str, str, str]] = []
    failed = broken = False

    def report(results, unprovisioned) -> None:
        nonlocal failed
        for cluster, why in unprovisioned:
            rows.append((cluster, "-", "Skipped", why))
        for result in results:
            if result.passed:
                rows.append((result.cluster, result.audit, "Pass", result.checked))
            for finding in result.findings:
                failed = True
                rows.append((result.cluster, result.audit, "Fail", f"{finding.reason}: {finding.message}"))

    if folder is None and not legs:
        with opened(state, read_only=True) as runtime:
            report(*audit_clusters(runtime.list("InferenceCluster"), runtime.store.cluster_objects()))
    else:
        try:
            folders = [folder] if folder is not None else leg_folders()
        except FileNotFoundError as exc:
            raise click.ClickException(str(exc)) from None
        for each in folders:
            progress = _progress_bar()
            audited = audit_folder(each, progress=progress)
            progress.finish()
            _print_errors(audited.applied.admission.errors)
            _refuse_nothing_found(audited.applied.admission, (each,))
            broken |= bool(audited.applied.admission.errors) or not _report_convergence(audited.applied.report)
            report(audited.results, audited.unprovisioned)
    # By cluster; each cluster's audits in their own order (the sort is stable).
    click.echo(table(("LEG" if legs else "CLUSTER", "AUDIT", "RESULT", "DETAIL"), sorted(rows, key=lambda row: row[0])))
    sys.exit(1 if failed or broken else 0)


@cli.command()
def stacks() -> None:
    """Per cloud: the drivers inferplane supports and the components that serve each."""
    from inferplane.accelerators.report import stacks_rows

    click.echo(table(("CLOUD", "DRIVER", "COMPONENTS"), stacks_rows()))


@cli.group()
def metrics() -> None:
    """Vendor-neutral GPU metrics: recording rules, and a scrape mapped to inferplane_gpu_* series."""


MAPPING_OPTION = click.option("--mapping", "mapping_paths", multiple=True, type=click.Path(path_type=Path),
                              help="A GPUMetricsMapping file of your own (repeatable); see docs/metrics.md.")


def _user_mappings(paths: tuple[Path, ...]) -> list:
    """The user's own mappings; every error in them printed at once, exit 1."""
    from inferplane.admission.mappings import MappingErrors, read_mappings

    try:
        return read_mappings(list(paths)) if paths else []
    except MappingErrors as errors:
        _print_errors(list(errors.errors))
        sys.exit(1)


@metrics.command("rules")
@click.option("--cluster", default=None, help="Print the rules that cluster's serving stack ships.")
@MAPPING_OPTION
@STATE_OPTION
def metrics_rules(cluster: str | None, mapping_paths: tuple[Path, ...], state: Path | None) -> None:
    """Print the Prometheus recording rules of the GPU mappings (all, or one cluster's)."""
    import yaml

    from inferplane.metrics.mappings import builtin_mappings
    from inferplane.metrics.rules import rule_file
    from inferplane.metrics.stack import RULES_NAME

    user = _user_mappings(mapping_paths)
    if cluster is None:
        rules = rule_file([*builtin_mappings(), *user])
    else:
        from inferplane.accelerators.catalog import COMPONENT_LABEL, PROMETHEUS

        with opened(state, read_only=True) as runtime:
            releases = [o for o in runtime.list("Release")
                        if o["metadata"].get("labels", {}).get(COMPONENT_LABEL) == PROMETHEUS.key
                        and o["spec"]["providerConfigRef"]["name"] == cluster]
        if not releases:
            raise click.ClickException(f"no serving stack with Prometheus for cluster {cluster!r}: `inferplane fleet` "
                                       "lists the clusters and their stacks")
        values = releases[0]["spec"]["forProvider"]["values"]
        shipped = values.get("additionalPrometheusRulesMap", {}).get(RULES_NAME, {"groups": []})
        rules = {"groups": shipped["groups"] + rule_file(user)["groups"]}
    click.echo(yaml.safe_dump(rules, sort_keys=False, width=1_000_000), nl=False)


@metrics.command("map")
@click.argument("scrape", type=click.Path(path_type=Path))
@MAPPING_OPTION
def metrics_map(scrape: Path, mapping_paths: tuple[Path, ...]) -> None:
    """Convert an exporter's scrape (Prometheus text format) to the inferplane_gpu_* series."""
    from inferplane.metrics.convert import ScrapeError, exposition, map_samples, parse_scrape
    from inferplane.metrics.mappings import builtin_mappings

    mappings = [*builtin_mappings(), *_user_mappings(mapping_paths)]
    try:
        samples = map_samples(parse_scrape(scrape.read_text()), mappings)
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"{scrape}: cannot read: {exc}") from None
    except ScrapeError as exc:
        raise click.ClickException(f"{scrape}: {exc}: pass a scrape of an exporter's /metrics") from None
    if not samples:
        raise click.ClickException(f"{scrape}: no series any mapping reads: pass a dcgm-exporter or AMD "
                                   "device-metrics-exporter scrape, or --mapping for another exporter")
    click.echo(exposition(samples), nl=False)


class _FunctionGroup(click.Group):
    """`function serve` takes the function SDK's own flags; building them imports gRPC, so only when
    this group is used (not for `inferplane --help`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["serve"]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name != "serve":
            return None
        from crossplane.function import cli as sdk_cli

        from inferplane.crossplane.function import CACHE_BYTES
        from inferplane.kept import MIB

        @click.command()
        @sdk_cli.standard_options
        @click.option("--cache-size", type=click.IntRange(min=0), default=CACHE_BYTES // MIB, show_default=True,
                      envvar="CACHE_SIZE", metavar="MB",
                      help="Most the server keeps of what it worked out (answers to requests seen again, decoded "
                           "resources, serialised parts), keys and values together, in MB; the least recently used "
                           "go first. 0 keeps nothing.")
        def serve(cache_size: int, **options) -> None:
            """Serve every composition function over Crossplane's RunFunction gRPC protocol (v1).

            Logs are JSON lines (--debug: human-readable, one line per call). Listens on --address with
            mTLS from --tls-server-certs-dir (tls.crt, tls.key, ca.crt), or --insecure for local use.
            """
            from inferplane.crossplane.function import FunctionRunner, serve

            if not options["insecure"] and not options["tls_certs_dir"]:
                raise click.UsageError("pass --tls-server-certs-dir DIR (tls.crt, tls.key, ca.crt), or --insecure "
                                       "for local use")
            serve(FunctionRunner(cache_bytes=cache_size * MIB), **options)

        return serve


@cli.group(cls=_FunctionGroup)
def function() -> None:
    """Run the composition functions for Crossplane (the RunFunction gRPC server)."""


@cli.group()
def package() -> None:
    """The Crossplane Configuration package: XRDs, Compositions, Usages and the Function."""


@package.command("build")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option("--image", default=None, metavar="REF",
              help="The Function's image, as crossplane.yaml and the install manifests name it "
                   "(default: the registry and version in inferplane/crossplane/package.py).")
def package_build(folder: Path, image: str | None) -> None:
    """Write the Configuration package into FOLDER (created; files of the package are replaced)."""
    from inferplane.crossplane.package import build

    try:
        written = build(folder, image)
    except OSError as exc:
        raise click.ClickException(f"{folder}: cannot write the package: {exc.strerror or exc}") from None
    for path in written:
        click.echo(str(path))
    click.echo(f"wrote {len(written)} files to {folder}", err=True)


def main() -> None:
    cli(prog_name="inferplane")


if __name__ == "__main__":
    main()
