"""Crossplane's Usage in the embedded engine: what a running cluster uses cannot be deleted from under
it, and deleting a cluster removes its serving stack before the cluster itself."""

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli
from inferplane.engine.in_use import InUse
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"
CLASS = Key("inferplane.dev", "InferenceClass", "", "eks-l4")
CLUSTER = Key("inferplane.dev", "InferenceCluster", "", "eks-l4")
RUNS_REPLICAS = (
    "inferencecluster.inferplane.dev/eks-l4: ModelDeployment default/qwen2-5-0-5b-l4 runs replicas "
    "qwen2-5-0-5b-l4-eks-l4-0, qwen2-5-0-5b-l4-eks-l4-1 on it; move them first: a NoExecute taint in the cluster's "
    "spec.taints drains them, or narrow each deployment's clusterSelector so that it no longer selects this "
    "cluster; nothing was deleted")


def drain_manifest(folder: Path) -> Path:
    """The recipe's cluster with a NoExecute fleet taint the recipe's deployment does not tolerate."""
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["taints"] = [{"key": "decommission", "effect": "NoExecute"}]
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump(cluster))
    return path


@pytest.fixture
def runtime():
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    yield runtime
    runtime.close()


def test_deleting_a_class_in_use_is_refused_and_keeps_everything(runtime):
    before = runtime.list()
    with pytest.raises(InUse) as refused:
        runtime.delete(CLASS)
    assert str(refused.value) == (
        "inferenceclass.inferplane.dev/eks-l4 is in use by inferencecluster.inferplane.dev/eks-l4: delete those or "
        "change them to stop using it first; nothing was deleted")
    assert runtime.list() == before


def test_delete_command_exits_non_zero_naming_the_users(tmp_path):
    state = tmp_path / "state"
    assert CliRunner().invoke(cli, ["apply", "-f", str(EKS_RECIPE), "--state", str(state)]).exit_code == 0
    releases = CliRunner().invoke(cli, ["get", "releases", "-o", "json", "--state", str(state)]).stdout
    refused = CliRunner().invoke(cli, ["delete", "iclass", "eks-l4", "--state", str(state)])
    assert refused.exit_code == 1
    assert refused.stderr.strip() == (
        "Error: inferenceclass.inferplane.dev/eks-l4 is in use by inferencecluster.inferplane.dev/eks-l4: delete "
        "those or change them to stop using it first; nothing was deleted")
    assert CliRunner().invoke(cli, ["get", "releases", "-o", "json", "--state", str(state)]).stdout == releases
    # The cluster runs the recipe's model: refused, naming the deployment and its replicas, and how to move them.
    pods = CliRunner().invoke(cli, ["get", "pods", "-A", "--cluster", "eks-l4", "-o", "json", "--state", str(state)]).stdout
    refused = CliRunner().invoke(cli, ["delete", "icluster", "eks-l4", "--state", str(state)])
    assert (refused.exit_code, refused.stderr.strip()) == (1, f"Error: {RUNS_REPLICAS}")
    assert CliRunner().invoke(cli, ["get", "pods", "-A", "--cluster", "eks-l4", "-o", "json", "--state", str(state)]).stdout == pods
    # Drained by a NoExecute taint, it runs no replica and can go; once it is gone, nothing uses the class.
    drain = drain_manifest(tmp_path)
    assert CliRunner().invoke(cli, ["apply", "-f", str(drain), "--state", str(state)]).exit_code == 0
    listed = CliRunner().invoke(cli, ["get", "mr", "-A", "--state", str(state)])
    assert (listed.stdout, listed.stderr) == ("", "No resources found.\n")
    assert CliRunner().invoke(cli, ["delete", "icluster", "eks-l4", "--state", str(state)]).exit_code == 0
    assert CliRunner().invoke(cli, ["delete", "iclass", "eks-l4", "--state", str(state)]).exit_code == 0


def test_a_composed_cluster_its_stack_runs_on_cannot_be_deleted_alone(runtime):
    with pytest.raises(InUse, match=r"^ekscluster.infrastructure.inferplane.dev/eks-l4 is in use by "
                                    r"clusterproviderconfig.helm.m.crossplane.io/eks-l4, "
                                    r"servingstack.infrastructure.inferplane.dev/eks-l4, "
                                    r"clusterproviderconfig.kubernetes.m.crossplane.io/eks-l4: "):
        runtime.delete(Key("infrastructure.inferplane.dev", "EKSCluster", "", "eks-l4"))


def test_a_provider_config_and_a_kubeconfig_secret_in_use_cannot_be_deleted(runtime):
    with pytest.raises(InUse, match=r"^clusterproviderconfig.helm.m.crossplane.io/eks-l4 is in use by "
                                    r"release.helm.m.crossplane.io/eks-l4-ai-gateway-85a2a93936d4, "
                                    r"release.helm.m.crossplane.io/eks-l4-ai-gateway-crds-0fbcfe9020a9, "
                                    r"release.helm.m.crossplane.io/eks-l4-cert-manager-29642d4bb390, "):
        runtime.delete(Key("helm.m.crossplane.io", "ClusterProviderConfig", "", "eks-l4"))
    runtime.store.put({"apiVersion": "v1", "kind": "Secret",
                       "metadata": {"name": "eks-l4-connection", "namespace": "inferplane-system"}})
    with pytest.raises(InUse, match=r"^secret/eks-l4-connection is in use by "
                                    r"clusterproviderconfig.helm.m.crossplane.io/eks-l4, "
                                    r"servingstack.infrastructure.inferplane.dev/eks-l4, "
                                    r"clusterproviderconfig.kubernetes.m.crossplane.io/eks-l4, "
                                    # the cloud cluster's own, for its shared storage's StorageClass
                                    r"clusterproviderconfig.kubernetes.m.crossplane.io/eks-l4-storage-provider-config-"
                                    r"[0-9a-f]+: "):
        runtime.delete(Key("", "Secret", "inferplane-system", "eks-l4-connection"))


