"""The Configuration package: what `inferplane package build` writes is what Crossplane accepts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from inferplane.api import ALL_KINDS
from inferplane.crossplane import XRD_DIR
from inferplane.crossplane.function import USAGES_INPUT
from inferplane.crossplane.usages import CONSUMER_LABEL
from crossplane_requests import crossplane_request

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("package")
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "package", "build", str(folder)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr == "wrote 35 files to " + str(folder) + "\n"
    return folder


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_the_package_holds_the_configuration_the_function_and_the_install_manifests(package):
    files = sorted(str(p.relative_to(package)) for p in package.rglob("*") if p.is_file())
    kinds = sorted(f"{k.PLURAL}.{k.GROUP}.yaml" for k in ALL_KINDS)
    assert files == sorted([
        *(f"configuration/compositions/{k}" for k in kinds), "configuration/crossplane.yaml",
        *(f"configuration/xrds/{k}" for k in kinds),
        "function/Dockerfile", "function/crossplane.yaml", "install/configuration.yaml", "install/function.yaml"])
    # The XRDs are the committed ones, byte for byte.
    assert {p.name: p.read_text() for p in (package / "configuration" / "xrds").iterdir()} == {
        p.name: p.read_text() for p in XRD_DIR.glob("*.yaml")}


def test_every_object_of_the_package_validates_against_crossplanes_crds(package, crossplane_crds):
    checked = []
    for path in sorted([*(package / "configuration").rglob("*.yaml"), *(package / "install").glob("*.yaml")]):
        if path.name == "crossplane.yaml":
            continue  # package metadata (meta.pkg.crossplane.io): read by the package manager, not served
        for document in documents(path):
            violations = crossplane_crds.validate(document)
            assert violations == [], f"{path.relative_to(package)}: {violations}"
            checked.append(document["kind"])
    assert sorted(set(checked)) == ["CompositeResourceDefinition", "Composition", "Configuration", "Function"]
    assert checked.count("Composition") == checked.count("CompositeResourceDefinition") == len(ALL_KINDS)


def test_every_composition_calls_the_function_the_package_depends_on_for_a_kind_it_defines(package):
    meta = documents(package / "configuration" / "crossplane.yaml")[0]
    function_package = meta["spec"]["dependsOn"][0]["function"]
    installed = documents(package / "install" / "function.yaml")[0]
    assert installed["spec"]["package"].split(":")[0] == function_package
    defined = {(x["spec"]["group"], x["spec"]["names"]["kind"])
               for p in (package / "configuration" / "xrds").iterdir() for x in documents(p)}
    steps = {}
    for path in sorted((package / "configuration" / "compositions").iterdir()):
        composition = documents(path)[0]
        ref = composition["spec"]["compositeTypeRef"]
        assert (ref["apiVersion"].split("/")[0], ref["kind"]) in defined
        assert {s["functionRef"]["name"] for s in composition["spec"]["pipeline"]} == {installed["metadata"]["name"]}
        steps[ref["kind"]] = [s["step"] for s in composition["spec"]["pipeline"]]
    # InferenceClass has no composition function: its Composition only runs the Usages step, which
    # composes nothing for it, so that Crossplane reconciles it.
    assert steps == {"AKSCluster": ["compose", "usages"], "CivoCluster": ["compose", "usages"],
                     "EKSCluster": ["compose", "usages"], "GKECluster": ["compose", "usages"],
                     "InferenceClass": ["usages"], "InferenceCluster": ["compose", "usages"],
                     "InferenceGateway": ["compose", "usages"], "ModelCache": ["compose", "usages"],
                     "ModelDeployment": ["compose", "usages"],
                     "ModelEndpoint": ["compose", "usages"], "ModelReplica": ["compose", "usages"],
                     "ModelService": ["compose", "usages"],
                     "NebiusCluster": ["compose", "usages"],
                     "ServingStack": ["compose", "usages"], "VultrCluster": ["compose", "usages"]}


def test_the_configuration_pins_every_dependency_exactly(package):
    text = (package / "configuration" / "crossplane.yaml").read_text()
    assert text.startswith("# No provider package is pinned for kubernetes.civo.m.upbound.io: install a provider "
                           "serving that group yourself.\n")
    meta = documents(package / "configuration" / "crossplane.yaml")[0]
    assert (meta["apiVersion"], meta["kind"], meta["metadata"]["name"]) == (
        "meta.pkg.crossplane.io/v1", "Configuration", "inferplane")
    assert meta["spec"]["crossplane"] == {"version": ">=v2.0.0"}
    assert meta["spec"]["dependsOn"] == [
        {"function": "xpkg.inferplane.dev/inferplane/function-inferplane", "version": "v0.1.0"},
        *({"provider": f"xpkg.upbound.io/upbound/{name}", "version": version} for name, version in (
            ("provider-aws-ec2", "v2.6.0"), ("provider-aws-efs", "v2.6.0"), ("provider-aws-eks", "v2.6.0"),
            ("provider-aws-iam", "v2.6.0"),
            ("provider-azure-containerservice", "v2.6.0"), ("provider-azure-network", "v2.6.0"),
            ("provider-family-azure", "v2.6.0"), ("provider-gcp-cloudplatform", "v2.6.0"),
            ("provider-gcp-compute", "v2.6.0"), ("provider-gcp-container", "v2.6.0"), ("provider-helm", "v1.4.0"),
            ("provider-kubernetes", "v1.3.0"), ("provider-nebius", "v1.0.1"), ("provider-vultr", "v1.0.0")))]


def composed_groups() -> set[str]:
    """The API groups of the managed resources the embedded engine composes for a fleet with a cluster on
    every cloud."""
    from inferplane.api import ALL_KINDS
    from inferplane.clouds import CLOUD_MODULES
    from inferplane.engine.control_plane import ControlPlane
    from inferplane.simulator.synthetic_fleet import fleet_manifests

    runtime = ControlPlane(None)
    writer = runtime._reconciler()
    for manifest in fleet_manifests(len(CLOUD_MODULES)):
        writer.submit(manifest)
    runtime.reconcile()
    # A core kind (apiVersion `v1`: Nebius's cloud-init Secret) is served by Kubernetes itself, no provider.
    return {o["apiVersion"].rsplit("/", 1)[0] for o in runtime.list() if "/" in o["apiVersion"]} - \
        {kind.GROUP for kind in ALL_KINDS}


def test_every_group_a_fleet_composes_is_pinned_or_reported():
    # A cloud module that starts composing another provider's kind must say which package serves it.
    from inferplane.crossplane.package import provider_packages, unpinned_groups

    assert unpinned_groups() == ["kubernetes.civo.m.upbound.io"]
    assert composed_groups() <= set(provider_packages())
    assert "kubernetes.civo.m.upbound.io" in composed_groups()


def test_the_function_package_runs_the_server_from_the_installed_package(package):
    meta = documents(package / "function" / "crossplane.yaml")[0]
    assert (meta["apiVersion"], meta["kind"], meta["metadata"]["name"], meta["spec"]) == (
        "meta.pkg.crossplane.io/v1beta1", "Function", "function-inferplane", {"crossplane": {"version": ">=v2.0.0"}})
    dockerfile = (package / "function" / "Dockerfile").read_text().splitlines()
    assert "FROM python:3.11.11-slim-bookworm" in dockerfile
    assert dockerfile[-1] == 'ENTRYPOINT ["inferplane", "function", "serve"]'
    copied = [line.split()[1:-1] for line in dockerfile if line.startswith("COPY ")]
    assert copied == [["pyproject.toml", "README.md"], ["inferplane"]]
    assert all((REPO / source).exists() for sources in copied for source in sources)


def test_another_image_renames_the_function_everywhere(tmp_path):
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "package", "build", str(tmp_path), "--image",
                          "registry.example/team/fn-inference:v9.1.0"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    meta = documents(tmp_path / "configuration" / "crossplane.yaml")[0]
    assert meta["spec"]["dependsOn"][0] == {"function": "registry.example/team/fn-inference", "version": "v9.1.0"}
    composition = documents(tmp_path / "configuration" / "compositions" / "inferenceclusters.inferplane.dev.yaml")[0]
    assert composition["spec"]["pipeline"][0]["functionRef"] == {"name": "team-fn-inference"}


# ---- the Usages step


def pipeline(stub, composite: dict, required: dict | None = None) -> fnv1.RunFunctionResponse:
    """Both steps, as Crossplane runs the pipeline: compose, then Usages over what it desired."""
    composed = stub.RunFunction(crossplane_request(composite, required=required))
    step = crossplane_request(composite, required=required)
    step.desired.CopyFrom(composed.desired)
    step.input.update(USAGES_INPUT)
    return stub.RunFunction(step)


def test_a_stacks_provider_configs_are_held_by_each_release_and_object(eks_stack, function_stub, crossplane_crds):
    rsp = pipeline(function_stub, eks_stack)
    desired = {k: resource.struct_to_dict(d.resource) for k, d in rsp.desired.resources.items()}
    usages = {k: v for k, v in desired.items() if k.startswith("usage-")}
    assert sorted(usages) == [f"usage-provider-config-by-{consumer}" for consumer in (
        "object-crd-inferenceobjectives-inference-networking-x-k8s-io",
        "object-crd-inferencepools-inference-networking-k8s-io", "object-crd-inferencepools-inference-networking-x-k8s-io",
        "object-gateway", "object-gateway-class", "object-nvidia-critical-pods-quota", "release-ai-gateway",
        "release-ai-gateway-crds", "release-cert-manager", "release-dcgm-exporter",
        "release-dra-driver-nvidia-gpu", "release-envoy-gateway", "release-kube-prometheus-stack", "release-lws")]
    assert usages["usage-provider-config-by-release-lws"] == {
        "apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
        "metadata": {"namespace": "inferplane-system"},
        "spec": {"of": {"apiVersion": "helm.m.crossplane.io/v1beta1", "kind": "ClusterProviderConfig",
                        "resourceRef": {"name": "eks-l4"}},
                 "by": {"apiVersion": "helm.m.crossplane.io/v1beta1", "kind": "Release",
                        "resourceSelector": {"matchControllerRef": True,
                                             "matchLabels": {CONSUMER_LABEL: "release-lws"}}},
                 "replayDeletion": True}}
    assert desired["release-lws"]["metadata"]["labels"][CONSUMER_LABEL] == "release-lws"
    assert all(rsp.desired.resources[k].ready == fnv1.READY_TRUE for k in usages)
    for key, usage in usages.items():
        assert crossplane_crds.validate(usage) == [], key


def test_a_cloud_cluster_is_held_by_the_stack_beside_it(function_stub, crossplane_crds):
    cluster = yaml.safe_load((RECIPE / "cluster.yaml").read_text())
    rsp = pipeline(function_stub, cluster, {"class-eks-l4": yaml.safe_load((RECIPE / "class.yaml").read_text())})
    usages = {k: resource.struct_to_dict(d.resource) for k, d in rsp.desired.resources.items() if k.startswith("usage-")}
    assert usages == {"usage-cluster-by-serving-stack": {
        "apiVersion": "protection.crossplane.io/v1beta1", "kind": "ClusterUsage", "metadata": {},
        "spec": {"of": {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "EKSCluster",
                        "resourceSelector": {"matchControllerRef": True}},
                 "by": {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack",
                        "resourceSelector": {"matchControllerRef": True}},
                 "replayDeletion": True}}}
    assert crossplane_crds.validate(usages["usage-cluster-by-serving-stack"]) == []


def test_a_replicas_objects_hold_their_clusters_provider_config(function_stub, crossplane_crds):
    from inferplane.compose.registry import composition_functions
    from inferplane.engine.control_plane import ControlPlane

    last = {}

    def keep(request):
        last["request"] = request
        return compose_replica(request)

    compose_replica = composition_functions()["ModelReplica"]
    runtime = ControlPlane(None)
    runtime.functions = {**composition_functions(), "ModelReplica": keep}
    runtime.apply([RECIPE])
    request = last["request"]
    rsp = pipeline(function_stub, request.composite, request.required)
    desired = {k: resource.struct_to_dict(d.resource) for k, d in rsp.desired.resources.items()}
    objects = sorted(k for k, v in desired.items() if v["kind"] == "Object")
    assert objects
    usages = {k: v for k, v in desired.items() if v["kind"] == "Usage"}
    assert sorted(usages) == [f"usage-provider-config-by-{o}" for o in objects]
    assert {(u["spec"]["of"]["kind"], u["spec"]["of"]["resourceRef"]["name"]) for u in usages.values()} == {
        ("ClusterProviderConfig", "eks-l4")}
    for key, usage in usages.items():
        assert crossplane_crds.validate(usage) == [], key
