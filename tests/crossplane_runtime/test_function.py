"""The RunFunction server, called over real gRPC on loopback as Crossplane calls it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
import yaml
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from inferplane.compose.base import Desired, Requirement, Response
from inferplane.crossplane.function import FunctionRunner, dict_to_struct, serving, struct_to_dict
from inferplane.simulator.synthetic_fleet import fleet_manifests
from crossplane_requests import crossplane_request as run_request


REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def desired_kinds(rsp: fnv1.RunFunctionResponse) -> dict[str, str]:
    return {key: d.resource["kind"] for key, d in sorted(rsp.desired.resources.items())}


def conditions(rsp: fnv1.RunFunctionResponse) -> list[tuple[str, str, str]]:
    return [(c.type, fnv1.Status.Name(c.status), c.reason) for c in rsp.conditions]


def fatal_messages(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]


# ---- each kind


def test_an_inference_cluster_asks_for_its_classes_then_composes(function_stub):
    cluster, l4 = load(RECIPE / "cluster.yaml"), load(RECIPE / "class.yaml")
    first = function_stub.RunFunction(run_request(cluster, tag="first"))
    assert first.meta.tag == "first"
    assert {name: (s.api_version, s.kind, s.match_name) for name, s in first.requirements.resources.items()} == {
        "class-eks-l4": ("inferplane.dev/v1alpha1", "InferenceClass", "eks-l4")}
    assert desired_kinds(first) == {}
    assert fatal_messages(first) == []

    second = function_stub.RunFunction(run_request(cluster, required={"class-eks-l4": l4}))
    assert desired_kinds(second) == {"cluster": "EKSCluster", "serving-stack": "ServingStack"}
    assert [d.ready for d in second.desired.resources.values()] == [fnv1.READY_FALSE, fnv1.READY_FALSE]
    assert conditions(second) == [("ClusterReady", "STATUS_CONDITION_FALSE", "Creating"),
                                  ("StackReady", "STATUS_CONDITION_FALSE", "Installing")]
    stack = resource.struct_to_dict(second.desired.resources["serving-stack"].resource)
    assert stack["spec"]["draDrivers"] == ["gpu.nvidia.com"]
    # Crossplane keeps asking until the requirements stop changing: they are declared every time.
    assert list(second.requirements.resources) == ["class-eks-l4"]


def test_a_missing_required_resource_is_asked_for_and_nothing_new_is_composed(function_stub):
    cluster = load(RECIPE / "cluster.yaml")
    # Crossplane resolved the requirement and found no such class: the key is present, with no items.
    rsp = function_stub.RunFunction(run_request(cluster, required={"class-eks-l4": None}))
    assert desired_kinds(rsp) == {}
    assert rsp.requirements.resources["class-eks-l4"].match_name == "eks-l4"
    waiting = [c for c in rsp.conditions if c.type == "ClusterReady"][0]
    assert (waiting.reason, waiting.message) == (
        "WaitingForClasses", "InferenceCluster eks-l4 references InferenceClass eks-l4, which does not exist: "
        "create the class or change the pool's className")


def test_a_serving_stack_composes_its_provider_configs_releases_and_objects(eks_stack, function_stub):
    rsp = function_stub.RunFunction(run_request(eks_stack))
    assert desired_kinds(rsp) == {
        "object-gateway": "Object", "object-gateway-class": "Object", "object-nvidia-critical-pods-quota": "Object",
        "object-crd-inferenceobjectives-inference-networking-x-k8s-io": "Object",
        "object-crd-inferencepools-inference-networking-k8s-io": "Object",
        "object-crd-inferencepools-inference-networking-x-k8s-io": "Object",
        "provider-config-helm": "ClusterProviderConfig", "provider-config-kubernetes": "ClusterProviderConfig",
        "release-cert-manager": "Release", "release-dcgm-exporter": "Release",
        "release-dra-driver-nvidia-gpu": "Release", "release-envoy-gateway": "Release",
        "release-ai-gateway-crds": "Release", "release-ai-gateway": "Release",
        "release-kube-prometheus-stack": "Release", "release-lws": "Release"}
    assert rsp.desired.resources["provider-config-helm"].ready == fnv1.READY_TRUE
    assert resource.struct_to_dict(rsp.desired.composite.resource)["status"]["components"] == [
        "cert-manager", "envoy-gateway", "gateway-class", "gateway", "crd-inferenceobjectives-inference-networking-x-k8s-io",
        "crd-inferencepools-inference-networking-k8s-io", "crd-inferencepools-inference-networking-x-k8s-io",
        "ai-gateway-crds", "ai-gateway", "kube-prometheus-stack", "lws", "dra-driver-nvidia-gpu",
        "nvidia-critical-pods-quota", "dcgm-exporter"]


POOLS = ("cpu-a", "cpu-b", "gpu-a", "gpu-b")
# The synthetic fleet's EKS clusters run on two subnets of their own: an EFS mount target in each.
EFS_MOUNT_TARGETS = {f"efs-mount-target-{i}": "MountTarget" for i in range(2)}
# The StorageClass of a cloud's shared storage, through a ProviderConfig of the composite's own.
STORAGE_CLASS = {"storage-class-rwx": "Object", "storage-provider-config": "ClusterProviderConfig"}
CLOUD_CLUSTERS = {
    "AKSCluster": {"cluster": "KubernetesCluster", **{f"nodepool-{p}": "KubernetesClusterNodePool" for p in POOLS},
                   "subnet": "Subnet", "virtual-network": "VirtualNetwork", **STORAGE_CLASS},
    "CivoCluster": {"cluster": "Cluster", **{f"nodepool-{p}": "NodePool" for p in POOLS}},
    "EKSCluster": {"addon-coredns": "Addon", "addon-eks-pod-identity-agent": "Addon", "addon-kube-proxy": "Addon",
                   "addon-vpc-cni": "Addon", "cluster": "Cluster", "cluster-auth": "ClusterAuth",
                   **{f"nodepool-{p}": "NodeGroup" for p in (*POOLS, "system")},
                   # EFS on the cluster's subnets; its StorageClass waits for the file system's id.
                   "efs-filesystem": "FileSystem", "addon-aws-efs-csi-driver": "Addon", "iam-role-efs-csi": "Role",
                   "iam-attach-efs-csi-policy": "RolePolicyAttachment", "pod-identity-efs-csi": "PodIdentityAssociation",
                   **EFS_MOUNT_TARGETS},
    "GKECluster": {"cluster": "Cluster", "iam-member-node": "ProjectIAMMember", "iam-member-registry": "ProjectIAMMember",
                   "projectservice-filestore": "ProjectService",
                   "network": "Network", **{f"nodepool-{p}": "NodePool" for p in (*POOLS, "system")},
                   "service-account": "ServiceAccount", "subnetwork": "Subnetwork", **STORAGE_CLASS},
    # The filesystem, mounted by each node's cloud-init, and served by the CSI driver the chart installs.
    "NebiusCluster": {"cluster": "Cluster", "filesystem": "Filesystem", "cloud-init": "Secret",
                      **{f"nodepool-{p}": "NodeGroup" for p in (*POOLS, "system")}, **STORAGE_CLASS,
                      "release-csi-mounted-fs-path": "Release", "storage-provider-config-helm": "ClusterProviderConfig"},
    "VultrCluster": {"cluster": "Kubernetes", **{f"nodepool-{p}": "KubernetesNodePool" for p in POOLS}},
}


@pytest.fixture(scope="module")
def cloud_clusters():
    """Every cloud cluster composite the synthetic fleet's InferenceClusters compose, by kind."""
    from inferplane.engine.control_plane import ControlPlane

    runtime = ControlPlane(None)
    manifests = fleet_manifests(7)
    for manifest in manifests:
        runtime._reconciler().submit(manifest)
    runtime.reconcile()
    out = {}
    for obj in runtime.list():
        if obj["kind"] in CLOUD_CLUSTERS:
            out[obj["kind"]] = {k: v for k, v in obj.items() if k != "status"}
    return out


