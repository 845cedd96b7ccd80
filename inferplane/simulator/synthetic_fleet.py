"""Synthetic fleets of any size, for benchmarks and crash tests: mixed clouds, four pools each, and
optionally one ModelDeployment per ten clusters; and the placement fleet, one large deployment over
Existing GPU clusters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from inferplane.accelerators.registry import driver_slices
from inferplane.api.cloud import block_name
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.model_deployment import ModelDeployment
from inferplane.clouds import CLOUD_MODULES, machine_gpu
from inferplane.clouds.existing import Existing

_NVIDIA = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
           "attributes": {"productName": {"string": "NVIDIA L4"}}, "capacity": {"memory": {"value": "23034Mi"}}}
_AMD = {"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com",
        "attributes": {"productName": {"string": "AMD_Instinct_MI325X_OAM"}}}
# The CPUs the CPU driver counts on the 8-vCPU CPU machines of the clouds' samples: 8 less reservedCPUs 0-1.
_CPU = {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": {"cpu": {"value": "6"}}}
# The devices a cloud module's sample classes name.
DEVICES = {"nvidia": _NVIDIA, "amd": _AMD, "cpu": _CPU}


def _class(name: str, devices: list[dict], provisioning: dict | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"devices": devices}
    if provisioning:
        spec["provisioning"] = provisioning
    return {"apiVersion": InferenceClass.api_version_string(), "kind": InferenceClass.KIND, "metadata": {"name": name},
            "spec": spec}


def _on_machine(device: dict[str, Any], source: str, machine: dict[str, Any] | None) -> dict[str, Any]:
    """A sample device as the GPU its machine carries (the cloud's table names it): that product, with the
    capacities the driver reports for it."""
    gpu = machine_gpu(source, machine) if machine else None
    shape = driver_slices(device["driver"])
    model = shape.identify({}, gpu).model if gpu is not None and shape is not None else None
    if model is None:
        return device
    return {**device, "attributes": {"productName": {"string": gpu.product}},  # type: ignore[union-attr]
            "capacity": {shape.class_key(k): {"value": v} for k, v in model.capacity.items()}}  # type: ignore[union-attr]


def fleet_manifests(clusters: int) -> list[dict[str, Any]]:
    """Every cloud's sample classes, then `clusters` clusters round-robin over the clouds, each as its
    cloud module's sample says (CloudModule.sample)."""
    manifests = []
    for source, module in CLOUD_MODULES.items():
        cloud = block_name(source)
        manifests += [_class(f"{cloud}-{suffix}", [_on_machine(DEVICES[device], source, machine)],
                             {"provider": source, cloud: machine} if machine else None)
                      for suffix, device, machine in module.sample.classes]
    sources = list(CLOUD_MODULES)
    for i in range(clusters):
        source = sources[i % len(sources)]
        sample, cloud = CLOUD_MODULES[source].sample, block_name(source)
        manifests.append({
            "apiVersion": InferenceCluster.api_version_string(), "kind": InferenceCluster.KIND,
            "metadata": {"name": f"{cloud}-{i:04d}"},
            "spec": {"cluster": {"source": source, cloud: dict(sample.settings)},
                     "nodePools": [{"name": p, "className": f"{cloud}-{c}", "nodeCount": 2} for p, c in sample.pools]},
        })
    return manifests


# Clusters per synthetic ModelDeployment.
CLUSTERS_PER_DEPLOYMENT = 10


def deployment_manifests(clusters: int) -> list[dict[str, Any]]:
    """One ModelDeployment per ten clusters, two replicas each on any NVIDIA GPU with 16 GiB."""
    engine = {"name": "vllm", "members": [{
        "role": "Standalone",
        "nodeSelector": {"devices": [{"name": "gpu", "count": 1, "selectors": [
            {"cel": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) >= 0'}]}]},
        "template": {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.10.2"}]}}}]}
    return [{"apiVersion": ModelDeployment.api_version_string(), "kind": ModelDeployment.KIND,
             "metadata": {"name": f"model-{i:04d}", "namespace": "default"},
             "spec": {"replicas": 2, "template": {"spec": {"engines": [engine]}}}}
            for i in range(clusters // CLUSTERS_PER_DEPLOYMENT)]


def write_fleet(folder: Path, clusters: int, models: bool = False) -> Path:
    """One file per object, so that an apply acknowledges them one by one; with `models`, one
    ModelDeployment per ten clusters."""
    folder.mkdir(parents=True, exist_ok=True)
    manifests = fleet_manifests(clusters) + (deployment_manifests(clusters) if models else [])
    for index, manifest in enumerate(manifests):
        (folder / f"{index:05d}-{manifest['metadata']['name']}.yaml").write_text(yaml.safe_dump(manifest))
    return folder


# The placement fleet: Existing clusters of four pools of four nodes, eight GPUs a node, half the pools
# with H200 GPUs (143771Mi as the NVIDIA driver reports them) and half with L40S (46068Mi), and one
# ModelDeployment of the most replicas a deployment takes, each asking for a whole node of GPUs with at
# least 100Gi: it fits only the H200 pools.
PLACEMENT_CLASSES = (("h200", "NVIDIA H200", "143771Mi"), ("l40s", "NVIDIA L40S", "46068Mi"))
PLACEMENT_REPLICAS = 10


def placement_fleet_manifests(clusters: int) -> list[dict[str, Any]]:
    """The placement fleet's deployment, classes and `clusters` clusters."""
    engine = {"name": "vllm", "members": [{
        "role": "Standalone",
        "nodeSelector": {"devices": [{"name": "gpu", "count": 8, "selectors": [
            {"cel": 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("100Gi")) >= 0'}]}]},
        "template": {"spec": {"containers": [{"name": "engine", "image": "vllm/vllm-openai:v0.10.2"}]}}}]}
    deployment = {"apiVersion": ModelDeployment.api_version_string(), "kind": ModelDeployment.KIND,
                  "metadata": {"name": "bench", "namespace": "default"},
                  "spec": {"replicas": PLACEMENT_REPLICAS, "template": {"spec": {"engines": [engine]}}}}
    classes = [_class(name, [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
                              "count": 8, "attributes": {"productName": {"string": product}},
                              "capacity": {"memory": {"value": memory}}}], None)
               for name, product, memory in PLACEMENT_CLASSES]
    existing = Existing.sample.settings
    members = [{
        "apiVersion": InferenceCluster.api_version_string(), "kind": InferenceCluster.KIND,
        "metadata": {"name": f"dc-{i:04d}"},
        "spec": {"cluster": {"source": Existing.source, block_name(Existing.source): {**existing, "secretRef": {
                     **existing["secretRef"], "name": f"dc-{i:04d}-kubeconfig"}}},
                 "nodePools": [{"name": f"pool-{p}", "className": PLACEMENT_CLASSES[p % 2][0], "nodeCount": 4}
                               for p in range(4)]},
    } for i in range(clusters)]
    return [deployment, *classes, *members]


def write_placement_fleet(folder: Path, clusters: int) -> Path:
    """The placement fleet as a user keeps it, its deployment's file first: deployment.yaml, fleet.yaml."""
    folder.mkdir(parents=True, exist_ok=True)
    deployment, *fleet = placement_fleet_manifests(clusters)
    (folder / "deployment.yaml").write_text(yaml.safe_dump(deployment))
    (folder / "fleet.yaml").write_text(yaml.safe_dump_all(fleet))
    return folder
