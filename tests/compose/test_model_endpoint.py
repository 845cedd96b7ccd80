"""ModelEndpoint composition: a selectorless Service and its EndpointSlice at the URL's host and port,
named in status.routing.backendName once both exist."""

import pytest

from inferplane.compose.base import Request
from inferplane.compose.model_endpoint import compose_model_endpoint


def endpoint(url, name="kimi-k2-together", rewrite="/"):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelEndpoint",
            "metadata": {"name": name, "namespace": "ml-team"}, "spec": {"url": url, "rewritePath": rewrite}}


SERVICE = "kimi-k2-together-backend-1eabe582722f"


def test_an_external_provider_becomes_a_service_and_an_fqdn_slice():
    response = compose_model_endpoint(Request(endpoint("https://api.together.xyz/")))
    assert {k: d.resource for k, d in response.desired.items()} == {
        "service": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVICE, "namespace": "ml-team"},
                    "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "appProtocol": "https"}]}},
        "endpointslice": {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": SERVICE, "namespace": "ml-team", "labels": {"kubernetes.io/service-name": SERVICE}},
            "addressType": "FQDN", "ports": [{"name": "https", "port": 443, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["api.together.xyz"], "conditions": {"ready": True}}]},
    }
    # Not routable until both exist.
    assert response.status["routing"] == {}
    assert (response.condition("RoutingReady").status, response.condition("RoutingReady").reason) == (
        "False", "WaitingForBackend")


def test_once_observed_the_backend_is_named():
    observed = {"service": {}, "endpointslice": {}}
    response = compose_model_endpoint(Request(endpoint("http://10.0.1.50:8080/ml-team/qwen/v1"), observed))
    assert response.status["routing"] == {"backendName": SERVICE}
    assert response.desired["endpointslice"].resource["addressType"] == "IPv4"
    assert response.desired["service"].resource["spec"]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert response.condition("RoutingReady").message == (
        f"Service ml-team/{SERVICE} forwards to 10.0.1.50:8080")


def test_an_unroutable_url_keeps_what_was_composed():
    running = {"service": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVICE, "namespace": "ml-team"},
                           "spec": {"ports": [{"port": 80}]}}}
    response = compose_model_endpoint(Request(endpoint("http://host:99999/"), running))
    assert response.desired["service"].resource["spec"] == {"ports": [{"port": 80}]}
    assert response.condition("RoutingReady").reason == "InvalidURL"
    assert "'http://host:99999/' has a port that is not a number from 1 to 65535" in \
        response.condition("RoutingReady").message


@pytest.fixture(scope="module")
def kubernetes_schema():
    import kubernetes_validate

    def violations(obj):
        try:
            kubernetes_validate.validate(obj, "1.36", strict=True)
        except kubernetes_validate.ValidationError as error:
            return [error.message]
        return []
    return violations


@pytest.mark.parametrize("url", ["https://api.together.xyz/", "http://10.0.1.50/x", "http://[fd00::1]:8080/"])
def test_the_service_and_slice_validate_against_kubernetes_1_36(url, kubernetes_schema):
    response = compose_model_endpoint(Request(endpoint(url)))
    for desired in response.desired.values():
        assert kubernetes_schema(desired.resource) == []