@pytest.mark.parametrize("kind", sorted(CLOUD_CLUSTERS))
def test_each_cloud_cluster_kind_composes_its_cluster_and_pools(function_stub, cloud_clusters, kind):
    rsp = function_stub.RunFunction(run_request(cloud_clusters[kind]))
    assert dict(sorted(desired_kinds(rsp).items())) == dict(sorted(CLOUD_CLUSTERS[kind].items()))
    assert fatal_messages(rsp) == []
    # Ready is Crossplane's to set: the function's "not ready yet" travels as a result.
    assert conditions(rsp) == []
    assert [(fnv1.Severity.Name(r.severity), r.reason) for r in rsp.results] == [("SEVERITY_NORMAL", "Creating")]


def test_crossplanes_own_fields_on_the_composite_do_not_make_it_invalid(function_stub):
    cluster = load(RECIPE / "cluster.yaml")
    cluster["spec"]["crossplane"] = {"compositionRef": {"name": "inferenceclusters.inferplane.dev"},
                                     "resourceRefs": []}
    rsp = function_stub.RunFunction(run_request(cluster, required={"class-eks-l4": load(RECIPE / "class.yaml")}))
    assert desired_kinds(rsp) == {"cluster": "EKSCluster", "serving-stack": "ServingStack"}


