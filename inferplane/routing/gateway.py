"""The control plane gateway's facts: what the InferenceGateway installs and composes, and what the
ModelServices' HTTPRoutes attach to. Source: Modelplane v0.3.1 (`compose-inference-gateway`), whose
choices these are; the chart pins are checked against its documented manifests and function.
"""

from __future__ import annotations

from inferplane.api.managed import MANAGED_NAMESPACE

GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"
GATEWAY_API_GROUP = "gateway.networking.k8s.io"
# The Gateway every ModelService's HTTPRoute attaches to, in inferplane's namespace.
GATEWAY_NAME = "inferplane"
GATEWAY_NAMESPACE = MANAGED_NAMESPACE
# Traefik, because Gateway API's per-backendRef URLRewrite (an Extended feature) is what lets each
# endpoint of one weighted split have its own path (Envoy Gateway lacks it: envoyproxy/gateway#7099).
TRAEFIK_CHART = "traefik"
TRAEFIK_REPOSITORY = "https://traefik.github.io/charts"
TRAEFIK_NAMESPACE = "traefik-system"
# The chart's Service, renamed so that Traefik's statusAddress can name it (the default name carries
# the release name).
TRAEFIK_SERVICE = "traefik"
TRAEFIK_CONTROLLER = "traefik.io/gateway-controller"
GATEWAY_CLASS = "traefik"
# A Gateway listener's port is the entryPoint's port inside Traefik ("web": 8000), not the Service's (80).
TRAEFIK_WEB_PORT = 8000
# MetalLB, for control planes without a cloud load balancer (kind, bare metal). 0.14.9 is the chart
# Modelplane v0.3.1 installs.
METALLB_CHART = "metallb"
METALLB_REPOSITORY = "https://metallb.github.io/metallb"
METALLB_VERSION = "0.14.9"
METALLB_NAMESPACE = "metallb-system"
METALLB_API_VERSION = "metallb.io/v1beta1"
# The simulated cloud load balancer's address when no MetalLB pool is set: TEST-NET-2 (RFC 5737),
# documentation space that never routes, so nobody mistakes it for a real address.
SIMULATED_CLOUD_ADDRESS = "198.51.100.10"
# EndpointSlices name their Service with this label (Kubernetes' discovery.k8s.io convention).
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# Clients speak plain HTTP to the gateway's "web" listener.
GATEWAY_SCHEME = "http"


# A target cluster's gateway: the serving stack composes it (Envoy Gateway's class), each replica's
# HTTPRoute attaches to it, each replica's ModelEndpoint points at its address.
CLUSTER_GATEWAY_NAME = "inference-gateway"
CLUSTER_GATEWAY_NAMESPACE = "envoy-gateway-system"


def replica_prefix(namespace: str, replica: str) -> str:
    """The path a replica is served under on its cluster's gateway: the `rewritePath` of its endpoint."""
    return f"/{namespace}/{replica}/"


def service_prefix(namespace: str, name: str) -> str:
    """The path a ModelService is served under on the gateway."""
    return f"/{namespace}/{name}/"


def service_url(address: str, namespace: str, name: str) -> str:
    """A ModelService's public address on a gateway reachable at `address`."""
    return f"{GATEWAY_SCHEME}://{address}{service_prefix(namespace, name).rstrip('/')}"
