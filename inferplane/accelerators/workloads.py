"""What every serving-stack component runs on its target cluster: its DaemonSets and Deployments.

For each catalog component, a description of the workloads its chart (or object) creates: kind,
name, namespace, and the pod's nodeSelector, affinity and tolerations taken from the component's
rendered values the way the chart's templates take them (chart defaults, then Helm's merge of our
values over them). A component that creates no workload says so explicitly; a component with no
description at all is an error (`UnknownComponent`), so a new catalog entry cannot slip into the
simulated cluster unplaced.

Each workload also says where it belongs, which is what the placement audit checks:
- `System`: a controller; it belongs on the System pool and nowhere else;
- `Drivers`: a device stack's node agent; it belongs only on pools whose class claims one of its
  drivers (and a DRA kubelet plugin publishes that driver's ResourceSlices where it runs);
- `EveryNode`: a node agent meant for every node it tolerates (node metrics, feature discovery).

Names and defaults are read from the charts' published templates and values at the pinned versions
where they could be checked; the few that could not are marked *unconfirmed* where they are set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping

from inferplane.accelerators.catalog import (
    AI_GATEWAY,
    AI_GATEWAY_CONTROLLER,
    AI_GATEWAY_CRDS,
    AMD_DEVICE_CONFIG,
    AMD_GPU_OPERATOR,
    AWS_DRANET,
    CERT_MANAGER,
    CLUSTER_GATEWAY,
    CPU_DRA_DRIVER,
    DCGM_EXPORTER,
    ENVOY_GATEWAY,
    GATEWAY_CLASS,
    GKE_NVIDIA_DRIVER_INSTALLER,
    INFERENCE_EXTENSION_CRDS,
    LEADER_WORKER_SET,
    NODE_FEATURE_DISCOVERY,
    NVIDIA_CRITICAL_PODS_QUOTA,
    NVIDIA_DRA_DRIVER,
    PROMETHEUS,
    component_drivers,
)
from inferplane.api.drivers import AMD_GPU, CPU, DRANET, NVIDIA_GPU
from inferplane.api.json_data import json_copy

Values = dict[str, Any]
# A component's rendered body: Helm values for a release, the manifest for an object.
Rendered = Mapping[str, Any]
# Every installed component's rendered body, by component key: an operator's operands are
# described by the custom resources other components create.
Installed = Mapping[str, Rendered]


class Placement(str, Enum):
    SYSTEM = "System"
    DRIVERS = "Drivers"
    EVERY_NODE = "EveryNode"


@dataclass(frozen=True)
class Workload:
    kind: str  # DaemonSet, Deployment or StatefulSet
    name: str
    namespace: str
    component: str
    placement: Placement
    # The drivers whose pools a `Drivers` workload belongs on.
    drivers: frozenset[str] = frozenset()
    replicas: int = 1  # ignored for a DaemonSet
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: Mapping[str, Any] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    requests: Mapping[str, str] = field(default_factory=dict)
    container: str = "main"
    # A DRA kubelet plugin: the driver whose ResourceSlices it publishes on its node.
    publishes_slices_for: str | None = None
    # Why the container exits at start-up with these values (its pods crash-loop), or None.
    crash: str | None = None

    def pod_spec(self) -> dict[str, Any]:
        """The pod template's spec as the chart renders it (the fields placement reads)."""
        spec: dict[str, Any] = {}
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        if self.affinity:
            spec["affinity"] = json_copy(dict(self.affinity))
        if self.tolerations:
            spec["tolerations"] = [dict(t) for t in self.tolerations]
        container: dict[str, Any] = {"name": self.container}
        if self.requests:
            container["resources"] = {"requests": dict(self.requests)}
        spec["containers"] = [container]
        return spec


class UnknownComponent(KeyError):
    """A component with no workload description: describe it here before it can be simulated."""


Describe = Callable[[Rendered, Installed], tuple[Workload, ...]]


