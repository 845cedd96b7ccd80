"""Kubernetes versions: each cloud's default, a cluster's effective version, and the pools whose
drivers need a newer one. Admission and composition both apply these rules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from inferplane.api.cloud import DEFAULT_KUBERNETES_VERSION, block_name
from inferplane.api.drivers import DRIVERS
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster

# Each cloud's default is its XRD's (api/cloud.py, stored on the object). Every cloud's default must
# satisfy every driver the cloud serves (tests/clouds/test_kubernetes_version.py checks it against
# the catalog): dra.cpu, served everywhere, needs 1.36. Existing clusters have no default: their
# version is the one the cluster reports.

# Every format a version is written in: "1.36", "1.36.2", "1.36.1-gke.1200", Vultr's "v1.36.1+3".
_MINOR = re.compile(r"^v?(\d+)\.(\d+)")


def minor(version: str) -> tuple[int, int]:
    """(1, 36) for "1.36", "1.36.2", "1.36.1-gke.1200" or "v1.36.1+3": the one parser comparisons use."""
    match = _MINOR.match(version)
    if match is None:
        raise ValueError(f"not a Kubernetes version: {version!r}")
    return int(match.group(1)), int(match.group(2))


_PATCH = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-gke\.(\d+))?")


def patch(version: str) -> tuple[int, ...] | None:
    """(1, 34, 1, 1127000) for "1.34.1-gke.1127000", (1, 34, 2, 0) for "1.34.2"; None for a minor alone
    ("1.34"), which names no patch: the cloud picks its newest."""
    match = _PATCH.match(version)
    return None if match is None else tuple(int(g or 0) for g in match.groups())


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


def kubernetes_version_problems(cluster: InferenceCluster, classes: Mapping[str, InferenceClass],
                                reported: str | None = None) -> list[VersionProblem]:
    """Pools whose classes claim a driver the cluster's Kubernetes version is too old for.

    The version is the declared one, else the cloud's default, else (an Existing cluster) the one
    the cluster `reported`; with none of these there is nothing to check yet. Classes that are not
    in `classes` are skipped: a missing class is reported where it is needed.
    """
    version, origin = cluster_kubernetes_version(cluster)
    if version is None and reported:
        version, origin = reported, "reported by the cluster"
    if version is None:
        return []
    path = f"spec.cluster.{block_name(cluster.spec.cluster.source)}.kubernetesVersion"
    fix = ("upgrade the cluster to {needed} or later" if origin == "reported by the cluster"
           else f"set {path} to \"{{needed}}\" or later")
    problems = []
    for pool in cluster.spec.node_pools:
        klass = classes.get(pool.class_name)
        if klass is None:
            continue
        for driver_name in klass.spec.claimed_drivers():
            driver = DRIVERS.get(driver_name)
            if driver is None:
                continue
            if minor(version) >= minor(driver.min_kubernetes_version):
                if (driver.min_patch_version and minor(version) == minor(driver.min_patch_version)
                        and (have := patch(version)) is not None and have < patch(driver.min_patch_version)):  # type: ignore[operator]
                    needed = driver.min_patch_version
                    problems.append(VersionProblem(path, (
                        f"pool {pool.name} uses class {klass.metadata.name}, which claims {driver_name}; that needs "
                        f"{needed} or a later patch ({driver.min_patch_source}), and this cluster has {version} "
                        f"({origin}): {fix.format(needed=needed)}")))
                continue
            needed = driver.min_kubernetes_version
            problems.append(VersionProblem(path, (
                f"pool {pool.name} uses class {klass.metadata.name}, which claims {driver_name}; that needs "
                f"Kubernetes >= {needed}, and this cluster has {version} ({origin}): {fix.format(needed=needed)}")))
    return problems
