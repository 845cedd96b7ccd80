"""How a client's request to a ModelService travels: to the control plane gateway, through whichever
HTTPRoute rule Gateway API's precedence picks among every route attached to it, then to each
endpoint's backend, with its share of the traffic and the URL it receives; and, where that URL is a
cluster gateway's, through that cluster's routes to the replica's Service, or to its InferencePool,
whose endpoint picker sends each request to a decode engine (after a prefill engine when the prompt is
not cached). A cluster's gateway resolves an InferencePool backend only where its stack installs the
Inference Extension's CRDs and Envoy AI Gateway: elsewhere the backendRef names an unsupported kind, which
HTTPRoute v1.5.1 reports as ResolvedRefs False (`InvalidKind`) and answers with a 500 for the traffic it
would have carried."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from inferplane.api.model_endpoint import ModelEndpoint
from inferplane.routing import gateway as gw
from inferplane.routing.addresses import DEFAULT_PORTS, url_target
from inferplane.routing.inference_extension import DECODE, PHASE_LABEL, is_inference_pool_ref
from inferplane.routing.resolve import Forward, HTTPRequest, Resolution, resolve

Resource = dict[str, Any]


@dataclass(frozen=True)
class ClusterRoutes:
    """What one cluster's gateway routes by: the HTTPRoutes attached to it, the InferencePools and engine
    workloads (Deployments, LeaderWorkerSets) on the cluster, and whether its gateway resolves backends
    of kind InferencePool."""

    name: str
    routes: list[Resource]
    inference_pools: list[Resource] = field(default_factory=list)
    workloads: list[Resource] = field(default_factory=list)
    resolves_inference_pools: bool = False


@dataclass(frozen=True)
class ClusterLeg:
    """The request inside a target cluster: the route its gateway picks and where it sends it."""

    cluster: str
    route: str | None  # namespace/name of the HTTPRoute; None: no rule matches (404)
    backends: list[str]  # "Kind namespace/name:port path" of each backend
    # Why the rule's backends reach nothing (the gateway's answer), when they do not.
    problem: str | None = None


@dataclass(frozen=True)
class Hop:
    """One backend the request reaches: the endpoint behind it, its share, and what it receives."""

    endpoint: str  # namespace/name of the ModelEndpoint, or the Service's when none fronts it
    share: Fraction
    weight: int
    url: str | None  # None: the backend Service has no endpoint to send to
    cluster: ClusterLeg | None = None  # when the URL is a cluster gateway's


@dataclass(frozen=True)
class Travel:
    url: str
    resolution: Resolution | None
    hops: list[Hop]


def attached_routes(objects: list[Resource]) -> list[Resource]:
    """The HTTPRoutes attached to the control plane gateway."""
    def attached(route: Resource) -> bool:
        namespace = route["metadata"].get("namespace", "")
        return any(ref.get("name") == gw.GATEWAY_NAME and ref.get("namespace", namespace) == gw.GATEWAY_NAMESPACE
                   for ref in (route.get("spec") or {}).get("parentRefs") or [])
    return [o for o in objects if o["kind"] == "HTTPRoute" and attached(o)]


def travel(objects: list[Resource], address: str | None, namespace: str, service: str, path: str,
           method: str = "POST", clusters: dict[str, ClusterRoutes] | None = None) -> Travel:
    """The request `method` to the service's address plus `path`, through the control plane's objects;
    `clusters` maps a cluster gateway's address to what that cluster's gateway routes by."""
    full_path = gw.service_prefix(namespace, service).rstrip("/") + "/" + path.lstrip("/")
    url = f"{gw.GATEWAY_SCHEME}://{address or '<no address>'}{full_path}"
    resolution = resolve(attached_routes(objects), HTTPRequest(method, full_path))
    if resolution is None:
        return Travel(url, None, [])
    endpoints = {}  # (namespace, backend Service) -> the ModelEndpoint that fronts it
    for obj in objects:
        if obj["kind"] == ModelEndpoint.KIND:
            backend = ((obj.get("status") or {}).get("routing") or {}).get("backendName")
            endpoints[(obj["metadata"].get("namespace", ""), backend)] = obj
    slices = {(o["metadata"].get("namespace", ""), (o["metadata"].get("labels") or {}).get(gw.SERVICE_NAME_LABEL)): o
              for o in objects if o["kind"] == "EndpointSlice"}
    hops = []
    for forward in resolution.forwards:
        endpoint = endpoints.get((forward.namespace, forward.name))
        name = f"{forward.namespace}/{endpoint['metadata']['name'] if endpoint else forward.name}"
        host = _host(slices.get((forward.namespace, forward.name)))
        destination = _destination(host, endpoint, forward.port, forward.path)
        leg = None
        if destination is not None and host in (clusters or {}):
            leg = _inside((clusters or {})[host], HTTPRequest(method, forward.path))
        hops.append(Hop(name, forward.share, forward.weight, destination, leg))
    return Travel(url, resolution, hops)


def _inside(cluster: ClusterRoutes, request: HTTPRequest) -> ClusterLeg:
    found = resolve(cluster.routes, request)
    if found is None:
        return ClusterLeg(cluster.name, None, [])
    backends, problems = [], []
    for forward in found.forwards:
        if not is_inference_pool_ref({"group": forward.group, "kind": forward.kind}):
            backends.append(f"{forward.kind} {forward.namespace}/{forward.name}"
                            f"{'' if forward.port is None else f':{forward.port}'} {forward.path}")
            continue
        reached, problem = _inference_pool(cluster, forward)
        if reached is None:
            problems.append(problem)
        else:
            backends.append(reached)
    if not backends and not problems:
        problems.append("the rule names none (500)")
    return ClusterLeg(cluster.name, found.route, backends, "; ".join(problems) if not backends else None)


def _inference_pool(cluster: ClusterRoutes, forward: Forward) -> tuple[str | None, str]:
    """Where an InferencePool backend sends the request: its decode engines (each request ends on one;
    the picker runs a prefill engine first when the prompt is not cached). (None, why) when the
    cluster's gateway cannot resolve it."""
    name = f"{forward.namespace}/{forward.name}"
    if not cluster.resolves_inference_pools:
        return None, (f"InferencePool {name} is unresolved: cluster {cluster.name}'s stack does not install the "
                      "Inference Extension's CRDs and Envoy AI Gateway, without which Envoy Gateway refuses the "
                      "backend (500)")
    pool = next((p for p in cluster.inference_pools if p["metadata"]["name"] == forward.name
                 and p["metadata"].get("namespace", "") == forward.namespace), None)
    if pool is None:
        return None, f"InferencePool {name} does not exist on cluster {cluster.name} (500)"
    selector = ((pool.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    ports = [p.get("number") for p in (pool.get("spec") or {}).get("targetPorts") or []]
    phases: dict[str, list[str]] = {}
    for workload in cluster.workloads:
        labels = _serving_labels(workload)
        if labels is not None and selector and selector.items() <= labels.items():
            phases.setdefault(labels.get(PHASE_LABEL, ""), []).append(
                f"{workload['kind']} {workload['metadata'].get('namespace', '')}/{workload['metadata']['name']}")
    if not phases.get(DECODE):
        return None, f"InferencePool {name} selects no decode engine: its endpoint picker has nowhere to send (503)"
    port = f":{ports[0]}" if ports else ""
    others = "; ".join(f"{phase}: {', '.join(names)}" for phase, names in sorted(phases.items()) if phase != DECODE)
    return (f"InferencePool {name}{port} {forward.path} -> decode: {', '.join(phases[DECODE])}"
            f"{f' ({others})' if others else ''}"), ""


def _serving_labels(workload: Resource) -> dict[str, str] | None:
    """The labels of a workload's serving pods: a Deployment's pods, a LeaderWorkerSet's leaders."""
    spec = workload.get("spec") or {}
    if workload.get("kind") == "Deployment":
        template = spec.get("template") or {}
    elif workload.get("kind") == "LeaderWorkerSet":
        template = (spec.get("leaderWorkerTemplate") or {}).get("leaderTemplate") or {}
    else:
        return None
    return (template.get("metadata") or {}).get("labels") or {}


def _host(endpoint_slice: Resource | None) -> str | None:
    addresses = [a for e in (endpoint_slice or {}).get("endpoints") or [] for a in e.get("addresses") or []]
    return addresses[0] if addresses else None


def _destination(host: str | None, endpoint: Resource | None, port: int | None, path: str) -> str | None:
    """The URL the backend receives: the EndpointSlice's address and port, the endpoint's scheme."""
    if host is None:
        return None
    scheme = url_target(endpoint["spec"]["url"]).scheme if endpoint else "http"
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}{'' if port in (None, DEFAULT_PORTS[scheme]) else f':{port}'}{path}"
