"""ModelService composition: one HTTPRoute on the control plane gateway, weighted per entry, rewritten per
endpoint; its address once the gateway has one; conditions naming the entries that resolved to nothing."""

import pytest

from inferplane.compose.base import Request, Requirement
from inferplane.compose.model_service import compose_model_service

GATEWAY = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceGateway", "metadata": {"name": "default"},
           "spec": {"backend": "Traefik", "traefik": {"version": "40.2.0"}}, "status": {"address": "172.18.255.200"}}


def service(*entries, name="qwen"):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelService",
            "metadata": {"name": name, "namespace": "ml-team"},
            "spec": {"endpoints": [{"weight": w, "selector": {"matchLabels": labels}} for w, labels in entries]}}


def endpoint(name, url, rewrite=None, backend=True):
    spec = {"url": url, **({"rewritePath": rewrite} if rewrite else {})}
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelEndpoint",
            "metadata": {"name": name, "namespace": "ml-team"}, "spec": spec,
            "status": {"routing": {"backendName": f"{name}-svc"} if backend else {}}}


STABLE = {"inferplane.dev/deployment": "qwen"}
CANARY = {"inferplane.dev/deployment": "qwen-canary"}


def route_as_observed(accepted):
    """The composed HTTPRoute as observed once Traefik answered for its Gateway."""
    return {"status": {"parents": [{
        "parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inferplane",
                      "namespace": "inferplane-system"}, "controllerName": "traefik.io/gateway-controller",
        "conditions": [{"type": "Accepted", "status": "True" if accepted else "False",
                        "reason": "Accepted" if accepted else "NoMatchingParent", "message": ""}]}]}}


ACCEPTED = route_as_observed(True)


def compose(composite, gateway=GATEWAY, *groups, observed=None):
    required = {"inference-gateway": gateway, **{f"endpoints-{i}": list(g) for i, g in enumerate(groups)}}
    return compose_model_service(Request(composite, observed or {}, required))


def test_first_call_asks_for_the_gateway_and_each_entry_by_labels():
    response = compose_model_service(Request(service((95, STABLE), (5, CANARY))))
    assert response.desired == {}
    assert response.requirements == {
        "inference-gateway": Requirement("inferplane.dev/v1alpha1", "InferenceGateway", "default"),
        "endpoints-0": Requirement("inferplane.dev/v1alpha1", "ModelEndpoint", namespace="ml-team",
                                   match_labels=(("inferplane.dev/deployment", "qwen"),)),
        "endpoints-1": Requirement("inferplane.dev/v1alpha1", "ModelEndpoint", namespace="ml-team",
                                   match_labels=(("inferplane.dev/deployment", "qwen-canary"),)),
    }


def test_canary_split_with_per_backend_rewrites(gateway_api_crds):
    stable = [endpoint(f"qwen-{i}", f"http://10.0.{i}.50/ml-team/qwen-{i}/v1", f"/ml-team/qwen-{i}/") for i in range(3)]
    canary = [endpoint("qwen-canary-0", "http://10.0.9.50:8080/v1", "/ml-team/qwen-canary-0/")]
    response = compose(service((95, STABLE), (5, CANARY)), GATEWAY, stable, canary, observed={"httproute": ACCEPTED})
    route = response.desired["httproute"].resource

    def rewrite(path):
        return [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch",
                                                               "replacePrefixMatch": path}}}]
    assert route == {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "qwen", "namespace": "ml-team"},
        "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inferplane",
                                 "namespace": "inferplane-system"}],
                 "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/ml-team/qwen/"}}],
                            "backendRefs": [
                                {"group": "", "kind": "Service", "name": "qwen-0-svc", "port": 80, "weight": 19,
                                 "filters": rewrite("/ml-team/qwen-0/")},
                                {"group": "", "kind": "Service", "name": "qwen-1-svc", "port": 80, "weight": 19,
                                 "filters": rewrite("/ml-team/qwen-1/")},
                                {"group": "", "kind": "Service", "name": "qwen-2-svc", "port": 80, "weight": 19,
                                 "filters": rewrite("/ml-team/qwen-2/")},
                                {"group": "", "kind": "Service", "name": "qwen-canary-0-svc", "port": 8080,
                                 "weight": 3, "filters": rewrite("/ml-team/qwen-canary-0/")}]}]},
    }
    assert [v.message for v in gateway_api_crds.validate(route)] == []
    assert response.status["address"] == "http://172.18.255.200/ml-team/qwen"
    assert response.desired["httproute"].ready is True
    assert {c.type: (c.status, c.reason) for c in response.conditions} == {
        "EndpointsResolved": ("True", "Resolved"), "RoutingReady": ("True", "RouteConfigured")}


def test_an_entry_that_selects_nothing_is_named_and_gets_no_share():
    stable = [endpoint("qwen-0", "http://10.0.0.50/v1", "/ml-team/qwen-0/")]
    response = compose(service((95, STABLE), (5, CANARY)), GATEWAY, stable, [endpoint("pending", "http://x/",
                                                                                       backend=False)])
    refs = response.desired["httproute"].resource["spec"]["rules"][0]["backendRefs"]
    assert [(r["name"], r["weight"]) for r in refs] == [("qwen-0-svc", 1)]
    condition = response.condition("EndpointsResolved")
    assert (condition.status, condition.reason) == ("True", "PartiallyResolved")
    assert condition.message.startswith(
        "no ModelEndpoint with a backend in namespace ml-team matches spec.endpoints[1] "
        "(inferplane.dev/deployment=qwen-canary, weight 5): that entry gets no traffic, the others share it")
    assert [e.reason for e in response.events] == ["PartiallyResolved"]


