"""The serving-stack catalog: every component once, the list each cloud installs, and the join.

This is the one home of chart names, repositories, pins and values. The supported-drivers table,
the join and the `inferplane stacks` report are all derived from the per-cloud lists below; there
is no hand-written copy of any of them.

Facts checked against the charts' published sources are stated plainly; the few that could not be
confirmed are marked *unconfirmed* where they are set.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from inferplane import API_GROUP
from inferplane.accelerators.chart_values import chart_value_errors
from inferplane.accelerators.component import (
    Chart,
    Component,
    Render,
    gpu_toleration,
    pin_errors,
    shape_errors,
    tag_errors,
)
from inferplane.api.drivers import AMD_GPU, CPU, DRANET, NVIDIA_GPU, Taint
from inferplane.api.cloud import SOURCES
from inferplane.api.serving_stack import ServingStackSpec
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.metrics.mappings import builtin_mappings
from inferplane.metrics.scrape import MetricsEndpoint
from inferplane.metrics.stack import gpu_metrics_values
from inferplane.routing.gateway import CLUSTER_GATEWAY_NAME, CLUSTER_GATEWAY_NAMESPACE, GATEWAY_API_VERSION
from inferplane.routing.inference_extension import INFERENCE_POOL_CRD_NAME, INFERENCE_POOL_GROUP, INFERENCE_POOL_KIND, \
    INFERENCE_POOL_VERSION, inference_extension_crds

# Every composed resource carries its component key, so tooling can find what a stack installed.
COMPONENT_LABEL = f"{API_GROUP}/component"

# ---- neutral components: every stack has them

CERT_MANAGER = Component(
    key="cert-manager",
    namespace="cert-manager",
    chart=Chart("cert-manager", "https://charts.jetstack.io", "v1.19.1"),
    # The chart installs and upgrades its own CRDs only when asked to.
    values=lambda _: {"crds": {"enabled": True}},
    neutral=True,
)

# Prefill/decode routing: Envoy AI Gateway and the Inference Extension's CRDs.
# A PrefillDecode replica's HTTPRoute sends to an InferencePool, which Envoy Gateway resolves only by
# handing it to Envoy AI Gateway's extension server. Installed on every stack whose gateway is on, as
# Modelplane v0.3.1's serving stack does (compose-serving-stack/function/fn.py, compose_ai_gateway,
# compose_gaie_crds): a replica placed or moved onto any cluster is routable at once, no Envoy
# Gateway restart follows the first and last PrefillDecode replica, and the CRDs are never removed
# from under InferencePools (deleting a CRD deletes every object of its kind).
# envoyproxy/ai-gateway v0.7.0 (commit f2d59a6a4f26680e53f03531ece28eadd70f5320): charts
# `manifests/charts/ai-gateway-crds-helm` and `ai-gateway-helm`, released to oci://docker.io/envoyproxy
# with appVersion v0.7.0 (Makefile, helm-package); the version Modelplane v0.3.1 pins. Its compatibility
# matrix (site/docs/compatibility.md) asks for Envoy Gateway v1.7.x or later; it is built against
# v1.8.1, the Envoy Gateway below.
AI_GATEWAY_REPOSITORY = "oci://docker.io/envoyproxy"
AI_GATEWAY_VERSION = "v0.7.0"
# The namespace of AI Gateway's install guide, where its controller's Service is named
# `ai-gateway-controller` (values.yaml `controller.fullnameOverride`) with the extension server's
# gRPC port 1063 (`controller.service.ports` grpc).
AI_GATEWAY_NAMESPACE = "envoy-ai-gateway-system"
AI_GATEWAY_CONTROLLER = "ai-gateway-controller"
AI_GATEWAY_EXTENSION_PORT = 1063


def _ai_gateway_values(_: ServingStackSpec) -> dict[str, Any]:
    # The chart's image tags default to its appVersion; named here so that the pin is ours and checked.
    return {"controller": {"image": {"repository": "docker.io/envoyproxy/ai-gateway-controller",
                                     "tag": AI_GATEWAY_VERSION}},
            "extProc": {"image": {"repository": "docker.io/envoyproxy/ai-gateway-extproc", "tag": AI_GATEWAY_VERSION}}}


AI_GATEWAY_CRDS = Component(
    key="ai-gateway-crds",
    namespace=AI_GATEWAY_NAMESPACE,
    chart=Chart("ai-gateway-crds-helm", AI_GATEWAY_REPOSITORY, AI_GATEWAY_VERSION),
    neutral=True,
    when=lambda spec: spec.gateway.enabled,
)
AI_GATEWAY = Component(
    key="ai-gateway",
    namespace=AI_GATEWAY_NAMESPACE,
    chart=Chart("ai-gateway-helm", AI_GATEWAY_REPOSITORY, AI_GATEWAY_VERSION),
    values=_ai_gateway_values,
    neutral=True,
    when=lambda spec: spec.gateway.enabled,
)


def _crd_key(name: str) -> str:
    """A CRD's component key: its name, dots turned to dashes (a label value may hold no more than 63)."""
    return f"crd-{name.replace('.', '-')}"