# ---- numbers


def through_protobuf(data: dict, schema: dict) -> dict:
    return struct_to_dict(dict_to_struct(data), schema)


def test_whole_numbers_come_back_as_integers_where_the_schema_says_integer():
    schema = {"type": "object", "properties": {
        "count": {"type": "integer"}, "ratio": {"type": "number"},
        "quantity": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
        "pools": {"type": "array", "items": {"type": "object", "properties": {"nodes": {"type": "integer"}}}},
        "sizes": {"type": "object", "additionalProperties": {"type": "integer"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    got = through_protobuf({"count": 3, "ratio": 2, "quantity": 16, "pools": [{"nodes": 2}],
                            "sizes": {"a": 1}, "free": {"n": 4}, "unknown": 5}, schema)
    assert got == {"count": 3, "ratio": 2.0, "quantity": 16, "pools": [{"nodes": 2}], "sizes": {"a": 1},
                   "free": {"n": 4.0}, "unknown": 5.0}
    assert [type(got[k]).__name__ for k in ("count", "ratio", "quantity", "free", "unknown")] == [
        "int", "float", "int", "dict", "float"]
    assert type(got["pools"][0]["nodes"]) is int and type(got["free"]["n"]) is float
    # A fraction stays what it is, even where the schema says integer (admission refuses it there).
    assert through_protobuf({"count": 2.5}, schema) == {"count": 2.5}


def test_the_core_reads_integers_from_a_request_that_carried_doubles():
    seen = {}

    def capture(request):
        seen["composite"], seen["class"] = request.composite, request.required.get("class")
        return Response()

    cluster = load(RECIPE / "cluster.yaml")
    cluster["metadata"]["generation"] = 4
    l4 = load(RECIPE / "class.yaml")
    with serving(FunctionRunner({"InferenceCluster": capture})) as address, grpc.insecure_channel(address) as channel:
        grpcv1.FunctionRunnerServiceStub(channel).RunFunction(run_request(cluster, required={"class": l4}))
    pool = seen["composite"]["spec"]["nodePools"][0]
    assert (pool["nodeCount"], type(pool["nodeCount"])) == (2, int)
    assert (seen["composite"]["metadata"]["generation"], type(seen["composite"]["metadata"]["generation"])) == (4, int)
    eks = seen["class"]["spec"]["provisioning"]["eks"]
    assert [(v, type(v)) for v in (eks["diskSizeGb"], eks["accelerator"]["count"])] == [(200, int), (1, int)]



def test_each_desired_resource_and_the_status_is_answered_as_composed_by_name_readiness_and_content():
    # Each desired resource and the status is serialised once per content and kept (function.py): a
    # kept part must never stand in for one differing in name, readiness or content.
    def echo(request):
        spec = request.composite["spec"]
        return Response(desired={spec["name"]: Desired({"apiVersion": "v1", "kind": "ConfigMap",
                                                        "data": {"size": spec["size"]}}, spec["ready"])},
                        status={"size": spec["size"]})

    runner = FunctionRunner({"Echo": echo})

    def answer(earlier: dict | None = None, **spec) -> tuple[dict, dict]:
        req = run_request({"apiVersion": "example.org/v1", "kind": "Echo", "metadata": {"name": "e"}, "spec": spec})
        for name, obj in (earlier or {}).items():  # desired by an earlier step of the pipeline
            req.desired.resources[name].resource.CopyFrom(dict_to_struct(obj))
        rsp = fnv1.RunFunctionResponse.FromString(runner.answer(req.SerializeToString()))
        assert fatal_messages(rsp) == []
        return ({k: (struct_to_dict(d.resource).get("data"), fnv1.Ready.Name(d.ready))
                 for k, d in sorted(rsp.desired.resources.items())}, struct_to_dict(rsp.desired.composite.resource))

    assert answer(name="a", ready=True, size=1) == ({"a": ({"size": 1}, "READY_TRUE")}, {"status": {"size": 1}})
    assert answer(name="b", ready=True, size=1) == ({"b": ({"size": 1}, "READY_TRUE")}, {"status": {"size": 1}})
    assert answer(name="b", ready=False, size=1) == ({"b": ({"size": 1}, "READY_FALSE")}, {"status": {"size": 1}})
    assert answer(name="b", ready=None, size=1) == ({"b": ({"size": 1}, "READY_UNSPECIFIED")},
                                                    {"status": {"size": 1}})
    assert answer(name="b", ready=None, size=2) == ({"b": ({"size": 2}, "READY_UNSPECIFIED")},
                                                    {"status": {"size": 2}})
    # What earlier steps desired is kept; a resource this function desires by the same name replaces theirs.
    assert answer({"b": {"kind": "Secret", "data": {"old": 1}}, "c": {"kind": "Secret", "data": {"c": 3}}},
                  name="b", ready=True, size=1) == (
        {"b": ({"size": 1}, "READY_TRUE"), "c": ({"c": 3}, "READY_UNSPECIFIED")}, {"status": {"size": 1}})


# ---- what goes wrong


def test_a_malformed_request_is_a_fatal_result_and_the_server_keeps_serving(function_stub):
    empty = function_stub.RunFunction(fnv1.RunFunctionRequest())
    assert fatal_messages(empty) == [
        "malformed RunFunctionRequest: the request has no observed composite resource: Crossplane always sends "
        "the composite it reconciles; call this function from a Composition's pipeline"]

    unknown = function_stub.RunFunction(run_request({"apiVersion": "example.org/v1", "kind": "Widget",
                                                     "metadata": {"name": "w"}}))
    assert fatal_messages(unknown) == [
        "malformed RunFunctionRequest: no composition function for kind Widget: this function composes AKSCluster, "
        "CivoCluster, EKSCluster, GKECluster, InferenceCluster, InferenceGateway, ModelCache, ModelDeployment, ModelEndpoint, "
        "ModelReplica, ModelService, NebiusCluster, ServingStack, VultrCluster; point the Composition for Widget at another function"]

    bad_input = run_request(load(RECIPE / "cluster.yaml"))
    bad_input.input.update({"apiVersion": "example.org/v1", "kind": "Patch"})
    assert fatal_messages(function_stub.RunFunction(bad_input)) == [
        "malformed RunFunctionRequest: unknown input example.org/v1/Patch: a step of this function takes no input, "
        "or fn.inferplane.dev/v1alpha1 Usages"]

    after = function_stub.RunFunction(run_request(load(RECIPE / "cluster.yaml")))
    assert list(after.requirements.resources) == ["class-eks-l4"]


FIX = "send each resource as the Kubernetes API server stores it, as Crossplane does"


def misshapen(path: str, value) -> dict:
    """The recipe's cluster with the field at `path` (dotted) set to `value`."""
    cluster = load(RECIPE / "cluster.yaml")
    *parents, last = path.split(".")
    node = cluster
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return cluster


@pytest.mark.parametrize(("path", "value", "says"), [
    ("metadata", ["eks-l4"], "the observed composite: metadata: expected an object, got a list"),
    ("metadata", "eks-l4", "the observed composite: metadata: expected an object, got a string"),
    ("spec", "big", "the observed composite InferenceCluster/eks-l4: spec: expected an object, got a string"),
    ("apiVersion", "", "the observed composite InferenceCluster/eks-l4: apiVersion: expected a non-empty string, "
                       "got a string"),
    ("metadata.labels", {"team": 7}, "the observed composite InferenceCluster/eks-l4: metadata.labels.team: "
                                     "expected a string, got a number"),
    ("metadata.name", ["a"], "the observed composite: metadata.name: expected a string, got a list"),
    ("metadata.name", "a" * 1000, f"the observed composite InferenceCluster/{'a' * 233}...: metadata.name: expected "
                                  "at most 253 characters, got 1,000"),
    ("spec.nodePools", {"l4": {}}, "the observed composite InferenceCluster/eks-l4: spec.nodePools: "
                                   "expected a list, got an object"),
    ("status.conditions", [{"type": ["Ready"]}], "the observed composite InferenceCluster/eks-l4: "
                                                 "status.conditions[0].type: expected a string, got a list"),
])
def test_a_misshapen_composite_is_refused_naming_the_field_and_what_was_expected(function_stub, path, value, says):
    rsp = function_stub.RunFunction(run_request(misshapen(path, value)))
    assert fatal_messages(rsp) == [f"malformed RunFunctionRequest: {says}: {FIX}"]
    assert not rsp.desired.resources


def test_a_composite_without_apiversion_or_kind_is_refused_naming_it(function_stub):
    cluster = load(RECIPE / "cluster.yaml")
    for field, named in (("apiVersion", " InferenceCluster/eks-l4"), ("kind", "")):
        rsp = function_stub.RunFunction(run_request({k: v for k, v in cluster.items() if k != field}))
        assert fatal_messages(rsp) == [
            f"malformed RunFunctionRequest: the observed composite{named}: {field}: missing: {FIX}"]


def test_misshapen_observed_required_and_desired_resources_are_refused_naming_them(function_stub, eks_stack):
    cluster, l4 = load(RECIPE / "cluster.yaml"), load(RECIPE / "class.yaml")
    eks_cluster = struct_to_dict(function_stub.RunFunction(run_request(cluster, None, {"class-eks-l4": l4}))
                                 .desired.resources["cluster"].resource)
    ready_cluster = {**eks_cluster, "status": ["Ready"]}
    rsp = function_stub.RunFunction(run_request(cluster, {"cluster": ready_cluster}, {"class-eks-l4": l4}))
    assert fatal_messages(rsp) == ["malformed RunFunctionRequest: observed resource 'cluster' EKSCluster/eks-l4: "
                                   f"status: expected an object, got a list: {FIX}"]

    bad_class = {**l4, "metadata": {"name": "eks-l4", "annotations": ["a"]}}
    rsp = function_stub.RunFunction(run_request(cluster, None, {"class-eks-l4": bad_class}))
    assert fatal_messages(rsp) == ["malformed RunFunctionRequest: required resource 'class-eks-l4' (match 1) "
                                   "InferenceClass/eks-l4: metadata.annotations: expected an object, got a list: "
                                   f"{FIX}"]

    # Another project's kind, where a function reads it: a Gateway's addresses.
    gateway = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "gw"},
               "status": {"addresses": "172.18.255.200"}}
    composite = next(yaml.safe_load_all((REPO / "recipes" / "qwen2.5-0.5b-cpu" / "service.yaml").read_text()))
    rsp = function_stub.RunFunction(run_request(composite, {"gateway": gateway}))
    assert fatal_messages(rsp) == ["malformed RunFunctionRequest: observed resource 'gateway' Gateway/gw: "
                                   f"status.addresses: expected a list, got a string: {FIX}"]

    # A provider's managed resource, where a function reads it: an EKS cluster's security group.
    eks = {"apiVersion": "eks.aws.m.upbound.io/v1beta1", "kind": "Cluster", "metadata": {"name": "eks-l4"},
           "status": {"atProvider": {"vpcConfig": [{"clusterSecurityGroupId": "sg-1"}]}}}
    rsp = function_stub.RunFunction(run_request(eks_cluster, {"cluster": eks}))
    assert fatal_messages(rsp) == ["malformed RunFunctionRequest: observed resource 'cluster' Cluster/eks-l4: "
                                   f"status.atProvider.vpcConfig: expected an object, got a list: {FIX}"]

    usages = fnv1.RunFunctionRequest()
    usages.input.update({"apiVersion": "fn.inferplane.dev/v1alpha1", "kind": "Usages"})
    usages.desired.resources["stack"].resource.update({"apiVersion": "x/v1", "kind": "Release", "metadata": []})
    assert fatal_messages(function_stub.RunFunction(usages)) == [
        f"malformed RunFunctionRequest: desired resource 'stack': metadata: expected an object, got a list: {FIX}"]


def test_no_misshapen_field_of_a_real_request_reaches_the_caller_as_python_internals():
    """Every field of the recipe's requests (the cluster with its class and observed resources),
    each made a list, a string and a number in turn: every answer is a result, never an exception's
    text (a generic failure is only for inferplane's own bugs)."""
    cluster, l4 = load(RECIPE / "cluster.yaml"), load(RECIPE / "class.yaml")
    runner = FunctionRunner()
    composed = runner.run(run_request(cluster, None, {"class-eks-l4": l4})).desired.resources
    ready = {**struct_to_dict(composed["cluster"].resource),
             "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
                        "atProvider": {"endpoint": "https://eks"}}}
    stack = {**struct_to_dict(composed["serving-stack"].resource),
             "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Installing"}],
                        "gateway": {"address": "10.0.0.1"}}}
    request = {"composite": cluster, "observed": {"cluster": ready, "serving-stack": stack},
               "required": {"class-eks-l4": l4}}
    assert not fatal_messages(runner.run(run_request(cluster, request["observed"], request["required"])))

    def paths(node, prefix=()):
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))

    leaked = []
    for path in paths(request):
        for wrong in (["x"], "x", 7):
            changed = json.loads(json.dumps(request))
            node = changed
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = wrong
            # A resource on the wire is a Struct: an object, or for a requirement a list of them.
            if not all(isinstance(changed[part], dict) for part in ("composite", "observed", "required")) or \
                    not all(isinstance(r, dict) for r in changed["observed"].values()) or \
                    not all(isinstance(r, dict) or (isinstance(r, list) and all(isinstance(i, dict) for i in r))
                            for r in changed["required"].values()):
                continue
            rsp = runner.run(run_request(changed["composite"], changed["observed"], changed["required"]))
            leaked += [f"{'.'.join(map(str, path))} = {wrong!r}: {m}" for m in fatal_messages(rsp)
                       if m.startswith("composition function failed") or "Error" in m]
    assert leaked == []


