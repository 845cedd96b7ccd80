"""`inferplane metrics map` and `inferplane metrics rules`, as a user runs them."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from inferplane.cli.main import cli

HERE = Path(__file__).parent
SCRAPES = HERE / "scrapes"
RECIPES = HERE.parents[1] / "recipes"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def mapped(scrape: Path, *extra: str) -> dict[str, dict[tuple, float]]:
    result = run("metrics", "map", str(scrape), *extra)
    assert result.exit_code == 0, result.output
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(result.output):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def labels(**pairs: str) -> tuple:
    return tuple(sorted(pairs.items()))


L4 = labels(vendor="nvidia", gpu="0", uuid="GPU-5fd4ef0e-1a4e-bbb7-3a8b-d4b8a1ab4d69", model="NVIDIA L4",
            node="gke-l4-pool-0", pod="qwen-0", namespace="models", container="vllm")
MI325X = labels(vendor="amd", gpu="0", uuid="692251001124", model="AMD Instinct MI325X", node="onprem-lab-mi325x-0",
                pod="qwen-0", namespace="models", container="vllm")


def test_a_dcgm_scrape_maps_to_converted_inferplane_series():
    assert mapped(SCRAPES / "dcgm-exporter.txt") == {
        "inferplane_gpu_memory_used_bytes": {L4: 16777216000},     # 16000 MiB
        "inferplane_gpu_memory_total_bytes": {L4: 23622320128},    # 16000 + 6000 + 528 MiB
        "inferplane_gpu_utilization_ratio": {L4: 0.85},
        "inferplane_gpu_power_watts": {L4: 63.5},
        "inferplane_gpu_energy_joules_total": {L4: 912345.678},   # 912345678 mJ
        "inferplane_gpu_temperature_celsius": {L4: 61},
        "inferplane_gpu_tensor_active_ratio": {L4: 0.42},
    }


def test_an_amd_scrape_maps_to_converted_inferplane_series():
    assert mapped(SCRAPES / "amd-device-metrics-exporter.txt") == {
        "inferplane_gpu_memory_used_bytes": {MI325X: 4294967296},   # 4096 MiB
        "inferplane_gpu_memory_total_bytes": {MI325X: 274877906944},  # 262144 MiB
        "inferplane_gpu_utilization_ratio": {MI325X: 0.37},
        "inferplane_gpu_power_watts": {MI325X: 612},
        "inferplane_gpu_energy_joules_total": {MI325X: 4500000},  # 4.5e12 uJ
        "inferplane_gpu_temperature_celsius": {MI325X: 71},       # junction, not edge
    }


def test_both_vendors_print_the_same_series_names_but_nvidias_tensor_activity():
    nvidia = set(mapped(SCRAPES / "dcgm-exporter.txt"))
    amd = set(mapped(SCRAPES / "amd-device-metrics-exporter.txt"))
    assert nvidia - amd == {"inferplane_gpu_tensor_active_ratio"}
    assert amd <= nvidia


USER_MAPPING = """\
apiVersion: inferplane.dev/v1alpha1
kind: GPUMetricsMapping
metadata: {name: intel-xpu}
spec:
  vendor: intel
  labels: {gpu: [device_id], node: [node_name]}
  series:
  - {source: xpu_memory_used_bytes, target: inferplane_gpu_memory_used_bytes, fromUnit: Bytes}
  - {source: xpu_engine_group_busy_percent, target: inferplane_gpu_utilization_ratio, fromUnit: Percent}
