"""`inferplane metrics rules|map`: vendor-neutral GPU metrics, the recording rules and a scrape mapped
to the inferplane_gpu_* series."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from inferplane.cli.options import STATE_OPTION
from inferplane.cli.report import print_errors
from inferplane.cli.state import opened

MAPPING_OPTION = click.option("--mapping", "mapping_paths", multiple=True, type=click.Path(path_type=Path),
                              help="A GPUMetricsMapping file of your own (repeatable); see docs/metrics.md.")


@click.group()
def metrics() -> None:
    """Vendor-neutral GPU metrics: recording rules, and a scrape mapped to inferplane_gpu_* series."""


def _user_mappings(paths: tuple[Path, ...]) -> list:
    """The user's own mappings; every error in them printed at once, exit 1."""
    from inferplane.admission.mappings import MappingErrors, read_mappings

    try:
        return read_mappings(list(paths)) if paths else []
    except MappingErrors as errors:
        print_errors(list(errors.errors))
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

    user = _user_mappings(mapping_paths)
    if cluster is None:
        rules = rule_file([*builtin_mappings(), *user])
    else:
        rules = {"groups": _shipped_groups(cluster, state) + rule_file(user)["groups"]}
    click.echo(yaml.safe_dump(rules, sort_keys=False, width=1_000_000), nl=False)


def _shipped_groups(cluster: str, state: Path | None) -> list:
    """The rule groups the cluster's serving stack ships, from its Prometheus release's values."""
    from inferplane.accelerators.catalog import COMPONENT_LABEL, PROMETHEUS
    from inferplane.metrics.stack import RULES_NAME

    with opened(state, read_only=True) as runtime:
        releases = [o for o in runtime.list("Release")
                    if o["metadata"].get("labels", {}).get(COMPONENT_LABEL) == PROMETHEUS.key
                    and o["spec"]["providerConfigRef"]["name"] == cluster]
    if not releases:
        raise click.ClickException(f"no serving stack with Prometheus for cluster {cluster!r}: `inferplane fleet` "
                                   "lists the clusters and their stacks")
    values = releases[0]["spec"]["forProvider"]["values"]
    return values.get("additionalPrometheusRulesMap", {}).get(RULES_NAME, {"groups": []})["groups"]


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
