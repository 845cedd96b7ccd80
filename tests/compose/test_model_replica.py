"""ModelReplica composition: the engine workloads, claims, placement, serving surface, and what a
replica that cannot be composed keeps; every rendered object checked against the published schemas."""

from pathlib import Path

import pytest
import yaml

from inferplane.compose.base import Request
from inferplane.compose.model_replica import compose_model_replica
from kubernetes_schemas import schema_errors

REPO = Path(__file__).resolve().parents[2]
PUBLISHED_CRDS = REPO / "inferplane" / "data" / "crds"


def load(path):
    return yaml.safe_load((REPO / path).read_text())


AMD_CLASS = load("recipes/qwen2.5-0.5b-amd/class.yaml")
AMD_CLUSTER = load("recipes/qwen2.5-0.5b-amd/cluster.yaml")
CPU_CLASS = load("recipes/qwen2.5-0.5b-cpu/class.yaml")
CPU_CLUSTER = load("recipes/qwen2.5-0.5b-cpu/cluster.yaml")
NVIDIA_CLASS = load("recipes/qwen2.5-0.5b-nvidia-eks/class.yaml")
NVIDIA_CLUSTER = load("recipes/qwen2.5-0.5b-nvidia-eks/cluster.yaml")
CLASSES = {c["metadata"]["name"]: c for c in (AMD_CLASS, CPU_CLASS, NVIDIA_CLASS)}
CLUSTERS = {c["metadata"]["name"]: c for c in (AMD_CLUSTER, CPU_CLUSTER, NVIDIA_CLUSTER)}

AMD_SELECTORS = [{"cel": 'device.driver == "gpu.amd.com"'},
                 {"cel": 'device.attributes["gpu.amd.com"].productName == "AMD_Instinct_MI325X_OAM"'}]
ENGINE = {"name": "engine", "image": "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909",
          "args": ["--model", "Qwen/Qwen2.5-0.5B-Instruct", "--port", "8000"]}


def member(pool="mi325x", role="Standalone", requests=(("gpu", "gpu.amd.com", 1, AMD_SELECTORS),), labels=None,
           **extra):
    out = {"role": role, "nodePoolName": pool, "template": {"spec": {"containers": [dict(ENGINE)]}}, **extra}
    if labels:
        out["template"]["metadata"] = {"labels": labels}
    if requests:
        out["deviceRequests"] = [{"name": n, "deviceClassName": c, "count": k, "selectors": s}
                                 for n, c, k, s in requests]
    return out


def replica(engines=None, cluster="amd-lab", name="qwen-0", **spec):
    engines = engines or [{"name": "vllm", "members": [member()]}]
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelReplica",
            "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"clusterName": cluster, "engines": engines, **spec}}


def compose(composite, observed=None):
    """Compose as the runtime does: answer the function's requirements and call again."""
    required = {}
    for _ in range(4):
        response = compose_model_replica(Request(composite=composite, observed=observed or {}, required=required))
        missing = {k: r for k, r in response.requirements.items() if k not in required}
        if not missing:
            return response
        for key, requirement in missing.items():
            pool = CLASSES if requirement.kind == "InferenceClass" else CLUSTERS
            required[key] = pool.get(requirement.name)
    raise AssertionError("requirements never settled")


def manifests(response):
    return {key: d.resource["spec"]["forProvider"]["manifest"] for key, d in response.desired.items()}


def pod_spec(response, key="workload-vllm"):
    return manifests(response)[key]["spec"]["template"]["spec"]


