"""What users rely on and nothing else guarded: status never claims more than is true, what the
engine records about gates, deletions and audits, and the reconciler's ownership check."""

from pathlib import Path

import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli
from inferplane.cli.views import fleet_table, get_table
from inferplane.compose.base import Desired, Response
from inferplane.runtime.reconciler import Reconciler
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key, Store

REPO = Path(__file__).resolve().parents[2]
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"
CLUSTER = Key("inferplane.dev", "InferenceCluster", "", "eks-l4")


def condition(obj, type_):
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def table_row(text, name):
    return next(line.split() for line in text.splitlines() if line.split()[0] == name)


def test_a_cluster_whose_stack_is_invalid_is_not_ready_anywhere(monkeypatch):
    # A stack the composite cannot read (as an over-long kubeconfig Secret name once made it).
    import inferplane.compose.inference_cluster as composer

    monkeypatch.setattr(composer, "connection_secret_name", lambda name: "x" * 254)
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    cluster = runtime.get(CLUSTER)
    assert condition(cluster, "ClusterReady")["status"] == "True"  # the cloud cluster itself is up
    assert (condition(cluster, "StackReady")["status"], condition(cluster, "StackReady")["reason"]) == \
        ("False", "InvalidSpec")
    assert (condition(cluster, "Ready")["status"], condition(cluster, "Ready")["reason"]) == ("False", "InvalidSpec")
    assert table_row(fleet_table(runtime.list()), "eks-l4")[:4] == ["eks-l4", "EKS", "False", "InvalidSpec"]
    assert table_row(get_table(runtime.list("InferenceCluster")), "eks-l4")[:4] == ["eks-l4", "EKS", "False",
                                                                                   "InvalidSpec"]


def test_a_composite_is_ready_only_when_everything_composed_is():
    store = Store(None)
    store.put({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"},
               "spec": {}})
    waiting = {"InferenceCluster": lambda request: Response(desired={"stack": Desired(
        {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack", "metadata": {"name": "x"},
         "spec": {}}, ready=False)})}
    reconciler = Reconciler(store, functions=waiting)
    reconciler.resync()  # objects put straight into the store are queued by a resync
    reconciler.run()
    ready = condition(store.get(Key("inferplane.dev", "InferenceCluster", "", "x")), "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "Creating", "waiting for stack")


def test_a_blocked_cluster_keeps_its_status_and_records_the_gate(tmp_path):
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    before = runtime.get(CLUSTER)["status"]
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    # An AMD device, as AMD's driver publishes one (the NVIDIA attributes are not its).
    klass["spec"]["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com",
                                       attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, capacity={})
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    runtime.apply([tmp_path / "class.yaml"])
    after = runtime.get(CLUSTER)["status"]
    assert after["schedulablePools"] == before["schedulablePools"]
    assert after["schedulablePools"][0]["name"] == "l4"
    assert after["draDrivers"] == ["gpu.amd.com"]
    events = runtime.store.event_log.events(CLUSTER)
    assert [(e["type"], e["reason"]) for e in events if not e["reason"].startswith("PlacementAudit")] == [
        ("Normal", "Available"), ("Normal", "Available"), ("Warning", "UnsupportedDevices")]


def test_a_composed_resource_no_longer_desired_is_deleted_with_an_event(tmp_path):
    runtime = ControlPlane(None)
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["nodePools"].append({"name": "spare", "className": "eks-l4", "nodeCount": 1})
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    runtime.apply([EKS_RECIPE / "class.yaml", tmp_path / "cluster.yaml"])
    cluster["spec"]["nodePools"].pop()
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    runtime.apply([tmp_path / "cluster.yaml"])
    events = runtime.store.event_log.events(Key("infrastructure.inferplane.dev", "EKSCluster", "", "eks-l4"))
    assert ("Normal", "DeletedComposed", "deleted NodeGroup/inferplane-system/eks-l4-spare-ad99beee867a: no longer desired") in [
        (e["type"], e["reason"], e["message"]) for e in events]


def test_a_placement_audit_finding_is_a_warning_event_on_the_cluster(monkeypatch):
    import inferplane.simulator.fleet as fleet
    from inferplane.simulator.audits import Finding

    monkeypatch.setattr(fleet, "audit", lambda objects: [Finding("placement", "PendingPod", "ns/x", None, "pod x is Pending: no node fits")])
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    assert ("Warning", "PlacementAuditPendingPod", "pod x is Pending: no node fits") in [
        (e["type"], e["reason"], e["message"]) for e in runtime.store.event_log.events(CLUSTER)]


def test_a_resource_controlled_by_another_composite_is_never_taken_over():
    store = Store(None)
    for name in ("a", "b"):
        store.put({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": name},
                   "spec": {}})

    def wants_shared(request):
        value = request.composite["metadata"]["name"]
        return Response(desired={"cm": Desired({"apiVersion": "v1", "kind": "ConfigMap", "data": {"by": value},
                                                "metadata": {"name": "shared", "namespace": "default"}})})

    reconciler = Reconciler(store, functions={"InferenceCluster": wants_shared})
    reconciler.resync()  # objects put straight into the store are queued by a resync
    reconciler.run()
    shared = store.get(Key("", "ConfigMap", "default", "shared"))
    assert shared["data"] == {"by": "a"}  # the first composite (in key order) made it
    assert shared["metadata"]["ownerReferences"][0]["name"] == "a"
    message = ("ConfigMap/default/shared is controlled by InferenceCluster a, so InferenceCluster b cannot apply it: "
               "rename or delete one of the two")
    assert [(e["type"], e["reason"], e["message"], e["count"])
            for e in store.event_log.events(Key("inferplane.dev", "InferenceCluster", "", "b"))] == [
        ("Warning", "ComposedResourceConflict", message, 1)]
    # The loser says so in its conditions, naming the owner; the winner is synced.
    loser = store.get(Key("inferplane.dev", "InferenceCluster", "", "b"))
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in loser["status"]["conditions"]] == [
        ("Ready", "False", "ComposedResourceConflict", message),
        ("Synced", "False", "ComposedResourceConflict", message)]
    assert condition(store.get(Key("inferplane.dev", "InferenceCluster", "", "a")), "Synced")["status"] == "True"


def test_get_nodes_in_a_cluster_shows_each_nodes_pool(tmp_path):
    state = str(tmp_path / "state")
    assert CliRunner().invoke(cli, ["apply", "-f", str(EKS_RECIPE), "--state", state]).exit_code == 0
    nodes = CliRunner().invoke(cli, ["get", "nodes", "--cluster", "eks-l4", "--state", state]).stdout.splitlines()
    assert nodes[0].split() == ["NAME", "STATUS", "POOL", "TAINTS", "AGE"]
    assert [line.split()[:3] for line in nodes[1:]] == [
        ["eks-l4-l4-0", "Ready", "l4"], ["eks-l4-l4-1", "Ready", "l4"],
        ["eks-l4-system-0", "Ready", "system"], ["eks-l4-system-1", "Ready", "system"]]
