"""A cluster's shared (ReadWriteMany) storage for ModelCache volumes, as each cloud provides it.

A cloud module says, for one cluster, which StorageClass cache volumes use and what must exist on the
workload cluster for that class to provision them (the StorageClass itself, a CSI driver it installs);
a cloud with no shared storage inferplane can compose says why and what to do instead. The cloud
resources the storage stands on (EFS, the Nebius filesystem) are part of the cloud's foundation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Resource = dict[str, Any]

STORAGE_CLASS_KEY = "storage-class-rwx"
STORAGE_CLASS_API_VERSION = "storage.k8s.io/v1"


@dataclass(frozen=True)
class StorageChart:
    """A Helm chart that installs what serves a cloud's storage on the workload cluster (a CSI driver the
    cloud does not run itself): its pin, the namespace and release name it installs under, and the CSI
    driver it registers, which the StorageClass names as its provisioner."""

    name: str
    repository: str
    version: str
    namespace: str
    release: str
    provisioner: str


@dataclass(frozen=True)
class StorageRelease:
    """One install of a StorageChart on a cluster, with the values it sets."""

    chart: StorageChart
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SharedStorage:
    """`storage_class`: the name cache volumes use (None: the cloud has none); `workload_objects`: the
    Kubernetes manifests to create on the workload cluster, by key; `releases`: the Helm charts to install
    there, by key; `refusal`: why there is none, with what to do; `waiting`: what the StorageClass waits for
    before it can be composed."""

    storage_class: str | None = None
    workload_objects: dict[str, Resource] = field(default_factory=dict)
    releases: dict[str, StorageRelease] = field(default_factory=dict)
    refusal: str | None = None
    waiting: str | None = None


def storage_class(name: str, provisioner: str, parameters: dict[str, str] | None = None,
                  **fields: Any) -> Resource:
    """A StorageClass manifest; `fields` are its other top-level fields (volumeBindingMode...)."""
    manifest: Resource = {"apiVersion": STORAGE_CLASS_API_VERSION, "kind": "StorageClass",
                          "metadata": {"name": name}, "provisioner": provisioner}
    if parameters:
        manifest["parameters"] = dict(parameters)
    manifest.update(fields)
    return manifest


def no_shared_storage(source: str, offered: str) -> SharedStorage:
    """The refusal of a cloud whose provider composes no ReadWriteMany storage."""
    return SharedStorage(refusal=(
        f"{source} clusters have no ReadWriteMany storage inferplane can compose ({offered}), so a ModelCache "
        f"cannot stage there: leave {source} clusters out of the cache's clusterSelector, or run the model "
        "without spec.template.spec.modelCacheRef (each engine pod then downloads the weights itself)"))
