"""The serving-stack catalog: the neutral components every stack has, the list each cloud installs, and the join.

Each driver's own components (charts, repositories, pins and values) live in its module and reach the
catalog through `registry.STACKS`; the neutral ones, and Node Feature Discovery, which labels the nodes of
the drivers that need it, are here. The per-cloud lists are derived from them, and the supported-drivers
table, the join and the `inferplane stacks` report from those lists; there is no hand-written copy of any
of them.

Facts checked against the charts' published sources are stated plainly; the few that could not be
confirmed are marked *unconfirmed* where they are set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from inferplane import API_GROUP
from inferplane.accelerators.chart_values import chart_value_errors
from inferplane.accelerators.component import Chart, Component, gpu_toleration, pin_errors, shape_errors, tag_errors
from inferplane.accelerators.registry import MODULES, STACKS
from inferplane.api.cloud import PROVIDERS, SOURCES
from inferplane.api.serving_stack import ServingStackSpec
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.metrics.mappings import builtin_mappings
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

# ---- Node Feature Discovery: labels the nodes of drivers no cloud labels for (by PCI vendor), which
# their stacks select on

# The drivers whose nodes NFD labels somewhere, in registry order.
NFD_DRIVERS = tuple(stack.driver for stack in STACKS if stack.nfd)
NODE_FEATURE_DISCOVERY = Component(
    key="node-feature-discovery",
    namespace="node-feature-discovery",
    chart=Chart("node-feature-discovery", "oci://registry.k8s.io/nfd/charts", "0.18.3"),
    # The worker must reach the tainted GPU nodes it is there to label (its default tolerates none).
    values=lambda _: {"worker": {"tolerations": [gpu_toleration(d) for d in NFD_DRIVERS]}},
    dra_drivers=frozenset(d.name for d in NFD_DRIVERS),
)

# ---- per cloud


@dataclass(frozen=True)
class CloudStack:
    """What one cloud installs, in install order."""

    components: tuple[Component, ...]


def _cloud_stack(cloud: str) -> CloudStack:
    """The neutral components, NFD where a driver needs it, then each driver's components for the cloud."""
    nfd = (NODE_FEATURE_DISCOVERY,) if any(cloud in stack.nfd for stack in STACKS) else ()
    return CloudStack((*NEUTRAL, *nfd, *(c for stack in STACKS for c in stack.clouds.get(cloud, ()))))


CLOUDS: dict[str, CloudStack] = {cloud: _cloud_stack(cloud) for cloud in SOURCES}


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
    if source not in PROVIDERS:  # the owner's cluster
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
    """A cloud's components whose tags are usable; the rest are catalog errors and never installed.
    Judged once per list of components (admission asks for every cluster it admits)."""
    listed = cloud_stack(cloud).components
    kept = _SOUND.get(id(listed))
    if kept is None or kept[0] is not listed:
        kept = _SOUND[id(listed)] = (listed, tuple(c for c in listed if not tag_errors(c)))
    return kept[1]


# id(a stack's components) -> (those components, the sound ones): the catalog is data, read by identity
# so that a list replaced (as tests do) is judged afresh.
_SOUND: dict[int, tuple[tuple[Component, ...], tuple[Component, ...]]] = {}


def sample_spec(cloud: str) -> ServingStackSpec:
    """A stack with every option on, to render every value and manifest a cloud can produce."""
    return ServingStackSpec.model_validate({"source": cloud, "clusterName": "sample"})


def catalog_errors() -> list[str]:
    """Everything wrong with the catalog: tags, shapes, pins, keys, clouds, and values a pinned chart
    does not have (`chart_values`). Empty when sound."""
    errors: list[str] = []
    if set(CLOUDS) != set(SOURCES):
        errors.append(f"catalog clouds {sorted(CLOUDS)} differ from the sources {sorted(SOURCES)}")
    errors += [f"module {m.__name__} publishes {m.SLICES.driver} devices but its stack serves {m.STACK.driver.name}"
               for m in MODULES if m.SLICES.driver != m.STACK.driver.name]
    for stack in STACKS:
        name = stack.driver.name
        if unknown := sorted(set(stack.clouds) - set(SOURCES)):
            errors.append(f"driver {name}'s stack lists clouds {unknown}, which are not sources {sorted(SOURCES)}")
        errors += [f"component {c.key} of driver {name}'s stack does not serve {name}: tag it or move it"
                   for components in stack.clouds.values() for c in components if name not in c.dra_drivers]
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
