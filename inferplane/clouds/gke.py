"""GKE: a container.gcp Cluster without its default pool, and one NodePool per pool."""

from __future__ import annotations

from typing import Any

from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.drivers import GKE_ACCELERATOR_LABEL, GOOGLE_TPU, TPU_SINGLE_HOST_TOPOLOGY
from inferplane.clouds.base import ProvisionedCloud, at_provider, present, provisioned_sample, scaling, scaling_fields, \
    taint_objects, upbound_provider, upper_snake
from inferplane.clouds.foundation import Foundation
from inferplane.clouds.gke_foundation import GKEInputs, gke_foundation
from inferplane.clouds.storage import STORAGE_CLASS_KEY, SharedStorage, storage_class

# Container-Optimized OS for every pool: GPU drivers for it install to /home/kubernetes/bin/nvidia,
# where the NVIDIA DRA driver is told to look on GKE.
IMAGE_TYPE = "COS_CONTAINERD"
# GKE's own GPU driver installation and device plugin are not supported together with DRA: GPU
# pools opt out of both, and the serving stack installs the driver and the DRA driver instead.
GPU_DRIVER_VERSION = "INSTALLATION_DISABLED"
NO_DEVICE_PLUGIN_LABEL = {"gke-no-default-nvidia-gpu-device-plugin": "true"}
# The labels GKE gives a TPU pool's nodes, which the TPU DRA driver reads (kubernetes-sigs/dra-driver-google-tpu
# v0.2.0 cmd/tpu-dra-kubeletplugin/util.go: gkeAcceleratorLabel, gkeAcceleratorCountLabel, gkeTopologyLabel).
GKE_TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
GKE_ACCELERATOR_COUNT_LABEL = "cloud.google.com/gke-accelerator-count"
GKE_TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
# A multi-host TPU slice is a pool with a compact placement policy naming its topology (Google Cloud, "Plan TPUs in
# GKE"; the provider's NodePool placementPolicy {type, tpuTopology}: documentation).
TPU_PLACEMENT = "COMPACT"
# GKE creates a cluster with a default pool; pools are managed as NodePools, so the default one is
# created with a single node and removed once the cluster exists.
DEFAULT_POOL_NODES = 1
# ModelCache volumes: Filestore instances the Filestore CSI driver provisions, one per volume. GKE runs
# the driver as an add-on, enabled on the cluster (Google Cloud, "Access Filestore instances with the
# Filestore CSI driver"; the provider's Cluster addonsConfig.gcpFilestoreCsiDriverConfig.enabled). Its
# StorageClass parameters: `tier` (standard, premium, enterprise or zonal; enterprise, as Modelplane
# v0.3.1 sets it, is regional) and `network`, the VPC the instances join (the driver's default is the
# `default` network, which a composed cluster does not use).
FILESTORE_STORAGE_CLASS = "inferplane-rwx-filestore"
FILESTORE_PROVISIONER = "filestore.csi.storage.gke.io"
FILESTORE_TIER = "enterprise"