"""


def test_a_users_mapping_reads_another_exporter(tmp_path):
    (tmp_path / "intel.yaml").write_text(USER_MAPPING)
    (tmp_path / "scrape.txt").write_text('xpu_memory_used_bytes{device_id="1",node_name="n1"} 2048\n'
                                         'xpu_engine_group_busy_percent{device_id="1",node_name="n1"} 50\n')
    intel = labels(vendor="intel", gpu="1", node="n1")
    assert mapped(tmp_path / "scrape.txt", "--mapping", str(tmp_path / "intel.yaml")) == {
        "inferplane_gpu_memory_used_bytes": {intel: 2048}, "inferplane_gpu_utilization_ratio": {intel: 0.5}}
    rules = yaml.safe_load(run("metrics", "rules", "--mapping", str(tmp_path / "intel.yaml")).output)
    assert [g["name"] for g in rules["groups"]] == [
        "inferplane-gpu-amd-device-metrics", "inferplane-gpu-nvidia-dcgm", "inferplane-gpu-intel-xpu"]


def test_a_bad_mapping_gets_every_error_with_file_kind_name_path_and_fix(tmp_path):
    bad = USER_MAPPING.replace("fromUnit: Bytes", "fromUnit: Percent").replace("node: [node_name]", "rack: [r]")
    (tmp_path / "intel.yaml").write_text(bad.replace("xpu_engine_group_busy_percent, target: inferplane_gpu_util",
                                                     "xpu_busy, target: inferplane_gpu_busy"))
    result = CliRunner().invoke(cli, ["metrics", "map", str(SCRAPES / "dcgm-exporter.txt"), "--mapping",
                                      str(tmp_path / "intel.yaml")])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    where = f"error: {tmp_path / 'intel.yaml'}: GPUMetricsMapping/intel-xpu: "
    assert result.output.splitlines() == [
        where + "spec.labels: unknown normalized label 'rack': use gpu, uuid, model, node, pod, namespace, "
                "container (vendor is spec.vendor)",
        where + "spec.series.0: fromUnit Percent cannot feed inferplane_gpu_memory_used_bytes, which is in bytes: "
                "use one of Bytes, Mebibytes",
        where + "spec.series.1.target: unknown target 'inferplane_gpu_busyization_ratio': use one of "
                "inferplane_gpu_memory_used_bytes, inferplane_gpu_memory_total_bytes, inferplane_gpu_utilization_ratio, "
                "inferplane_gpu_power_watts, inferplane_gpu_energy_joules_total, inferplane_gpu_temperature_celsius, "
                "inferplane_gpu_tensor_active_ratio",
    ]


def test_a_file_that_is_not_a_scrape_gets_a_clear_error(tmp_path):
    (tmp_path / "scrape.txt").write_text("this is { not prometheus\n")
    result = CliRunner().invoke(cli, ["metrics", "map", str(tmp_path / "scrape.txt")])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert f"{tmp_path / 'scrape.txt'}: not Prometheus text format" in result.output


def test_rules_of_a_cluster_are_those_its_stack_ships(tmp_path):
    state = str(tmp_path / "state")
    assert run("apply", "-f", str(RECIPES / "mixed-fleet"), "--state", state).exit_code == 0

    def groups(cluster: str) -> list[str]:
        result = run("metrics", "rules", "--cluster", cluster, "--state", state)
        assert result.exit_code == 0, result.output
        return [g["name"] for g in yaml.safe_load(result.output)["groups"]]

    assert groups("onprem-lab") == ["inferplane-gpu-amd-device-metrics"]
    assert groups("nebius-eu") == ["inferplane-gpu-nvidia-dcgm"]
    assert groups("civo-lon") == []
    missing = CliRunner().invoke(cli, ["metrics", "rules", "--cluster", "eks-amd", "--state", state])
    assert missing.exit_code == 1
    assert "no serving stack with Prometheus for cluster 'eks-amd'" in missing.output


def test_a_mapping_with_a_key_written_twice_is_refused(tmp_path):
    """The loader's strict reading holds for mapping files too, beside the mapping's other errors (the
    second `fromUnit` is the one a YAML loader keeps)."""
    twice = USER_MAPPING.replace("fromUnit: Bytes}", "fromUnit: Bytes, fromUnit: Percent}")
    (tmp_path / "intel.yaml").write_text(twice)
    result = CliRunner().invoke(cli, ["metrics", "rules", "--mapping", str(tmp_path / "intel.yaml")])
    assert result.exit_code == 1
    where = f"error: {tmp_path / 'intel.yaml'}: GPUMetricsMapping/intel-xpu: "
    assert result.output.splitlines() == [
        where + "spec.series[0].fromUnit: duplicate field \"fromUnit\": a key appears once in a mapping (the API "
                "server refuses a repeated one): remove one of them",
        where + "spec.series.0: fromUnit Percent cannot feed inferplane_gpu_memory_used_bytes, which is in bytes: "
                "use one of Bytes, Mebibytes"]
