"""How a client's request to a ModelService travels: to the control plane gateway, through whichever
HTTPRoute rule Gateway API's precedence picks among every route attached to it, then to each
endpoint's backend, with its share of the traffic and the URL it receives; and, where that URL is a
cluster gateway's, through that cluster's routes to the replica's Service."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from inferplane.routing import gateway as gw
from inferplane.routing.addresses import DEFAULT_PORTS, url_target
from inferplane.routing.resolve import HTTPRequest, Resolution, resolve

Resource = dict[str, Any]


@dataclass(frozen=True)
class ClusterLeg:
    """The request inside a target cluster: the route its gateway picks and where it sends it."""

    cluster: str
    route: str | None  # namespace/name of the HTTPRoute; None: no rule matches (404)
    backends: list[str]  # "Kind namespace/name:port path" of each backend


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
           method: str = "POST", clusters: dict[str, tuple[str, list[Resource]]] | None = None) -> Travel:
    """The request `method` to the service's address plus `path`, through the control plane's objects;
    `clusters` maps a cluster gateway's address to its cluster's name and the routes attached to it."""
    full_path = gw.service_prefix(namespace, service).rstrip("/") + "/" + path.lstrip("/")
    url = f"{gw.GATEWAY_SCHEME}://{address or '<no address>'}{full_path}"
    resolution = resolve(attached_routes(objects), HTTPRequest(method, full_path))
    if resolution is None:
        return Travel(url, None, [])
    endpoints = {}  # (namespace, backend Service) -> the ModelEndpoint that fronts it
    for obj in objects:
        if obj["kind"] == "ModelEndpoint":
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
            cluster, routes = (clusters or {})[host]
            leg = _inside(cluster, routes, HTTPRequest(method, forward.path))
        hops.append(Hop(name, forward.share, forward.weight, destination, leg))
    return Travel(url, resolution, hops)


def _inside(cluster: str, routes: list[Resource], request: HTTPRequest) -> ClusterLeg:
    found = resolve(routes, request)
    if found is None:
        return ClusterLeg(cluster, None, [])
    backends = [f"{f.kind} {f.namespace}/{f.name}{'' if f.port is None else f':{f.port}'} {f.path}"
                for f in found.forwards]
    return ClusterLeg(cluster, found.route, backends)


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