def _inference_extension_crd(crd: dict[str, Any]) -> Component:
    """One vendored Inference Extension CRD as an Object (cluster-scoped), keyed by its name."""
    return Component(
        key=_crd_key(crd["metadata"]["name"]),
        namespace=None,
        # Read only, shared by every stack: the stack copies what it composes.
        manifest=lambda _: crd,
        neutral=True,
        when=lambda spec: spec.gateway.enabled,
    )


INFERENCE_EXTENSION_CRDS = tuple(_inference_extension_crd(crd) for crd in inference_extension_crds())
# The CRD of the InferencePool that replicas compose.
INFERENCE_POOL_CRD = next(c for c in INFERENCE_EXTENSION_CRDS if c.key == _crd_key(INFERENCE_POOL_CRD_NAME))

# Envoy Gateway's chart ships the Gateway API CRDs with the controller, so one release is the
# whole gateway stack. v1.8.1: Modelplane v0.3.1's default (ServingStack versions.envoyGateway) and the
# Envoy Gateway AI Gateway v0.7.0 is built against; its values are vendored from the tag.
ENVOY_GATEWAY_CONTROLLER = "gateway.envoyproxy.io/gatewayclass-controller"
# What AI Gateway v0.7.0 asks of Envoy Gateway (`manifests/envoy-gateway-values.yaml`, the
# "Required" parts, and `examples/inference-pool/envoy-gateway-values-addon.yaml`), as Modelplane
# v0.3.1 sets it: the Backend API on, every xDS translation handed to AI Gateway's extension server,
# and InferencePool a backend kind the extension resolves.
ENVOY_GATEWAY_AI_EXTENSION: dict[str, Any] = {"config": {"envoyGateway": {
    "extensionApis": {"enableBackend": True},
    "extensionManager": {
        "hooks": {"xdsTranslator": {
            "translation": {part: {"includeAll": True} for part in ("listener", "route", "cluster", "secret")},
            "post": ["Translation", "Cluster", "Route"]}},
        "service": {"fqdn": {"hostname": f"{AI_GATEWAY_CONTROLLER}.{AI_GATEWAY_NAMESPACE}.svc.cluster.local",
                             "port": AI_GATEWAY_EXTENSION_PORT}},
        "backendResources": [{"group": INFERENCE_POOL_GROUP, "kind": INFERENCE_POOL_KIND,
                              "version": INFERENCE_POOL_VERSION}],
    },
}}}
ENVOY_GATEWAY = Component(
    key="envoy-gateway",
    # Envoy Gateway's own namespace, which its release creates; the cluster's Gateway lives there too.
    namespace=CLUSTER_GATEWAY_NAMESPACE,
    chart=Chart("gateway-helm", "oci://docker.io/envoyproxy", "v1.8.1"),
    # Read only, shared by every stack: the stack copies what it composes.
    values=lambda _: ENVOY_GATEWAY_AI_EXTENSION,
    neutral=True,
    when=lambda spec: spec.gateway.enabled,
)
GATEWAY_CLASS = Component(
    key="gateway-class",
    namespace=None,  # GatewayClass is cluster-scoped
    manifest=lambda spec: {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "GatewayClass",
        "metadata": {"name": spec.gateway.class_name},
        "spec": {"controllerName": ENVOY_GATEWAY_CONTROLLER},
    },
    neutral=True,
    when=lambda spec: spec.gateway.enabled,
)

# kube-prometheus-stack brings the Prometheus operator and its ServiceMonitor CRDs, which the GPU
# exporters' monitors need. Version seen in public material (86.1.1); *unconfirmed* as current.
def _prometheus_values(spec: ServingStackSpec) -> dict[str, Any]:
    # Scrape every ServiceMonitor/PodMonitor, not only this release's: the exporters are other
    # releases (the AMD operator's, NVIDIA's).
    prometheus_spec: dict[str, Any] = {"serviceMonitorSelectorNilUsesHelmValues": False,
                                       "podMonitorSelectorNilUsesHelmValues": False}
    # A GPU scrape job and the vendor's recording rules for each GPU exporter this stack installs.
    exporters = [c.metrics for c in components(spec.source, stack_drivers(spec)) if c.metrics and c.when(spec)]
    gpu = gpu_metrics_values(exporters)  # read only: shared between stacks
    prometheus_spec.update(gpu.get("prometheus", {}).get("prometheusSpec", {}))
    # inferplane reads metrics through Prometheus; dashboards are the user's choice.
    return {"prometheus": {"prometheusSpec": prometheus_spec}, "grafana": {"enabled": False},
            **{key: value for key, value in gpu.items() if key != "prometheus"}}


