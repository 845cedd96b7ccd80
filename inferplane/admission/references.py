"""Checks across objects: what an InferenceCluster needs from the classes its pools reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from inferplane.accelerators.drivers import DRIVERS
from inferplane.api.cloud import block_name
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.clouds.defaults import DEFAULT_KUBERNETES_VERSION, minor


@dataclass(frozen=True)
class VersionProblem:
    path: str
    message: str


def effective_kubernetes_version(cluster: InferenceCluster) -> tuple[str | None, str]:
    """The cluster's Kubernetes version and where it comes from ("declared" or "the EKS default")."""
    source = cluster.spec.cluster.source
    declared = cluster.spec.cluster.settings().kubernetes_version
    if declared:
        return declared, "declared"
    default = DEFAULT_KUBERNETES_VERSION.get(source)
    return default, f"the {source} default" if default else "not declared"


def kubernetes_version_problems(cluster: InferenceCluster,
                                classes: Mapping[str, InferenceClass]) -> list[VersionProblem]:
    """Pools whose classes claim a driver the cluster's Kubernetes version is too old for.

    Classes that are not in `classes` are skipped: a missing class is reported where it is needed.
    """
    version, origin = effective_kubernetes_version(cluster)
    path = f"spec.cluster.{block_name(cluster.spec.cluster.source)}.kubernetesVersion"
    problems = []
    for pool in cluster.spec.node_pools:
        klass = classes.get(pool.class_name)
        if klass is None:
            continue
        for driver_name in klass.spec.claimed_drivers():
            driver = DRIVERS.get(driver_name)
            needed = driver.min_kubernetes_version if driver else None
            if not needed:
                continue
            if version is None:
                problems.append(VersionProblem(path, (
                    f"pool {pool.name} uses class {klass.metadata.name}, which claims {driver_name}; that needs "
                    f"Kubernetes >= {needed} and this cluster's version is not declared: set {path} to the "
                    f"version the cluster runs")))
            elif minor(version) < minor(needed):
                problems.append(VersionProblem(path, (
                    f"pool {pool.name} uses class {klass.metadata.name}, which claims {driver_name}; that needs "
                    f"Kubernetes >= {needed}, and this cluster has {version} ({origin}): set {path} to "
                    f"\"{needed}\" or later")))
    return problems
