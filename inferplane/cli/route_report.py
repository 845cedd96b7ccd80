"""How a request to a ModelService travels, as `inferplane route` prints it: the rule its gateway picks,
each backend's share and what each replica's cluster does with it."""

from __future__ import annotations

from typing import Any

from inferplane.api.function import READY
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.managed import applied_manifest
from inferplane.api.model_service import ModelService
from inferplane.cli.output import table
from inferplane.runtime.store import Resource


def route_report(objects: list[Resource], namespace: str, name: str, path: str, method: str) -> tuple[str, bool]:
    """`inferplane route`: the request, the rule it matched and its backends; and whether it reaches one."""
    from inferplane.api.inference_gateway import DEFAULT_GATEWAY_NAME, InferenceGateway
    from inferplane.routing.travel import travel

    service = next((o for o in objects if o["kind"] == ModelService.KIND and o["metadata"]["name"] == name
                    and o["metadata"].get("namespace") == namespace), None)
    if service is None:
        return f"Error from server (NotFound): modelservice {namespace}/{name} not found", False
    gateway = next((o for o in objects if o["kind"] == InferenceGateway.KIND
                    and o["metadata"]["name"] == DEFAULT_GATEWAY_NAME), None)
    address = ((gateway or {}).get("status") or {}).get("address")
    trip = travel(objects, address, namespace, name, path, method, cluster_gateways(objects))
    lines = [f"{method} {trip.url}"]
    if not address:
        lines.append(f"InferenceGateway {DEFAULT_GATEWAY_NAME} has no address: nothing reaches the gateway yet")
    if trip.resolution is None:
        lines.append("no HTTPRoute rule matches: the gateway answers 404")
        return "\n".join(lines), False
    match = trip.resolution.match.get("path") or {}
    lines.append(f"HTTPRoute {trip.resolution.route} rule {trip.resolution.rule} "
                 f"({match.get('type', 'PathPrefix')} {match.get('value', '/')})")
    if not trip.hops:
        lines.append("the rule has no backend: the gateway answers 500 (see the service's EndpointsResolved)")
        return "\n".join(lines), False
    rows = [(hop.endpoint, f"{float(hop.share) * 100:.2f}%", hop.weight, hop.url or "<no endpoint: 500>")
            for hop in trip.hops]
    lines += ["", table(("ENDPOINT", "SHARE", "WEIGHT", "FORWARDED TO"), rows)]
    legs = [(hop.endpoint, hop.cluster) for hop in trip.hops if hop.cluster is not None]
    if legs:
        lines += ["", "inside the clusters:"]
        for endpoint, leg in legs:
            reached = (f"HTTPRoute {leg.route} -> {', '.join(leg.backends) or f'no backend: {leg.problem}'}"
                       if leg.route else "no HTTPRoute rule matches (404)")
            lines.append(f"  {endpoint}: cluster {leg.cluster}'s gateway, {reached}")
    # Nothing is reached when every backend leads into a cluster whose gateway sends it nowhere.
    reached_any = any(hop.cluster is None or hop.cluster.backends for hop in trip.hops)
    return "\n".join(lines), bool(address) and reached_any


def cluster_gateways(objects: list[Resource]) -> dict[str, Any]:
    """Each cluster gateway's address -> what that cluster's gateway routes by (`ClusterRoutes`): the
    HTTPRoutes attached to it, the InferencePools and engine workloads its Objects created, and whether
    the components its stack runs resolve InferencePool backends."""
    from inferplane.accelerators.catalog import COMPONENT_LABEL, resolves_inference_pools
    from inferplane.routing.gateway import CLUSTER_GATEWAY_NAME, CLUSTER_GATEWAY_NAMESPACE
    from inferplane.routing.inference_extension import INFERENCE_POOL_API_VERSION, INFERENCE_POOL_KIND
    from inferplane.routing.travel import ClusterRoutes

    def created(obj: Resource) -> bool:
        return any(c.get("type") == READY and c.get("status") == "True"
                   for c in (obj.get("status") or {}).get("conditions") or [])

    routes: dict[str, list[Resource]] = {}
    pools: dict[str, list[Resource]] = {}
    workloads: dict[str, list[Resource]] = {}
    installed: dict[str, dict[str, Resource]] = {}
    for obj in objects:
        if obj["kind"] not in ("Object", "Release"):
            continue
        cluster = ((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name", "")
        component = (obj["metadata"].get("labels") or {}).get(COMPONENT_LABEL)
        if component and created(obj):
            installed.setdefault(cluster, {})[component] = obj
        manifest = applied_manifest(obj)
        if obj["kind"] == "Object" and manifest.get("kind") == "HTTPRoute" and any(
                ref.get("name") == CLUSTER_GATEWAY_NAME and ref.get("namespace") == CLUSTER_GATEWAY_NAMESPACE
                for ref in (manifest.get("spec") or {}).get("parentRefs") or []):
            routes.setdefault(cluster, []).append(manifest)
        elif (manifest.get("apiVersion"), manifest.get("kind")) == (INFERENCE_POOL_API_VERSION, INFERENCE_POOL_KIND) \
                and created(obj):
            pools.setdefault(cluster, []).append(manifest)
        elif manifest.get("kind") in ("Deployment", "LeaderWorkerSet") and not component:
            workloads.setdefault(cluster, []).append(manifest)
    out = {}
    for cluster in (o for o in objects if o["kind"] == InferenceCluster.KIND):
        name = cluster["metadata"]["name"]
        gateway_address = ((cluster.get("status") or {}).get("gateway") or {}).get("address")
        if gateway_address:
            out[gateway_address] = ClusterRoutes(name, routes.get(name, []), pools.get(name, []),
                                                 workloads.get(name, []),
                                                 resolves_inference_pools(installed.get(name, {})))
    return out
