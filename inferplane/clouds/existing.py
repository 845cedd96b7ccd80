"""Existing: a cluster the operator runs; inferplane provisions nothing (docs/clouds.md says how to label it)."""

from __future__ import annotations

from typing import Any

from inferplane.api.cloud import DEFAULT_MINOR, EXISTING
from inferplane.api.managed import MANAGED_NAMESPACE
from inferplane.clouds.base import ProviderPackage, Resource, SampleFleet
from inferplane.clouds.storage import SharedStorage


class Existing:
    source = EXISTING
    provisioned = False
    autoscales_pools = False  # its nodes are its operator's: nothing of inferplane's grows them
    api_version = None
    cluster_kind = None
    pool_kind = None
    cluster_ref = None
    machine_field = None
    machine_word = None
    provider_packages: dict[str, ProviderPackage] = {}
    storage_charts = ()  # its storage class's driver is its operator's
    # An AMD, an NVIDIA and two CPU pools, with classes that provision nothing (AMD GPUs are served on
    # Existing clusters alone).
    sample = SampleFleet(
        settings={"secretRef": {"name": "kubeconfig", "namespace": MANAGED_NAMESPACE, "key": "value"},
                  "kubernetesVersion": DEFAULT_MINOR},
        classes=(("amd", "amd", None), ("nvidia", "nvidia", None), ("cpu", "cpu", None)),
        pools=(("amd", "amd"), ("nvidia", "nvidia"), ("cpu-a", "cpu"), ("cpu-b", "cpu")))

    def nodes_created(self, node_count: int, zones: list[str]) -> int:
        return node_count  # the nodes its operator says the pool has

    def node_labels(self, machine: dict[str, Any]) -> dict[str, str]:
        return {}  # its operator labels its nodes (docs/clouds.md)

    def machine_vcpus(self, machine: dict[str, Any]) -> tuple[str, int] | None:
        return None  # its classes name no machine

    def system_pool(self) -> None:
        # The stack's components run wherever the operator's cluster has room for them.
        return None

    def resources(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, Resource]:
        return {}

    def held_pools(self, cluster: Any, observed: dict[str, Resource] | None = None) -> dict[str, str]:
        return {}

    def endpoint(self, observed_cluster: Resource | None) -> str | None:
        return None

    def offered_names(self, resource: Resource) -> dict[str, list[str]]:
        return {}  # it composes no cloud resource

    def shared_storage(self, cluster: Any, observed: dict[str, Resource] | None = None) -> SharedStorage:
        # The operator names the cluster's own StorageClass in its settings (existing.cache).
        return SharedStorage()

    def storage_refusal(self, cluster_name: str) -> str | None:
        return (f"InferenceCluster {cluster_name} names no ReadWriteMany StorageClass: set "
                "spec.cluster.existing.cache.storageClassName to one the cluster has")