def test_a_cluster_running_replicas_is_not_deleted_until_they_are_moved(runtime, tmp_path):
    before = runtime.list()
    with pytest.raises(InUse) as refused:
        runtime.delete(CLUSTER)
    assert str(refused.value) == RUNS_REPLICAS
    assert runtime.list() == before
    # Narrowing the deployment's clusterSelector to clusters labelled for it moves its replicas off too.
    deployment = yaml.safe_load((EKS_RECIPE / "model.yaml").read_text())
    deployment["spec"]["template"]["spec"]["clusterSelector"] = {"matchLabels": {"serving": "qwen"}}
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(deployment))
    assert runtime.apply([tmp_path / "model.yaml"]).report.converged
    assert runtime.list("ModelReplica") == []
    deleted, report = runtime.delete(CLUSTER)
    assert deleted and report.converged


def test_deleting_a_cluster_removes_its_serving_stack_before_the_cluster(runtime, tmp_path):
    assert runtime.apply([drain_manifest(tmp_path)]).report.converged
    assert runtime.list("ModelReplica") == []
    deleted = []
    store_delete = runtime.store.delete

    def recording(key):
        deleted.append(key)
        return store_delete(key)

    runtime.store.delete = recording
    runtime.delete(CLUSTER)
    everything = [k.qualified() for k in deleted]
    # The cloud cluster's shared storage: its StorageClass Object goes before the ProviderConfig of the cloud
    # cluster's own it went through (it is orphaned, never deleted on the cluster: it goes with it, as
    # Modelplane composes it); the rest is the stack's.
    storage = [name for name in everything if "storage-" in name]
    assert [n.split(".")[0] for n in storage] == ["object", "clusterproviderconfig"]
    order = [name for name in everything if name not in storage]

    def position(prefix, last=False):
        found = [i for i, name in enumerate(order) if name.startswith(prefix)]
        return found[-1] if last else found[0]

    # Releases and Objects run on the cluster: they go first, each before the credentials it used,
    # then the stack; node groups before their cloud cluster; the composite itself last.
    assert position("release.", last=True) < position("clusterproviderconfig.helm.")
    assert position("object.", last=True) < position("clusterproviderconfig.kubernetes.")
    assert position("clusterproviderconfig.", last=True) < position("servingstack.") < position("cluster.eks.")
    assert position("nodegroup.", last=True) < position("cluster.eks.") < position("ekscluster.")
    # The composite goes last, after everything it composed.
    assert order[-1] == "inferencecluster.inferplane.dev/eks-l4"
    assert [o["kind"] for o in runtime.list()] == ["InferenceClass", "ModelDeployment"]


def test_a_class_removed_under_a_live_cluster_holds_it_and_deletes_nothing(runtime):
    """However a class disappears, the cluster is held (WaitingForClasses) and keeps running."""
    composed = {str(Key.of(o)): o.get("spec") for o in runtime.list() if o["kind"] not in
                ("InferenceClass", "InferenceCluster", "ModelDeployment")}
    runtime.store.delete(CLASS)  # behind admission's back, as a restored backup might
    runtime.reconcile()
    after = {str(Key.of(o)): o.get("spec") for o in runtime.list() if o["kind"] not in
             ("InferenceClass", "InferenceCluster", "ModelDeployment")}
    assert after == composed
    cluster = runtime.get(CLUSTER)
    ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("False", "WaitingForClasses")


def test_the_cloud_credentials_provider_config_a_cluster_uses_cannot_be_deleted_naming_the_cluster(runtime):
    """An EKS cluster's managed resources (eks.aws.m.upbound.io, ec2.aws.m.upbound.io...) name the AWS
    family's ClusterProviderConfig (aws.m.upbound.io), as the user applies it from Modelplane's docs."""
    config = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests" / "getting-started" / \
        "clusterproviderconfig-aws.yaml"
    assert runtime.apply([config]).admission.ok
    key = Key("aws.m.upbound.io", "ClusterProviderConfig", "", "default")
    with pytest.raises(InUse) as refused:
        runtime.delete(key)
    assert Key("eks.aws.m.upbound.io", "Cluster", "inferplane-system", "eks-l4") in refused.value.users
    assert str(refused.value).startswith("clusterproviderconfig.aws.m.upbound.io/default is in use by ")
    assert str(refused.value).endswith(": they are composed for inferencecluster.inferplane.dev/eks-l4: delete or "
                                       "change that first; nothing was deleted")
    assert runtime.get(key) is not None
