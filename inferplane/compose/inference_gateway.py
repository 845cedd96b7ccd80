"""InferenceGateway composition: Traefik on the control plane (with MetalLB and its address pool when
the control plane has no cloud load balancer), its GatewayClass and the Gateway every ModelService's
HTTPRoute attaches to, and the Gateway's address as `status.address`.

Each step waits for the one it needs, as the real controllers do: the pool for MetalLB's CRDs, the
GatewayClass and Gateway for Traefik (which reads them), and, with MetalLB, the Gateway for the pool
(its address comes from it). What was composed once stays composed.

Conditions this function sets:
- `ControllerReady`: True (`ControllerHealthy`) once Traefik's release is ready, else False (`Installing`).
- `AddressAssigned`: True with the address; False (`Creating`) until the Gateway exists, or
  (`NoAddress`) when it exists without one; False (`NotDefault`) for a gateway not named `default`,
  which composes nothing: ModelServices route through `default` only.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from inferplane.api.inference_gateway import DEFAULT_GATEWAY_NAME, InferenceGateway
from inferplane.api.managed import HELM_API_VERSION, PROVIDER_CONFIG_KIND, composed_name, helm_release
from inferplane.compose.base import Composer, Desired, Event, Request, Response, composite_name, condition_of, \
    is_ready, validation_problems
from inferplane.compose.serving_stack import PROVIDER_CONFIG_KEYS
from inferplane.routing import gateway as gw

PROVIDER_CONFIG_KEY = PROVIDER_CONFIG_KEYS["helm"]
METALLB_KEY = "metallb"
POOL_KEY = "metallb-pool"
L2_KEY = "metallb-l2"
TRAEFIK_KEY = "traefik"
GATEWAY_CLASS_KEY = "gateway-class"
GATEWAY_KEY = "gateway"
# The control plane's own provider-helm credentials: Crossplane's pod identity on its own cluster.
CONTROL_PLANE_PROVIDER_CONFIG = "inferplane-control-plane"
CONTROLLER_READY = "ControllerReady"
ADDRESS_ASSIGNED = "AddressAssigned"


def gateway_address(gateway: dict[str, Any] | None) -> str | None:
    """The first address a Gateway reports (its load balancer's), or None."""
    addresses = ((gateway or {}).get("status") or {}).get("addresses") or []
    value = addresses[0].get("value") if addresses and isinstance(addresses[0], dict) else None
    return value if isinstance(value, str) and value else None


class InferenceGatewayComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.gateway: InferenceGateway | None = None

    def compose(self) -> Response:
        if not self.read_gateway():
            return self.response
        self.compose_provider_config()
        self.compose_metallb()
        self.compose_traefik()
        self.compose_gateway()
        self.compose_status()
        return self.response

    # ---- steps

    def read_gateway(self) -> bool:
        composite = self.request.composite
        try:
            self.gateway = InferenceGateway.model_validate(composite)
        except ValidationError as error:
            self.keep_observed()
            self.condition(ADDRESS_ASSIGNED, "False", "InvalidSpec",
                           f"InferenceGateway {composite_name(composite)} is invalid ({validation_problems(error)}): "
                           "fix the spec; what runs is kept as it is")
            return False
        if self.gateway.metadata.name != DEFAULT_GATEWAY_NAME:
            self.keep_observed()
            message = (f"InferenceGateway {self.gateway.metadata.name} is not used: ModelServices route through the "
                       f"InferenceGateway named {DEFAULT_GATEWAY_NAME} only (one per control plane); rename it")
            self.condition(ADDRESS_ASSIGNED, "False", "NotDefault", message)
            self.response.events.append(Event("Warning", "NotDefault", message))
            return False
        return True

    def compose_provider_config(self) -> None:
        config = {"apiVersion": HELM_API_VERSION, "kind": PROVIDER_CONFIG_KIND,
                  "metadata": {"name": CONTROL_PLANE_PROVIDER_CONFIG},
                  "spec": {"credentials": {"source": "InjectedIdentity"}}}
        # A ProviderConfig reports no Ready condition: it is usable as soon as it exists.
        self.response.desired[PROVIDER_CONFIG_KEY] = Desired(config, ready=True)

    def compose_metallb(self) -> None:
        pool = self.metallb_pool
        if pool is None:
            return
        self.desire(METALLB_KEY, self.release(METALLB_KEY, (gw.METALLB_CHART, gw.METALLB_REPOSITORY,
                                                            gw.METALLB_VERSION), gw.METALLB_NAMESPACE, None))
        # The pool and its advertisement are MetalLB's custom resources: they wait for its CRDs.
        if not self.ready_or_composed(METALLB_KEY, POOL_KEY):
            return
        metadata = {"name": gw.GATEWAY_NAME, "namespace": gw.METALLB_NAMESPACE}
        self.response.desired[POOL_KEY] = Desired({
            "apiVersion": gw.METALLB_API_VERSION, "kind": "IPAddressPool", "metadata": dict(metadata),
            "spec": {"addresses": [pool]}}, ready=POOL_KEY in self.request.observed)
        self.response.desired[L2_KEY] = Desired({
            "apiVersion": gw.METALLB_API_VERSION, "kind": "L2Advertisement", "metadata": dict(metadata),
            "spec": {"ipAddressPools": [gw.GATEWAY_NAME]}}, ready=L2_KEY in self.request.observed)

    def compose_traefik(self) -> None:
        values = {
            "providers": {
                "kubernetesGateway": {"enabled": True, "statusAddress": {
                    "service": {"namespace": gw.TRAEFIK_NAMESPACE, "name": gw.TRAEFIK_SERVICE}}},
                "kubernetesIngress": {"enabled": False},
            },
            "service": {"nameOverride": gw.TRAEFIK_SERVICE},
            # The chart's own Gateway and GatewayClass are off: they are composed here, so that the
            # Gateway's address is observed and deletion waits for what uses them.
            "gateway": {"enabled": False},
            "gatewayClass": {"enabled": False},
        }
        assert self.gateway is not None and self.gateway.spec.traefik is not None
        self.desire(TRAEFIK_KEY, self.release(TRAEFIK_KEY, (gw.TRAEFIK_CHART, gw.TRAEFIK_REPOSITORY,
                                                            self.gateway.spec.traefik.version),
                                              gw.TRAEFIK_NAMESPACE, values))

    def compose_gateway(self) -> None:
        if not self.ready_or_composed(TRAEFIK_KEY, GATEWAY_CLASS_KEY):
            return
        self.response.desired[GATEWAY_CLASS_KEY] = Desired({
            "apiVersion": gw.GATEWAY_API_VERSION, "kind": "GatewayClass", "metadata": {"name": gw.GATEWAY_CLASS},
            "spec": {"controllerName": gw.TRAEFIK_CONTROLLER}},
            ready=condition_of(self.request.observed.get(GATEWAY_CLASS_KEY), "Accepted").get("status") == "True")
        if self.metallb_pool is not None and not self.ready_or_composed(POOL_KEY, GATEWAY_KEY):
            return
        self.response.desired[GATEWAY_KEY] = Desired({
            "apiVersion": gw.GATEWAY_API_VERSION, "kind": "Gateway",
            "metadata": {"name": gw.GATEWAY_NAME, "namespace": gw.GATEWAY_NAMESPACE},
            "spec": {"gatewayClassName": gw.GATEWAY_CLASS, "listeners": [{
                "name": "web", "protocol": "HTTP", "port": gw.TRAEFIK_WEB_PORT,
                "allowedRoutes": {"namespaces": {"from": "All"}}}]}},
            ready=gateway_address(self.request.observed.get(GATEWAY_KEY)) is not None)

    def compose_status(self) -> None:
        traefik_ready = is_ready(self.request.observed.get(TRAEFIK_KEY))
        self.condition(CONTROLLER_READY, "True" if traefik_ready else "False",
                       "ControllerHealthy" if traefik_ready else "Installing",
                       "Traefik is ready" if traefik_ready else "waiting for Traefik's release to become ready")
        observed = self.request.observed.get(GATEWAY_KEY)
        address = gateway_address(observed)
        self.response.status["address"] = address
        if address:
            self.condition(ADDRESS_ASSIGNED, "True", "AddressAssigned", f"the gateway is reachable at {address}")
        elif observed is None:
            self.condition(ADDRESS_ASSIGNED, "False", "Creating", "waiting for the Gateway to be composed")
        else:
            how = (f"MetalLB's pool {self.metallb_pool} has no free address" if self.metallb_pool
                   else "the control plane's cloud gave its load balancer no address")
            self.condition(ADDRESS_ASSIGNED, "False", "NoAddress",
                           f"Gateway {gw.GATEWAY_NAMESPACE}/{gw.GATEWAY_NAME} has no address: {how}; set "
                           "spec.traefik.loadBalancer: MetalLB with a free address pool on a control plane "
                           "without a cloud load balancer")

    # ---- helpers

    @property
    def metallb_pool(self) -> str | None:
        assert self.gateway is not None
        traefik = self.gateway.spec.traefik
        if traefik is None or traefik.load_balancer != "MetalLB" or traefik.metallb is None:
            return None
        return traefik.metallb.address_pool

    def ready_or_composed(self, needed: str, key: str) -> bool:
        """Whether `key` may be composed: what it needs is ready, or it was composed already."""
        return is_ready(self.request.observed.get(needed)) or key in self.request.observed

    def release(self, key: str, chart: tuple[str, str, str], namespace: str, values: dict | None) -> dict:
        assert self.gateway is not None
        return helm_release(composed_name(self.gateway.metadata.name, key, scope=InferenceGateway.KIND),
                            CONTROL_PLANE_PROVIDER_CONFIG, chart, namespace, values)


def compose_inference_gateway(request: Request) -> Response:
    return InferenceGatewayComposer(request).compose()
