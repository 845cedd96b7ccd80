"""The embedded reconciler: fixpoint, garbage collection, and the gate never deleting a live cluster."""

from pathlib import Path

import pytest
import yaml

from inferplane.simulator.provider import SimulatedProvider
from inferplane.runtime.reconciler import Reconciler
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"


def composed_under(runtime, root_kind, root_name):
    """Every object composed (transitively) under a root, by key, without status."""
    objects = runtime.list()
    by_owner = {}
    for obj in objects:
        for ref in obj["metadata"].get("ownerReferences") or []:
            by_owner.setdefault(ref["uid"], []).append(obj)
    root = next(o for o in objects if o["kind"] == root_kind and o["metadata"]["name"] == root_name)
    found, todo = {}, [root]
    while todo:
        for child in by_owner.get(todo.pop()["metadata"]["uid"], []):
            found[str(Key.of(child))] = {k: v for k, v in child.items() if k != "status"}
            todo.append(child)
    return found


def resynced(store, functions):
    """A reconciler with every composite queued."""
    reconciler = Reconciler(store, functions=functions)
    reconciler.resync()
    return reconciler


def condition(obj, type_):
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def test_eks_stack_reads_the_kubeconfig_that_cluster_auth_writes():
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    composed = composed_under(runtime, "InferenceCluster", "eks-l4").values()
    written = [o["spec"]["writeConnectionSecretToRef"] for o in composed if "writeConnectionSecretToRef" in o["spec"]]
    # Only the ClusterAuth writes one: the eks Cluster publishes no kubeconfig.
    assert [o["kind"] for o in composed if "writeConnectionSecretToRef" in o["spec"]] == ["ClusterAuth"]
    assert written == [{"name": "eks-l4-connection"}]
    read = {o["spec"]["credentials"]["secretRef"]["name"] for o in composed if o["kind"] == "ClusterProviderConfig"}
    assert read == {"eks-l4-connection"}


def test_supported_cluster_reaches_a_ready_fixpoint():
    runtime = ControlPlane(None)
    result = runtime.apply([EKS_RECIPE])
    assert result.report.converged
    cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "eks-l4"))
    assert condition(cluster, "ClusterReady")["status"] == "True"
    assert condition(cluster, "StackReady")["status"] == "True"
    assert condition(cluster, "Ready")["status"] == "True"
    composed = composed_under(runtime, "InferenceCluster", "eks-l4")
    kinds = sorted({key.split("/")[0] for key in composed})
    # The recipe's EKS cluster names only its region: its foundation is the network, the roles, the
    # addons and the ClusterAuth that writes the kubeconfig the stack's ProviderConfigs read.
    # EFS for ModelCache volumes too: the file system, its mount targets and their NFS security group,
    # and the CSI driver's Pod Identity association.
    assert kinds == ["Addon", "Cluster", "ClusterAuth", "ClusterProviderConfig", "EIP", "EKSCluster", "FileSystem",
                     "InternetGateway", "MountTarget", "NATGateway", "NodeGroup", "Object", "PodIdentityAssociation",
                     "Release", "Role", "RolePolicyAttachment", "Route", "RouteTable", "RouteTableAssociation",
                     "SecurityGroup", "SecurityGroupIngressRule", "ServingStack", "Subnet", "VPC"]
    # Nothing changed: nothing to reconcile. Reconciling everything again changes nothing: the fixpoint holds.
    before = runtime.list()
    assert runtime._reconciler().run().reconciles == 0
    resynced = runtime._reconciler()
    resynced.resync()
    report = resynced.run()
    assert (report.reconciles, report.simulations) == (8, 0), \
        ("the cluster, its EKSCluster, its stack, the recipe's ModelDeployment, its two ModelReplicas and their "
         "two ModelEndpoints, once each")
    assert runtime.list() == before