def test_a_failing_function_is_a_fatal_result_not_a_dead_server():
    def broken(request):
        raise KeyError("spec")

    with serving(FunctionRunner({"InferenceCluster": broken})) as address, grpc.insecure_channel(address) as channel:
        stub = grpcv1.FunctionRunnerServiceStub(channel)
        for _ in range(2):
            rsp = stub.RunFunction(run_request(load(RECIPE / "cluster.yaml"), tag="t-9"))
            # What to do, never the exception's text: that goes to the log.
            assert fatal_messages(rsp) == [
                "composition function failed for InferenceCluster/eks-l4: an error inferplane does not expect on "
                "a request shaped as this one is; its details and traceback are logged at info with tag 't-9': "
                "report them as an inferplane bug"]


# ---- the command


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_function_serve_answers_over_grpc_and_logs_json_lines():
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "inferplane.cli.main", "function", "serve", "--insecure",
                               "--address", f"127.0.0.1:{port}"], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
            stub = grpcv1.FunctionRunnerServiceStub(channel)
            rsp = stub.RunFunction(run_request(load(RECIPE / "cluster.yaml")))
            refused = stub.RunFunction(run_request({"apiVersion": "example.org/v1", "kind": "Widget",
                                                    "metadata": {"name": "w"}}, tag="t-1"))
        assert list(rsp.requirements.resources) == ["class-eks-l4"]
        assert len(fatal_messages(refused)) == 1
    finally:
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    # JSON lines; a call that composed logs at debug only, a refused one at info.
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(line["level"], line["msg"], line["tag"], line["kind"], line["name"]) for line in lines] == [
        ("info", "refused a malformed request", "t-1", "Widget", "w")]
    assert lines[0]["error"].startswith("no composition function for kind Widget")