PROMETHEUS = Component(
    key="kube-prometheus-stack",
    namespace="monitoring",
    chart=Chart("kube-prometheus-stack", "https://prometheus-community.github.io/helm-charts", "86.1.1"),
    values=_prometheus_values,
    neutral=True,
)

# LeaderWorkerSet runs multi-node engine members. Version seen in public install scripts (v0.10.0).
LEADER_WORKER_SET = Component(
    key="lws",
    namespace="lws-system",
    chart=Chart("lws", "oci://registry.k8s.io/lws/charts", "v0.10.0"),
    neutral=True,
)

# The cluster's own gateway, which each replica's HTTPRoute attaches to and each ModelEndpoint points
# at: one HTTP listener on port 80 accepting routes from every namespace.
CLUSTER_GATEWAY = Component(
    key="gateway",
    namespace=CLUSTER_GATEWAY_NAMESPACE,
    manifest=lambda spec: {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {"name": CLUSTER_GATEWAY_NAME, "namespace": CLUSTER_GATEWAY_NAMESPACE},
        "spec": {"gatewayClassName": spec.gateway.class_name, "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}]},
    },
    neutral=True,
    when=lambda spec: spec.gateway.enabled,
)

def resolves_inference_pools(installed: dict[str, Any]) -> bool:
    """Whether a cluster's gateway resolves HTTPRoute backends of kind InferencePool, given what its stack
    runs (component key -> that component's ready Release or Object): the pool's CRD, AI Gateway's CRDs and
    controller, and an Envoy Gateway whose extension manager takes InferencePool backends (a release
    installed without it, as before AI Gateway was added, refuses them)."""
    if any(c.key not in installed for c in (INFERENCE_POOL_CRD, AI_GATEWAY_CRDS, AI_GATEWAY, ENVOY_GATEWAY)):
        return False
    values = ((installed[ENVOY_GATEWAY.key].get("spec") or {}).get("forProvider") or {}).get("values") or {}
    manager = ((values.get("config") or {}).get("envoyGateway") or {}).get("extensionManager") or {}
    return {"group": INFERENCE_POOL_GROUP, "kind": INFERENCE_POOL_KIND, "version": INFERENCE_POOL_VERSION} in (
        manager.get("backendResources") or [])


NEUTRAL = (CERT_MANAGER, ENVOY_GATEWAY, GATEWAY_CLASS, CLUSTER_GATEWAY, *INFERENCE_EXTENSION_CRDS, AI_GATEWAY_CRDS,
           AI_GATEWAY, PROMETHEUS, LEADER_WORKER_SET)

# ---- Node Feature Discovery: labels GPU nodes by PCI vendor, which both GPU stacks select on

NODE_FEATURE_DISCOVERY = Component(
    key="node-feature-discovery",
    namespace="node-feature-discovery",
    chart=Chart("node-feature-discovery", "oci://registry.k8s.io/nfd/charts", "0.18.3"),
    # The worker must reach the tainted GPU nodes it is there to label (its default tolerates none).
    values=lambda _: {"worker": {"tolerations": [gpu_toleration(NVIDIA_GPU), gpu_toleration(AMD_GPU)]}},
    dra_drivers=frozenset({NVIDIA_GPU.name, AMD_GPU.name}),
)

# ---- NVIDIA: the DRA driver and the quota its critical pods need

NVIDIA_NAMESPACE = "nvidia-dra-driver-gpu"
# Where GKE's COS images install the NVIDIA driver; elsewhere the driver is on the host at `/`,
# the chart's default. *Unconfirmed* for Vultr and Civo, whose GPU nodes may use NVIDIA's driver
# container (`/run/nvidia/driver`); kept at the default until checked on a real node.
GKE_NVIDIA_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"


def _nvidia_values(driver_root: str | None) -> Render:
    def values(_: ServingStackSpec) -> dict[str, Any]:
        out: dict[str, Any] = {
            # The chart refuses to render GPU support without this acknowledgement.
            "gpuResourcesEnabledOverride": True,
            # ComputeDomains are for multi-node NVLink (IMEX); inferplane claims plain GPUs.
            "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
            "kubeletPlugin": {"tolerations": [gpu_toleration(NVIDIA_GPU)]},
        }
        if driver_root:
            out["nvidiaDriverRoot"] = driver_root
        return out
    return values


NVIDIA_DRA_DRIVER = Component(
    key="dra-driver-nvidia-gpu",
    namespace=NVIDIA_NAMESPACE,
    chart=Chart("dra-driver-nvidia-gpu", "oci://registry.k8s.io/dra-driver-nvidia/charts", "0.4.0"),
    values=_nvidia_values(None),
    dra_drivers=frozenset({NVIDIA_GPU.name}),
)
GKE_NVIDIA_DRA_DRIVER = replace(NVIDIA_DRA_DRIVER, values=_nvidia_values(GKE_NVIDIA_DRIVER_ROOT))

# GKE's automatic driver installation is off on DRA pools (GKE's DRA set-up page, "Prepare GKE
# infrastructure for DRA workloads": not supported with DRA; pools set gpu-driver-version=disabled),
# so the driver comes from Google's driver-installer DaemonSet for COS, our pools' image. (The DRA
# driver's own GKE demo, v0.4.0 demo/clusters/gke/create-cluster.sh, runs UBUNTU_CONTAINERD pools
# with the Ubuntu installer instead.) Pinned to the last commit of its manifest; the DaemonSet below
# carries that manifest's facts (images, host paths, affinity, tolerations).
GKE_DRIVER_INSTALLER_MANIFEST = (
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml")
GKE_DRIVER_INSTALLER_NAME = "nvidia-driver-installer"
# GKE labels every GPU node with its accelerator type; the installer runs on those nodes only.
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
GKE_DRIVER_INSTALLER_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [
        {"key": GKE_ACCELERATOR_LABEL, "operator": "Exists"},
        # GKE labels the nodes of pools whose driver it installs with the version it chose (`default`,
        # `latest`: container-engine-accelerators' Autopilot tests select on it); pools with
        # installation disabled (ours) carry no such label, so the installer runs there.
        # The demo above removes the label by hand because its pools leave gpu-driver-version unset
        # (GKE-managed); NVIDIA's GKE COS installer for gpu-driver-version=disabled pools keeps this
        # DoesNotExist term for that reason (NVIDIA/aicr 6f14327, recipes/components/
        # gcp-driver-installer/manifests/nvidia-driver-installer.yaml). Confidential nodes have their own.
        {"key": "cloud.google.com/gke-gpu-driver-version", "operator": "DoesNotExist"},
        {"key": "cloud.google.com/gke-confidential-nodes-instance-type", "operator": "DoesNotExist"}]}]}}}