def test_nothing_selected_keeps_the_route_without_backends_and_is_not_ready(gateway_api_crds):
    response = compose(service((1, STABLE)), GATEWAY, [])
    route = response.desired["httproute"].resource
    assert route["spec"]["rules"] == [{"matches": [{"path": {"type": "PathPrefix", "value": "/ml-team/qwen/"}}]}]
    assert [v.message for v in gateway_api_crds.validate(route)] == []
    assert {c.type: (c.status, c.reason) for c in response.conditions} == {
        "EndpointsResolved": ("False", "NoEndpoints"), "RoutingReady": ("False", "NoEndpoints")}


def test_an_endpoint_two_entries_select_counts_for_the_first():
    both = endpoint("shared", "http://10.0.0.1/", "/")
    response = compose(service((3, STABLE), (1, CANARY)), GATEWAY, [both], [both, endpoint("c", "http://10.0.0.2/")])
    refs = response.desired["httproute"].resource["spec"]["rules"][0]["backendRefs"]
    assert [(r["name"], r["weight"], "filters" in r) for r in refs] == [("shared-svc", 3, True), ("c-svc", 1, False)]


def test_without_a_gateway_address_the_route_waits_and_there_is_no_address():
    response = compose(service((1, STABLE)), None, [endpoint("qwen-0", "http://10.0.0.50/", "/")])
    assert response.status["address"] is None
    assert response.desired["httproute"].ready is False
    assert response.condition("RoutingReady").reason == "WaitingForGateway"


# Modelplane v0.3.1's ModelService cases (functions/compose-model-service/tests/test_fn.py), each with a
# gateway address: (entries as (weight, labels), per entry the endpoints as (name, url, rewritePath,
# backend)). Modelplane's function gets no observed route in any of them and answers RoutingReady False,
# Configuring, without a message; it says RouteConfigured only once a parent of the observed route is
# Accepted and an endpoint has a backend.
PROD, CANARY_APP = {"app": "prod"}, {"app": "canary"}
MODELPLANE_CASES = {
    "endpoints with ready backends": ([(1, {"app": "model"})], [[("ep-1", "http://10.0.0.1/v1", "/v1/", True)]]),
    "endpoint without backend": ([(1, {"app": "model"})], [[("ep-1", "http://10.0.0.1/v1", None, False)]]),
    "same rewritePath": ([(1, {"app": "model"})], [[("ep-1", "http://10.0.0.1/v1", "/v1/", True),
                                                     ("ep-2", "http://10.0.0.1/v1", "/v1/", True)]]),
    "different rewritePaths": ([(1, {"app": "model"})], [[
        ("ep-a", "http://10.0.0.1/v1", "/v1/", True),
        ("ep-b", "https://api.groq.com/openai/v1", "/openai/v1/", True)]]),
    "weighted groups 80/20": ([(80, PROD), (20, CANARY_APP)], [
        [(f"ep-{i}", "http://10.0.0.1/v1", None, True) for i in (1, 2, 3)], [("ep-4", "http://10.0.0.1/v1", None, True)]]),
    "weights scale up": ([(1, PROD), (3, CANARY_APP)], [
        [(f"ep-{i}", "http://10.0.0.1/v1", None, True) for i in (1, 2)], [("ep-3", "http://10.0.0.1/v1", None, True)]]),
    "equal weights reduce": ([(2, PROD), (2, CANARY_APP)], [
        [("ep-1", "http://10.0.0.1/v1", None, True)], [("ep-2", "http://10.0.0.1/v1", None, True)]]),
    "weights clamp": ([(1_000_000, PROD), (1, CANARY_APP)], [
        [("ep-1", "http://10.0.0.1/v1", None, True)],
        [(f"ep-{i}", "http://10.0.0.1/v1", None, True) for i in (2, 3)]]),
}
OBSERVATIONS = {"not observed yet": None, "observed, not answered": {"status": {}},
                "observed, not accepted": route_as_observed(False), "observed accepted": ACCEPTED}


@pytest.mark.parametrize("observation", OBSERVATIONS)
@pytest.mark.parametrize("case", MODELPLANE_CASES)
def test_routing_is_ready_only_once_the_route_is_observed_accepted_with_a_backend(case, observation):
    entries, groups = MODELPLANE_CASES[case]
    endpoints = [[endpoint(name, url, rewrite, backend) for name, url, rewrite, backend in group] for group in groups]
    route = OBSERVATIONS[observation]
    response = compose(service(*entries), GATEWAY, *endpoints, observed={"httproute": route} if route else None)
    ready = observation == "observed accepted" and case != "endpoint without backend"
    condition = response.condition("RoutingReady")
    assert (condition.status, condition.reason, condition.message) == (
        ("True", "RouteConfigured", "") if ready else ("False", "Configuring", ""))
    assert response.desired["httproute"].ready is ready
    # The route is composed on every pass, with a backend per endpoint that has one.
    refs = response.desired["httproute"].resource["spec"]["rules"][0].get("backendRefs", [])
    assert [r["name"] for r in refs] == [f"{n}-svc" for group in groups for n, _, _, backend in group if backend]
    assert response.status["address"] == "http://172.18.255.200/ml-team/qwen"
