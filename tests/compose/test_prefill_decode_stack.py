"""What resolves a PrefillDecode replica's InferencePool backend on its cluster: every stack whose gateway
is on installs the Inference Extension's CRDs (vendored, v1.0.1) and Envoy AI Gateway (v0.7.0, its CRDs
chart and its controller chart), and Envoy Gateway's values hand InferencePool backends to AI Gateway's
extension server; each composed object is checked against the published CRDs."""

from pathlib import Path

import pytest
import yaml

from inferplane.accelerators.catalog import AI_GATEWAY_CONTROLLER, AI_GATEWAY_NAMESPACE
from inferplane.api.cloud import SOURCES
from inferplane.routing.inference_extension import CRDS_FILE, INFERENCE_POOL_API_VERSION, served_kinds
from kubernetes_schemas import schema_errors

from test_model_replica import compose as compose_replica
from test_model_replica import manifests, pd_replica
from test_serving_stack import compose

REPO = Path(__file__).resolve().parents[2]
CRD_KEYS = ["object-crd-inferenceobjectives-inference-networking-x-k8s-io",
            "object-crd-inferencepools-inference-networking-k8s-io",
            "object-crd-inferencepools-inference-networking-x-k8s-io"]
KUBECONFIG = {"name": "cluster-1-connection", "namespace": "inferplane-system", "key": "kubeconfig"}
# The Inference Extension release Modelplane v0.3.1 installs, as each of its CRDs is annotated
# (inferplane/data/gateway-api-inference-extension/SOURCE.md).
INFERENCE_EXTENSION_VERSION = "v1.0.1"
BUNDLE_VERSION_ANNOTATION = "inference.networking.k8s.io/bundle-version"


def vendored():
    return [d for d in yaml.safe_load_all(CRDS_FILE.read_text()) if d]


# ---- the vendored CRDs


def test_the_vendored_crds_are_the_release_modelplane_installs_and_serve_the_pool_we_compose():
    crds = vendored()
    assert [c["metadata"]["name"] for c in crds] == [
        "inferenceobjectives.inference.networking.x-k8s.io", "inferencepools.inference.networking.k8s.io",
        "inferencepools.inference.networking.x-k8s.io"]
    assert {c["metadata"]["annotations"][BUNDLE_VERSION_ANNOTATION] for c in crds} == {INFERENCE_EXTENSION_VERSION}
    assert (INFERENCE_POOL_API_VERSION, "InferencePool") in served_kinds()
    pool = manifests(compose_replica(pd_replica()))["inference-pool"]
    assert (pool["apiVersion"], pool["kind"]) in served_kinds()
    # Server-owned fields are stripped, or the Object applying a CRD would never match what it observes.
    assert not any("status" in c or "creationTimestamp" in c["metadata"] for c in crds)


def test_the_vendored_crds_are_valid_custom_resource_definitions():
    assert schema_errors(vendored(), "1.36") == []
    broken = vendored()[1]
    broken["spec"]["versions"][0]["served"] = "yes"
    assert schema_errors([broken], "1.36") != []  # the check can fail


def test_a_prefill_decode_replicas_pool_and_route_validate_against_the_vendored_and_gateway_api_crds(
        inference_extension_crds, gateway_api_crds):
    out = manifests(compose_replica(pd_replica()))
    assert [f"{v.path}: {v.message}" for v in inference_extension_crds.validate(out["inference-pool"])] == []
    assert [f"{v.path}: {v.message}" for v in gateway_api_crds.validate(out["route"])] == []
    broken = {**out["inference-pool"], "spec": {**out["inference-pool"]["spec"], "targetPorts": []}}
    assert inference_extension_crds.validate(broken) != []  # the check can fail


# ---- the stack


@pytest.mark.parametrize("cloud", SOURCES)
def test_every_stack_with_a_gateway_installs_the_crds_and_ai_gateway(cloud, crossplane_crds):
    response = compose(cloud, [], kubeconfigSecretRef=KUBECONFIG)
    for key in (*CRD_KEYS, "release-ai-gateway-crds", "release-ai-gateway", "release-envoy-gateway"):
        assert [f"{v.path}: {v.message}" for v in crossplane_crds.validate(response.desired[key].resource)] == [], key
    assert [response.desired[k].resource["spec"]["forProvider"]["manifest"] for k in CRD_KEYS] == vendored()


