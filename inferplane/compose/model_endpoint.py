"""ModelEndpoint composition: the Service a ModelService's HTTPRoute sends this endpoint's share to.

The Service has no selector; its one EndpointSlice holds the URL's host (an IPv4 or IPv6 address, or
a name for an external provider) and port, as Gateway API backends are Services. An ExternalName
Service would be simpler for a name, but Traefik's Gateway provider refuses ExternalName backends.
`status.routing.backendName` names the Service once both exist: until then a ModelService leaves the
endpoint out of rotation.

Conditions this function sets:
- `RoutingReady`: True (`BackendConfigured`) once the Service and EndpointSlice exist; False
  (`WaitingForBackend`) until then; False (`InvalidURL`) when `spec.url` cannot be routed to (nothing
  new is composed, what was composed stays).
"""

from __future__ import annotations

from pydantic import ValidationError

from inferplane.api.managed import composed_name
from inferplane.api.model_endpoint import ModelEndpoint
from inferplane.compose.base import Composer, Desired, Event, Request, Response, composite_name, \
    validation_problems
from inferplane.routing.addresses import Target, url_target
from inferplane.routing.gateway import SERVICE_NAME_LABEL

SERVICE_KEY = "service"
ENDPOINT_SLICE_KEY = "endpointslice"
ROUTING_READY = "RoutingReady"


def backend_service_name(endpoint_name: str) -> str:
    """The Service fronting an endpoint: a DNS label, stable, distinct per endpoint."""
    return composed_name(endpoint_name, "backend")


class ModelEndpointComposer(Composer):
    def compose(self) -> Response:
        composite = self.request.composite
        try:
            endpoint = ModelEndpoint.model_validate(composite)
            target = url_target(endpoint.spec.url)
        except (ValidationError, ValueError) as error:
            why = validation_problems(error) if isinstance(error, ValidationError) else str(error)
            message = (f"ModelEndpoint {composite_name(composite)} cannot be routed to: {why}; fix spec.url "
                       "(http:// or https://, a host, an optional port); what was composed is kept")
            self.keep_observed()
            self.condition(ROUTING_READY, "False", "InvalidURL", message)
            self.response.events.append(Event("Warning", "InvalidURL", message))
            return self.response
        self.compose_backend(endpoint, target)
        return self.response

    def compose_backend(self, endpoint: ModelEndpoint, target: Target) -> None:
        namespace = endpoint.metadata.namespace
        service = backend_service_name(endpoint.metadata.name)
        port = {"name": target.scheme, "port": target.port, "protocol": "TCP"}
        if target.scheme == "https":
            # Traefik speaks TLS to a backend whose Service port says so (unconfirmed: Traefik's
            # Gateway provider documentation, "appProtocol").
            port["appProtocol"] = "https"
        self.response.desired[SERVICE_KEY] = Desired({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": service, "namespace": namespace},
            "spec": {"ports": [port]}}, ready=SERVICE_KEY in self.request.observed)
        self.response.desired[ENDPOINT_SLICE_KEY] = Desired({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": service, "namespace": namespace, "labels": {SERVICE_NAME_LABEL: service}},
            "addressType": target.address_type,
            "ports": [{"name": target.scheme, "port": target.port, "protocol": "TCP"}],
            # Traefik skips an endpoint whose ready condition is unset (Kubernetes reads unset as ready).
            "endpoints": [{"addresses": [target.host], "conditions": {"ready": True}}],
        }, ready=ENDPOINT_SLICE_KEY in self.request.observed)
        exists = SERVICE_KEY in self.request.observed and ENDPOINT_SLICE_KEY in self.request.observed
        self.response.status["routing"] = {"backendName": service} if exists else {}
        if exists:
            self.condition(ROUTING_READY, "True", "BackendConfigured",
                           f"Service {namespace}/{service} forwards to {target.host}:{target.port}")
        else:
            self.condition(ROUTING_READY, "False", "WaitingForBackend",
                           f"waiting for Service {namespace}/{service} and its EndpointSlice")


def compose_model_endpoint(request: Request) -> Response:
    return ModelEndpointComposer(request).compose()