def _gke_driver_installer(_: ServingStackSpec) -> dict[str, Any]:
    host = {"dev": "/dev", "vulkan-icd-mount": "/home/kubernetes/bin/nvidia/vulkan/icd.d",
            "nvidia-install-dir-host": GKE_NVIDIA_DRIVER_ROOT, "root-mount": "/", "cos-tools": "/var/lib/cos-tools",
            "nvidia-config": "/etc/nvidia"}
    mounts = {"nvidia-install-dir-host": "/usr/local/nvidia", "vulkan-icd-mount": "/etc/vulkan/icd.d",
              "dev": "/dev", "root-mount": "/root", "cos-tools": "/build/cos-tools"}
    env = {"NVIDIA_INSTALL_DIR_HOST": GKE_NVIDIA_DRIVER_ROOT, "NVIDIA_INSTALL_DIR_CONTAINER": "/usr/local/nvidia",
           "VULKAN_ICD_DIR_HOST": "/home/kubernetes/bin/nvidia/vulkan/icd.d", "VULKAN_ICD_DIR_CONTAINER": "/etc/vulkan/icd.d",
           "ROOT_MOUNT_DIR": "/root", "COS_TOOLS_DIR_HOST": "/var/lib/cos-tools", "COS_TOOLS_DIR_CONTAINER": "/build/cos-tools"}
    labels = {"k8s-app": GKE_DRIVER_INSTALLER_NAME}
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": GKE_DRIVER_INSTALLER_NAME, "namespace": "kube-system", "labels": labels,
                     "annotations": {f"{API_GROUP}/source": GKE_DRIVER_INSTALLER_MANIFEST}},
        "spec": {"selector": {"matchLabels": labels}, "updateStrategy": {"type": "RollingUpdate"}, "template": {
            "metadata": {"labels": {"name": GKE_DRIVER_INSTALLER_NAME, **labels}},
            "spec": {
                "priorityClassName": "system-node-critical", "affinity": GKE_DRIVER_INSTALLER_AFFINITY,
                # The manifest tolerates every taint ({operator: Exists}) and relies on its affinity
                # alone; the GPU taint's key (GKE's `nvidia.com/gpu=present` and our pools') is all it needs.
                "tolerations": [{"key": NVIDIA_GPU.pool_taint.key, "operator": "Exists"}],  # type: ignore[union-attr]
                "hostNetwork": True, "hostPID": True,
                "volumes": [{"name": n, "hostPath": {"path": p}} for n, p in host.items()],
                "initContainers": [
                    # GKE preloads this image on GPU nodes' COS; it is never pulled.
                    {"name": GKE_DRIVER_INSTALLER_NAME, "image": "cos-nvidia-installer:fixed", "imagePullPolicy": "Never",
                     "command": ["/cos-gpu-installer", "install"], "resources": {"requests": {"cpu": "150m"}},
                     "securityContext": {"privileged": True},
                     "env": [{"name": k, "value": v} for k, v in env.items()],
                     "volumeMounts": [{"name": n, "mountPath": p} for n, p in mounts.items()]},
                    {"name": "partition-gpus", "image": "gcr.io/gke-release/nvidia-partition-gpu@sha256:"
                     "de12f85ebfb4fb6c1893cd30c23aab662a72fa0448f97ef74fccb82d7522ef17",
                     "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
                     "resources": {"requests": {"cpu": "150m"}}, "securityContext": {"privileged": True},
                     "volumeMounts": [{"name": "nvidia-install-dir-host", "mountPath": "/usr/local/nvidia"},
                                      {"name": "dev", "mountPath": "/dev"},
                                      {"name": "nvidia-config", "mountPath": "/etc/nvidia"}]}],
                "containers": [{"name": "pause", "image": "gke.gcr.io/pause:3.8@sha256:"
                                "880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"}]}}}}


