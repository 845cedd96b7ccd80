"""Every value the catalog composes is one its pinned chart has, of the chart's type: checked against
the chart's own values.yaml (and values.schema.json) vendored under inferplane/data/charts/."""

from dataclasses import replace
from itertools import chain, combinations
from pathlib import Path

import pytest
import yaml

from inferplane.accelerators import amd, catalog, cpu, dranet, gaudi, nvidia, workloads
from inferplane.accelerators.catalog import CLOUDS, catalog_errors, components, supported_drivers
from inferplane.api.json_data import merge_patch
from inferplane.accelerators.chart_values import CHARTS_DIR, chart_value_errors, pinned_values
from inferplane.accelerators.component import Chart
from inferplane.api.inference_gateway import TRAEFIK_CHART_VERSION
from inferplane.api.serving_stack import ServingStackSpec
from inferplane.clouds import CLOUD_MODULES
from inferplane.clouds.nebius import NEBIUS_CSI_CHART
from inferplane.engine.control_plane import ControlPlane
from inferplane.routing.gateway import TRAEFIK_CHART, TRAEFIK_REPOSITORY

ROOT = Path(__file__).resolve().parents[2]
# Every folder of manifests a user or the tests reconcile: the bundled recipes and the seven legs.
LEGS = ROOT / "tests" / "legs"
FOLDERS = sorted([p for p in (ROOT / "recipes").iterdir() if p.is_dir()] + [p for p in LEGS.iterdir() if p.is_dir()])


def stack_specs(cloud: str):
    """Every stack a cloud can be asked for: unstamped, and each set of drivers it serves (with a
    pool taint for each, as the cluster composer stamps them)."""
    yield ServingStackSpec.model_validate({"source": cloud, "clusterName": "sample"})
    drivers = supported_drivers(cloud)
    for claimed in chain.from_iterable(combinations(drivers, n) for n in range(len(drivers) + 1)):
        taints = {d: [{"key": f"{d}/pool", "value": "true", "effect": "NoSchedule"}] for d in claimed}
        yield ServingStackSpec.model_validate({"source": cloud, "clusterName": "sample", "draDrivers": list(claimed),
                                               "poolTaints": taints})


def catalog_releases():
    """(cloud, component key, chart, values) of every Release the catalog composes, on every cloud."""
    for cloud in CLOUDS:
        for spec in stack_specs(cloud):
            for component in components(cloud, catalog.stack_drivers(spec)):
                if component.chart is not None and component.when(spec):
                    yield cloud, component.key, component.chart, component.values(spec)


def folder_releases(folder: Path):
    """(release name, chart, values) of every Release a folder reconciles to: the serving stacks' and
    the InferenceGateway's (Traefik, MetalLB)."""
    runtime = ControlPlane(None)
    try:
        runtime.apply([folder])
        releases = runtime.list("Release")
    finally:
        runtime.close()
    for release in releases:
        chart = release["spec"]["forProvider"]["chart"]
        yield (release["metadata"]["name"], Chart(chart["name"], chart["repository"], chart["version"]),
               release["spec"]["forProvider"].get("values"))


PINNED = sorted({chart for _, _, chart, _ in catalog_releases()}, key=lambda c: c.name)
COMPOSED = {chart: [(cloud, key, values) for cloud, key, c, values in catalog_releases() if c == chart]
            for chart in PINNED}
WITH_VALUES = [chart for chart in PINNED if any(values for _, _, values in COMPOSED[chart])]


# ---- the catalog, chart by chart


@pytest.mark.parametrize("chart", WITH_VALUES, ids=lambda c: f"{c.name}-{c.version}")
def test_every_value_composed_for_a_pinned_chart_is_one_the_chart_has(chart):
    assert pinned_values(chart) is not None, f"{chart.name} {chart.version} sets values but is not vendored"
    errors = {(cloud, key, error) for cloud, key, values in COMPOSED[chart] for error in chart_value_errors(chart, values)}
    assert errors == set()


