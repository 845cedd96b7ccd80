"""The `inferplane` command."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import click

from inferplane.admission import admit_paths
from inferplane.cli.output import table

if TYPE_CHECKING:
    from inferplane.engine.runtime import Runtime


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """inferplane: a fleet-level inference control plane."""


@cli.command()
@click.option("-f", "--filename", "paths", multiple=True, required=True, type=click.Path(path_type=Path),
              help="A manifest file or a folder of them (repeatable).")
def validate(paths: tuple[Path, ...]) -> None:
    """Check manifests as the API server would; print every error, exit 1 if any."""
    result = admit_paths(list(paths))
    if result.admitted:
        rows = [(obj.kind, obj.metadata.name, manifest.source) for manifest, obj in result.admitted]
        click.echo(table(("KIND", "NAME", "SOURCE"), rows))
    for error in result.errors:
        click.echo(f"error: {error}", err=True)
    summary = f"{len(result.admitted)} valid, {len(result.errors)} error{'s' if len(result.errors) != 1 else ''}"
    click.echo(summary, err=bool(result.errors))
    sys.exit(1 if result.errors else 0)


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


STATE_OPTION = click.option(
    "--state", type=click.Path(path_type=Path), default=None,
    help="State folder (default: $INFERPLANE_STATE, else ./.inferplane).")
OUTPUT_OPTION = click.option("-o", "--output", type=click.Choice(["table", "yaml", "json"]), default="table")
FILES_OPTION = click.option("-f", "--filename", "paths", multiple=True, required=True,
                            type=click.Path(path_type=Path), help="A manifest file or a folder of them (repeatable).")


def object_arguments(command):
    """KIND NAME [-n NAMESPACE] [--state DIR]: how every single-object command names its object."""
    for decorator in reversed((click.argument("kind"), click.argument("name"),
                               click.option("-n", "--namespace", default=None), STATE_OPTION)):
        command = decorator(command)
    return command


# Exit codes: 1 for a mistake in the input (or a state that cannot be used), 3 when the command did
# its writes but the fleet did not reach its fixpoint (click itself uses 2 for a bad command line).
EXIT_NOT_CONVERGED = 3
TIMEOUT_OPTION = click.option(
    "--timeout", type=click.FloatRange(min=0), default=300.0, show_default=True,
    help="Seconds to wait for another inferplane command working on the same state.")


@contextlib.contextmanager
def opened(state: Path | None, wait: float | None = None) -> Iterator["Runtime"]:
    """The runtime on the state folder, closed however the command ends; a store that another
    process keeps locked is reported, never a traceback."""
    import sqlite3

    from inferplane.engine.runtime import DEFAULT_WAIT, Runtime, state_dir
    from inferplane.engine.store import StoreBusy, UnknownSchema, explain

    folder = state_dir(state)
    try:
        runtime = Runtime(folder, progress=_progress_bar(), wait=DEFAULT_WAIT if wait is None else wait)
    except StoreBusy as exc:
        raise click.ClickException(str(exc)) from None
    except UnknownSchema as exc:
        raise click.ClickException(f"cannot open the state in {folder}: {exc}") from None
    except (OSError, sqlite3.Error) as exc:
        raise click.ClickException(f"cannot open the state in {folder}: {exc}: pass --state with a writable "
                                   "folder, or move the damaged store.db aside") from None
    try:
        yield runtime
    except StoreBusy as exc:
        raise click.ClickException(str(exc)) from None
    except sqlite3.Error as exc:
        # Writes commit in small transactions: what was acknowledged is kept, the failed one is not.
        raise click.ClickException(f"the state in {folder} could not be written: {explain(exc)}; every write "
                                   "acknowledged before this one is kept") from None
    finally:
        runtime.close()


def _progress_bar():
    """A one-line progress report on long reconciles, only where a person is watching."""
    if not sys.stderr.isatty():
        return None

    def report(done: int, queued: int) -> None:
        if done % 25 == 0 or queued == 0:
            # The total grows as composites compose more composites: the bar is done / (done + queued).
            filled = round(30 * done / (done + queued))
            click.echo(f"\rreconciling [{'#' * filled}{'.' * (30 - filled)}] {done} done, {queued} queued   ",
                       nl=queued == 0, err=True)
    return report


def _print_errors(errors: list) -> None:
    for error in errors:
        click.echo(f"error: {error}", err=True)


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


def _dump(objects: list[dict], output: str) -> str:
    import json

    import yaml

    if output == "json":
        return json.dumps(objects if len(objects) != 1 else objects[0], indent=2, sort_keys=True)
    if len(objects) == 1:
        return yaml.safe_dump(objects[0], sort_keys=True)
    return yaml.safe_dump_all(objects, sort_keys=True)


@cli.command()
@FILES_OPTION
@STATE_OPTION
@TIMEOUT_OPTION
def apply(paths: tuple[Path, ...], state: Path | None, timeout: float) -> None:
    """Admit manifests, store them and reconcile the fleet to a fixpoint.

    Exit 1 if a manifest is rejected (nothing of it is stored), 3 if the fleet did not reach its fixpoint."""
    def acknowledge(key, verb: str) -> None:
        # Printed once the write is committed: every line on screen survives a crash.
        click.echo(f"{key.qualified()} {verb}")
        sys.stdout.flush()

    with opened(state, timeout) as runtime:
        result = runtime.apply(list(paths), on_applied=acknowledge)
    _print_errors(result.admission.errors)
    converged = _report_convergence(result.report)
    sys.exit(1 if result.admission.errors else 0 if converged else EXIT_NOT_CONVERGED)


def _select(objects: list[dict], kind_arg: str, name: str | None, namespace: str | None, where: str,
            hint: str) -> tuple[str, list[dict]]:
    """The objects of the kind a user typed (and of that name and namespace, when given)."""
    from inferplane.cli.views import resolve_kind

    kind = resolve_kind(kind_arg, sorted({o["kind"] for o in objects}))
    if kind is None:
        raise click.ClickException(f"unknown kind {kind_arg!r}{where}: try {hint}")
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)
             and (namespace is None or o["metadata"].get("namespace", "") == namespace)]
    if name is not None and not found:
        raise click.ClickException(f"{kind} {name!r} not found{where}")
    return kind, found


def _find(runtime, kind_arg: str, name: str | None, namespace: str | None) -> tuple[str, list[dict]]:
    return _select(runtime.list(), kind_arg, name, namespace, "",
                   "inferenceclusters, inferenceclasses, servingstacks, modeldeployments or a composed kind such "
                   "as Release")


def _find_in_cluster(runtime, cluster: str, kind_arg: str, name: str | None,
                     namespace: str | None) -> tuple[str, list[dict]]:
    held = runtime.store.cluster_objects(cluster).get(cluster)
    if held is None:
        raise click.ClickException(f"no simulated cluster {cluster!r}: `inferplane get inferenceclusters` lists them")
    return _select(held, kind_arg, name, namespace, f" in cluster {cluster}",
                   "nodes, pods, daemonsets, deployments or resourceslices")


@cli.command()
@click.argument("kind")
@click.argument("name", required=False)
@click.option("-n", "--namespace", default=None)
@click.option("--cluster", default=None,
              help="Read a target cluster's simulated objects (nodes, pods, resourceslices, ...) instead.")
@OUTPUT_OPTION
@STATE_OPTION
def get(kind: str, name: str | None, namespace: str | None, cluster: str | None, output: str,
        state: Path | None) -> None:
    """List objects of a kind (or one), as a table, YAML or JSON."""
    from inferplane.cli.views import get_table

    with opened(state) as runtime:
        if cluster is not None:
            resolved, objects = _find_in_cluster(runtime, cluster, kind, name, namespace)
        else:
            resolved, objects = _find(runtime, kind, name, namespace)
    if output != "table":
        click.echo(_dump(objects, output))
    elif not objects:
        click.echo(f"No {resolved} resources found.", err=True)
    else:
        click.echo(get_table(objects))


@cli.command()
@object_arguments
def describe(kind: str, name: str, namespace: str | None, state: Path | None) -> None:
    """Conditions, composed resources and events of one object."""
    from inferplane.cli.views import describe as render
    from inferplane.engine.reconciler import controller_of
    from inferplane.engine.store import Key

    with opened(state) as runtime:
        _, objects = _find(runtime, kind, name, namespace)
        obj = objects[0]
        composed = [o for o in runtime.list() if controller_of(o) == obj["metadata"]["uid"]]
        click.echo(render(obj, composed, runtime.store.events(Key.of(obj))))


@cli.command()
@object_arguments
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table")
def trace(kind: str, name: str, namespace: str | None, output: str, state: Path | None) -> None:
    """The tree of everything composed under an object, with each one's readiness."""
    import json

    from inferplane.cli.views import trace_table, trace_tree

    with opened(state) as runtime:
        _, objects = _find(runtime, kind, name, namespace)
        tree = trace_tree(objects[0], runtime.list())
    click.echo(json.dumps(tree, indent=2) if output == "json" else trace_table(tree))