GKE_NVIDIA_DRIVER_INSTALLER = Component(
    key="nvidia-driver-installer",
    namespace="kube-system",
    manifest=_gke_driver_installer,
    dra_drivers=frozenset({NVIDIA_GPU.name}),
)

# The driver's pods run at priority system-node-critical; outside kube-system the API server
# admits such pods only under a ResourceQuota that scopes those PriorityClasses in the namespace.
# 100 pods is far above one kubelet plugin per GPU node plus a controller, and still a bound.
CRITICAL_PODS_QUOTA = "100"
NVIDIA_CRITICAL_PODS_QUOTA = Component(
    key="nvidia-critical-pods-quota",
    namespace=NVIDIA_NAMESPACE,
    manifest=lambda _: {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "critical-pods", "namespace": NVIDIA_NAMESPACE},
        "spec": {
            "hard": {"pods": CRITICAL_PODS_QUOTA},
            "scopeSelector": {"matchExpressions": [{
                "scopeName": "PriorityClass",
                "operator": "In",
                "values": ["system-node-critical", "system-cluster-critical"],
            }]},
        },
    },
    dra_drivers=frozenset({NVIDIA_GPU.name}),
)

# NVIDIA's GPU metrics: dcgm-exporter chart 4.8.2 (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2, deployment/),
# running the 4.6.0-4.8.3 exporter (below). Its pods are labelled app.kubernetes.io/name=dcgm-exporter
# (the chart name) with the container port named `metrics` (9400); it runs at system-node-critical,
# which the namespace's critical-pods quota admits.
DCGM_EXPORTER_METRICS = MetricsEndpoint(job="inferplane-gpu-nvidia", driver=NVIDIA_GPU.name,
                                        namespace=NVIDIA_NAMESPACE,
                                        pod_labels=(("app.kubernetes.io/name", "dcgm-exporter"),),
                                        port_name="metrics")
# NVIDIA nodes as the DRA driver finds them: labelled by their cloud pool, or by NFD (PCI vendor 10de).
NVIDIA_NODE_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": key, "operator": "In", "values": ["true"]}]}
    for key in (*NVIDIA_GPU.node_labels, "feature.node.kubernetes.io/pci-10de.present")]}}}
DCGM_EXPORTER = Component(
    key="dcgm-exporter",
    namespace=NVIDIA_NAMESPACE,
    chart=Chart("dcgm-exporter", "https://nvidia.github.io/dcgm-exporter/helm-charts", "4.8.2"),
    values=lambda _: {
        # The chart's default tolerates only the control plane and lands on every node it may.
        "tolerations": [gpu_toleration(NVIDIA_GPU)],
        "affinity": NVIDIA_NODE_AFFINITY,
        # The GPU scrape job reads it; the chart's ServiceMonitor would scrape it a second time and
        # rename the workload's pod labels exported_*.
        "serviceMonitor": {"enabled": False},
        # GPUs are allocated by DRA: attribute their metrics to pods (the `pod`, `namespace` and
        # `container` labels) through the gpu.nvidia.com ResourceSlices. The chart's switch, not the
        # bare env var: besides KUBERNETES_ENABLE_DRA it mounts the ServiceAccount token and creates
        # the ClusterRole that reads pods and resourceslices (4.5.3-4.8.2 templates/daemonset.yaml,
        # clusterrole.yaml, serviceaccount.yaml). Without them the exporter has no in-cluster client
        # and logs "pod labels will not be available" (internal/pkg/transformation/kubernetes.go).
        "kubernetesDRA": {"enabled": True},
        # The exporter one release newer than the chart: 4.5.3-4.8.2's ResourceSlice informer is
        # resource.k8s.io/v1beta1 only, and its metrics server is built after that informer syncs,
        # with no time limit (transformation/dra.go:43, :71; server/server.go:70), while our clusters
        # (1.34+) serve v1 and leave v1beta1 off (beta APIs are off by default, KEP-3136): it would
        # never serve a metric. 4.6.0-4.8.3 reads v1 (NVIDIA/dcgm-exporter#590, fixed in that
        # release; its README's quick start runs nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless).
        # Its chart could not be read here to vendor; the 4.8.2 chart's templates give it what it
        # needs (the env var, the token, and a ClusterRole on resource.k8s.io resourceslices, which
        # RBAC grants for every version of the group). Move the chart to 4.8.3 once it can be vendored.
        "image": {"tag": "4.6.0-4.8.3-distroless"},
    },
    dra_drivers=frozenset({NVIDIA_GPU.name}),
    metrics=DCGM_EXPORTER_METRICS,
)