def test_standalone_engine_is_a_deployment_with_one_claim_template_per_device_request():
    response = compose(replica([{"name": "vllm", "copies": 2, "members": [member(
        requests=[("gpu", "gpu.amd.com", 2, AMD_SELECTORS), ("nic", "dranet", 1, [{"cel": "true"}])])]}]))
    out = manifests(response)
    assert sorted(out) == ["claim-vllm-standalone-gpu", "claim-vllm-standalone-nic", "route", "service",
                           "workload-vllm"]
    deployment = out["workload-vllm"]
    assert (deployment["kind"], deployment["metadata"]["name"], deployment["spec"]["replicas"]) == \
        ("Deployment", "qwen-0-vllm", 2)
    assert out["claim-vllm-standalone-gpu"] == {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "qwen-0-vllm-standalone-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.amd.com", "allocationMode": "ExactCount", "count": 2,
            "selectors": [{"cel": {"expression": 'device.driver == "gpu.amd.com"'}},
                          {"cel": {"expression": 'device.attributes["gpu.amd.com"].productName == '
                                                 '"AMD_Instinct_MI325X_OAM"'}}]}}]}}}}
    spec = pod_spec(response)
    assert spec["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "qwen-0-vllm-standalone-gpu"},
        {"name": "nic", "resourceClaimTemplateName": "qwen-0-vllm-standalone-nic"}]
    assert spec["containers"][0]["resources"] == {"claims": [{"name": "gpu"}, {"name": "nic"}]}


def test_the_engine_container_is_the_users_as_written():
    container = pod_spec(compose(replica()))["containers"][0]
    assert container == {**ENGINE, "resources": {"claims": [{"name": "gpu"}]}}