def test_function_serve_without_certificates_or_insecure_is_refused():
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "function", "serve", "--address",
                          "127.0.0.1:0"], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env={k: v for k, v in os.environ.items() if k not in ("INSECURE", "TLS_SERVER_CERTS_DIR")})
    assert run.returncode == 2
    assert "pass --tls-server-certs-dir DIR (tls.crt, tls.key, ca.crt), or --insecure for local use" in run.stderr


def test_a_requirement_for_a_whole_kind_is_asked_for_by_labels_and_answered_with_every_match():
    calls = []

    def every_cluster(request):
        calls.append(request.required.get("clusters"))
        response = Response()
        response.requirements["clusters"] = Requirement("inferplane.dev/v1alpha1", "InferenceCluster", None)
        return response

    a, b = ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": n},
             "spec": {"cluster": {"source": "Existing"}, "nodePools": []}} for n in ("a", "b"))
    deployment = {"apiVersion": "example.org/v1", "kind": "Fleet", "metadata": {"name": "f"}}
    with serving(FunctionRunner({"Fleet": every_cluster})) as address, grpc.insecure_channel(address) as channel:
        stub = grpcv1.FunctionRunnerServiceStub(channel)
        first = stub.RunFunction(run_request(deployment))
        selector = first.requirements.resources["clusters"]
        assert (selector.kind, selector.WhichOneof("match"), dict(selector.match_labels.labels)) == (
            "InferenceCluster", "match_labels", {})
        assert calls == [None]
        # Crossplane answers with every match; the function gets them all as a list.
        req = run_request(deployment)
        req.required_resources["clusters"].items.extend(
            fnv1.Resource(resource=resource.dict_to_struct(c)) for c in (a, b))
        stub.RunFunction(req)
        assert [c["metadata"]["name"] for c in calls[-1]] == ["a", "b"]