# ---- AMD: the GPU operator in DRA mode, configured by its DeviceConfig

AMD_NAMESPACE = "kube-amd-gpu"
# The operator names its operands after the DeviceConfig (v1.5.1 internal/utils.go): DaemonSets
# `<name>-dra-driver` and `<name>-metrics-exporter`, and the metrics Service
# `<name>-metrics-exporter`, which the metrics collector scrapes.
AMD_DEVICE_CONFIG_NAME = "inferplane"
# The operator defaults this image to `latest`. v1.0.1 is the release pinned alongside operator
# v1.5.1 in public deployments; *unconfirmed* against AMD's own compatibility notes.
AMD_DRA_DRIVER_IMAGE = "docker.io/rocm/k8s-gpu-dra-driver:v1.0.1"
AMD_METRICS_EXPORTER_IMAGE = "docker.io/rocm/device-metrics-exporter:v1.5.1"
AMD_METRICS_PORT = 5000  # the exporter's documented port, named `exporter-port`
# The operator labels every metrics exporter pod app.kubernetes.io/name=metrics-exporter and names
# its port `exporter-port` (ROCm/gpu-operator v1.5.1, internal/metricsexporter/metricsexporter.go).
AMD_EXPORTER_METRICS = MetricsEndpoint(job="inferplane-gpu-amd", driver=AMD_GPU.name, namespace=AMD_NAMESPACE,
                                       pod_labels=(("app.kubernetes.io/name", "metrics-exporter"),),
                                       port_name="exporter-port")

AMD_GPU_OPERATOR = Component(
    key="amd-gpu-operator",
    namespace=AMD_NAMESPACE,
    chart=Chart("gpu-operator-charts", "https://rocm.github.io/gpu-operator", "v1.5.1"),
    values=lambda _: {
        # Driver management off: the host's amdgpu driver is used, so no KMM. `watch` must go off
        # with it (ROCm/gpu-operator v1.5.1 docs/installation/kubernetes-helm.md): left on, the
        # operator's controller watches KMM's Module kinds, whose CRDs only the KMM subchart ships.
        "kmm": {"enabled": False, "watch": False},
        # The remediation workflow controller (Argo, with its CRDs) repairs nodes by draining and
        # rebooting them through workflows; inferplane does not configure remediation, so it is off.
        "remediation": {"enabled": False, "installCRDs": False},
        # NFD is its own component; a second copy from this chart would fight it.
        "node-feature-discovery": {"enabled": False},
        # The operator's NFD rule is what labels AMD nodes feature.node.kubernetes.io/amd-gpu.
        "installdefaultNFDRule": True,
        # The default DeviceConfig enables the device plugin with `latest` images; we compose our own.
        "crds": {"defaultCR": {"install": False}},
    },
    dra_drivers=frozenset({AMD_GPU.name}),
)
AMD_DEVICE_CONFIG = Component(
    key="amd-device-config",
    namespace=AMD_NAMESPACE,
    manifest=lambda _: {
        "apiVersion": "amd.com/v1alpha1",
        "kind": "DeviceConfig",
        "metadata": {"name": AMD_DEVICE_CONFIG_NAME, "namespace": AMD_NAMESPACE},
        "spec": {
            "selector": dict(AMD_GPU.node_labels),
            "driver": {"enable": False},
            # DRA and the device plugin are mutually exclusive. The node labeller's default image
            # is `labeller-latest`, and DRA publishes the same facts as device attributes.
            "devicePlugin": {"enableDevicePlugin": False, "enableNodeLabeller": False},
            "draDriver": {"enable": True, "image": AMD_DRA_DRIVER_IMAGE,
                          "tolerations": [gpu_toleration(AMD_GPU)]},
            "metricsExporter": {"enable": True, "image": AMD_METRICS_EXPORTER_IMAGE,
                                "serviceType": "ClusterIP", "port": AMD_METRICS_PORT,
                                "tolerations": [gpu_toleration(AMD_GPU)]},
        },
    },
    dra_drivers=frozenset({AMD_GPU.name}),
    metrics=AMD_EXPORTER_METRICS,
)

