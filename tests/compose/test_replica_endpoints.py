"""Per-replica routing: a replica's HTTPRoute on its cluster's gateway, and the ModelEndpoint its
deployment composes for it only once it is Ready on a cluster whose gateway has an address."""

import copy

from inferplane.compose.model_deployment import compose_model_deployment

from test_deployment_placement import LAB, NOT_READY, deployment, full_request, replica_on
from test_model_replica import compose, pd_replica, replica


def test_a_replica_is_served_under_its_path_on_its_clusters_gateway(gateway_api_crds):
    route = compose(replica()).desired["route"].resource["spec"]["forProvider"]["manifest"]
    assert route == {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "qwen-0", "namespace": "default", "labels": {"inferplane.dev/replica": "qwen-0"}},
        "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference-gateway",
                                 "namespace": "envoy-gateway-system"}],
                 "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/team-a/qwen-0/"}}],
                            "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {
                                "type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}],
                            "backendRefs": [{"group": "", "kind": "Service", "name": "qwen-0", "port": 80}]}]}}
    assert [v.message for v in gateway_api_crds.validate(route)] == []


def test_prefill_decode_routes_to_the_inference_pool():
    route = compose(pd_replica()).desired["route"].resource["spec"]["forProvider"]["manifest"]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "qwen-0-pool"}]


def with_gateway(cluster, address):
    out = copy.deepcopy(cluster)
    out["status"]["gateway"] = {"address": address}
    return out


def endpoints(response):
    return {key: d.resource for key, d in response.desired.items() if d.resource["kind"] == "ModelEndpoint"}


def test_a_ready_replica_on_a_cluster_with_a_gateway_address_gets_its_endpoint():
    ready = replica_on("lab")
    response = compose_model_deployment(full_request(
        deployment(), [with_gateway(LAB, "198.19.1.45")], [ready], observed={"replica-lab-0": ready}))
    assert endpoints(response) == {"endpoint-lab-0": {
        "apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelEndpoint",
        "metadata": {"name": "qwen-lab-0", "namespace": "ml",
                     "labels": {"team": "ml", "inferplane.dev/deployment": "qwen", "inferplane.dev/cluster": "lab",
                                "inferplane.dev/replica-index": "0"}},
        "spec": {"url": "http://198.19.1.45/ml/qwen-lab-0/v1", "rewritePath": "/ml/qwen-lab-0/"}}}


def test_no_endpoint_while_the_replica_is_not_ready_or_its_gateway_has_no_address():
    starting = replica_on("lab", conditions=NOT_READY)
    not_ready = compose_model_deployment(full_request(
        deployment(), [with_gateway(LAB, "198.19.1.45")], [starting], observed={"replica-lab-0": starting}))
    assert endpoints(not_ready) == {}
    ready = replica_on("lab")
    no_address = compose_model_deployment(full_request(deployment(), [LAB], [ready], observed={"replica-lab-0": ready}))
    assert endpoints(no_address) == {}
    # The replica itself is composed either way.
    assert "replica-lab-0" in not_ready.desired and "replica-lab-0" in no_address.desired


def test_an_endpoint_is_withdrawn_when_its_replica_stops_being_ready():
    ready, failing = replica_on("lab"), replica_on("lab", conditions=NOT_READY)
    gateway = [with_gateway(LAB, "198.19.1.45")]
    before = compose_model_deployment(full_request(deployment(), gateway, [ready], observed={"replica-lab-0": ready}))
    observed = {"replica-lab-0": failing, "endpoint-lab-0": before.desired["endpoint-lab-0"].resource}
    after = compose_model_deployment(full_request(deployment(), gateway, [failing], observed=observed))
    assert "endpoint-lab-0" in before.desired and "endpoint-lab-0" not in after.desired
