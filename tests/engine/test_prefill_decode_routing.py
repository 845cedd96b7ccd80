"""Prefill/decode end to end in the embedded engine: the prefill/decode recipe's cluster installs the
Inference Extension's CRDs and Envoy AI Gateway, its replica's InferencePool is created, and
`inferplane route` reaches the decode engine through it; without the AI gateway (a stack that does
not install it) the InferencePool backend does not resolve, and without the CRDs the pool is never
created."""

from pathlib import Path

import pytest

from inferplane.cli.route_report import route_report
from inferplane.simulator.provider import SimulatedProvider
from inferplane.engine.control_plane import ControlPlane

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "qwen2.5-0.5b-prefill-decode-eks"
REPLICA = "qwen2-5-0-5b-pd-eks-l4-pd-0"
REACHED = (f"cluster eks-l4-pd's gateway, HTTPRoute default/{REPLICA} -> InferencePool default/{REPLICA}-pool:8000 "
           f"/v1/completions -> decode: Deployment default/{REPLICA}-decode (prefill: Deployment default/{REPLICA}-prefill)")


@pytest.fixture(scope="module")
def objects():
    runtime = ControlPlane(None)
    try:
        result = runtime.apply([RECIPE])
        assert result.admission.ok and result.report.converged
        yield runtime.list()
    finally:
        runtime.close()


def component(obj):
    return (obj["metadata"].get("labels") or {}).get("inferplane.dev/component")


def ready(obj):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"]["conditions"])


def test_the_clusters_stack_installs_the_crds_and_the_ai_gateway(objects):
    installed = {component(o): o for o in objects if o["kind"] in ("Release", "Object") and component(o)}
    for key in ("crd-inferencepools-inference-networking-k8s-io", "ai-gateway-crds", "ai-gateway", "envoy-gateway"):
        assert ready(installed[key]), key
    pool = next(o for o in objects if o["kind"] == "Object"
                and o["spec"]["forProvider"]["manifest"]["kind"] == "InferencePool")
    assert ready(pool)


def test_the_route_reaches_the_decode_engine_through_the_inference_pool(objects):
    report, routed = route_report(objects, "ml-team", "qwen-pd", "/v1/completions", "POST")
    assert routed, report
    assert report.splitlines()[-1] == f"  ml-team/{REPLICA}: {REACHED}"


def without(objects, key):
    return [o for o in objects if component(o) != key]


@pytest.mark.parametrize("missing", ["ai-gateway", "ai-gateway-crds", "crd-inferencepools-inference-networking-k8s-io"])
def test_without_the_ai_gateway_the_inference_pool_route_does_not_resolve(objects, missing):
    report, routed = route_report(without(objects, missing), "ml-team", "qwen-pd", "/v1/completions", "POST")
    assert not routed
    assert report.splitlines()[-1] == (
        f"  ml-team/{REPLICA}: cluster eks-l4-pd's gateway, HTTPRoute default/{REPLICA} -> no backend: InferencePool "
        f"default/{REPLICA}-pool is unresolved: cluster eks-l4-pd's stack does not install the Inference Extension's "
        "CRDs and Envoy AI Gateway, without which Envoy Gateway refuses the backend (500)")


def test_an_envoy_gateway_without_the_extension_manager_does_not_resolve_it(objects):
    changed = []
    for obj in objects:
        if component(obj) == "envoy-gateway":
            obj = {**obj, "spec": {**obj["spec"], "forProvider": {**obj["spec"]["forProvider"], "values": {}}}}
        changed.append(obj)
    report, routed = route_report(changed, "ml-team", "qwen-pd", "/v1/completions", "POST")
    assert not routed and "is unresolved" in report


# ---- the provider: an InferencePool is created only where its CRD is


def pool_object(cluster):
    return {"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object",
            "metadata": {"name": "qwen-0-inference-pool", "namespace": "ml"},
            "spec": {"providerConfigRef": {"kind": "ClusterProviderConfig", "name": cluster},
                     "readiness": {"policy": "SuccessfulCreate"},
                     "forProvider": {"manifest": {"apiVersion": "inference.networking.k8s.io/v1",
                                                  "kind": "InferencePool",
                                                  "metadata": {"name": "qwen-0-pool", "namespace": "default"}}}}}


def test_an_inference_pool_is_created_only_on_a_cluster_whose_stack_applies_its_crd(objects):
    crds = [o for o in objects if o["kind"] == "Object"
            and o["spec"]["forProvider"]["manifest"]["kind"] == "CustomResourceDefinition"]
    provider = SimulatedProvider()
    created = provider.observe(pool_object("eks-l4-pd"), lambda kind: crds if kind == "Object" else [])
    assert [c["status"] for c in created["conditions"]] == ["True", "True"]
    elsewhere = provider.observe(pool_object("bare"), lambda kind: crds if kind == "Object" else [])
    assert {c["type"]: (c["status"], c["reason"]) for c in elsewhere["conditions"]} == {
        "Ready": ("False", "Unavailable"), "Synced": ("False", "ReconcileError")}
    assert next(c["message"] for c in elsewhere["conditions"] if c["type"] == "Synced") == (
        'cannot create object: no matches for kind "InferencePool" in version "inference.networking.k8s.io/v1" on '
        "cluster bare: its serving stack does not install the CustomResourceDefinition")
    only_experimental = [o for o in crds if o["spec"]["forProvider"]["manifest"]["spec"]["group"] != "inference.networking.k8s.io"]
    assert provider.observe(pool_object("eks-l4-pd"), lambda kind: only_experimental)["conditions"][0]["status"] == "False"