# ---- CPU: one chart, the same on every cloud

# Cores 0-1 stay with the OS, kubelet and DaemonSets; the driver hands out the rest.
RESERVED_CPUS = "0-1"
CPU_DRA_DRIVER = Component(
    key="dra-driver-cpu",
    # The driver's pods run at system-node-critical, which kube-system admits without a quota.
    namespace="kube-system",
    chart=Chart("dra-driver-cpu", "oci://registry.k8s.io/dra-driver-cpu/charts", "0.3.0"),
    values=lambda _: {
        "nodeSelector": dict(CPU.node_labels),
        # The chart's default tolerates every NoSchedule taint, which lands it on GPU and fake
        # nodes too; the CPU pool taint is the only one it should accept.
        "tolerations": [CPU.pool_taint.toleration()],  # type: ignore[union-attr]
        # grouped: one device per NUMA node with consumable `cpu` capacity.
        "driverConfig": {"reservedCPUs": RESERVED_CPUS, "cpuDeviceMode": "grouped"},
    },
    dra_drivers=frozenset({CPU.name}),
)

# ---- DRANET on EKS: AWS's chart, which publishes each node's EFA interfaces as dra.net devices


def _aws_dranet_values(spec: ServingStackSpec) -> dict[str, Any]:
    return {
        # The chart's required affinity keeps it to EFA-capable instance types (and off EKS Auto
        # Mode nodes); the selector keeps it to the pools whose classes claim DRANET.
        "nodeSelector": dict(DRANET.node_labels),
        # Its default tolerates nothing but CriticalAddonsOnly (built into the template, no pool of
        # ours carries it); it must reach those pools, which are GPU or CPU pools by their other devices.
        "tolerations": [Taint(t.key, t.value, t.effect).toleration() for t in spec.pool_taints.get(DRANET.name, [])],
        # The chart's own default, named here because classes claim it by this name.
        "deviceClass": {"create": True, "name": DRANET.device_class},
    }


AWS_DRANET = Component(
    key="aws-dranet",
    # Where AWS's EKS guide and Modelplane install it; its pods run at system-node-critical, which
    # kube-system admits without a quota.
    namespace="kube-system",
    chart=Chart("aws-dranet", "https://aws.github.io/eks-charts", "1.0.0"),
    values=_aws_dranet_values,
    dra_drivers=frozenset({DRANET.name}),
)

# ---- per cloud


@dataclass(frozen=True)
class CloudStack:
    """What one cloud installs, in install order."""

    components: tuple[Component, ...]

# Clouds that provision their own pools label GPU nodes with the driver's node labels
# (`nvidia.com/gpu.present`), which the NVIDIA driver's affinity accepts, so they need no NFD.
_PROVISIONED = (*NEUTRAL, NVIDIA_DRA_DRIVER, NVIDIA_CRITICAL_PODS_QUOTA, DCGM_EXPORTER, CPU_DRA_DRIVER)

CLOUDS: dict[str, CloudStack] = {
    # DRANET (EFA) is served on EKS only: aws-dranet is AWS's chart for EC2's EFA interfaces.
    "EKS": CloudStack((*_PROVISIONED, AWS_DRANET)),
    "GKE": CloudStack((*NEUTRAL, GKE_NVIDIA_DRIVER_INSTALLER, GKE_NVIDIA_DRA_DRIVER, NVIDIA_CRITICAL_PODS_QUOTA,
                       DCGM_EXPORTER, CPU_DRA_DRIVER)),
    "AKS": CloudStack(_PROVISIONED),
    "Nebius": CloudStack(_PROVISIONED),
    "Vultr": CloudStack(_PROVISIONED),
    "Civo": CloudStack(_PROVISIONED),
    # Bring-your-own nodes are labelled by nobody we control: NFD finds the GPUs for both vendors.
    "Existing": CloudStack((*NEUTRAL, NODE_FEATURE_DISCOVERY, NVIDIA_DRA_DRIVER, NVIDIA_CRITICAL_PODS_QUOTA,
                            DCGM_EXPORTER, AMD_GPU_OPERATOR, AMD_DEVICE_CONFIG, CPU_DRA_DRIVER)),
}


def cloud_stack(cloud: str) -> CloudStack:
    try:
        return CLOUDS[cloud]
    except KeyError:
        raise KeyError(f"no serving stack for cloud {cloud!r}; known: {', '.join(CLOUDS)}") from None