class GKE(ProvisionedCloud):
    source = "GKE"
    api_version = "container.gcp.m.upbound.io/v1beta1"
    cluster_kind = "Cluster"
    pool_kind = "NodePool"
    cluster_ref = "clusterRef"
    # 4 vCPU / 16 GiB, general purpose.
    system_machine = {"machineType": "e2-standard-4"}
    endpoint_field = "endpoint"
    offered_on_cluster = {"region": "location"}
    offered_on_pool = {"region": "location", "zone": "nodeLocations", "machine": "nodeConfig.machineType",
                       "accelerator": "nodeConfig.guestAccelerator.type"}
    machine_field, machine_word = "machine_type", "Compute Engine machine type"
    # vCPUs from Google Cloud's published machine types (*unconfirmed* here).
    vcpus_field, vcpus = "machineType", {"n2-standard-16": 16}
    provider_packages = {f"{group}.gcp.m.upbound.io": upbound_provider(f"provider-gcp-{group}", "v2.6.0")
                         for group in ("container", "compute", "cloudplatform")}
    sample = provisioned_sample({"project": "fleet", "region": "us-central1"},
                                {"machineType": "g2-standard-8", "accelerator": {"type": "nvidia-l4"}},
                                {"machineType": "n2-standard-8"})

    def node_labels(self, machine: dict[str, Any]) -> dict[str, str]:
        """GKE marks GPU nodes with their accelerator (NVIDIA's driver installer selects them by it), and TPU nodes
        with their TPU accelerator, chips and topology (which the TPU DRA driver reads)."""
        from inferplane.clouds.offerings import offerings

        accelerator = (machine.get("accelerator") or {}).get("type")
        if accelerator:
            return {GKE_ACCELERATOR_LABEL: accelerator}
        tpu = (offerings(self.source).gpus.get(machine.get("machineType", "")) if offerings(self.source) else None)
        if tpu is None or tpu.driver != GOOGLE_TPU.name or not tpu.count:
            return {}
        topology = machine.get("tpuTopology") or TPU_SINGLE_HOST_TOPOLOGY.get(tpu.count)
        return {GKE_TPU_ACCELERATOR_LABEL: tpu.product, GKE_ACCELERATOR_COUNT_LABEL: str(tpu.count),
                **({GKE_TPU_TOPOLOGY_LABEL: topology} if topology else {})}

    def foundation(self, name: str, spec: Any, observed: dict) -> Foundation:
        account = at_provider(observed.get("service-account"))
        inputs = GKEInputs(name=name, region=spec.region, pools=[p.name for p in spec.node_pools],
                           project=spec.project, network=spec.network, subnetwork=spec.subnetwork,
                           service_account=spec.service_account,
                           observed_service_account_email=account.get("email"))
        return gke_foundation(inputs, self.namer(name), self.provider_config(spec))

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        # GKE protects clusters from deletion by default; whether a cluster lives is the composite's
        # decision (and the gate keeps live clusters), so the provider must be able to delete it.
        return present(location=spec.region, project=spec.project, minMasterVersion=version,
                       removeDefaultNodePool=True, initialNodeCount=DEFAULT_POOL_NODES,
                       deletionProtection=False, addonsConfig={"gcpFilestoreCsiDriverConfig": {"enabled": True}})

    def shared_storage(self, cluster: Any, observed: dict | None = None) -> SharedStorage:
        """Filestore, provisioned per volume on the cluster's network: the user's, else the composed one
        (named by its external name, which a managed resource takes from its metadata.name unless set)."""
        network = cluster.spec.network or self.namer(cluster.metadata.name)("network")
        manifest = storage_class(FILESTORE_STORAGE_CLASS, FILESTORE_PROVISIONER,
                                 {"tier": FILESTORE_TIER, "network": network},
                                 volumeBindingMode="Immediate", allowVolumeExpansion=True)
        return SharedStorage(FILESTORE_STORAGE_CLASS, {STORAGE_CLASS_KEY: manifest})

    def standalone_fields(self, spec: Any, pool: Any) -> dict[str, Any]:
        return present(location=spec.region, project=spec.project)

    def nodes_created(self, node_count: int, zones: list[str]) -> int:
        # GKE's nodeCount is per zone: a pool of 2 over two zones has 4 nodes.
        return node_count * max(1, len(zones))

    def external_name(self, pool: Any) -> str | None:
        return pool.name  # a node pool's name (at most 40 characters) is unique within its cluster

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # Counts are per zone, as GKE defines them.
        size, init = scaling_fields(scaling(pool), count="nodeCount", group="autoscaling",
                                    minimum="minNodeCount", maximum="maxNodeCount", initial="initialNodeCount")
        machine = pool.machine
        # NVIDIA's device plugin is off on GPU pools; a TPU pool's own label (cloud.google.com/gke-tpu-dra-driver,
        # which the pool carries as the TPU driver's node label) turns GKE's TPU device plugin off instead, and it
        # has no guest accelerator: the machine type carries the chips.
        tpu = all(pool.labels.get(k) == v for k, v in GOOGLE_TPU.node_labels.items())
        gpu = pool.role == PoolRole.GPU and not tpu
        labels = {**pool.labels, **(NO_DEVICE_PLUGIN_LABEL if gpu else {})}
        accelerators = []
        if machine.accelerator is not None:
            accelerators.append({"type": machine.accelerator.type, "count": machine.accelerator.count,
                                 "gpuDriverInstallationConfig": {"gpuDriverVersion": GPU_DRIVER_VERSION}})
        node_config = present(machineType=machine.machine_type, diskSizeGb=machine.disk_size_gb,
                              imageType=IMAGE_TYPE, guestAccelerator=accelerators, labels=labels,
                              taint=taint_objects(pool.taints, upper_snake))
        placement = ({"placementPolicy": {"type": TPU_PLACEMENT, "tpuTopology": machine.tpu_topology}}
                     if getattr(machine, "tpu_topology", None) else {})
        return {**size, "nodeConfig": node_config, **placement, **present(nodeLocations=list(pool.zones))}, init
