"""ModelService composition: one HTTPRoute on the control plane gateway, under /<namespace>/<name>/,
splitting traffic over the ModelEndpoints its entries select.

Each entry selects ModelEndpoints of the service's namespace by label (an HTTPRoute reaches Services
of its own namespace without a ReferenceGrant); an endpoint selected by several entries counts for
the first. Only endpoints with a backend (`status.routing.backendName`) are routed to. An entry's
weight is its whole share, spread evenly over its endpoints (routing/weights.py); each backendRef
rewrites the service's prefix to its endpoint's `rewritePath`, so endpoints with different path
conventions sit behind one address. An entry that selects nothing routable gets no traffic, and the
EndpointsResolved condition names it.

Conditions this function sets:
- `EndpointsResolved`: True (`Resolved`) when every entry has endpoints; True (`PartiallyResolved`)
  when some do, naming those that do not; False (`NoEndpoints`) when none do (the route stays, with no
  backend: the gateway answers 500 rather than another service's traffic).
- `RoutingReady`, as Modelplane sets it: True (`RouteConfigured`) once the route is observed accepted
  by its Gateway (a parent's `Accepted` condition, which Traefik writes) and has a backend; False
  (`Configuring`) until then, both without a message. Ours besides: False (`WaitingForGateway`) while
  InferenceGateway `default` has no address, False (`NoEndpoints`) when no entry selects any endpoint.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from inferplane.api.inference_gateway import DEFAULT_GATEWAY_NAME, InferenceGateway
from inferplane.api.model_endpoint import ModelEndpoint
from inferplane.api.model_service import EndpointsEntry, ModelService
from inferplane.compose.base import Composer, Desired, Event, Request, Requirement, Response, composite_name, \
    validation_problems
from inferplane.routing import gateway as gw
from inferplane.routing.addresses import url_target
from inferplane.routing.weights import spread

GATEWAY_REQUIREMENT = "inference-gateway"
ROUTE_KEY = "httproute"
ENDPOINTS_RESOLVED = "EndpointsResolved"
ROUTING_READY = "RoutingReady"


def accepted(route: dict[str, Any] | None) -> bool:
    """Whether a parent of the observed route accepted it (Gateway API nests a route's conditions under
    status.parents[])."""
    return any(condition.get("type") == "Accepted" and condition.get("status") == "True"
               for parent in ((route or {}).get("status") or {}).get("parents") or []
               for condition in parent.get("conditions") or [])


def endpoints_requirement(index: int) -> str:
    return f"endpoints-{index}"


def selector_text(entry: EndpointsEntry) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(entry.selector.match_labels.items()))


def backend_name(endpoint: dict[str, Any]) -> str | None:
    routing = (endpoint.get("status") or {}).get("routing") or {}
    name = routing.get("backendName") if isinstance(routing, dict) else None
    return name if isinstance(name, str) and name else None


class ModelServiceComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.service: ModelService | None = None
        self.selected = 0

    def compose(self) -> Response:
        if not self.read_service():
            return self.response
        gateway, groups = self.require_inputs()
        if groups is None:
            return self.response
        self.compose_route(groups, gateway)
        return self.response

    # ---- steps

    def read_service(self) -> bool:
        try:
            self.service = ModelService.model_validate(self.request.composite)
            return True
        except ValidationError as error:
            self.keep_observed()
            self.condition(ROUTING_READY, "False", "InvalidSpec",
                           f"ModelService {composite_name(self.request.composite)} is invalid "
                           f"({validation_problems(error)}): fix the spec; its route is kept as it is")
            return False

    def require_inputs(self) -> tuple[dict | None, list[list[dict]] | None]:
        """The gateway and, per entry, the routable endpoints it selects (None: not answered yet). Sets
        `self.selected`: how many endpoints the entries select, routable or not."""
        assert self.service is not None
        requirements = {GATEWAY_REQUIREMENT: Requirement(
            InferenceGateway.api_version_string(), InferenceGateway.KIND, DEFAULT_GATEWAY_NAME)}
        for index, entry in enumerate(self.service.spec.endpoints):
            requirements[endpoints_requirement(index)] = Requirement(
                ModelEndpoint.api_version_string(), ModelEndpoint.KIND, namespace=self.namespace,
                match_labels=tuple(sorted(entry.selector.match_labels.items())))
        self.response.requirements.update(requirements)
        if any(name not in self.request.required for name in requirements):
            return None, None
        seen: set[str] = set()
        groups = []
        for index in range(len(self.service.spec.endpoints)):
            group = []
            for endpoint in sorted(self.request.required[endpoints_requirement(index)] or [],
                                   key=lambda e: e["metadata"]["name"]):
                name = endpoint["metadata"]["name"]
                if name in seen:
                    continue
                seen.add(name)
                if backend_name(endpoint) is not None:
                    group.append(endpoint)
            groups.append(group)
        self.selected = len(seen)
        return self.request.required[GATEWAY_REQUIREMENT], groups

    def compose_route(self, groups: list[list[dict]], gateway: dict | None) -> None:
        assert self.service is not None
        entries = self.service.spec.endpoints
        weights = spread([(entry.weight, len(group)) for entry, group in zip(entries, groups)])
        prefix = gw.service_prefix(self.namespace, self.name)
        rule: dict[str, Any] = {"matches": [{"path": {"type": "PathPrefix", "value": prefix}}]}
        refs = [self.backend_ref(endpoint, weight)
                for group, group_weights in zip(groups, weights) for endpoint, weight in zip(group, group_weights)]
        if refs:
            rule["backendRefs"] = refs
        address = (((gateway or {}).get("status") or {}).get("address"))
        route = {
            "apiVersion": gw.GATEWAY_API_VERSION, "kind": "HTTPRoute",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"parentRefs": [{"group": gw.GATEWAY_API_GROUP, "kind": "Gateway", "name": gw.GATEWAY_NAME,
                                     "namespace": gw.GATEWAY_NAMESPACE}],
                     "rules": [rule]},
        }
        found = sum(len(group) for group in groups)
        # As Modelplane: ready once the gateway has accepted the route as observed, with a backend on it.
        ready = bool(address) and found > 0 and accepted(self.request.observed.get(ROUTE_KEY))
        self.response.desired[ROUTE_KEY] = Desired(route, ready=ready)
        self.response.status["address"] = gw.service_url(address, self.namespace, self.name) if address else None
        self.report(entries, groups, address, ready)

    def backend_ref(self, endpoint: dict[str, Any], weight: int) -> dict[str, Any]:
        spec = endpoint.get("spec") or {}
        ref: dict[str, Any] = {"group": "", "kind": "Service", "name": backend_name(endpoint),
                               "port": url_target(spec["url"]).port, "weight": weight}
        if spec.get("rewritePath"):
            ref["filters"] = [{"type": "URLRewrite", "urlRewrite": {"path": {
                "type": "ReplacePrefixMatch", "replacePrefixMatch": spec["rewritePath"]}}}]
        return ref

    def report(self, entries: list[EndpointsEntry], groups: list[list[dict]], address: str | None,
               ready: bool) -> None:
        empty = [f"spec.endpoints[{i}] ({selector_text(entry)}, weight {entry.weight})"
                 for i, (entry, group) in enumerate(zip(entries, groups)) if not group]
        where = f"no ModelEndpoint with a backend in namespace {self.namespace} matches"
        found = sum(len(group) for group in groups)
        if not empty:
            self.condition(ENDPOINTS_RESOLVED, "True", "Resolved",
                           f"{found} endpoint(s) from {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}")
        elif found:
            them = "that entry gets" if len(empty) == 1 else "those entries get"
            message = (f"{where} {', '.join(empty)}: {them} no traffic, the others share it; check the labels, "
                       "or wait for the replicas to become ready")
            self.condition(ENDPOINTS_RESOLVED, "True", "PartiallyResolved", message)
            self.response.events.append(Event("Warning", "PartiallyResolved", message))
        else:
            message = (f"{where} any entry: {', '.join(empty)}; requests to the service get no backend: check the "
                       "selectors' labels, or wait for the deployments' replicas to become ready")
            self.condition(ENDPOINTS_RESOLVED, "False", "NoEndpoints", message)
            self.response.events.append(Event("Warning", "NoEndpoints", message))
        if not address:
            self.condition(ROUTING_READY, "False", "WaitingForGateway",
                           f"InferenceGateway {DEFAULT_GATEWAY_NAME} has no address yet: apply one (see "
                           "recipes) or wait for it")
        elif not self.selected:
            self.condition(ROUTING_READY, "False", "NoEndpoints", f"the route under "
                           f"{gw.service_prefix(self.namespace, self.name)} has no backend")
        elif ready:
            self.condition(ROUTING_READY, "True", "RouteConfigured", "")
        else:  # not observed accepted yet, or its endpoints wait for their backends
            self.condition(ROUTING_READY, "False", "Configuring", "")

    # ---- helpers

    @property
    def name(self) -> str:
        assert self.service is not None
        return self.service.metadata.name

    @property
    def namespace(self) -> str:
        assert self.service is not None
        return self.service.metadata.namespace or "default"


def compose_model_service(request: Request) -> Response:
    return ModelServiceComposer(request).compose()
