"""What every serving-stack component runs on its target cluster: its DaemonSets and Deployments.

For each catalog component, a description of the workloads its chart (or object) creates (what a
description is: `workload.py`): the neutral components' and NFD's here, each driver's in its module
(`registry.STACKS`). A component that creates no workload says so explicitly; a component with no
description at all is an error (`UnknownComponent`), so a new catalog entry cannot slip into the
simulated cluster unplaced.

Names and defaults are read from the charts' published templates and values at the pinned versions
where they could be checked; the few that could not are marked *unconfirmed* where they are set.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from inferplane.accelerators.catalog import (
    AI_GATEWAY,
    AI_GATEWAY_CONTROLLER,
    AI_GATEWAY_CRDS,
    CERT_MANAGER,
    CLUSTER_GATEWAY,
    ENVOY_GATEWAY,
    GATEWAY_CLASS,
    INFERENCE_EXTENSION_CRDS,
    LEADER_WORKER_SET,
    NODE_FEATURE_DISCOVERY,
    PROMETHEUS,
    component_drivers,
)
from inferplane.accelerators.registry import STACKS
from inferplane.accelerators.workload import (  # noqa: F401 (the names a description is made of, for importers)
    Describe,
    Installed,
    Placement,
    Rendered,
    UnknownComponent,
    Values,
    Workload,
    dig,
    helm_merge,
    no_workloads,
    tolerations_of,
)


def workloads(component: str, rendered: Rendered, installed: Installed | None = None) -> tuple[Workload, ...]:
    """The workloads a component creates on its cluster, from its rendered values or manifest; a `Drivers`
    workload belongs on the pools of the drivers its component is tagged with."""
    try:
        describe = DESCRIPTIONS[component]
    except KeyError:
        raise UnknownComponent(
            f"component {component} has no workload description: add one beside the component (a driver's in "
            "its module's STACK, a neutral one in inferplane/accelerators/workloads.py), or mark it as creating "
            "none") from None
    drivers = component_drivers(component)
    return tuple(replace(w, drivers=drivers) if w.placement is Placement.DRIVERS else w
                 for w in describe(rendered, installed or {}))


# ---- neutral components: controllers, on the System pool

# cert-manager v1.19.1: three Deployments named after the release, each with the chart's global
# nodeSelector kubernetes.io/os=linux and no tolerations. (The startupapicheck Job is a post-install
# hook that completes; it holds no node.)
CERT_MANAGER_DEFAULTS: Values = {
    "replicaCount": 1, "nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [], "affinity": {},
    "webhook": {"replicaCount": 1, "nodeSelector": {"kubernetes.io/os": "linux"}, "tolerations": [],
                "affinity": {}},
    "cainjector": {"enabled": True, "replicaCount": 1, "nodeSelector": {"kubernetes.io/os": "linux"},
                   "tolerations": [], "affinity": {}},
}


def _cert_manager(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(CERT_MANAGER_DEFAULTS, rendered)
    key, ns = CERT_MANAGER.key, CERT_MANAGER.namespace or ""
    parts = [("cert-manager", values, "cert-manager-controller"),
             ("cert-manager-webhook", values["webhook"], "cert-manager-webhook")]
    if values["cainjector"].get("enabled", True):
        parts.append(("cert-manager-cainjector", values["cainjector"], "cert-manager-cainjector"))
    return tuple(
        Workload("Deployment", name, ns, key, Placement.SYSTEM, replicas=int(part.get("replicaCount", 1)),
                 node_selector=part.get("nodeSelector") or {}, affinity=part.get("affinity") or {},
                 tolerations=tolerations_of(part.get("tolerations")), container=container)
        for name, part, container in parts)


# Envoy Gateway v1.8.1: the `envoy-gateway` Deployment; placement from deployment.pod.*.
# (Envoy proxy fleets are created per Gateway by the controller; the stack creates no Gateway.)
ENVOY_GATEWAY_DEFAULTS: Values = {
    "deployment": {"replicas": 1, "pod": {"nodeSelector": {}, "tolerations": [], "affinity": {}},
                   "envoyGateway": {"resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}},
}


def _envoy_gateway(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(ENVOY_GATEWAY_DEFAULTS, rendered)
    pod = values["deployment"]["pod"]
    return (Workload("Deployment", "envoy-gateway", ENVOY_GATEWAY.namespace or "", ENVOY_GATEWAY.key,
                     Placement.SYSTEM, replicas=int(values["deployment"]["replicas"]),
                     node_selector=pod.get("nodeSelector") or {}, affinity=pod.get("affinity") or {},
                     tolerations=tolerations_of(pod.get("tolerations")),
                     requests=dig(values, "deployment.envoyGateway.resources.requests", {}),
                     container="envoy-gateway"),)


# Envoy AI Gateway v0.7.0 (ai-gateway-helm `templates/deployment.yaml`): one Deployment named by
# `controller.fullnameOverride`, its container named after the chart, placement from controller.*.
# (The extProc sidecars it injects run inside the Envoy proxy pods, which are not simulated.)
AI_GATEWAY_DEFAULTS: Values = {"controller": {"replicaCount": 1, "fullnameOverride": AI_GATEWAY_CONTROLLER,
                                              "nodeSelector": {}, "tolerations": [], "affinity": {}, "resources": {}}}


def _ai_gateway(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    controller = helm_merge(AI_GATEWAY_DEFAULTS, rendered)["controller"]
    return (Workload("Deployment", controller["fullnameOverride"], AI_GATEWAY.namespace or "", AI_GATEWAY.key,
                     Placement.SYSTEM, replicas=int(controller["replicaCount"]),
                     node_selector=controller.get("nodeSelector") or {}, affinity=controller.get("affinity") or {},
                     tolerations=tolerations_of(controller.get("tolerations")),
                     requests=dig(controller, "resources.requests", {}), container="ai-gateway-helm"),)


# kube-prometheus-stack 86.1.1, release `kube-prometheus-stack`: the operator and kube-state-metrics
# Deployments, the node exporter DaemonSet, and the Prometheus and Alertmanager StatefulSets the
# operator creates from the chart's custom resources. The node exporter's subchart tolerates every
# NoSchedule taint on purpose (node metrics on every node) and keeps off virtual kubelets and Fargate
# by a default required affinity.
PROMETHEUS_DEFAULTS: Values = {
    "prometheusOperator": {"enabled": True, "nodeSelector": {}, "tolerations": [], "affinity": {}},
    "kube-state-metrics": {"nodeSelector": {}, "tolerations": [], "affinity": {}},
    "kubeStateMetrics": {"enabled": True},
    "nodeExporter": {"enabled": True},
    "prometheus-node-exporter": {
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"effect": "NoSchedule", "operator": "Exists"}],
        "affinity": {},
    },
    "prometheus": {"enabled": True, "prometheusSpec": {"replicas": 1, "nodeSelector": {}, "tolerations": [],
                                                      "affinity": {}}},
    "alertmanager": {"enabled": True, "alertmanagerSpec": {"replicas": 1, "nodeSelector": {}, "tolerations": [],
                                                          "affinity": {}}},
}
# What the node exporter template renders when its affinity value is empty.
NODE_EXPORTER_DEFAULT_AFFINITY: Values = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate"]},
        {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]},
    ]}]}}}


def _prometheus(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(PROMETHEUS_DEFAULTS, rendered)
    key, ns, release = PROMETHEUS.key, PROMETHEUS.namespace or "", PROMETHEUS.key
    out = []

    def controller(kind: str, name: str, part: Mapping[str, Any], container: str) -> Workload:
        return Workload(kind, name, ns, key, Placement.SYSTEM, replicas=int(part.get("replicas", 1)),
                        node_selector=part.get("nodeSelector") or {}, affinity=part.get("affinity") or {},
                        tolerations=tolerations_of(part.get("tolerations")), container=container)

    if dig(values, "prometheusOperator.enabled", True):
        out.append(controller("Deployment", f"{release}-operator", values["prometheusOperator"],
                              "kube-prometheus-stack"))
    if dig(values, "kubeStateMetrics.enabled", True):
        out.append(controller("Deployment", f"{release}-kube-state-metrics", values["kube-state-metrics"],
                              "kube-state-metrics"))
    if dig(values, "prometheus.enabled", True):
        out.append(controller("StatefulSet", f"prometheus-{release}-prometheus",
                              values["prometheus"]["prometheusSpec"], "prometheus"))
    if dig(values, "alertmanager.enabled", True):
        out.append(controller("StatefulSet", f"alertmanager-{release}-alertmanager",
                              values["alertmanager"]["alertmanagerSpec"], "alertmanager"))
    if dig(values, "nodeExporter.enabled", True):
        exporter = values["prometheus-node-exporter"]
        out.append(Workload("DaemonSet", f"{release}-prometheus-node-exporter", ns, key, Placement.EVERY_NODE,
                            node_selector=exporter.get("nodeSelector") or {},
                            affinity=exporter.get("affinity") or NODE_EXPORTER_DEFAULT_AFFINITY,
                            tolerations=tolerations_of(exporter.get("tolerations")), container="node-exporter"))
    return tuple(out)


# LeaderWorkerSet v0.10.0: `lws-controller-manager`, placement from the top-level values.
LWS_DEFAULTS: Values = {"replicaCount": 1, "nodeSelector": {}, "tolerations": [], "affinity": {}}


def _lws(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(LWS_DEFAULTS, rendered)
    return (Workload("Deployment", f"{LEADER_WORKER_SET.key}-controller-manager", LEADER_WORKER_SET.namespace or "",
                     LEADER_WORKER_SET.key, Placement.SYSTEM, replicas=int(values["replicaCount"]),
                     node_selector=values.get("nodeSelector") or {}, affinity=values.get("affinity") or {},
                     tolerations=tolerations_of(values.get("tolerations")), container="manager"),)


# ---- Node Feature Discovery 0.18.3, release `node-feature-discovery`

NFD_DEFAULTS: Values = {
    "master": {"enable": True, "replicaCount": 1, "nodeSelector": {},
               "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
                                "effect": "NoSchedule"}],
               # Preferred only: it scores control-plane nodes up but rejects none.
               "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                   {"weight": 1, "preference": {"matchExpressions": [
                       {"key": "node-role.kubernetes.io/control-plane", "operator": "In", "values": [""]}]}}]}},
               "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
    "worker": {"enable": True, "nodeSelector": {}, "tolerations": [], "affinity": {},
               "resources": {"requests": {"cpu": "5m", "memory": "64Mi"}}},
    "gc": {"enable": True, "replicaCount": 1, "nodeSelector": {}, "tolerations": [], "affinity": {},
           "resources": {"requests": {"cpu": "10m", "memory": "128Mi"}}},
}


def _nfd(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(NFD_DEFAULTS, rendered)
    key, ns, release = NODE_FEATURE_DISCOVERY.key, NODE_FEATURE_DISCOVERY.namespace or "", NODE_FEATURE_DISCOVERY.key
    out = []
    for part, kind, placement in (("master", "Deployment", Placement.SYSTEM),
                                  ("worker", "DaemonSet", Placement.EVERY_NODE),
                                  ("gc", "Deployment", Placement.SYSTEM)):
        v = values[part]
        if not v.get("enable", True):
            continue
        out.append(Workload(kind, f"{release}-{part}", ns, key, placement, replicas=int(v.get("replicaCount", 1)),
                            node_selector=v.get("nodeSelector") or {}, affinity=v.get("affinity") or {},
                            tolerations=tolerations_of(v.get("tolerations")),
                            requests=dig(v, "resources.requests", {}), container=part))
    return tuple(out)


# ---- every catalog component, by key

DESCRIPTIONS: dict[str, Describe] = {
    CERT_MANAGER.key: _cert_manager,
    ENVOY_GATEWAY.key: _envoy_gateway,
    GATEWAY_CLASS.key: no_workloads("a GatewayClass is configuration; Envoy Gateway's controller reads it"),
    # Envoy Gateway runs a proxy Deployment per Gateway; the simulation does not place it (not simulated).
    CLUSTER_GATEWAY.key: no_workloads("a Gateway is configuration; Envoy Gateway's controller runs its proxy"),
    **{crd.key: no_workloads("a CustomResourceDefinition is API; it runs nothing") for crd in INFERENCE_EXTENSION_CRDS},
    AI_GATEWAY_CRDS.key: no_workloads("a chart of CustomResourceDefinitions only; it runs nothing"),
    AI_GATEWAY.key: _ai_gateway,
    PROMETHEUS.key: _prometheus,
    LEADER_WORKER_SET.key: _lws,
    NODE_FEATURE_DISCOVERY.key: _nfd,
    # Each driver's components, described in its module.
    **{key: describe for stack in STACKS for key, describe in stack.workloads.items()},
}
