"""ModelService composition: one HTTPRoute on the control plane gateway, weighted per entry, rewritten per
endpoint; its address once the gateway has one; conditions naming the entries that resolved to nothing."""

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
    response = compose(service((95, STABLE), (5, CANARY)), GATEWAY, stable, canary, observed={"httproute": {}})
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
