"""Nebius: an mk8s Cluster and one NodeGroup per pool."""

from __future__ import annotations

import re
from typing import Any

from inferplane.api.cloud import NEBIUS
from inferplane.api.cloud_cluster import PoolRole
from inferplane.clouds.base import ProvisionedCloud, present, provisioned_sample, scaling, scaling_fields, taint_objects, \
    upbound_provider, upper_snake
from inferplane.clouds.foundation import Foundation
from inferplane.clouds.nebius_foundation import FILESYSTEM_MOUNT_POINT, NebiusInputs, nebius_foundation
from inferplane.clouds.storage import STORAGE_CLASS_KEY, SharedStorage, StorageChart, StorageRelease, storage_class

# Replicated network SSD: the provider's general-purpose boot disk, which survives a host failure.
BOOT_DISK_TYPE = "NETWORK_SSD"
# ModelCache volumes: paths on the shared filesystem every node group attaches and mounts at
# FILESYSTEM_MOUNT_POINT (nebius_foundation), served by Nebius's csi-mounted-fs-path CSI driver, whose
# driver name is the StorageClass's provisioner (Nebius docs, "Using shared filesystems over CSI"
# (docs.nebius.com/kubernetes/storage/filesystem-over-csi); Modelplane v0.3.1's compose-nebius-cluster
# (functions/compose-nebius-cluster/function/fn.py): driver mounted-fs-path.csi.nebius.ai,
# WaitForFirstConsumer).
NEBIUS_FS_STORAGE_CLASS = "inferplane-rwx-fs"
NEBIUS_FS_PROVISIONER = "mounted-fs-path.csi.nebius.ai"
# The driver, installed from Nebius's registry as Modelplane v0.3.1 installs it (same file: _CSI_CHART_REPO,
# _CSI_CHART_NAME, _CSI_CHART_VERSION, _CSI_NAMESPACE), under the release name Nebius's docs install it with
# (`helm upgrade csi-mounted-fs-path ...`). Its values are checked against Modelplane's use of them only:
# the chart's own values.yaml is in no public repository (inferplane/data/charts/csi-mounted-fs-path-0.1.6/).
NEBIUS_CSI_CHART = StorageChart(name="csi-mounted-fs-path", repository="oci://cr.eu-north1.nebius.cloud/mk8s/helm",
                                version="0.1.6", namespace="kube-system", release="csi-mounted-fs-path",
                                provisioner=NEBIUS_FS_PROVISIONER)
NEBIUS_CSI_RELEASE_KEY = "release-csi-mounted-fs-path"
# The driver serves volumes from this directory of the mount (Modelplane v0.3.1's dataDir value).
NEBIUS_CSI_DATA_DIR = f"{FILESYSTEM_MOUNT_POINT}/csi-mounted-fs-path-data/"


class Nebius(ProvisionedCloud):
    source = NEBIUS
    api_version = "mk8s.nebius.m.upbound.io/v1beta1"
    cluster_kind = "Cluster"
    pool_kind = "NodeGroup"
    cluster_ref = "parentIdRef"
    # 4 vCPU / 16 GiB on the general-purpose Intel platform.
    system_machine = {"platform": "cpu-d3", "preset": "4vcpu-16gb"}
    offered_on_pool = {"machine": "template.resources.platform", "preset": "template.resources.preset"}
    # The platform; its `preset` is checked against the platform's presets.
    machine_field, machine_word = "platform", "Nebius platform"
    # Presets carry their vCPUs in the name: 16vcpu-64gb.
    vcpus_field, vcpus_pattern = "preset", re.compile(r"(?:^|-)(\d+)vcpu(?:-|$)")
    # One package serves every Nebius group.
    provider_packages = {f"{group}.nebius.m.upbound.io": upbound_provider("provider-nebius", "v1.0.1")
                         for group in ("mk8s", "compute", "vpc")}
    sample = provisioned_sample({"parentId": "project-fleet", "subnetId": "subnet-fleet"},
                                {"platform": "gpu-h100-sxm", "preset": "1gpu-16vcpu-200gb", "accelerator": {"type": "h100"}},
                                {"platform": "cpu-d3", "preset": "8vcpu-32gb"})

    def foundation(self, name: str, spec: Any, observed: dict) -> Foundation:
        # The subnet (composed, or the user's own), the shared filesystem, the GPU clusters.
        inputs = NebiusInputs(pools=self.foundation_pools(spec), parent_id=spec.parent_id, subnet_id=spec.subnet_id)
        return nebius_foundation(inputs, self.namer(name), self.provider_config(spec))

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        return present(name=name, parentId=spec.parent_id,
                       # An empty publicEndpoint asks for one: the serving stack is installed through
                       # it, as on the other clouds, whose endpoints are public by default.
                       controlPlane={"version": version, "endpoints": {"publicEndpoint": {}}})

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        size, init = scaling_fields(scaling(pool), count="fixedNodeCount", group="autoscaling",
                                    minimum="minNodeCount", maximum="maxNodeCount")
        machine = pool.machine
        template = present(
            resources={"platform": machine.platform, "preset": machine.preset},
            bootDisk={"sizeGibibytes": machine.disk_size_gb, "type": BOOT_DISK_TYPE},
            metadata=present(labels=dict(pool.labels)),
            taints=taint_objects(pool.taints, upper_snake),
            # GPU node groups boot an image with the class's NVIDIA driver stack preinstalled.
            gpuSettings={"driversPreset": machine.drivers_preset} if pool.role == PoolRole.GPU else None)
        return {**size, "template": template}, init

    def standalone_fields(self, spec: Any, pool: Any) -> dict[str, Any]:
        # A node group's name is unique within its cluster, its parent.
        return {"name": pool.name}

    # The charts shared_storage installs, whatever the cluster (the simulated clusters read them).
    storage_charts = (NEBIUS_CSI_CHART,)

    def shared_storage(self, cluster: Any, observed: dict | None = None) -> SharedStorage:
        manifest = storage_class(NEBIUS_FS_STORAGE_CLASS, NEBIUS_FS_PROVISIONER,
                                 volumeBindingMode="WaitForFirstConsumer")
        values = {"dataDir": NEBIUS_CSI_DATA_DIR, "tolerations": pool_tolerations(cluster)}
        return SharedStorage(NEBIUS_FS_STORAGE_CLASS, {STORAGE_CLASS_KEY: manifest},
                             {NEBIUS_CSI_RELEASE_KEY: StorageRelease(NEBIUS_CSI_CHART, values)})


def pool_tolerations(cluster: Any) -> list[dict[str, str]]:
    """What the CSI driver's node plugin tolerates: every taint of the cluster's pools, whatever its value,
    since engine pods mount cache volumes on tainted pools too (a node without the plugin cannot mount
    them: "driver name mounted-fs-path.csi.nebius.ai not found in the list of registered CSI drivers", as
    Modelplane v0.3.1 found on its GPU nodes, which is why it tolerates its GPU taint). The chart's node
    plugin tolerates nothing by default."""
    pools = cluster.spec.node_pools if cluster is not None else []  # None: asked what the cloud offers
    taints = {(taint.key, taint.effect) for pool in pools for taint in pool.taints}
    return [{"key": key, "operator": "Exists", "effect": effect} for key, effect in sorted(taints)]
