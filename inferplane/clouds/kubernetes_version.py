"""Kubernetes versions: each cloud's default, a cluster's effective version, and the pools whose
drivers need a newer one. Admission and composition both apply these rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from inferplane.api.cloud import block_name
from inferplane.api.drivers import DRIVERS
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster

# The Kubernetes minor version a cluster gets when its spec names none: each cloud's current
# default channel as we read it (unconfirmed, kept here so it is easy to change). Existing clusters
# have no default: their version is whatever the operator runs, so it must be declared.
DEFAULT_KUBERNETES_VERSION: dict[str, str] = {
    "EKS": "1.34",
    "GKE": "1.34",
    "AKS": "1.34",
    "Nebius": "1.33",
    "Vultr": "1.34",
    "Civo": "1.33",
}


def minor(version: str) -> tuple[int, int]:
    """(1, 36) for "1.36" or "1.36.2"."""
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


def effective_kubernetes_version(source: str, declared: str | None) -> tuple[str | None, str]:
    """A cluster's Kubernetes version and where it comes from ("declared" or "the EKS default")."""
    if declared:
        return declared, "declared"
    default = DEFAULT_KUBERNETES_VERSION.get(source)
    return default, f"the {source} default" if default else "not declared"


def cluster_kubernetes_version(cluster: InferenceCluster) -> tuple[str | None, str]:
    """An InferenceCluster's effective Kubernetes version and where it comes from."""
    return effective_kubernetes_version(cluster.spec.cluster.source, cluster.spec.cluster.settings().kubernetes_version)


@dataclass(frozen=True)
class VersionProblem:
    path: str
    message: str


def kubernetes_version_problems(cluster: InferenceCluster,
                                classes: Mapping[str, InferenceClass]) -> list[VersionProblem]:
    """Pools whose classes claim a driver the cluster's Kubernetes version is too old for.

    Classes that are not in `classes` are skipped: a missing class is reported where it is needed.
    """
    version, origin = cluster_kubernetes_version(cluster)
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