@pytest.mark.parametrize("cluster, pool, klass, toleration", [
    ("amd-lab", "mi325x", "gpu.amd.com",
     {"key": "amd.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}),
    ("civo-cpu", "cpu", "dra.cpu",
     {"key": "inferplane.dev/cpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}),
    ("eks-l4", "l4", "gpu.nvidia.com",
     {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}),
])
def test_pods_are_pinned_to_their_pool_and_tolerate_exactly_its_taints(cluster, pool, klass, toleration):
    spec = pod_spec(compose(replica([{"name": "vllm", "members": [
        member(pool=pool, requests=[("dev", klass, 1, [{"cel": "true"}])])]}], cluster=cluster)))
    assert spec["nodeSelector"] == {"inferplane.dev/pool": pool}
    assert spec["tolerations"] == [toleration]


def test_the_deployments_tolerations_follow_the_pools():
    own = [{"key": "fleet.example.com/maintenance", "operator": "Exists", "effect": "NoSchedule"},
           {"key": "tier", "operator": "Equal", "value": "gold"}]
    spec = pod_spec(compose(replica(tolerations=own)))
    assert spec["tolerations"] == [
        {"key": "amd.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "fleet.example.com/maintenance", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "tier", "operator": "Equal", "value": "gold"}]


def test_leader_and_workers_are_a_leader_worker_set_sized_by_worker_nodes():
    engines = [{"name": "big", "copies": 3, "members": [
        member(role="Leader", requests=(), labels={"team": "ml"}),
        member(role="Worker", worker={"nodes": 3})]}]
    out = manifests(compose(replica(engines)))
    assert sorted(out) == ["claim-big-worker-gpu", "route", "service", "workload-big"]
    lws = out["workload-big"]
    assert (lws["apiVersion"], lws["kind"], lws["metadata"]["name"]) == \
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "qwen-0-big")
    assert lws["spec"]["replicas"] == 3
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 4
    leader, worker = template["leaderTemplate"], template["workerTemplate"]
    # The leader claims nothing here, serves the API, and keeps the user's labels.
    assert "resourceClaims" not in leader["spec"] and "resources" not in leader["spec"]["containers"][0]
    assert leader["metadata"]["labels"] == {"team": "ml", "inferplane.dev/replica": "qwen-0",
                                            "inferplane.dev/engine": "big", "inferplane.dev/role": "leader",
                                            "inferplane.dev/serving": "qwen-0"}
    assert "inferplane.dev/serving" not in worker["metadata"]["labels"]
    assert worker["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "qwen-0-big-worker-gpu"}]
    assert leader["spec"]["nodeSelector"] == worker["spec"]["nodeSelector"] == {"inferplane.dev/pool": "mi325x"}


def test_a_gangs_engines_find_their_leader_and_rank_under_our_names_and_modelplanes():
    """Modelplane's multi-node manifests pass --node-rank=$(MODELPLANE_RANK) and
    --master-addr=$(MODELPLANE_LEADER_ADDRESS): both resolve, ahead of the user's own env."""
    worker = member(role="Worker", worker={"nodes": 1})
    worker["template"]["spec"]["containers"][0]["env"] = [{"name": "NCCL_DEBUG", "value": "INFO"}]
    engines = [{"name": "big", "members": [member(role="Leader"), worker]}]
    template = manifests(compose(replica(engines)))["workload-big"]["spec"]["leaderWorkerTemplate"]
    gang_env = [{"name": "INFERPLANE_LEADER_ADDRESS", "value": "$(LWS_LEADER_ADDRESS)"},
                {"name": "INFERPLANE_RANK", "value": "$(LWS_WORKER_INDEX)"},
                {"name": "MODELPLANE_LEADER_ADDRESS", "value": "$(LWS_LEADER_ADDRESS)"},
                {"name": "MODELPLANE_RANK", "value": "$(LWS_WORKER_INDEX)"}]
    assert template["leaderTemplate"]["spec"]["containers"][0]["env"] == gang_env
    assert template["workerTemplate"]["spec"]["containers"][0]["env"] == [*gang_env, {"name": "NCCL_DEBUG", "value": "INFO"}]
    standalone = manifests(compose(replica()))["workload-vllm"]["spec"]["template"]["spec"]["containers"][0]
    assert "env" not in standalone, "a single pod has no gang to join"


def test_unified_serving_is_one_service_over_the_serving_pods():
    out = manifests(compose(replica()))
    assert out["service"]["spec"] == {"selector": {"inferplane.dev/serving": "qwen-0"},
                                      "ports": [{"name": "http", "port": 80, "targetPort": 8000}]}
    assert not any(m["kind"] == "InferencePool" for m in out.values())


def pd_replica(decode_args=("--port", "8001")):
    decode = member()
    decode["template"]["spec"]["containers"][0]["args"] = list(decode_args)
    return replica([{"name": "prefill", "phase": "Prefill", "members": [member()]},
                    {"name": "decode", "phase": "Decode", "members": [decode]}], serving={"mode": "PrefillDecode"})


def test_prefill_decode_serving_adds_the_inference_pool_and_its_endpoint_picker():
    out = manifests(compose(pd_replica()))
    assert sorted(out) == ["claim-decode-standalone-gpu", "claim-prefill-standalone-gpu", "epp", "epp-config",
                           "epp-role", "epp-role-binding", "epp-service", "epp-service-account", "inference-pool",
                           "route", "service", "workload-decode", "workload-prefill"]
    assert out["inference-pool"]["spec"] == {
        "selector": {"matchLabels": {"inferplane.dev/serving": "qwen-0"}}, "targetPorts": [{"number": 8000}],
        "endpointPickerRef": {"name": "qwen-0-epp", "port": {"number": 9002}, "failureMode": "FailOpen"}}
    assert out["workload-prefill"]["spec"]["template"]["metadata"]["labels"]["llm-d.ai/role"] == "prefill"
    assert out["workload-decode"]["spec"]["template"]["metadata"]["labels"]["llm-d.ai/role"] == "decode"
    config = yaml.safe_load(out["epp-config"]["data"]["epp-config.yaml"])
    assert config["plugins"][0]["parameters"]["blockSizeTokens"] == 16


@pytest.mark.parametrize("args, size", [(["--block-size", "32"], 32), (["--block-size=64"], 64),
                                        (["--page-size", "8"], 8), (["--block-size", "auto"], 16)])
def test_the_endpoint_picker_cuts_prompts_into_the_decode_engines_blocks(args, size):
    out = manifests(compose(pd_replica(args)))
    assert yaml.safe_load(out["epp-config"]["data"]["epp-config.yaml"])["plugins"][0]["parameters"][
        "blockSizeTokens"] == size


def test_objects_target_the_clusters_provider_config_and_derive_workload_readiness():
    response = compose(replica())
    service, workload = response.desired["service"].resource, response.desired["workload-vllm"].resource
    assert service["metadata"] == {"name": "qwen-0-service", "namespace": "team-a",
                                   "labels": {"inferplane.dev/replica": "qwen-0"}}
    assert service["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "amd-lab"}
    assert service["spec"]["readiness"] == {"policy": "SuccessfulCreate"}
    assert workload["spec"]["readiness"]["policy"] == "DeriveFromCelQuery"
    assert response.condition("Composed").status == "True"


def test_long_names_are_shortened_to_dns_labels_and_stay_distinct():
    long_engine = "e" * 63
    out = manifests(compose(replica([{"name": long_engine, "members": [member()]},
                                     {"name": long_engine[:-1] + "f", "members": [member()]}],
                                    name="r" * 63)))
    names = [(m["kind"], m["metadata"]["name"]) for m in out.values()]
    assert max(len(name) for _, name in names) == 63 and len(set(names)) == len(names) == 6
    assert out[f"workload-{long_engine}"]["metadata"]["name"] == "r" * 54 + "-c88f5b5e"


RUNNING = {"svc": {"apiVersion": "kubernetes.m.crossplane.io/v1alpha1", "kind": "Object",
                   "metadata": {"name": "qwen-0-workload-vllm", "namespace": "team-a"},
                   "spec": {"forProvider": {"manifest": {"kind": "Deployment"}}},
                   "status": {"conditions": [{"type": "Ready", "status": "True"}]}}}


@pytest.mark.parametrize("composite, reason, says", [
    (replica(cluster="gone"), "WaitingForCluster", "InferenceCluster gone, which does not exist"),
    (replica([{"name": "vllm", "members": [member(pool="h100")]}]), "UnknownPool",
     "runs on pool h100, which InferenceCluster amd-lab does not have (its pools: mi325x)"),
    (replica([{"name": "vllm", "members": [{"role": "Standalone", "template": {}}]}]), "InvalidSpec",
     "ModelReplica qwen-0 is invalid (spec.engines.0.members.0.nodePoolName: Field required): fix the spec"),
])
def test_a_replica_that_cannot_be_composed_keeps_what_runs(composite, reason, says):
    response = compose(composite, observed=RUNNING)
    condition = response.condition("Composed")
    assert (condition.status, condition.reason) == ("False", reason)
    assert says in condition.message
    assert list(response.desired) == ["svc"]
    assert response.desired["svc"].resource["spec"] == RUNNING["svc"]["spec"]


# ---- every rendered object against the schemas a real control plane and cluster would apply


def crd_schemas(folder):
    from inferplane.admission.openapi import CRDSchemas

    return CRDSchemas(sorted((PUBLISHED_CRDS / folder).glob("*.yaml")))


@pytest.fixture(scope="module")
def workload_crds(gateway_api_crds):
    """The LeaderWorkerSet and Gateway API (Inference Extension) CRDs, by API group."""
    gateway_api = gateway_api_crds
    return {"leaderworkerset.x-k8s.io": crd_schemas("lws"), "inference.networking.k8s.io": gateway_api,
            "gateway.networking.k8s.io": gateway_api}


CASES = {
    "standalone": replica(),
    "leader-worker": replica([{"name": "big", "copies": 2, "members": [
        member(role="Leader"), member(role="Worker", worker={"nodes": 2})]}], tolerations=[
        {"key": "tier", "operator": "Equal", "value": "gold", "effect": "NoExecute"}]),
    "cpu": replica([{"name": "vllm", "members": [member(pool="cpu", requests=[
        ("cpu", "dra.cpu", 1, [{"cel": 'device.capacity["dra.cpu"].cpu.compareTo(quantity("4")) >= 0'}])])]}],
        cluster="civo-cpu"),
    "prefill-decode": pd_replica(),
    "cpu-share-gang": replica([{"name": "vllm", "members": [
        member(pool="cpu", role="Leader", requests=[("cpu", "dra.cpu", 1, [])]),
        member(pool="cpu", role="Worker", worker={"nodes": 2}, requests=[("cpu", "dra.cpu", 1, [])])]}],
        cluster="civo-cpu"),
}
# Shares of the CPU class's 6-CPU NUMA-node device: 2 CPUs for the leader, 3 for each worker.
for _member, _cpus in zip(CASES["cpu-share-gang"]["spec"]["engines"][0]["members"], ("2", "3")):
    _member["deviceRequests"][0]["capacity"] = {"requests": {"dra.cpu/cpu": _cpus}}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_rendered_workload_validates(case, crossplane_crds, workload_crds):
    response = compose(CASES[case])
    kinds = set()
    for key, desired in response.desired.items():
        wrapper = desired.resource
        assert [f"{v.path}: {v.message}" for v in crossplane_crds.validate(wrapper)] == [], key
        manifest = wrapper["spec"]["forProvider"]["manifest"]
        kinds.add(manifest["kind"])
        crds = workload_crds.get(manifest["apiVersion"].split("/")[0])
        if crds is not None:
            assert [f"{v.path}: {v.message}" for v in crds.validate(manifest)] == [], key
        else:
            assert schema_errors([manifest], "1.36") == [], key
    expected = {"standalone": {"Deployment", "ResourceClaimTemplate", "Service", "HTTPRoute"},
                "leader-worker": {"LeaderWorkerSet", "ResourceClaimTemplate", "Service", "HTTPRoute"},
                "cpu": {"Deployment", "ResourceClaimTemplate", "Service", "HTTPRoute"},
                "cpu-share-gang": {"LeaderWorkerSet", "ResourceClaimTemplate", "Service", "HTTPRoute"},
                "prefill-decode": {"Deployment", "ResourceClaimTemplate", "Service", "InferencePool", "ConfigMap",
                                   "ServiceAccount", "Role", "RoleBinding", "HTTPRoute"}}[case]
    assert kinds == expected


def test_the_schema_check_catches_what_the_api_server_refuses(workload_crds):
    lws = manifests(compose(CASES["leader-worker"]))["workload-big"]
    lws["spec"]["leaderWorkerTemplate"]["size"] = "four"
    assert workload_crds["leaderworkerset.x-k8s.io"].validate(lws) != []
    deployment = manifests(compose(CASES["standalone"]))["workload-vllm"]
    deployment["spec"]["template"]["spec"]["resourceClaims"][0]["source"] = "x"
    assert schema_errors([deployment], "1.36") != []


def test_a_cpu_engine_requests_and_limits_the_cpus_its_claims_pin():
    """dra-driver-cpu's rule before KEP-5517: a container's requests.cpu and limits.cpu are exactly the CPUs its
    claims pin; a whole device's published count, a share's amount; a GPU engine states no cpu."""
    whole = pod_spec(compose(CASES["cpu"]))["containers"][0]["resources"]
    assert whole == {"requests": {"cpu": "6"}, "limits": {"cpu": "6"}, "claims": [{"name": "cpu"}]}
    gang = manifests(compose(CASES["cpu-share-gang"]))["workload-vllm"]["spec"]["leaderWorkerTemplate"]
    for template, cpus in ((gang["leaderTemplate"], "2"), (gang["workerTemplate"], "3")):
        assert template["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": cpus}, "limits": {"cpu": cpus}, "claims": [{"name": "cpu"}]}
    assert pod_spec(compose(CASES["standalone"]))["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}
