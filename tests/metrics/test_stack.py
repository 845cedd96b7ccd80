"""The serving stack's Prometheus gets exactly the GPU scrape jobs and recording rules of the
drivers its cluster claims (and its cloud serves)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from inferplane.accelerators.amd import AMD_DEVICE_CONFIG
from inferplane.accelerators.catalog import COMPONENT_LABEL, PROMETHEUS
from inferplane.accelerators.component import tag_errors
from inferplane.api.serving_stack import ServingStackSpec
from inferplane.engine.control_plane import ControlPlane

RECIPES = Path(__file__).parents[2] / "recipes"


def prometheus_values_by_cluster(folder: Path) -> dict[str, dict]:
    runtime = ControlPlane(None)
    try:
        runtime.apply([folder])
        objects = runtime.list()
    finally:
        runtime.close()
    return {o["spec"]["providerConfigRef"]["name"]: o["spec"]["forProvider"]["values"] for o in objects
            if o["kind"] == "Release" and o["metadata"].get("labels", {}).get(COMPONENT_LABEL) == PROMETHEUS.key}


def jobs_and_rule_groups(values: dict) -> tuple[list[str], list[str]]:
    jobs = values["prometheus"]["prometheusSpec"].get("additionalScrapeConfigs", [])
    groups = values.get("additionalPrometheusRulesMap", {}).get("inferplane-gpu", {}).get("groups", [])
    return [j["job_name"] for j in jobs], [g["name"] for g in groups]


NVIDIA = (["inferplane-gpu-nvidia"], ["inferplane-gpu-nvidia-dcgm"])
AMD = (["inferplane-gpu-amd"], ["inferplane-gpu-amd-device-metrics"])
NONE: tuple[list[str], list[str]] = ([], [])


@pytest.mark.parametrize("recipe, expected", [
    # eks-amd claims AMD on EKS: the gate holds it, so it has no stack and no Prometheus at all.
    ("mixed-fleet", {"civo-lon": NONE, "eks-us-east": NVIDIA, "gke-us-central": NVIDIA, "nebius-eu": NVIDIA,
                     "onprem-lab": AMD}),
    ("qwen2.5-0.5b-amd", {"amd-lab": AMD}),
    ("qwen2.5-0.5b-cpu", {"civo-cpu": NONE}),
    ("qwen2.5-0.5b-nvidia-eks", {"eks-l4": NVIDIA}),
])
def test_each_recipe_cluster_gets_the_jobs_and_rules_of_its_claimed_drivers(recipe, expected):
    rendered = prometheus_values_by_cluster(RECIPES / recipe)
    assert {cluster: jobs_and_rule_groups(values) for cluster, values in rendered.items()} == expected


def stack_values(drivers: list[str]) -> dict:
    spec = ServingStackSpec.model_validate({"source": "Existing", "clusterName": "lab", "draDrivers": drivers})
    return PROMETHEUS.values(spec)


def test_amd_job_finds_the_operators_exporter_pods_by_label_and_port_name():
    (job,) = stack_values(["gpu.amd.com"])["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"]
    assert job == {
        "job_name": "inferplane-gpu-amd",
        "metrics_path": "/metrics",
        "honor_labels": True,
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": ["kube-amd-gpu"]},
                                   "selectors": [{"role": "pod", "label": "app.kubernetes.io/name=metrics-exporter"}]}],
        "relabel_configs": [{"source_labels": ["__meta_kubernetes_pod_container_port_name"],
                             "regex": "exporter-port", "action": "keep"}],
    }


def test_neutral_prometheus_settings_stay_beside_the_gpu_jobs():
    values = stack_values(["gpu.nvidia.com", "gpu.amd.com"])
    spec = values["prometheus"]["prometheusSpec"]
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert [j["job_name"] for j in spec["additionalScrapeConfigs"]] == ["inferplane-gpu-amd", "inferplane-gpu-nvidia"]
    assert values["grafana"] == {"enabled": False}


def test_promtool_accepts_the_rules_the_stack_ships(tmp_path):
    # Only the rules: Debian's promtool is built without Kubernetes service discovery, so it cannot
    # load the scrape jobs (the job's shape is asserted above instead).
    values = stack_values(["gpu.nvidia.com", "gpu.amd.com"])
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(values["additionalPrometheusRulesMap"]["inferplane-gpu"]))
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `bash scripts/setup test` installs Debian's prometheus package"
    result = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 13 rules found" in result.stdout


def test_a_component_exporting_metrics_of_a_driver_it_does_not_serve_is_a_catalog_error():
    broken = replace(AMD_DEVICE_CONFIG, dra_drivers=frozenset({"gpu.nvidia.com"}))
    assert tag_errors(broken) == [
        "component amd-device-config exports gpu.amd.com metrics but does not serve that driver: tag it with "
        "gpu.amd.com or fix its metrics endpoint"]


def composed_prometheus_values(cluster: str, drivers: list[str]) -> dict:
    from inferplane.compose.base import Request
    from inferplane.compose.serving_stack import compose_serving_stack, resource_key

    composite = {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack",
                 "metadata": {"name": cluster}, "spec": {"source": "Existing", "clusterName": cluster, "draDrivers": drivers}}
    desired = compose_serving_stack(Request(composite)).desired[resource_key(PROMETHEUS)]
    return desired.resource["spec"]["forProvider"]["values"]


def test_stacks_of_equal_exporters_get_equal_values_that_refuse_changes():
    """The GPU jobs and rules are rendered once per set of exporters: equal stacks' Releases share one copy
    of the values, which refuses a change in place (a change to one would reach every other), and another
    set of exporters gets its own."""
    first = composed_prometheus_values("lab-a", ["gpu.nvidia.com"])
    second = composed_prometheus_values("lab-b", ["gpu.nvidia.com"])
    assert first == second and jobs_and_rule_groups(first) == NVIDIA
    with pytest.raises(TypeError, match="cannot be changed in place"):
        first["additionalPrometheusRulesMap"]["inferplane-gpu"]["groups"].clear()
    with pytest.raises(TypeError, match="cannot be changed in place"):
        first["prometheus"]["prometheusSpec"]["additionalScrapeConfigs"].clear()
    assert jobs_and_rule_groups(second) == NVIDIA
    assert jobs_and_rule_groups(composed_prometheus_values("lab-c", ["gpu.nvidia.com"])) == NVIDIA
    assert jobs_and_rule_groups(composed_prometheus_values("lab-d", ["gpu.amd.com"])) == AMD
    assert jobs_and_rule_groups(composed_prometheus_values("lab-e", [])) == NONE
    both = composed_prometheus_values("lab-f", ["gpu.amd.com", "gpu.nvidia.com"])
    assert jobs_and_rule_groups(both) == (["inferplane-gpu-amd", "inferplane-gpu-nvidia"],
                                          ["inferplane-gpu-amd-device-metrics", "inferplane-gpu-nvidia-dcgm"])
