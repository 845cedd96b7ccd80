"""Vultr: a VKE Kubernetes cluster holding the System pool, and one KubernetesNodePool per other pool."""

from __future__ import annotations

from typing import Any

from inferplane.clouds.base import ProvisionedCloud, label_list, present, scaling, scaling_fields, taint_objects


class Vultr(ProvisionedCloud):
    source = "Vultr"
    offers_shared_storage = False  # see ProvisionedCloud.shared_storage
    api_version = "vke.vultr.m.upbound.io/v1beta1"
    cluster_kind = "Kubernetes"
    pool_kind = "KubernetesNodePool"
    cluster_ref = "clusterIdRef"
    inline_pool = "nodePools"
    # 4 vCPU / 8 GB, regular cloud compute.
    system_machine = {"plan": "vc2-4c-8gb"}
    endpoint_field = "endpoint"
    offered_on_cluster = {"region": "region", "machine": "nodePools.plan"}
    offered_on_pool = {"machine": "plan"}

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        return {"label": name, "region": spec.region, "version": version}

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        size, init = scaling_fields(scaling(pool), count="nodeQuantity", enabled="autoScaler",
                                    minimum="minNodes", maximum="maxNodes", initial="nodeQuantity")
        # The pool's label prefixes its nodes' names; the plan decides whether they have GPUs.
        return present(label=pool.name, plan=pool.machine.plan, **size, labels=label_list(pool.labels),
                       taints=taint_objects(pool.taints)), init