def workloads(component: str, rendered: Rendered, installed: Installed | None = None) -> tuple[Workload, ...]:
    """The workloads a component creates on its cluster, from its rendered values or manifest."""
    try:
        describe = DESCRIPTIONS[component]
    except KeyError:
        raise UnknownComponent(
            f"component {component} has no workload description: add one to inferplane/accelerators/"
            "workloads.py (or mark it as creating none)") from None
    return describe(rendered, installed or {})


# ---- Helm's view of values


def helm_merge(defaults: Mapping[str, Any], values: Mapping[str, Any]) -> Values:
    """Our values over a chart's defaults, as Helm coalesces them: maps merge key by key, anything
    else (lists included) replaces the default, and null deletes the key."""
    out: Values = json_copy(dict(defaults))
    for key, value in values.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = helm_merge(out[key], value)
        else:
            out[key] = json_copy(value)
    return out


def dig(tree: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """tree["a"]["b"] for "a.b", or default when any step is missing or null."""
    node: Any = tree
    for step in path.split("."):
        if not isinstance(node, Mapping) or node.get(step) is None:
            return default
        node = node[step]
    return node


def _tolerations(value: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(dict(t) for t in value or [])


def no_workloads(why: str) -> Describe:
    """An explicit "creates nothing that runs", with the reason kept for readers."""
    def describe(_: Rendered, __: Installed) -> tuple[Workload, ...]:
        return ()
    describe.__doc__ = why
    return describe


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
                 tolerations=_tolerations(part.get("tolerations")), container=container)
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
                     tolerations=_tolerations(pod.get("tolerations")),
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
                     tolerations=_tolerations(controller.get("tolerations")),
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
                        tolerations=_tolerations(part.get("tolerations")), container=container)

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
                            tolerations=_tolerations(exporter.get("tolerations")), container="node-exporter"))
    return tuple(out)


# LeaderWorkerSet v0.10.0: `lws-controller-manager`, placement from the top-level values.
LWS_DEFAULTS: Values = {"replicaCount": 1, "nodeSelector": {}, "tolerations": [], "affinity": {}}


def _lws(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(LWS_DEFAULTS, rendered)
    return (Workload("Deployment", f"{LEADER_WORKER_SET.key}-controller-manager", LEADER_WORKER_SET.namespace or "",
                     LEADER_WORKER_SET.key, Placement.SYSTEM, replicas=int(values["replicaCount"]),
                     node_selector=values.get("nodeSelector") or {}, affinity=values.get("affinity") or {},
                     tolerations=_tolerations(values.get("tolerations")), container="manager"),)


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
                            tolerations=_tolerations(v.get("tolerations")),
                            requests=dig(v, "resources.requests", {}), container=part))
    return tuple(out)


# ---- NVIDIA: dra-driver-nvidia-gpu 0.4.0

# The kubelet plugin's default required affinity: NFD's PCI vendor 10de labels (any device, 3D
# controller 0302, VGA 0300), NFD's Tegra CPU vendor, or the GPU operator's gpu.present label.
NVIDIA_KUBELET_PLUGIN_AFFINITY: Values = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In",
                               "values": ["true"]}]},
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-0302_10de.present", "operator": "In",
                               "values": ["true"]}]},
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-0300_10de.present", "operator": "In",
                               "values": ["true"]}]},
        {"matchExpressions": [{"key": "feature.node.kubernetes.io/cpu-model.vendor_id", "operator": "In",
                               "values": ["NVIDIA"]}]},
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]},
    ]}}}