def component_drivers(key: str) -> frozenset[str]:
    """The drivers a component is tagged with, by its key (a component has one tag on every cloud):
    what the simulated cluster says its workloads serve, and so what the audits judge them by."""
    for stack in CLOUDS.values():
        for component in stack.components:
            if component.key == key:
                return component.dra_drivers
    raise KeyError(f"no component {key!r} in the catalog")


def supported_drivers(cloud: str) -> tuple[str, ...]:
    """The drivers a cloud can serve, sorted: its components' tags."""
    return tuple(sorted({d for c in _sound(cloud) for d in c.dra_drivers}))


def unsupported_claims(cloud: str, claims: Mapping[str, Iterable[str]], owners: Iterable[str] = ()) -> dict[str, list[str]]:
    """The gate, fail closed: for each class (name -> the drivers it claims), the claimed drivers that
    neither the cloud's stack serves nor, on an Existing cluster, its owner declares running."""
    served = set(supported_drivers(cloud)) | set(owners)
    out = {}
    for name, drivers in sorted(claims.items()):
        unsupported = [d for d in drivers if d not in served]
        if unsupported:
            out[name] = unsupported
    return out


def unsupported_devices_message(cluster: InferenceCluster, classes: Mapping[str, InferenceClass]) -> str | None:
    """What the gate says of a cluster whose classes claim drivers it cannot serve (None: it can);
    admission warns of it in the same words before anything is applied."""
    source = cluster.spec.cluster.source
    owners = cluster.spec.cluster.preinstalled_drivers()
    offending = unsupported_claims(source, {n: k.spec.claimed_drivers() for n, k in classes.items()}, owners)
    if not offending:
        return None
    if source == "Existing":
        declared = f" (it declares {', '.join(owners)})" if owners else ""
        fix = ("use classes whose drivers inferplane serves, or, if the cluster's owner runs the driver, "
               f"declare it in spec.cluster.existing.preinstalledDrivers{declared}")
    else:
        fix = "use classes whose drivers the cloud serves, or run these devices on an Existing cluster"
    claims = "; ".join(f"class {name} claims {', '.join(drivers)}" for name, drivers in offending.items())
    return f"{claims}; {source} clusters support {', '.join(supported_drivers(source))}: {fix}"


def stack_drivers(spec: ServingStackSpec) -> frozenset[str]:
    """The drivers a stack installs for: its stamped ones, or while unstamped the cloud's full list
    (so that an upgrade never strips a running stack)."""
    return frozenset(supported_drivers(spec.source) if spec.dra_drivers is None else spec.dra_drivers)


def components(cloud: str, claimed: Iterable[str]) -> tuple[Component, ...]:
    """The join: neutral components plus every tagged one serving a claimed driver, in install order.

    A component with broken tags matches nothing, so a catalog mistake installs less, never more.
    """
    drivers = frozenset(claimed)
    return tuple(c for c in _sound(cloud) if c.neutral or c.dra_drivers & drivers)


def serving(cloud: str, driver: str) -> tuple[Component, ...]:
    """The components of a cloud that serve one driver (empty for an unsupported one)."""
    return tuple(c for c in _sound(cloud) if driver in c.dra_drivers)


def _sound(cloud: str) -> tuple[Component, ...]:
    """A cloud's components whose tags are usable; the rest are catalog errors and never installed."""
    return tuple(c for c in cloud_stack(cloud).components if not tag_errors(c))


def sample_spec(cloud: str) -> ServingStackSpec:
    """A stack with every option on, to render every value and manifest a cloud can produce."""
    return ServingStackSpec.model_validate({"source": cloud, "clusterName": "sample"})


def catalog_errors() -> list[str]:
    """Everything wrong with the catalog: tags, shapes, pins, keys, clouds, and values a pinned chart
    does not have (`chart_values`). Empty when sound."""
    errors: list[str] = []
    if set(CLOUDS) != set(SOURCES):
        errors.append(f"catalog clouds {sorted(CLOUDS)} differ from the sources {sorted(SOURCES)}")
    for cloud, stack in CLOUDS.items():
        keys = [c.key for c in stack.components]
        if len(keys) != len(set(keys)):
            errors.append(f"{cloud} lists a component key twice: {keys}")
        spec = sample_spec(cloud)
        for component in stack.components:
            errors += tag_errors(component) + shape_errors(component)
            errors += pin_errors(component, spec)
            if component.chart is not None:
                errors += [f"component {component.key}: {e}" for e in chart_value_errors(component.chart,
                                                                                       component.values(spec))]
            if component.metrics and component.metrics.driver not in {m.spec.driver for m in builtin_mappings()}:
                errors.append(f"component {component.key} exports {component.metrics.driver} metrics, which no "
                              "built-in mapping in inferplane/metrics/builtin/ reads")
    return sorted(set(errors))
