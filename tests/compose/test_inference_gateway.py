"""InferenceGateway composition: Traefik (and MetalLB with its pool), then the GatewayClass and Gateway,
each once what it needs is ready; the Gateway's address as status.address; every Gateway API object
as Gateway API v1.5.1 accepts it."""

import pytest

from inferplane.compose.base import Request
from inferplane.compose.inference_gateway import compose_inference_gateway

READY = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}}


def gateway(name="default", **traefik):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceGateway", "metadata": {"name": name},
            "spec": {"backend": "Traefik", "traefik": {"version": "40.2.0", **traefik}}}


METALLB = {"loadBalancer": "MetalLB", "metallb": {"addressPool": "172.18.255.200-172.18.255.250"}}


def observed_ready(*keys, address=None):
    out = {key: READY for key in keys}
    if address:
        out["gateway"] = {"status": {"addresses": [{"type": "IPAddress", "value": address}]}}
    return out


def test_first_pass_installs_traefik_and_metallb_only():
    response = compose_inference_gateway(Request(gateway(**METALLB)))
    assert list(response.desired) == ["provider-config-helm", "metallb", "traefik"]
    traefik = response.desired["traefik"].resource
    assert traefik["spec"]["forProvider"]["chart"] == {
        "name": "traefik", "repository": "https://traefik.github.io/charts", "version": "40.2.0"}
    assert traefik["spec"]["forProvider"]["namespace"] == "traefik-system"
    assert traefik["spec"]["forProvider"]["values"]["gateway"] == {"enabled": False}
    assert response.desired["metallb"].resource["spec"]["forProvider"]["chart"] == {
        "name": "metallb", "repository": "https://metallb.github.io/metallb", "version": "0.14.9"}
    assert traefik["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "inferplane-control-plane"}
    assert {c.type: (c.status, c.reason) for c in response.conditions} == {
        "ControllerReady": ("False", "Installing"), "AddressAssigned": ("False", "Creating")}


def test_once_ready_the_pool_then_the_gateway_then_the_address():
    second = compose_inference_gateway(Request(gateway(**METALLB), observed_ready("metallb", "traefik")))
    assert list(second.desired) == ["provider-config-helm", "metallb", "metallb-pool", "metallb-l2", "traefik",
                                    "gateway-class"]
    assert second.desired["metallb-pool"].resource["spec"] == {"addresses": ["172.18.255.200-172.18.255.250"]}
    third = compose_inference_gateway(Request(gateway(**METALLB), observed_ready(
        "metallb", "traefik", "metallb-pool", "gateway-class", address="172.18.255.200")))
    assert third.desired["gateway"].resource == {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "inferplane", "namespace": "inferplane-system"},
        "spec": {"gatewayClassName": "traefik", "listeners": [
            {"name": "web", "protocol": "HTTP", "port": 8000, "allowedRoutes": {"namespaces": {"from": "All"}}}]}}
    assert third.desired["gateway"].ready is True
    assert third.status["address"] == "172.18.255.200"
    assert third.condition("AddressAssigned").reason == "AddressAssigned"


def test_a_cloud_load_balancer_needs_no_metallb():
    response = compose_inference_gateway(Request(gateway(), observed_ready("traefik")))
    assert list(response.desired) == ["provider-config-helm", "traefik", "gateway-class", "gateway"]


def test_a_gateway_without_an_address_says_so():
    response = compose_inference_gateway(Request(gateway(), {**observed_ready("traefik"), "gateway": {"status": {}}}))
    condition = response.condition("AddressAssigned")
    assert (condition.status, condition.reason) == ("False", "NoAddress")
    assert "the control plane's cloud gave its load balancer no address" in condition.message


def test_a_gateway_not_named_default_composes_nothing_and_says_why():
    response = compose_inference_gateway(Request(gateway("edge")))
    assert response.desired == {}
    assert response.condition("AddressAssigned").message == (
        "InferenceGateway edge is not used: ModelServices route through the InferenceGateway named default only "
        "(one per control plane); rename it")


@pytest.mark.parametrize("traefik", [{}, METALLB], ids=["cloud", "metallb"])
def test_gateway_api_objects_validate_against_the_v1_5_1_crds(traefik, gateway_api_crds, crossplane_crds):
    everything = observed_ready("metallb", "traefik", "metallb-pool", "gateway-class", address="172.18.255.200")
    response = compose_inference_gateway(Request(gateway(**traefik), everything))
    kinds = {d.resource["kind"] for d in response.desired.values()}
    assert {"GatewayClass", "Gateway"} <= kinds
    for desired in response.desired.values():
        obj = desired.resource
        schemas = gateway_api_crds if obj["apiVersion"].startswith("gateway.networking") else \
            crossplane_crds if obj["apiVersion"].startswith("helm.") else None
        if schemas is not None:
            assert [v.message for v in schemas.validate(obj)] == [], obj["kind"]
