"""The work queue: a no-op apply reconciles nothing, a change reconciles what depends on it, and a
cluster is simulated again only when what its simulation reads changed."""

import yaml

from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key
from inferplane.simulator.synthetic_fleet import write_fleet

# 14 clusters: two per source (eks-0000 and eks-0007 use eks-nvidia and eks-cpu, and so on).
CLUSTERS = 14


def edit(folder, name, change):
    path = next(folder.glob(f"*-{name}.yaml"))
    manifest = yaml.safe_load(path.read_text())
    change(manifest)
    path.write_text(yaml.safe_dump(manifest))


def versions(runtime):
    return {str(Key.of(o)): o["metadata"]["resourceVersion"] for o in runtime.list()}


def gpu_memory(runtime, cluster):
    return sorted({s["spec"]["devices"][0]["capacity"]["memory"]["value"]
                   for s in runtime.store.cluster_objects(cluster)[cluster]
                   if s["kind"] == "ResourceSlice" and s["spec"]["driver"] == "gpu.nvidia.com"})


def driver_versions(runtime, cluster):
    return sorted({s["spec"]["devices"][0]["attributes"]["driverVersion"]["version"]
                   for s in runtime.store.cluster_objects(cluster)[cluster]
                   if s["kind"] == "ResourceSlice" and s["spec"]["driver"] == "gpu.nvidia.com"})


def test_a_no_op_apply_reconciles_and_simulates_nothing(tmp_path):
    fleet = write_fleet(tmp_path / "fleet", CLUSTERS)
    runtime = ControlPlane(None)
    first = runtime.apply([fleet]).report
    assert (first.simulations, first.converged) == (CLUSTERS, True)
    before, simulated = versions(runtime), runtime.store.cluster_objects()

    again = runtime.apply([fleet])
    assert {verb for _, verb in again.applied} == {"unchanged"}
    assert (again.report.reconciles, again.report.simulations) == (0, 0)
    assert versions(runtime) == before and runtime.store.cluster_objects() == simulated


def test_a_change_to_one_cluster_reconciles_that_cluster_only(tmp_path):
    fleet = write_fleet(tmp_path / "fleet", CLUSTERS)
    runtime = ControlPlane(None)
    runtime.apply([fleet])
    before, simulated = versions(runtime), runtime.store.cluster_objects()

    edit(fleet, "gke-0001", lambda c: c["spec"]["nodePools"][0].update(nodeCount=3))
    report = runtime.apply([fleet]).report
    assert report.reconciled == {"InferenceCluster/gke-0001": 1, "GKECluster/gke-0001": 2}
    assert report.simulations == 1
    changed = {k for k, v in versions(runtime).items() if before.get(k) != v}
    assert changed == {"InferenceCluster/gke-0001", "GKECluster/gke-0001",
                       "NodePool/inferplane-system/gke-0001-gpu-a-5865538304a2"}
    nodes = [o["metadata"]["name"] for o in runtime.store.cluster_objects("gke-0001")["gke-0001"]
             if o["kind"] == "Node" and "-gpu-a-" in o["metadata"]["name"]]
    assert nodes == ["gke-0001-gpu-a-0", "gke-0001-gpu-a-1", "gke-0001-gpu-a-2"]
    others = {name: objects for name, objects in runtime.store.cluster_objects().items() if name != "gke-0001"}
    assert others == {name: objects for name, objects in simulated.items() if name != "gke-0001"}


def test_a_class_change_reconciles_every_cluster_using_it_and_no_other(tmp_path):
    fleet = write_fleet(tmp_path / "fleet", CLUSTERS)
    runtime = ControlPlane(None)
    runtime.apply([fleet])
    simulated = runtime.store.cluster_objects()
    assert gpu_memory(runtime, "eks-0000") == ["23034Mi"]  # an L4, as the NVIDIA driver reports it

    # The host's driver, which the class states: its devices change, its machine does not.
    edit(fleet, "eks-nvidia", lambda c: c["spec"]["devices"][0]["attributes"].update(
        driverVersion={"version": "580.65.6"}))
    result = runtime.apply([fleet])
    assert [(str(k), verb) for k, verb in result.applied if verb != "unchanged"] == [
        ("InferenceClass/eks-nvidia", "configured")]
    assert result.report.reconciled == {"InferenceCluster/eks-0000": 1, "InferenceCluster/eks-0007": 1}
    # The devices the class declares changed: both clusters' ResourceSlices are published again.
    assert result.report.simulations == 2
    assert driver_versions(runtime, "eks-0000") == driver_versions(runtime, "eks-0007") == ["580.65.6"]
    others = {name: objects for name, objects in runtime.store.cluster_objects().items() if not name.startswith("eks")}
    assert others == {name: objects for name, objects in simulated.items() if not name.startswith("eks")}


def test_a_cluster_applied_before_its_class_is_reconciled_when_the_class_arrives(tmp_path):
    fleet = write_fleet(tmp_path / "fleet", 1)  # eks-0000 with classes eks-nvidia and eks-cpu
    runtime = ControlPlane(None)
    runtime.apply([fleet / "00015-eks-0000.yaml", fleet / "00001-eks-cpu.yaml"])
    cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "eks-0000"))
    ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("False", "WaitingForClasses")

    report = runtime.apply([fleet / "00000-eks-nvidia.yaml"]).report
    assert report.reconciled["InferenceCluster/eks-0000"] >= 1
    cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "eks-0000"))
    ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("True", "Available")
    assert gpu_memory(runtime, "eks-0000") == ["23034Mi"]