def test_ai_gateway_is_its_pinned_crds_chart_and_controller_chart():
    response = compose("Civo", [])
    releases = {key: response.desired[key].resource["spec"]["forProvider"]
                for key in ("release-ai-gateway-crds", "release-ai-gateway")}
    assert {key: (r["chart"], r["namespace"]) for key, r in releases.items()} == {
        "release-ai-gateway-crds": ({"name": "ai-gateway-crds-helm", "repository": "oci://docker.io/envoyproxy",
                                     "version": "v0.7.0"}, "envoy-ai-gateway-system"),
        "release-ai-gateway": ({"name": "ai-gateway-helm", "repository": "oci://docker.io/envoyproxy",
                                "version": "v0.7.0"}, "envoy-ai-gateway-system")}
    assert releases["release-ai-gateway"]["values"] == {
        "controller": {"image": {"repository": "docker.io/envoyproxy/ai-gateway-controller", "tag": "v0.7.0"}},
        "extProc": {"image": {"repository": "docker.io/envoyproxy/ai-gateway-extproc", "tag": "v0.7.0"}}}


def test_envoy_gateway_hands_inference_pool_backends_to_ai_gateways_extension_server():
    values = compose("Civo", []).desired["release-envoy-gateway"].resource["spec"]["forProvider"]["values"]
    envoy_gateway = values["config"]["envoyGateway"]
    manager = envoy_gateway["extensionManager"]
    assert envoy_gateway["extensionApis"] == {"enableBackend": True}
    # AI Gateway's controller Service and its extension server's gRPC port (ai-gateway-helm v0.7.0 values).
    assert manager["service"] == {"fqdn": {
        "hostname": f"{AI_GATEWAY_CONTROLLER}.{AI_GATEWAY_NAMESPACE}.svc.cluster.local", "port": 1063}}
    assert manager["hooks"]["xdsTranslator"]["post"] == ["Translation", "Cluster", "Route"]
    assert all(manager["hooks"]["xdsTranslator"]["translation"][part] == {"includeAll": True}
               for part in ("listener", "route", "cluster", "secret"))
    # The kind a PrefillDecode replica's route names, at the version the vendored CRDs serve.
    backend = manager["backendResources"]
    assert backend == [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}]
    ref = manifests(compose_replica(pd_replica()))["route"]["spec"]["rules"][0]["backendRefs"][0]
    assert (ref["group"], ref["kind"]) == (backend[0]["group"], backend[0]["kind"])
    assert (f"{backend[0]['group']}/{backend[0]['version']}", backend[0]["kind"]) in served_kinds()


def test_two_stacks_share_only_what_refuses_changes():
    """What equal stacks compose alike (a CRD's manifest, a chart's values) is one copy that refuses a change
    in place, so no change meant for one stack reaches another; the rest is each stack's own."""
    first, second = compose("Civo", []), compose("Civo", [])
    with pytest.raises(TypeError, match="cannot be changed in place"):
        first.desired["object-crd-inferencepools-inference-networking-k8s-io"].resource["spec"]["forProvider"][
            "manifest"]["spec"]["group"] = "changed"
    with pytest.raises(TypeError, match="cannot be changed in place"):
        first.desired["release-envoy-gateway"].resource["spec"]["forProvider"]["values"]["config"] = {}
    first.desired["release-envoy-gateway"].resource["metadata"]["name"] = "mine"
    assert second.desired["release-envoy-gateway"].resource["metadata"]["name"] != "mine"
    assert second.desired["object-crd-inferencepools-inference-networking-k8s-io"].resource["spec"]["forProvider"][
        "manifest"]["spec"]["group"] == "inference.networking.k8s.io"
    assert compose("Civo", []).desired["release-envoy-gateway"].resource["spec"]["forProvider"]["values"]["config"]
    assert compose("Civo", []).desired["object-crd-inferencepools-inference-networking-k8s-io"].resource["spec"][
        "forProvider"]["manifest"]["spec"]["group"] == "inference.networking.k8s.io"


def test_a_stack_without_its_gateway_installs_neither():
    off = compose("Civo", [], gateway={"enabled": False})
    assert not any(key in off.desired for key in (*CRD_KEYS, "release-ai-gateway-crds", "release-ai-gateway"))