@cli.command()
@object_arguments
@TIMEOUT_OPTION
def delete(kind: str, name: str, namespace: str | None, state: Path | None, timeout: float) -> None:
    """Delete an object and everything composed under it, users first; refused while something else uses it."""
    from inferplane.engine.reconciler import InUse
    from inferplane.engine.store import Key

    with opened(state, timeout) as runtime:
        resolved, objects = _find(runtime, kind, name, namespace)
        try:
            deleted, report = runtime.delete(Key.of(objects[0]))
        except InUse as refused:
            raise click.ClickException(str(refused)) from None
    if not deleted and report.waited_for:
        click.echo(f"error: nothing deleted: {report.waited_for} is still reconciling this state: run the command "
                   "again with a longer --timeout to wait for it", err=True)
        sys.exit(EXIT_NOT_CONVERGED)
    click.echo(f"{resolved.lower()}/{name} deleted")
    if not _report_convergence(report):
        sys.exit(EXIT_NOT_CONVERGED)


@cli.command()
@STATE_OPTION
def fleet(state: Path | None) -> None:
    """One table: clusters, cloud, ClusterReady and reason, drivers, pools and installed device stacks."""
    from inferplane.cli.views import fleet_table

    with opened(state) as runtime:
        click.echo(fleet_table(runtime.list()))


@cli.command()
@click.argument("folder", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Choice(["fleet", "json"]), default="fleet",
              help="fleet: the fleet table; json: every resource, inputs with status and everything composed.")
def render(folder: Path, output: str) -> None:
    """Reconcile a folder of manifests in memory to its fixpoint and print the result (stateless)."""
    import json

    from inferplane.cli.views import fleet_table
    from inferplane.engine.runtime import Runtime

    runtime = Runtime(None, progress=_progress_bar())  # in memory: nothing is kept
    try:
        result = runtime.apply([folder])
        objects = runtime.list()
    finally:
        runtime.close()
    _print_errors(result.admission.errors)
    converged = _report_convergence(result.report)
    if result.admission.admitted:
        click.echo(json.dumps(objects, indent=2, sort_keys=True) if output == "json" else fleet_table(objects))
    sys.exit(1 if result.admission.errors else 0 if converged else EXIT_NOT_CONVERGED)


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

        with opened(state) as runtime:
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


def main() -> None:
    cli(prog_name="inferplane")


if __name__ == "__main__":
    main()
