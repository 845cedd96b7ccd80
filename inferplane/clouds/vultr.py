"""Vultr: a VKE Kubernetes cluster holding the System pool, and one KubernetesNodePool per other pool."""

from __future__ import annotations

import re
from typing import Any

from inferplane.api.cloud import VULTR
from inferplane.clouds.base import ProvisionedCloud, label_list, present, provisioned_sample, scaling, scaling_fields, \
    taint_objects, upbound_provider


class Vultr(ProvisionedCloud):
    source = VULTR
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
    machine_field, machine_word = "plan", "Vultr plan"
    # Plans carry their vCPUs in the name: voc-c-8c-16gb-150s-amd.
    vcpus_field, vcpus_pattern = "plan", re.compile(r"^vo?c-[a-z]+-(\d+)c-")
    provider_packages = {"vke.vultr.m.upbound.io": upbound_provider("provider-vultr", "v1.0.0")}
    sample = provisioned_sample({"region": "ewr"}, {"plan": "vcg-l40s-16c-180g-48vram", "accelerator": {"type": "l40s"}},
                                {"plan": "vc2-8c-32gb"})

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        return {"label": name, "region": spec.region, "version": version}

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        size, init = scaling_fields(scaling(pool), count="nodeQuantity", enabled="autoScaler",
                                    minimum="minNodes", maximum="maxNodes", initial="nodeQuantity")
        # The pool's label prefixes its nodes' names; the plan decides whether they have GPUs.
        return present(label=pool.name, plan=pool.machine.plan, **size, labels=label_list(pool.labels),
                       taints=taint_objects(pool.taints)), init