NVIDIA_DEFAULTS: Values = {
    "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": True}},
    "kubeletPlugin": {"nodeSelector": {}, "affinity": NVIDIA_KUBELET_PLUGIN_AFFINITY,
                      "tolerations": [{"key": NVIDIA_GPU.pool_taint.key, "operator": "Exists",  # type: ignore[union-attr]
                                       "effect": "NoSchedule"}]},
    # The ComputeDomain controller (rendered only with ComputeDomains on); its control-plane
    # affinity is preferred, so it lands on whatever untainted node there is.
    "controller": {"replicas": 1, "nodeSelector": {},
                   "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                    "effect": "NoSchedule"},
                                   {"key": "node-role.kubernetes.io/master", "operator": "Exists",
                                    "effect": "NoSchedule"},
                                   {"key": "CriticalAddonsOnly", "operator": "Exists"}],
                   "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                       {"weight": 100, "preference": {"matchExpressions": [
                           {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}}]}}},
}
# The chart names its objects after the chart, not the release.
NVIDIA_CHART = "dra-driver-nvidia-gpu"


def _nvidia(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(NVIDIA_DEFAULTS, rendered)
    key, ns = NVIDIA_DRA_DRIVER.key, NVIDIA_DRA_DRIVER.namespace or ""
    gpus = bool(dig(values, "resources.gpus.enabled", False))
    domains = bool(dig(values, "resources.computeDomains.enabled", False))
    out = []
    if gpus or domains:
        plugin = values["kubeletPlugin"]
        out.append(Workload("DaemonSet", f"{NVIDIA_CHART}-kubelet-plugin", ns, key, Placement.DRIVERS,
                            drivers=component_drivers(key), node_selector=plugin.get("nodeSelector") or {},
                            affinity=plugin.get("affinity") or {}, tolerations=_tolerations(plugin.get("tolerations")),
                            container="gpus" if gpus else "compute-domains",
                            publishes_slices_for=NVIDIA_GPU.name if gpus else None))
    if domains:
        controller = values["controller"]
        out.append(Workload("Deployment", f"{NVIDIA_CHART}-controller", ns, key, Placement.SYSTEM,
                            replicas=int(controller.get("replicas", 1)),
                            node_selector=controller.get("nodeSelector") or {},
                            affinity=controller.get("affinity") or {},
                            tolerations=_tolerations(controller.get("tolerations")), container="compute-domain"))
    return tuple(out)


# dcgm-exporter 4.8.2, release `dcgm-exporter`: one DaemonSet named after the release (it contains
# the chart's name), container `exporter`.
DCGM_DEFAULTS: Values = {
    "nodeSelector": {}, "affinity": {},
    "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
}


def _dcgm_exporter(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(DCGM_DEFAULTS, rendered)
    return (Workload("DaemonSet", DCGM_EXPORTER.key, DCGM_EXPORTER.namespace or "", DCGM_EXPORTER.key,
                     Placement.DRIVERS, drivers=component_drivers(DCGM_EXPORTER.key),
                     node_selector=values.get("nodeSelector") or {}, affinity=values.get("affinity") or {},
                     tolerations=_tolerations(values.get("tolerations")),
                     requests=dig(values, "resources.requests", {}), container="exporter"),)


def _gke_driver_installer(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    """The DaemonSet the object is: placed by its own affinity and tolerations."""
    spec = dig(rendered, "spec.template.spec", {})
    return (Workload("DaemonSet", rendered["metadata"]["name"], rendered["metadata"]["namespace"],
                     GKE_NVIDIA_DRIVER_INSTALLER.key, Placement.DRIVERS,
                     drivers=component_drivers(GKE_NVIDIA_DRIVER_INSTALLER.key),
                     node_selector=spec.get("nodeSelector") or {}, affinity=spec.get("affinity") or {},
                     tolerations=_tolerations(spec.get("tolerations")), container="pause"),)


# ---- AMD: the GPU operator v1.5.1 and the operands of each DeviceConfig

AMD_OPERATOR_DEFAULTS: Values = {
    "controllerManager": {
        "replicas": 1, "nodeSelector": {},
        "manager": {"tolerations": [
            {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Equal", "value": "",
             "effect": "NoSchedule"}],
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}},
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}}]}},
    },
    # KMM and the remediation workflow controller (Argo) are on by default (v1.5.1 values.yaml).
    "kmm": {"enabled": True, "watch": True},
    "remediation": {"enabled": True, "controller": {"nodeSelector": {}, "affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}]}}]}}}},
}
# The operator names the chart's controller `<release>-<chart>-controller-manager`.
AMD_OPERATOR_CHART = "gpu-operator-charts"


def _amd_operator(rendered: Rendered, installed: Installed) -> tuple[Workload, ...]:
    values = helm_merge(AMD_OPERATOR_DEFAULTS, rendered)
    key, ns = AMD_GPU_OPERATOR.key, AMD_GPU_OPERATOR.namespace or ""
    manager = values["controllerManager"]
    # The manager watches KMM's Module kinds while `kmm.watch` is on (env KMM_WATCH_ENABLED); without
    # the KMM subchart their CRDs do not exist, and the manager exits at start-up.
    kmm_missing = dig(values, "kmm.watch", True) and not dig(values, "kmm.enabled", True)
    out = [Workload("Deployment", f"{key}-{AMD_OPERATOR_CHART}-controller-manager", ns, key, Placement.SYSTEM,
                    replicas=int(manager.get("replicas", 1)), node_selector=manager.get("nodeSelector") or {},
                    affinity=manager.get("affinity") or {},
                    tolerations=_tolerations(dig(manager, "manager.tolerations")),
                    requests=dig(manager, "manager.resources.requests", {}), container="manager",
                    crash=("kmm.watch is on but kmm.enabled is off: the KMM Module CRDs are not installed, "
                           "so the manager's watch fails" if kmm_missing else None))]
    if dig(values, "remediation.enabled", False):
        controller = dig(values, "remediation.controller", {})
        out.append(Workload("Deployment", "amd-gpu-operator-workflow-controller", ns, key, Placement.SYSTEM,
                            node_selector=controller.get("nodeSelector") or {},
                            affinity=controller.get("affinity") or {},
                            tolerations=({"key": "amd-gpu-unhealthy", "operator": "Exists", "effect": "NoSchedule"},),
                            container="workflow-controller"))
    # The operator reconciles every DeviceConfig into its operands; without the operator, a
    # DeviceConfig runs nothing.
    for body in installed.values():
        if body.get("kind") == "DeviceConfig" and str(body.get("apiVersion", "")).startswith("amd.com/"):
            out.extend(device_config_operands(body))
    return tuple(out)


def device_config_operands(device_config: Rendered) -> tuple[Workload, ...]:
    """The DaemonSets the AMD operator runs for one DeviceConfig, named `<name>-<operand>` (v1.5.1
    internal/utils.go: dra-driver, metrics-exporter, device-plugin, node-labeller), each on the
    DeviceConfig's selector with that operand's own tolerations (default: none)."""
    metadata, spec = device_config.get("metadata") or {}, device_config.get("spec") or {}
    name, ns = metadata.get("name", ""), metadata.get("namespace", "")
    selector = spec.get("selector") or dict(AMD_GPU.node_labels)
    amd = component_drivers(AMD_GPU_OPERATOR.key)
    out = []

    def operand(suffix: str, tolerations: Any, container: str, node_selector: Any = None,
                publishes: str | None = None) -> Workload:
        return Workload("DaemonSet", f"{name}-{suffix}", ns, AMD_GPU_OPERATOR.key, Placement.DRIVERS, drivers=amd,
                        node_selector=node_selector or selector, tolerations=_tolerations(tolerations),
                        container=container, publishes_slices_for=publishes)

    dra, plugin = spec.get("draDriver") or {}, spec.get("devicePlugin") or {}
    metrics = spec.get("metricsExporter") or {}
    if dra.get("enable", False):
        out.append(operand("dra-driver", dra.get("tolerations"), "dra-driver", publishes=AMD_GPU.name))
    # The CRD defaults the device plugin and node labeller on; DRA mode turns them off.
    if plugin.get("enableDevicePlugin", True):
        out.append(operand("device-plugin", plugin.get("devicePluginTolerations"), "device-plugin"))
    if plugin.get("enableNodeLabeller", True):
        out.append(operand("node-labeller", plugin.get("nodeLabellerTolerations"), "node-labeller"))
    if metrics.get("enable", False):
        out.append(operand("metrics-exporter", metrics.get("tolerations"), "metrics-exporter",
                           node_selector=metrics.get("selector")))
    return tuple(out)


# ---- CPU: dra-driver-cpu 0.3.0, release `dra-driver-cpu` in kube-system

CPU_DRIVER_DEFAULTS: Values = {
    "nodeSelector": {},
    # The chart's default: every NoSchedule taint (the catalog replaces it with the CPU pool taint).
    "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
    "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}},
}


def _cpu_driver(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(CPU_DRIVER_DEFAULTS, rendered)
    return (Workload("DaemonSet", CPU_DRA_DRIVER.key, CPU_DRA_DRIVER.namespace or "", CPU_DRA_DRIVER.key,
                     Placement.DRIVERS, drivers=component_drivers(CPU_DRA_DRIVER.key),
                     node_selector=values.get("nodeSelector") or {},
                     tolerations=_tolerations(values.get("tolerations")),
                     requests=dig(values, "resources.requests", {}), container="dracpu",
                     publishes_slices_for=CPU.name),)


# ---- DRANET on EKS: aws-dranet 1.0.0, release `aws-dranet` in kube-system

# The chart's required affinity: one term per key of `supportedInstanceLabels.keys`, each matching
# `supportedInstanceLabels.values` (EC2's EFA-capable instance types), and the last term also keeping
# off EKS Auto Mode nodes (`eks.amazonaws.com/compute-type NotIn [auto]`).
AWS_DRANET_EFA_INSTANCE_TYPES = (
    "c5n.18xlarge", "c5n.9xlarge", "c5n.metal", "c6a.48xlarge", "c6a.metal", "c6gn.16xlarge", "c6i.32xlarge",
    "c6i.metal", "c6id.32xlarge", "c6id.metal", "c6in.32xlarge", "c6in.metal", "c7a.48xlarge", "c7a.metal-48xl",
    "c7g.16xlarge", "c7g.metal", "c7gd.16xlarge", "c7gd.metal", "c7gn.16xlarge", "c7gn.metal", "c7i.48xlarge",
    "c7i.metal-48xl", "c8a.48xlarge", "c8a.metal-48xl", "c8g.24xlarge", "c8g.48xlarge", "c8g.metal-24xl",
    "c8g.metal-48xl", "c8gb.16xlarge", "c8gb.24xlarge", "c8gb.48xlarge", "c8gb.metal-24xl", "c8gb.metal-48xl",
    "c8gd.24xlarge", "c8gd.48xlarge", "c8gd.metal-24xl", "c8gd.metal-48xl", "c8gn.16xlarge", "c8gn.24xlarge",
    "c8gn.48xlarge", "c8gn.metal-24xl", "c8gn.metal-48xl", "c8i.48xlarge", "c8i.96xlarge", "c8i.metal-48xl",
    "c8i.metal-96xl", "c8id.48xlarge", "c8id.96xlarge", "c8id.metal-48xl", "c8id.metal-96xl", "dl1.24xlarge",
    "dl2q.24xlarge", "f2.48xlarge", "g4dn.12xlarge", "g4dn.16xlarge", "g4dn.8xlarge", "g4dn.metal", "g5.12xlarge",
    "g5.16xlarge", "g5.24xlarge", "g5.48xlarge", "g5.8xlarge", "g6.12xlarge", "g6.16xlarge", "g6.24xlarge",
    "g6.48xlarge", "g6.8xlarge", "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge", "g6e.8xlarge",
    "g7e.12xlarge", "g7e.24xlarge", "g7e.48xlarge", "g7e.8xlarge", "gr6.8xlarge", "hpc6a.48xlarge",
    "hpc6id.32xlarge", "hpc7a.12xlarge", "hpc7a.24xlarge", "hpc7a.48xlarge", "hpc7a.96xlarge", "hpc7g.16xlarge",
    "hpc7g.4xlarge", "hpc7g.8xlarge", "hpc8a.96xlarge", "i3en.12xlarge", "i3en.24xlarge", "i3en.metal",
    "i4g.16xlarge", "i4i.32xlarge", "i4i.metal", "i7i.24xlarge", "i7i.48xlarge", "i7i.metal-48xl", "i7ie.48xlarge",
    "i7ie.metal-48xl", "i8g.48xlarge", "i8g.metal-48xl", "i8ge.48xlarge", "i8ge.metal-48xl", "im4gn.16xlarge",
    "inf1.24xlarge", "m5dn.24xlarge", "m5dn.metal", "m5n.24xlarge", "m5n.metal", "m5zn.12xlarge", "m5zn.metal",
    "m6a.48xlarge", "m6a.metal", "m6i.32xlarge", "m6i.metal", "m6id.32xlarge", "m6id.metal", "m6idn.32xlarge",
    "m6idn.metal", "m6in.32xlarge", "m6in.metal", "m7a.48xlarge", "m7a.metal-48xl", "m7g.16xlarge", "m7g.metal",
    "m7gd.16xlarge", "m7gd.metal", "m7i.48xlarge", "m7i.metal-48xl", "m8a.48xlarge", "m8a.metal-48xl",
    "m8azn.24xlarge", "m8azn.metal-24xl", "m8g.24xlarge", "m8g.48xlarge", "m8g.metal-24xl", "m8g.metal-48xl",
    "m8gb.16xlarge", "m8gb.24xlarge", "m8gb.48xlarge", "m8gb.metal-24xl", "m8gb.metal-48xl", "m8gd.24xlarge",
    "m8gd.48xlarge", "m8gd.metal-24xl", "m8gd.metal-48xl", "m8gn.16xlarge", "m8gn.24xlarge", "m8gn.48xlarge",
    "m8gn.metal-24xl", "m8gn.metal-48xl", "m8i.48xlarge", "m8i.96xlarge", "m8i.metal-48xl", "m8i.metal-96xl",
    "m8id.48xlarge", "m8id.96xlarge", "m8id.metal-48xl", "m8id.metal-96xl", "p3dn.24xlarge", "p4d.24xlarge",
    "p4de.24xlarge", "p5.48xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
    "p6-b300.48xlarge", "p6e-gb200.36xlarge", "p6e-gb300.36xlarge", "r5dn.24xlarge", "r5dn.metal", "r5n.24xlarge",
    "r5n.metal", "r6a.48xlarge", "r6a.metal", "r6i.32xlarge", "r6i.metal", "r6id.32xlarge", "r6id.metal",
    "r6idn.32xlarge", "r6idn.metal", "r6in.32xlarge", "r6in.metal", "r7a.48xlarge", "r7a.metal-48xl",
    "r7g.16xlarge", "r7g.metal", "r7gd.16xlarge", "r7gd.metal", "r7i.48xlarge", "r7i.metal-48xl", "r7iz.32xlarge",
    "r7iz.metal-32xl", "r8a.48xlarge", "r8a.metal-48xl", "r8g.24xlarge", "r8g.48xlarge", "r8g.metal-24xl",
    "r8g.metal-48xl", "r8gb.16xlarge", "r8gb.24xlarge", "r8gb.48xlarge", "r8gb.metal-24xl", "r8gb.metal-48xl",
    "r8gd.24xlarge", "r8gd.48xlarge", "r8gd.metal-24xl", "r8gd.metal-48xl", "r8gn.16xlarge", "r8gn.24xlarge",
    "r8gn.48xlarge", "r8gn.metal-24xl", "r8gn.metal-48xl", "r8i.48xlarge", "r8i.96xlarge", "r8i.metal-48xl",
    "r8i.metal-96xl", "r8id.48xlarge", "r8id.96xlarge", "r8id.metal-48xl", "r8id.metal-96xl", "trn1.32xlarge",
    "trn1n.32xlarge", "trn2-ac.24xlarge", "trn2.3xlarge", "trn2.48xlarge", "trn2u-ac.24xlarge", "trn2u.48xlarge",
    "trn3.48xlarge", "trn3-dev0.48xlarge", "trn3-dev1.48xlarge", "trn3p.48xlarge", "trn3pd98.48xlarge",
    "trn3s.48xlarge", "u7i-12tb.224xlarge", "u7i-6tb.112xlarge", "u7i-8tb.112xlarge", "u7in-16tb.224xlarge",
    "u7in-24tb.224xlarge", "u7in-32tb.224xlarge", "vt1.24xlarge", "x2idn.32xlarge", "x2idn.metal",
    "x2iedn.32xlarge", "x2iedn.metal", "x2iezn.12xlarge", "x2iezn.metal", "x8aedz.24xlarge", "x8aedz.metal-24xl",
    "x8g.24xlarge", "x8g.48xlarge", "x8g.metal-24xl", "x8g.metal-48xl", "x8i.48xlarge", "x8i.64xlarge",
    "x8i.96xlarge", "x8i.metal-48xl", "x8i.metal-96xl",
)
AWS_DRANET_DEFAULTS: Values = {
    "nodeSelector": {}, "tolerations": [],
    "supportedInstanceLabels": {"keys": ["node.kubernetes.io/instance-type"],
                                "values": list(AWS_DRANET_EFA_INSTANCE_TYPES)},
    "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}},
}
# Built into the DaemonSet's template ahead of the `tolerations` value.
AWS_DRANET_TEMPLATE_TOLERATIONS = ({"key": "CriticalAddonsOnly", "operator": "Exists"},)


def _aws_dranet(rendered: Rendered, _: Installed) -> tuple[Workload, ...]:
    values = helm_merge(AWS_DRANET_DEFAULTS, rendered)
    labels = values["supportedInstanceLabels"]
    terms: list[dict[str, Any]] = [
        {"matchExpressions": [{"key": key, "operator": "In", "values": list(labels["values"])}]}
        for key in labels.get("keys") or []]
    if terms:
        terms[-1]["matchExpressions"].append(
            {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]})
    # The release's name contains the chart's, so its objects are named after the release.
    return (Workload("DaemonSet", AWS_DRANET.key, AWS_DRANET.namespace or "", AWS_DRANET.key, Placement.DRIVERS,
                     drivers=component_drivers(AWS_DRANET.key), node_selector=values.get("nodeSelector") or {},
                     affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": terms}}},
                     tolerations=AWS_DRANET_TEMPLATE_TOLERATIONS + _tolerations(values.get("tolerations")),
                     requests=dig(values, "resources.requests", {}), container="dranet",
                     publishes_slices_for=DRANET.name),)


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
    NVIDIA_DRA_DRIVER.key: _nvidia,
    GKE_NVIDIA_DRIVER_INSTALLER.key: _gke_driver_installer,
    NVIDIA_CRITICAL_PODS_QUOTA.key: no_workloads("a ResourceQuota admits pods; it runs none"),
    DCGM_EXPORTER.key: _dcgm_exporter,
    AMD_GPU_OPERATOR.key: _amd_operator,
    AMD_DEVICE_CONFIG.key: no_workloads("the operator runs a DeviceConfig's operands; they are described under "
                                        f"{AMD_GPU_OPERATOR.key}"),
    CPU_DRA_DRIVER.key: _cpu_driver,
    AWS_DRANET.key: _aws_dranet,
}