def test_class_change_to_unsupported_driver_keeps_the_live_cluster_untouched(tmp_path):
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    live = composed_under(runtime, "InferenceCluster", "eks-l4")
    assert any(k.startswith("NodeGroup/") for k in live)

    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    # An AMD device, as AMD's driver publishes one (the NVIDIA attributes are not its).
    klass["spec"]["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com",
                                       attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, capacity={})
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    result = runtime.apply([tmp_path / "class.yaml"])
    assert result.admission.ok and result.report.converged

    held = composed_under(runtime, "InferenceCluster", "eks-l4")
    # Nothing changed but the stack's mark that the gate holds it as it was.
    stack = held.pop("ServingStack/eks-l4")
    assert stack["metadata"]["annotations"]["inferplane.dev/held"].startswith("UnsupportedDevices: kept as it was")
    assert stack["spec"] == live.pop("ServingStack/eks-l4")["spec"]
    assert held == live
    cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "eks-l4"))
    ready = condition(cluster, "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("False", "UnsupportedDevices")
    assert ready["message"] == (
        "class eks-l4 claims gpu.amd.com; EKS clusters support dra.cpu, dra.net, gpu.nvidia.com, neuron.aws.com: use classes whose "
        "drivers the cloud serves, or run these devices on an Existing cluster (the running cluster is kept as it "
        "is: no new pools, no new drivers)")


def test_deleting_a_cluster_garbage_collects_everything_composed(tmp_path):
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    # Its replicas moved off first (a cluster running replicas is not deleted): a NoExecute taint drains them.
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["taints"] = [{"key": "decommission", "effect": "NoExecute"}]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    runtime.apply([tmp_path / "cluster.yaml"])
    deleted, report = runtime.delete(Key("inferplane.dev", "InferenceCluster", "", "eks-l4"))
    assert deleted and report.converged
    kinds = sorted({o["kind"] for o in runtime.list()})
    assert kinds == ["InferenceClass", "ModelDeployment"]


def test_removing_a_pool_garbage_collects_only_its_node_group(tmp_path):
    runtime = ControlPlane(None)
    cluster = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    cluster["spec"]["nodePools"].append({"name": "spare", "className": "eks-l4", "nodeCount": 1})
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    runtime.apply([EKS_RECIPE / "class.yaml", tmp_path / "cluster.yaml"])
    names = {o["metadata"]["name"] for o in runtime.list("NodeGroup")}
    assert names == {"eks-l4-system-83b259569af3", "eks-l4-l4-c76b1331bc1b", "eks-l4-spare-ad99beee867a"}
    cluster["spec"]["nodePools"].pop()
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    runtime.apply([tmp_path / "cluster.yaml"])
    assert {o["metadata"]["name"] for o in runtime.list("NodeGroup")} == {"eks-l4-system-83b259569af3",
                                                                          "eks-l4-l4-c76b1331bc1b"}


def test_names_that_join_alike_never_collide(tmp_path):
    """Cluster a with pool b-c and cluster a-b with pool c: both used to compose NodeGroup a-b-c."""
    base = yaml.safe_load((EKS_RECIPE / "cluster.yaml").read_text())
    docs = []
    for cluster_name, pool_name in (("a", "b-c"), ("a-b", "c")):
        doc = yaml.safe_load(yaml.safe_dump(base))
        doc["metadata"]["name"] = cluster_name
        doc["spec"]["nodePools"][0]["name"] = pool_name
        docs.append(doc)
    (tmp_path / "clusters.yaml").write_text(yaml.safe_dump_all(docs))
    runtime = ControlPlane(None)
    assert runtime.apply([EKS_RECIPE / "class.yaml", tmp_path / "clusters.yaml"]).report.converged
    groups = {o["metadata"]["name"]: (o["metadata"]["labels"]["crossplane.io/composite"],
                                      o["metadata"]["annotations"]["crossplane.io/external-name"])
              for o in runtime.list("NodeGroup")}
    assert groups == {"a-b-c-46d64d02070d": ("a", "b-c"), "a-b-c-2971aa165b65": ("a-b", "c"),
                      "a-system-8c47b3018a90": ("a", "system"), "a-b-system-54532c329425": ("a-b", "system")}
    for name in ("a", "a-b"):
        cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", name))
        assert condition(cluster, "ClusterReady")["status"] == "True"


def test_a_function_that_never_settles_is_reported_not_looped_forever():
    from inferplane.compose.base import Desired, Response
    from inferplane.runtime.store import Store

    store = Store(None)
    Reconciler(store, functions={"InferenceCluster": None}).submit(
        {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"}, "spec": {}})
    calls = {"n": 0}

    def restless(request):
        calls["n"] += 1  # a new desired value every time: never a fixpoint
        return Response(desired={"cm": Desired({"apiVersion": "v1", "kind": "ConfigMap",
                                                "metadata": {"name": "cm", "namespace": "default"},
                                                "data": {"n": str(calls["n"])}})})

    report = Reconciler(store, functions={"InferenceCluster": restless}).run()
    assert not report.converged
    assert report.unconverged == {"InferenceCluster/x": 25}


def test_a_failing_function_reports_synced_false_and_deletes_nothing():
    from inferplane.compose.base import Desired, Response
    from inferplane.runtime.store import Store

    store = Store(None)
    Reconciler(store, functions={"InferenceCluster": None}).submit(
        {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"}, "spec": {}})
    healthy = {"InferenceCluster": lambda request: Response(desired={"cm": Desired(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}})})}
    assert Reconciler(store, functions=healthy).run().converged

    def broken(request):
        raise ValueError("boom")

    # A new version of the function: every composite is reconciled again, as after a controller's restart.
    assert resynced(store, {"InferenceCluster": broken}).run().converged
    assert [o["kind"] for o in store.list()] == ["ConfigMap", "InferenceCluster"]
    cluster = store.get(Key("inferplane.dev", "InferenceCluster", "", "x"))
    synced = condition(cluster, "Synced")
    assert (synced["status"], synced["reason"], synced["message"]) == (
        "False", "ReconcileError", "composition function failed: ValueError: boom")


def test_the_fleet_table_says_a_cluster_never_composed_failed_to_reconcile():
    from inferplane.cli.views import fleet_table
    from inferplane.runtime.store import Store

    def broken(request):
        raise ValueError("boom")

    store = Store(None)
    reconciler = Reconciler(store, functions={"InferenceCluster": broken})
    reconciler.submit({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"},
                       "spec": {"cluster": {"source": "Existing"}}})
    reconciler.run()
    row = fleet_table(store.list()).splitlines()[1].split()
    assert row[:4] == ["x", "Existing", "Unknown", "ReconcileError"]


def test_requirements_asked_before_are_answered_up_front_and_a_changed_need_is_asked_afresh():
    """The reconciler answers what a function asked for last time in its first call; when the function
    then asks for something else (its spec now names another object), it is called round by round
    again, and the new object's content reaches it, as do later changes to that object."""
    from inferplane.compose.base import Requirement, Response
    from inferplane.runtime.store import Store

    store = Store(None)
    reconciler = Reconciler(store, functions={"InferenceCluster": None})

    def config_map(name, value):  # any kind the function requires by name; a class here
        return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": name},
                "spec": {"value": value}}

    def cluster(source):
        return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"},
                "spec": {"source": source}}

    for obj in (config_map("a", "from a"), config_map("b", "from b"), cluster("a")):
        reconciler.submit(obj)
    requests = []

    def copies_its_config(request):
        requests.append(sorted(request.required))
        name = request.composite["spec"]["source"]
        response = Response(requirements={f"config-{name}": Requirement("inferplane.dev/v1alpha1", "InferenceClass",
                                                                         name)})
        found = request.required.get(f"config-{name}")
        if found is not None:
            response.status["value"] = found["spec"]["value"]
        return response

    reconciler.functions = {"InferenceCluster": copies_its_config}

    def value():
        return store.get(Key("inferplane.dev", "InferenceCluster", "", "x"))["status"]["value"]

    assert reconciler.run().converged and value() == "from a"
    assert requests == [[], ["config-a"]]  # asked, then answered

    requests.clear()
    reconciler.submit(cluster("b"))
    assert reconciler.run().converged and value() == "from b"
    assert requests == [["config-a"], [], ["config-b"]]  # a answered up front; it asks for b: afresh

    requests.clear()
    reconciler.submit(config_map("b", "b, edited"))
    assert reconciler.run().converged and value() == "b, edited"
    assert requests == [["config-b"]]  # b answered up front: one call


def test_a_renamed_composed_resource_replaces_the_old_one():
    from inferplane.compose.base import Desired, Response
    from inferplane.runtime.store import Store

    store = Store(None)
    Reconciler(store, functions={"InferenceCluster": None}).submit(
        {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"}, "spec": {}})

    def named(name):
        return {"InferenceCluster": lambda request: Response(desired={"cm": Desired(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})})}

    Reconciler(store, functions=named("old")).run()
    resynced(store, named("new")).run()
    assert [o["metadata"]["name"] for o in store.list("ConfigMap")] == ["new"]


def test_composition_functions_leave_their_requests_as_they_were():
    """The reconciler hands its cache's objects to the functions uncopied: a function that modified
    its request would corrupt what every later reconcile reads."""
    import json

    from inferplane.compose.registry import composition_functions

    def checked(function):
        def call(request):
            before = json.dumps([request.composite, request.observed, request.required], sort_keys=True)
            response = function(request)
            assert json.dumps([request.composite, request.observed, request.required], sort_keys=True) == before, \
                f"{request.composite['kind']}/{request.composite['metadata']['name']}: request modified"
            calls.append(request.composite["kind"])
            return response
        return call

    calls = []
    runtime = ControlPlane(None)
    runtime.__dict__["functions"] = {kind: checked(f) for kind, f in composition_functions().items()}
    assert runtime.apply([REPO / "recipes" / "mixed-fleet"]).report.converged
    assert {"InferenceCluster", "ServingStack", "EKSCluster", "GKECluster"} <= set(calls)


# ---- an Existing cluster's version: declared, or the one the cluster reports

ONPREM = """
apiVersion: inferplane.dev/v1alpha1
kind: InferenceClass
metadata: {name: lab-epyc}
spec:
  devices:
    - {name: cpu, driver: dra.cpu, deviceClassName: dra.cpu, capacity: {cpu: {value: "16"}}}
---
apiVersion: inferplane.dev/v1alpha1
kind: InferenceCluster
metadata: {name: lab}
spec:
  cluster:
    source: Existing
    existing:
      secretRef: {name: lab-kubeconfig}
  nodePools:
    - {name: epyc, className: lab-epyc, nodeCount: 2}
"""


def apply_onprem(tmp_path, provider):
    (tmp_path / "lab.yaml").write_text(ONPREM)
    runtime = ControlPlane(None, provider=provider)
    assert runtime.apply([tmp_path]).admission.ok
    return runtime, runtime.get(Key("inferplane.dev", "InferenceCluster", "", "lab"))


def test_existing_cluster_without_a_version_uses_the_one_the_cluster_reports(tmp_path):
    runtime, cluster = apply_onprem(tmp_path, SimulatedProvider(kubernetes_version="v1.36.2"))
    assert condition(cluster, "ClusterReady")["status"] == "True"
    stack = runtime.get(Key("infrastructure.inferplane.dev", "ServingStack", "", "lab"))
    assert stack["spec"]["versions"] == {"kubernetes": "1.36.2"}
    probe = next(o for o in runtime.list("Object") if o["metadata"]["name"] == "lab-kubernetes-version")
    assert probe["spec"]["managementPolicies"] == ["Observe"]
    assert probe["spec"]["forProvider"]["manifest"] == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubeadm-config", "namespace": "kube-system"}}


def test_existing_cluster_reporting_too_old_a_version_is_held_naming_driver_and_version(tmp_path):
    runtime, cluster = apply_onprem(tmp_path, SimulatedProvider(kubernetes_version="v1.35.4"))
    ready = condition(cluster, "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("False", "KubernetesVersionTooOld")
    assert ready["message"] == (
        "pool epyc uses class lab-epyc, which claims dra.cpu; that needs Kubernetes >= 1.36, and this cluster has "
        "1.35.4 (reported by the cluster): upgrade the cluster to 1.36 or later (the running cluster is kept as it is: "
        "no new pools, no new drivers)")
    # Nothing is installed on a cluster too old for its drivers.
    assert runtime.get(Key("infrastructure.inferplane.dev", "ServingStack", "", "lab")) is None


def test_existing_cluster_that_reports_no_version_waits_and_says_how_to_declare_it(tmp_path):
    class NoKubeadm(SimulatedProvider):
        def target_object(self, wanted):
            return None

    _, cluster = apply_onprem(tmp_path, NoKubeadm())
    ready = condition(cluster, "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("False", "WaitingForKubernetesVersion")
    assert ready["message"] == (
        "InferenceCluster lab declares no Kubernetes version, and the cluster has not reported one yet (inferplane "
        "reads the ConfigMap kube-system/kubeadm-config): wait, or set spec.cluster.existing.kubernetesVersion to the "
        "version the cluster runs (the running cluster is kept as it is: no new pools, no new drivers)")


def test_a_deployment_waiting_for_room_is_placed_when_a_cluster_arrives():
    """The deployment requires every cluster: one created later reconciles it, with no resync."""
    amd = REPO / "recipes" / "qwen2.5-0.5b-amd"
    runtime = ControlPlane(None)
    assert runtime.apply([amd / "class.yaml", amd / "cache.yaml", amd / "model.yaml"]).report.converged
    (waiting,) = runtime.list("ModelDeployment")
    assert waiting["status"]["replicas"] == {"total": 0, "ready": 0}
    assert condition(waiting, "Scheduled")["message"] == \
        "ModelDeployment qwen2-5-0-5b-amd: 0 of 1 replicas placed; no clusters"
    assert runtime.list("ModelReplica") == []
    runtime.apply([amd / "cluster.yaml"])
    (placed,) = runtime.list("ModelDeployment")
    assert placed["status"]["replicas"]["total"] == 1 and placed["status"]["clusters"] == ["amd-lab"]
    assert [r["spec"]["clusterName"] for r in runtime.list("ModelReplica")] == ["amd-lab"]


@pytest.mark.parametrize("recipe", sorted(p.name for p in (REPO / "recipes").iterdir()))
def test_simulations_leave_their_inputs_as_they_were(monkeypatch, recipe):
    """The reconciler hands its cache's pools, class devices and chart values to the simulation
    uncopied: a simulation that modified them would corrupt what every later reconcile reads."""
    import json

    from inferplane.simulator import controller

    simulate = controller.simulate
    simulated = []

    def checked(store, cluster, inputs, templates=None):
        before = json.dumps([cluster, inputs], sort_keys=True)
        result = simulate(store, cluster, inputs, templates)
        assert json.dumps([cluster, inputs], sort_keys=True) == before, f"{cluster['metadata']['name']}: inputs modified"
        simulated.append(cluster["metadata"]["name"])
        return result

    monkeypatch.setattr(controller, "simulate", checked)
    runtime = ControlPlane(None)
    assert runtime.apply([REPO / "recipes" / recipe]).report.converged
    assert sorted(simulated) == sorted(o["metadata"]["name"] for o in runtime.list("InferenceCluster"))


def eks_gpu_group(store):
    return next(o for o in store.list("NodeGroup") if "-gpu-a" in o["metadata"]["name"])


def test_a_composed_resource_changed_since_the_reconciler_applied_it_is_applied_again(tmp_path, monkeypatch):
    """Within a run the reconciler skips building and comparing a resource its function desires exactly
    as it last applied it, only while the stored one is still the version that apply left: a write by
    anyone else between two batches is undone by the composite's next reconcile."""
    from inferplane.runtime import reconciler as module
    from inferplane.runtime.reconciler import RECONCILE
    from inferplane.simulator.synthetic_fleet import write_fleet

    runtime = ControlPlane(None)
    assert runtime.apply([write_fleet(tmp_path / "fleet", 1)]).report.converged
    size = eks_gpu_group(runtime.store)["spec"]["initProvider"]["scalingConfig"]["desiredSize"]
    owner = Key("infrastructure.inferplane.dev", "EKSCluster", "", "eks-0000")
    monkeypatch.setattr(module, "BATCH_SECONDS", 0.0)  # one queue item per batch
    run_batch = module.Reconciler._run_batch
    resized = []

    def between_batches(self, report):
        if str(owner) in report.reconciled and not resized:  # its reconcile applied the group: resize it
            group = eks_gpu_group(self.store)
            scaling = {**group["spec"]["initProvider"]["scalingConfig"], "desiredSize": size + 5}
            with self.store.transaction():
                self.store.put({**group, "spec": {**group["spec"], "initProvider": {
                    **group["spec"]["initProvider"], "scalingConfig": scaling}}}, known=group)
                self.store.queue.enqueue(RECONCILE, [owner])
            resized.append(next(by_key["nodepool-gpu-a"] for by_key in self.applied.values() if "nodepool-gpu-a" in by_key))
        return run_batch(self, report)

    monkeypatch.setattr(module.Reconciler, "_run_batch", between_batches)
    reconciler = runtime._reconciler()
    reconciler.resync()
    report = reconciler.run()
    assert resized and report.converged and report.reconciled[str(owner)] >= 2
    assert eks_gpu_group(runtime.store)["spec"]["initProvider"]["scalingConfig"]["desiredSize"] == size