@pytest.mark.parametrize("chart", WITH_VALUES, ids=lambda c: f"{c.name}-{c.version}")
def test_a_bogus_key_or_a_wrong_type_in_a_pinned_chart_is_refused(chart):
    # The same check fails the moment a composed value is one the chart lacks, at the top or nested
    # in one of the chart's own mappings, or has the wrong type.
    _, _, values = next((c, k, v) for c, k, v in COMPOSED[chart] if v)
    assert chart_value_errors(chart, {**values, "inferplaneBogus": True}) != []
    defaults = pinned_values(chart).defaults
    # One of the chart's own mappings: one we set when there is one, else the chart's first.
    nested = next(chain((k for k, v in values.items() if isinstance(v, dict) and defaults.get(k)),
                        (k for k, v in defaults.items() if isinstance(v, dict) and v)))
    misspelt = {**values, nested: {**values.get(nested, {}), "inferplaneBogus": True}}
    assert any(f"`{nested}.inferplaneBogus` is not a value the chart has" in e for e in chart_value_errors(chart, misspelt))
    key, value = next((k, v) for k, v in values.items() if defaults.get(k) is not None)
    wrong = {**values, key: 7 if not isinstance(value, (int, float)) or isinstance(value, bool) else "seven"}
    assert any(f"`{key}` is a " in e for e in chart_value_errors(chart, wrong))


def test_charts_set_with_no_values_need_nothing_vendored():
    # A chart composed without values (Envoy Gateway, LeaderWorkerSet) has nothing to check yet; the
    # day a value is composed for it, the check asks for its values.yaml.
    bare = [chart for chart in PINNED if chart not in WITH_VALUES]
    assert bare and all(chart_value_errors(chart, {}) == [] for chart in bare)
    (error,) = chart_value_errors(bare[0], {"replicaCount": 2})
    assert f"inferplane/data/charts/{bare[0].name}-{bare[0].version}/: vendor it" in error


def test_the_catalog_reports_a_key_its_chart_does_not_have(monkeypatch):
    misspelt = replace(nvidia.DCGM_EXPORTER, values=lambda _: {"kubernetesDra": {"enabled": True}})
    stack = CLOUDS["EKS"]
    monkeypatch.setitem(CLOUDS, "EKS", replace(stack, components=tuple(
        misspelt if c.key == misspelt.key else c for c in stack.components)))
    assert ("component dcgm-exporter: chart dcgm-exporter 4.8.2: `kubernetesDra` is not a value the chart has "
            "(inferplane/data/charts/dcgm-exporter-4.8.2/values.yaml): fix or remove it") in catalog_errors()


# ---- every Release the recipes and legs reconcile to


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_release_a_folder_reconciles_to_sets_only_values_its_chart_has(folder):
    releases = list(folder_releases(folder))
    assert {chart.name for _, chart, _ in releases} >= {"cert-manager", "kube-prometheus-stack"}
    assert [(name, error) for name, chart, values in releases for error in chart_value_errors(chart, values)] == []


def test_the_gateways_traefik_release_is_checked_against_its_default_chart():
    # Traefik is composed by the InferenceGateway at the version its spec names (default 40.2.0).
    releases = list(folder_releases(ROOT / "recipes" / "mixed-fleet"))
    (traefik,) = [(chart, values) for _, chart, values in releases if chart.name == TRAEFIK_CHART]
    assert traefik[0].version == TRAEFIK_CHART_VERSION and traefik[1]
    assert pinned_values(traefik[0]) is not None and chart_value_errors(*traefik) == []
    assert chart_value_errors(traefik[0], {**traefik[1], "gatewayClass": {"enabled": False, "nam": "x"}}) != []


# ---- the rules


DCGM = nvidia.DCGM_EXPORTER.chart
NVIDIA = nvidia.NVIDIA_DRA_DRIVER.chart
CPU_DRIVER = cpu.CPU_DRA_DRIVER.chart


def test_a_map_the_chart_leaves_empty_is_open_to_any_key():
    # dcgm-exporter's `affinity` and `podAnnotations` default to {}: their content is Kubernetes'
    # and the user's, handed to the pod as it is.
    assert chart_value_errors(DCGM, {"affinity": {"podAntiAffinity": {"anything": ["goes"]}},
                                     "podAnnotations": {"example.com/team": "ml"}}) == []


def test_a_map_with_defaults_is_the_charts_own_whatever_its_name():
    # dra-driver-nvidia-gpu's `resources` is not a pod's resources but its own {gpus, computeDomains}.
    (error,) = chart_value_errors(NVIDIA, {"resources": {"gpus": {"enabled": True}, "requests": {"cpu": "1"}}})
    assert "`resources.requests` is not a value the chart has" in error


def test_a_list_replaces_the_default_whole():
    assert chart_value_errors(DCGM, {"tolerations": [{"key": "a", "operator": "Exists"}],
                                     "extraEnv": [{"name": "X", "value": "1"}]}) == []
    (error,) = chart_value_errors(DCGM, {"tolerations": {"key": "a"}})
    assert "`tolerations` is a mapping, but the chart's default is a list" in error