def test_a_deleted_cluster_leaves_no_simulated_objects(tmp_path):
    fleet = write_fleet(tmp_path / "fleet", 2)
    runtime = ControlPlane(None)
    runtime.apply([fleet])
    assert set(runtime.store.cluster_objects()) == {"eks-0000", "gke-0001"}
    deleted, report = runtime.delete(Key("inferplane.dev", "InferenceCluster", "", "eks-0000"))
    assert deleted and report.converged
    assert set(runtime.store.cluster_objects()) == {"gke-0001"}


def test_a_cluster_change_reconciles_only_the_deployments_with_replicas_there(tmp_path):
    """A deployment with every replica placed watches the clusters hosting them, not the whole fleet."""
    fleet = write_fleet(tmp_path / "fleet", 20, models=True)  # model-0000 and model-0001, two replicas each
    runtime = ControlPlane(None)
    assert runtime.apply([fleet]).report.converged
    # Placed once the fleet settled, each deployment over the whole of it (not over the clusters that
    # happened to be ready first).
    assert sorted((r["metadata"]["name"], r["spec"]["clusterName"]) for r in runtime.list("ModelReplica")) == [
        ("model-0000-aks-0002-0", "aks-0002"), ("model-0000-aks-0009-0", "aks-0009"),
        ("model-0001-aks-0002-0", "aks-0002"), ("model-0001-aks-0009-0", "aks-0009")]

    edit(fleet, "gke-0001", lambda c: c["spec"]["nodePools"][0].update(nodeCount=3))
    assert runtime.apply([fleet]).report.reconciled == {"InferenceCluster/gke-0001": 1, "GKECluster/gke-0001": 2}

    edit(fleet, "aks-0002", lambda c: c["spec"]["nodePools"][0].update(nodeCount=3))
    assert runtime.apply([fleet]).report.reconciled == {
        "InferenceCluster/aks-0002": 1, "AKSCluster/aks-0002": 2, "ModelDeployment/default/model-0000": 1,
        "ModelDeployment/default/model-0001": 1, "ModelReplica/default/model-0000-aks-0002-0": 1,
        "ModelReplica/default/model-0001-aks-0002-0": 1}


def test_a_users_write_between_two_reconcile_batches_is_read_before_anything_is_written(tmp_path, monkeypatch):
    """The reconciler trusts its cache within a batch only because it reads what others wrote first,
    under the write lock: a change another process commits between two batches reaches the cluster
    and what is composed from it, and is never written over."""
    from inferplane.runtime import reconciler

    fleet = write_fleet(tmp_path / "fleet", CLUSTERS)
    state = tmp_path / "state"
    ControlPlane(state).apply([fleet])
    edit(fleet, "gke-0001", lambda c: c["spec"]["nodePools"][0].update(nodeCount=3))
    edit(fleet, "eks-0000", lambda c: c["spec"]["nodePools"][0].update(nodeCount=4))
    monkeypatch.setattr(reconciler, "BATCH_SECONDS", 0.0)  # one queue item per batch
    other = ControlPlane(state)
    batches = []
    run_batch = reconciler.Reconciler._run_batch

    def between_batches(self, report):
        if len(batches) == 1:  # the first batch reconciled gke-0001; now another process writes
            writer = reconciler.Reconciler(other.store, functions=other.functions)
            cluster = next(o for o in other.store.list("InferenceCluster") if o["metadata"]["name"] == "eks-0000")
            pools = [dict(p) for p in cluster["spec"]["nodePools"]]
            pools[0]["nodeCount"] = 4
            with other.store.transaction():
                writer.submit({**cluster, "spec": {**cluster["spec"], "nodePools": pools}})
        batches.append(report.reconciles)
        return run_batch(self, report)

    monkeypatch.setattr(reconciler.Reconciler, "_run_batch", between_batches)
    runtime = ControlPlane(state)
    gke = next(fleet.glob("*-gke-0001.yaml"))
    report = runtime.apply([gke]).report
    assert report.converged and len(batches) > 2
    assert report.reconciled == {"InferenceCluster/gke-0001": 1, "GKECluster/gke-0001": 2,
                                 "InferenceCluster/eks-0000": 1, "EKSCluster/eks-0000": 2}
    starting_sizes = [o["spec"]["initProvider"]["scalingConfig"]["desiredSize"]
                      for o in runtime.list("NodeGroup") if o["metadata"]["name"].startswith("eks-0000-gpu-a")]
    assert starting_sizes == [4]
    cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "eks-0000"))
    assert cluster["spec"]["nodePools"][0]["nodeCount"] == 4 and cluster["metadata"]["generation"] == 2
    nodes = [o["metadata"]["name"] for o in runtime.store.cluster_objects("eks-0000")["eks-0000"]
             if o["kind"] == "Node" and "-gpu-a-" in o["metadata"]["name"]]
    assert len(nodes) == 4
