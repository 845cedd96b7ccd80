"""Civo: a Kubernetes Cluster holding the System pool, and one NodePool per other pool."""

from __future__ import annotations

from typing import Any

from inferplane.api.cloud import CIVO
from inferplane.clouds.base import ProvisionedCloud, present, provisioned_sample, taint_objects


class Civo(ProvisionedCloud):
    source = CIVO
    offers_shared_storage = False  # see ProvisionedCloud.shared_storage
    api_version = "kubernetes.civo.m.upbound.io/v1beta1"
    cluster_kind = "Cluster"
    pool_kind = "NodePool"
    cluster_ref = "clusterIdRef"
    inline_pool = "pools"
    # 4 vCPU / 8 GB, standard.
    system_machine = {"size": "g4s.kube.large"}
    endpoint_field = "apiEndpoint"
    offered_on_cluster = {"region": "region", "machine": "pools.size"}
    offered_on_pool = {"machine": "size"}
    machine_field, machine_word = "size", "Civo node size"
    # The real Civo node's slice (Modelplane PR #556's test) counted numCPUs 6 with reservedCPUs 0-1: 8 vCPUs.
    vcpus_field, vcpus = "size", {"g4p.kube.medium": 8}
    # No published provider package serves Civo's group that we know of: the Configuration says so.
    provider_packages = {"kubernetes.civo.m.upbound.io": None}
    sample = provisioned_sample({"region": "LON1"}, {"size": "an.g1.l40s.kube.x1", "accelerator": {"type": "l40s"}},
                                {"size": "g4p.kube.medium"})
    autoscales_pools = False  # autoscaling on Civo is a cluster application inferplane does not install

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        return present(name=name, region=spec.region, kubernetesVersion=version, firewallId=spec.firewall_id,
                       networkId=spec.network_id)

    def standalone_fields(self, spec: Any, pool: Any) -> dict[str, Any]:
        # The provider scopes every call of a pool to a region: the cluster's.
        return {"region": spec.region}

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # Civo pools have a fixed size (autoscaling is a cluster application): bounds are not sent.
        return present(label=pool.name, size=pool.machine.size, nodeCount=pool.node_count,
                       labels=dict(pool.labels), taint=taint_objects(pool.taints)), {}