# ---- answers kept for a request seen again


def counting_runner() -> tuple[FunctionRunner, list[str]]:
    """A runner whose InferenceCluster function is the real one, noting each time it runs."""
    from inferplane.compose.registry import composition_functions

    real = composition_functions()["InferenceCluster"]
    ran: list[str] = []

    def counted(request):
        ran.append(request.composite["metadata"]["name"])
        return real(request)
    return FunctionRunner({"InferenceCluster": counted}), ran


def cluster_request(**changes) -> fnv1.RunFunctionRequest:
    cluster, l4 = load(RECIPE / "cluster.yaml"), load(RECIPE / "class.yaml")
    return run_request(changes.get("composite", cluster), changes.get("observed"),
                       changes.get("required", {"class-eks-l4": l4}), tag=changes.get("tag", ""))


def test_a_request_seen_again_gets_the_same_answer_without_composing_again():
    runner, ran = counting_runner()
    wire = cluster_request().SerializeToString()
    first = runner.answer(wire)
    assert len(ran) == 2  # learning that the class requirement names one object, then composing
    assert runner.answer(wire) == first
    assert len(ran) == 2
    # The kept answer is what composing it again gives.
    fresh, _ = counting_runner()
    assert fresh.answer(wire) == first
    assert desired_kinds(fnv1.RunFunctionResponse.FromString(first)) == {"cluster": "EKSCluster",
                                                                         "serving-stack": "ServingStack"}