def test_a_number_a_boolean_and_a_string_are_different_types():
    assert chart_value_errors(DCGM, {"kubernetesDRA": {"enabled": "true"}}) != []
    assert chart_value_errors(NVIDIA, {"logVerbosity": 6}) != []  # the chart's default is the string "4"
    assert chart_value_errors(NVIDIA, {"logVerbosity": "6", "webhook": {"replicas": 2}}) == []


def test_the_charts_schema_checks_what_its_open_maps_hold():
    # dra-driver-cpu's driverConfig defaults to {}, but its values.schema.json closes it.
    assert chart_value_errors(CPU_DRIVER, {"driverConfig": {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped"}}) == []
    (misspelt,) = chart_value_errors(CPU_DRIVER, {"driverConfig": {"reservedCpus": "0-1"}})
    assert "`driverConfig`: Additional properties are not allowed ('reservedCpus' was unexpected)" in misspelt
    assert "inferplane/data/charts/dra-driver-cpu-0.3.0/values.schema.json" in misspelt
    (mode,) = chart_value_errors(CPU_DRIVER, {"driverConfig": {"cpuDeviceMode": "numa"}})
    assert "`driverConfig.cpuDeviceMode`: 'numa' is not one of ['grouped', 'individual']" in mode
    (operator,) = chart_value_errors(CPU_DRIVER, {"tolerations": [{"key": "k", "operator": "In"}]})
    assert "`tolerations[0].operator`: 'In' is not one of ['Exists', 'Equal']" in operator


def test_helm_merges_maps_replaces_lists_and_drops_nulls():
    defaults = {"a": {"b": 1, "c": 2}, "l": [1, 2], "gone": {"x": 1}}
    assert merge_patch(defaults, {"a": {"c": 3}, "l": [9], "gone": None}) == {"a": {"b": 1, "c": 3}, "l": [9]}


# ---- dcgm-exporter under DRA


def test_dcgm_exporter_attributes_gpu_metrics_to_pods_through_the_charts_dra_switch():
    # The chart's kubernetesDRA.enabled sets KUBERNETES_ENABLE_DRA, mounts the token and creates the
    # ClusterRole on resourceslices; the env var alone left the exporter without a client.
    values = nvidia.DCGM_EXPORTER.values(catalog.sample_spec("EKS"))
    assert values["kubernetesDRA"] == {"enabled": True}
    assert not any(e.get("name") == "KUBERNETES_ENABLE_DRA" for e in values.get("extraEnv", []))


# ---- the vendored files


VENDORED = sorted(p for p in CHARTS_DIR.iterdir() if p.is_dir())


@pytest.mark.parametrize("folder", VENDORED, ids=lambda p: p.name)
def test_every_vendored_chart_names_its_source_version_and_licence(folder):
    source = yaml.safe_load((folder / "SOURCE").read_text())
    assert {"chart", "version", "repository", "ref", "commit", "path", "files", "licence"} <= set(source)
    assert folder.name == f"{source['chart']}-{source['version']}"
    assert len(source["commit"]) == 40 and source["repository"].startswith("https://github.com/")
    assert (folder / "LICENSE").read_text().strip() and "Apache" in source["licence"]
    assert sorted(p.name for p in folder.iterdir()) == sorted([*source["files"], "SOURCE", "LICENSE"])


def test_every_vendored_chart_is_one_the_catalog_the_gateway_or_a_clouds_storage_pins():
    # A folder left behind by a version bump would check nothing.
    storage = {f"{c.name}-{c.version}" for m in CLOUD_MODULES.values() for c in m.storage_charts}
    assert storage == {"csi-mounted-fs-path-0.1.6"}
    assert {p.name for p in VENDORED} == {f"{c.name}-{c.version}" for c in WITH_VALUES} | {
        f"{TRAEFIK_CHART}-{TRAEFIK_CHART_VERSION}"} | storage


# ---- a chart whose values.yaml is not public: checked against another project's use of it


NEBIUS_CSI = Chart(NEBIUS_CSI_CHART.name, NEBIUS_CSI_CHART.repository, NEBIUS_CSI_CHART.version)


def test_nebius_csi_chart_is_checked_against_modelplanes_use_of_it_only():
    pinned = pinned_values(NEBIUS_CSI)
    assert pinned.file == "usage.yaml" and pinned.schema is None
    # Exactly what Modelplane v0.3.1 sets for the chart (its compose_csi_driver), keys and types.
    assert pinned.defaults == {"dataDir": "/mnt/data/csi-mounted-fs-path-data/", "tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    composed = CLOUD_MODULES["Nebius"].shared_storage(None).releases["release-csi-mounted-fs-path"]
    assert composed.chart == NEBIUS_CSI_CHART and chart_value_errors(NEBIUS_CSI, composed.values) == []


def test_any_other_value_for_the_nebius_csi_chart_is_refused():
    # Fail closed: a value Modelplane does not set (the chart's driverName, say) is not known to be the
    # chart's, so it is refused, saying why only these are checked.
    (error,) = chart_value_errors(NEBIUS_CSI, {"dataDir": "/mnt/data/x/", "driverName": "other.csi.nebius.ai"})
    assert error.startswith("chart csi-mounted-fs-path 0.1.6: `driverName` is not a value the chart has "
                            "(inferplane/data/charts/csi-mounted-fs-path-0.1.6/usage.yaml: the values another "
                            "project sets for it, the only ones checked, as its values.yaml is not public)")
    (error,) = chart_value_errors(NEBIUS_CSI, {"tolerations": {"key": "nvidia.com/gpu"}})
    assert "`tolerations` is a mapping, but the chart's default is a list" in error


def test_the_pinned_charts_own_defaults_pass_their_schema():
    # The checker's schema side reads the schemas as Helm does: the defaults alone are valid.
    schemas = [chart for chart in WITH_VALUES if pinned_values(chart).schema is not None]
    schemas.append(Chart(TRAEFIK_CHART, TRAEFIK_REPOSITORY, TRAEFIK_CHART_VERSION))
    assert {c.name for c in schemas} == {"cert-manager", "dra-driver-cpu", "traefik"}
    assert all(pinned_values(chart).schema and chart_value_errors(chart, {}) == [] for chart in schemas)


# ---- the simulator reads the same defaults


# The module holding each copy of a chart's defaults, and the component whose chart it copies.
SIMULATED_DEFAULTS = {"CERT_MANAGER_DEFAULTS": (workloads, catalog.CERT_MANAGER),
                      "PROMETHEUS_DEFAULTS": (workloads, catalog.PROMETHEUS),
                      "NFD_DEFAULTS": (workloads, catalog.NODE_FEATURE_DISCOVERY),
                      "NVIDIA_DEFAULTS": (nvidia, nvidia.NVIDIA_DRA_DRIVER),
                      "DCGM_DEFAULTS": (nvidia, nvidia.DCGM_EXPORTER),
                      "AMD_OPERATOR_DEFAULTS": (amd, amd.AMD_GPU_OPERATOR),
                      "CPU_DRIVER_DEFAULTS": (cpu, cpu.CPU_DRA_DRIVER),
                      "AWS_DRANET_DEFAULTS": (dranet, dranet.AWS_DRANET),
                      "GAUDI_DEFAULTS": (gaudi, gaudi.GAUDI_DRA_DRIVER)}
# Subcharts whose defaults live in their own values.yaml (not vendored): the simulator's copy of
# them is not compared.
SUBCHARTS = {"kube-prometheus-stack": {"kube-state-metrics", "prometheus-node-exporter"}}


def disagreements(mine, chart, path=""):
    """Where a hand-written copy of chart defaults differs from the chart's own (an empty map or
    list stands for a null default, as Helm renders both to nothing)."""
    for key, value in mine.items():
        here = f"{path}.{key}" if path else key
        theirs = chart.get(key, KeyError) if isinstance(chart, dict) else KeyError
        if isinstance(value, dict) and value and isinstance(theirs, dict):
            yield from disagreements(value, theirs, here)
        elif value != theirs and not (value in ({}, []) and theirs is None):
            yield here, value, theirs


@pytest.mark.parametrize("name", sorted(SIMULATED_DEFAULTS))
def test_the_simulators_chart_defaults_are_the_vendored_charts(name):
    module, component = SIMULATED_DEFAULTS[name]
    chart = component.chart
    found = [(path, mine, theirs) for path, mine, theirs in disagreements(getattr(module, name),
                                                                          pinned_values(chart).defaults)
             if path.split(".")[0] not in SUBCHARTS.get(chart.name, set())]
    assert found == []


def test_a_map_the_chart_renders_whole_into_another_api_takes_that_apis_fields():
    # gateway-helm renders config.envoyGateway as the EnvoyGateway configuration (its SOURCE's `open`).
    gateway = Chart("gateway-helm", "oci://docker.io/envoyproxy", "v1.8.1")
    assert chart_value_errors(gateway, {"config": {"envoyGateway": {"extensionManager": {"hooks": {}}}}}) == []
    assert chart_value_errors(gateway, {"config": {"envoyGateway": "on"}}) != []  # still a mapping
    assert chart_value_errors(gateway, {"config": {"bogus": {}}}) != []  # beside it, the chart's own keys
