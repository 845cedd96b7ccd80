"""Inside a cluster, a route whose backend is an InferencePool reaches the pool's decode engines only
where the cluster's gateway resolves InferencePool backends (the Inference Extension's CRDs and Envoy
AI Gateway installed); elsewhere the backend is unresolved and the gateway answers 500."""

from inferplane.routing.travel import ClusterRoutes, travel

GATEWAY = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "inference-gateway",
           "namespace": "envoy-gateway-system"}
CLUSTER_ADDRESS = "198.18.0.7"


def cluster_route(backend):
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "qwen-0", "namespace": "default"},
            "spec": {"parentRefs": [GATEWAY], "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/ml/qwen-0/"}}],
                "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {
                    "type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}],
                "backendRefs": [backend]}]}}


POOL_REF = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "qwen-0-pool"}
POOL = {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
        "metadata": {"name": "qwen-0-pool", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"inferplane.dev/serving": "qwen-0"}}, "targetPorts": [{"number": 8000}],
                 "endpointPickerRef": {"name": "qwen-0-epp", "port": {"number": 9002}}}}


def engine(name, phase, kind="Deployment", serving="qwen-0"):
    labels = {"inferplane.dev/serving": serving, "llm-d.ai/role": phase}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "engine", "image": "x:v1.0.0"}]}}
    spec = ({"template": template} if kind == "Deployment"
            else {"leaderWorkerTemplate": {"leaderTemplate": template, "workerTemplate": template}})
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec}


ENGINES = [engine("qwen-0-prefill", "prefill"), engine("qwen-0-decode", "decode")]

# The control plane's side: the service's route to the replica's endpoint at the cluster's gateway.
CONTROL_PLANE = [
    {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
     "metadata": {"name": "qwen", "namespace": "ml"},
     "spec": {"parentRefs": [{"name": "inferplane", "namespace": "inferplane-system"}], "rules": [{
         "matches": [{"path": {"type": "PathPrefix", "value": "/ml/qwen/"}}],
         "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {
             "type": "ReplacePrefixMatch", "replacePrefixMatch": "/ml/qwen-0/"}}}],
         "backendRefs": [{"name": "qwen-0-endpoint", "port": 80}]}]}},
    {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelEndpoint", "metadata": {"name": "qwen-0", "namespace": "ml"},
     "spec": {"url": f"http://{CLUSTER_ADDRESS}/ml/qwen-0/v1", "rewritePath": "/ml/qwen-0/"},
     "status": {"routing": {"backendName": "qwen-0-endpoint"}}},
    {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
     "metadata": {"name": "qwen-0-endpoint", "namespace": "ml", "labels": {"kubernetes.io/service-name": "qwen-0-endpoint"}},
     "endpoints": [{"addresses": [CLUSTER_ADDRESS]}]},
]


def leg(cluster):
    trip = travel(CONTROL_PLANE, "172.18.255.200", "ml", "qwen", "/v1/completions",
                  clusters={CLUSTER_ADDRESS: cluster})
    [hop] = trip.hops
    assert hop.url == f"http://{CLUSTER_ADDRESS}/ml/qwen-0/v1/completions"
    return hop.cluster


def test_with_the_ai_gateway_the_pool_sends_to_its_decode_engine():
    got = leg(ClusterRoutes("lab", [cluster_route(POOL_REF)], [POOL], ENGINES, resolves_inference_pools=True))
    assert (got.route, got.backends, got.problem) == ("default/qwen-0", [
        "InferencePool default/qwen-0-pool:8000 /v1/completions -> decode: Deployment default/qwen-0-decode "
        "(prefill: Deployment default/qwen-0-prefill)"], None)


def test_without_the_ai_gateway_the_pool_is_unresolved():
    got = leg(ClusterRoutes("lab", [cluster_route(POOL_REF)], [POOL], ENGINES, resolves_inference_pools=False))
    assert (got.route, got.backends) == ("default/qwen-0", [])
    assert got.problem == ("InferencePool default/qwen-0-pool is unresolved: cluster lab's stack does not install the "
                           "Inference Extension's CRDs and Envoy AI Gateway, without which Envoy Gateway refuses the "
                           "backend (500)")


def test_a_service_backend_needs_no_ai_gateway():
    service = {"group": "", "kind": "Service", "name": "qwen-0", "port": 80}
    got = leg(ClusterRoutes("lab", [cluster_route(service)], resolves_inference_pools=False))
    assert (got.backends, got.problem) == (["Service default/qwen-0:80 /v1/completions"], None)


def test_a_pool_that_was_not_created_or_selects_no_decode_engine_reaches_nothing():
    missing = leg(ClusterRoutes("lab", [cluster_route(POOL_REF)], [], ENGINES, resolves_inference_pools=True))
    assert (missing.backends, missing.problem) == (
        [], "InferencePool default/qwen-0-pool does not exist on cluster lab (500)")
    prefill_only = leg(ClusterRoutes("lab", [cluster_route(POOL_REF)], [POOL], ENGINES[:1],
                                     resolves_inference_pools=True))
    assert (prefill_only.backends, prefill_only.problem) == (
        [], "InferencePool default/qwen-0-pool selects no decode engine: its endpoint picker has nowhere to send (503)")
    others = [engine("other-decode", "decode", serving="other-0")]
    assert leg(ClusterRoutes("lab", [cluster_route(POOL_REF)], [POOL], others, resolves_inference_pools=True)).backends == []


def test_a_gangs_leader_is_the_decode_engine_the_pool_reaches():
    gang = [engine("qwen-0-decode", "decode", kind="LeaderWorkerSet")]
    got = leg(ClusterRoutes("lab", [cluster_route(POOL_REF)], [POOL], gang, resolves_inference_pools=True))
    assert got.backends == ["InferencePool default/qwen-0-pool:8000 /v1/completions -> decode: "
                            "LeaderWorkerSet default/qwen-0-decode"]