def test_a_request_equal_in_content_but_written_in_another_order_is_seen_again():
    # Crossplane (Go) writes a Struct's fields in random order; concatenated messages merge, so the
    # composite's fields can be written in two orders.
    runner, ran = counting_runner()
    cluster = load(RECIPE / "cluster.yaml")
    head = cluster_request(composite={k: cluster[k] for k in ("apiVersion", "kind")}).SerializeToString()
    tail = run_request({k: cluster[k] for k in ("metadata", "spec")}).SerializeToString()
    assert head + tail != tail + head
    first = runner.answer(head + tail)
    count = len(ran)
    assert runner.answer(tail + head) == first
    assert len(ran) == count


def test_any_change_to_the_request_composes_again():
    runner, ran = counting_runner()
    cluster, l4 = load(RECIPE / "cluster.yaml"), load(RECIPE / "class.yaml")
    base = fnv1.RunFunctionResponse.FromString(runner.answer(cluster_request().SerializeToString()))
    assert [p["nodeCount"] for p in resource.struct_to_dict(
        base.desired.resources["cluster"].resource)["spec"]["nodePools"] if p["name"] != "system"] == [2]

    def answer(**changes) -> fnv1.RunFunctionResponse:
        before = len(ran)
        rsp = fnv1.RunFunctionResponse.FromString(runner.answer(cluster_request(**changes).SerializeToString()))
        assert len(ran) > before, f"{sorted(changes)} answered without composing again"
        return rsp

    bigger = json.loads(json.dumps(cluster))
    bigger["spec"]["nodePools"][0]["nodeCount"] = 3
    assert [p["nodeCount"] for p in resource.struct_to_dict(
        answer(composite=bigger).desired.resources["cluster"].resource)["spec"]["nodePools"]
        if p["name"] != "system"] == [3]

    # The composite is keyed field by field: a field it did not have is a change too.
    answer(composite={**cluster, "status": {"draDrivers": ["gpu.nvidia.com"]}})

    # The cluster as composed, then observed Ready.
    ready = {**resource.struct_to_dict(base.desired.resources["cluster"].resource),
             "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}}
    assert conditions(answer(observed={"cluster": ready}))[0] == ("ClusterReady", "STATUS_CONDITION_TRUE", "Available")

    assert conditions(answer(required={"class-eks-l4": None}))[0][2] == "WaitingForClasses"
    other = json.loads(json.dumps(l4))
    other["spec"]["provisioning"]["eks"]["instanceType"] = "g6.2xlarge"
    pools = resource.struct_to_dict(answer(required={"class-eks-l4": other}).desired.resources["cluster"].resource)[
        "spec"]["nodePools"]
    assert {p["name"]: p["machine"]["instanceType"] for p in pools} == {"system": "m7i.xlarge", "l4": "g6.2xlarge"}

    step = cluster_request()
    step.input.update({"apiVersion": "example.org/v1", "kind": "Patch"})
    refused = fnv1.RunFunctionResponse.FromString(runner.answer(step.SerializeToString()))
    assert fatal_messages(refused)[0].startswith("malformed RunFunctionRequest: unknown input example.org/v1/Patch")


def test_a_fatal_answer_is_never_kept():
    calls = []

    def broken(request):
        calls.append(1)
        raise KeyError("spec")

    runner = FunctionRunner({"InferenceCluster": broken})
    wire = cluster_request().SerializeToString()
    for _ in range(2):
        assert fatal_messages(fnv1.RunFunctionResponse.FromString(runner.answer(wire)))[0].startswith(
            "composition function failed for InferenceCluster/eks-l4: ")
    assert len(calls) == 2
    assert runner.kept.get(("answer", cluster_request().SerializeToString(deterministic=True))) is None


def test_answers_are_kept_within_the_cache_bound_least_recently_used_first():
    runner, ran = counting_runner()
    wires = [cluster_request(tag=f"t-{i}").SerializeToString() for i in range(10)]
    first = fnv1.RunFunctionResponse.FromString(runner.answer(wires[0]))
    # Room for everything one call keeps: ten answers (each some KiB) do not fit beside it.
    bound = runner.kept.held
    runner = FunctionRunner(runner.functions, cache_bytes=bound)
    for wire in wires:
        answered = fnv1.RunFunctionResponse.FromString(runner.answer(wire))
        assert desired_kinds(answered) == desired_kinds(first)
        assert runner.kept.held <= bound
    composed = len(ran)
    runner.answer(wires[-1])  # the most recently used: kept
    assert len(ran) == composed
    runner.answer(wires[0])  # the least recently used: dropped, composed again
    assert len(ran) == composed + 1


def test_a_cache_of_no_bytes_keeps_nothing_and_answers_all_the_same():
    runner, ran = counting_runner()
    runner = FunctionRunner(runner.functions, cache_bytes=0)
    wire = cluster_request().SerializeToString()
    assert runner.answer(wire) == FunctionRunner().answer(wire)
    runner.answer(wire)
    # The first call learns the requirement's shape and composes; the second composes again.
    assert (len(runner.kept), len(ran)) == (0, 3)


def test_what_the_server_keeps_stays_within_its_bytes_under_distinct_large_requests():
    from inferplane.api.inference_class import class_from_json
    from inferplane.kept import MIB

    bound = 2 * MIB
    runner = FunctionRunner(cache_bytes=bound)
    cluster, l4 = load(RECIPE / "cluster.yaml"), load(RECIPE / "class.yaml")
    for index in range(40):
        # Each request distinct in every resource, some 200 KB each: forty of them are 8 MB.
        padding = {"bench.inferplane.dev/padding": f"{index}" + "x" * 100_000}
        composite = {**cluster, "metadata": {**cluster["metadata"], "annotations": padding}}
        klass = {**l4, "metadata": {**l4["metadata"], "annotations": padding}}
        rsp = fnv1.RunFunctionResponse.FromString(
            runner.answer(run_request(composite, None, {"class-eks-l4": klass}).SerializeToString()))
        assert desired_kinds(rsp) == {"cluster": "EKSCluster", "serving-stack": "ServingStack"}
        assert runner.kept.held <= bound
    assert runner.kept.held > bound // 2
    assert class_from_json.cache.held <= class_from_json.cache.bound


def test_function_serve_shows_its_cache_bound_and_refuses_a_negative_one():
    command = [sys.executable, "-m", "inferplane.cli.main", "function", "serve"]
    shown = subprocess.run([*command, "--help"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert "--cache-size MB" in shown.stdout and "[default: 256" in " ".join(shown.stdout.split())
    refused = subprocess.run([*command, "--insecure", "--cache-size", "-1"], cwd=REPO, capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 2
    assert "Invalid value for '--cache-size': -1 is not in the range x>=0." in refused.stderr


def test_bytes_that_are_not_a_request_get_a_fatal_answer():
    rsp = fnv1.RunFunctionResponse.FromString(FunctionRunner().answer(b"\xff\xff\xff"))
    assert len(fatal_messages(rsp)) == 1
    assert fatal_messages(rsp)[0].startswith("malformed RunFunctionRequest: not a RunFunctionRequest")


def test_the_v1beta1_service_answers_as_v1():
    from crossplane.function.proto.v1beta1 import run_function_pb2 as fnv1beta1
    from crossplane.function.proto.v1beta1 import run_function_pb2_grpc as grpcv1beta1

    req = fnv1beta1.RunFunctionRequest.FromString(run_request(load(RECIPE / "cluster.yaml"), tag="beta")
                                                  .SerializeToString())
    with serving(FunctionRunner()) as address, grpc.insecure_channel(address) as channel:
        rsp = grpcv1beta1.FunctionRunnerServiceStub(channel).RunFunction(req)
    assert (rsp.meta.tag, list(rsp.requirements.resources)) == ("beta", ["class-eks-l4"])


@pytest.mark.parametrize("count", [1e308, 2.0 ** 63, -(2.0 ** 64)], ids=["1e308", "2^63", "-2^64"])
def test_an_integer_beyond_64_bits_is_refused_naming_the_field_not_a_failed_function(function_stub, count):
    """The API server keeps an integer field as an int64 and refuses one beyond it (apimachinery's JSON
    decoding); protobuf's Struct carries it as a double, a whole number, so its type alone passes."""
    cluster = load(RECIPE / "cluster.yaml")
    cluster["spec"]["nodePools"][0]["nodeCount"] = count
    rsp = function_stub.RunFunction(run_request(cluster))
    assert fatal_messages(rsp) == [
        f"malformed RunFunctionRequest: the observed composite InferenceCluster/eks-l4: spec.nodePools[0].nodeCount: "
        f"expected an integer of 64 bits (-9223372036854775808 to 9223372036854775807), got {count:g}: {FIX}"]
    assert not rsp.desired.resources
