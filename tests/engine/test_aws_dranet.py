"""DRANET on EKS, end to end in the embedded engine: a pool whose class claims dra.net brings AWS's
aws-dranet Release into the cluster's serving stack, which runs only on those pools and publishes
their EFA interfaces; nothing of it elsewhere; and it goes, like every device stack, with its last pool."""

from __future__ import annotations

import pytest
import yaml

from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key
from inferplane.simulator.cluster_objects import simulated_objects

def klass(name, instance_type, devices):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": name},
            "spec": {"provisioning": {"provider": "EKS", "eks": {"instanceType": instance_type,
                                                                 "accelerator": {"type": "nvidia-h100", "count": 8}}},
                     "devices": devices}}


GPU = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 8}
EFA = {"name": "efa", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws", "count": 4}
CPU = {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": {"cpu": {"value": "16"}}}
# p5.48xlarge and c6in.32xlarge are EFA-capable (in the chart's list), g6.xlarge is not.
CLASSES = [klass("h100-efa", "p5.48xlarge", [GPU, EFA]), klass("l4", "g6.xlarge", [GPU]),
           {**klass("cpu-efa", "c6in.32xlarge", [CPU, EFA]), "spec": {
               "provisioning": {"provider": "EKS", "eks": {"instanceType": "c6in.32xlarge"}}, "devices": [CPU, EFA]}}]


def cluster(name, pools, source="EKS"):
    settings = {"region": "us-east-2"} if source == "EKS" else {"project": "p", "region": "us-central1"}
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": name},
            "spec": {"cluster": {"source": source, source.lower(): settings},
                     # A pool whose class claims EFA interfaces asks EKS for them.
                     "nodePools": [{"name": p, "className": c, "nodeCount": 2,
                                    **({"fabric": {"type": "EFA"}} if c.endswith("-efa") else {})} for p, c in pools]}}


def apply(runtime, tmp_path, *documents):
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    result = runtime.apply([path])
    assert result.admission.ok and result.report.converged
    return runtime


def dranet_releases(runtime, name):
    return [o for o in runtime.list("Release") if o["spec"]["providerConfigRef"]["name"] == name
            and o["metadata"]["labels"].get("inferplane.dev/component") == "aws-dranet"]


def cluster_objects(runtime, name, kind):
    return [o for o in simulated_objects(runtime.store, name).get(name, []) if o["kind"] == kind]


@pytest.fixture
def runtime():
    runtime = ControlPlane(None)
    yield runtime
    runtime.close()


def test_an_eks_cluster_with_an_efa_pool_runs_one_aws_dranet_release_on_that_pool_only(runtime, tmp_path,
                                                                                        crossplane_crds):
    apply(runtime, tmp_path, *CLASSES, cluster("eks-efa", [("h100", "h100-efa"), ("l4", "l4")]))
    [release] = dranet_releases(runtime, "eks-efa")
    # As the function composed it (the simulated provider's status is not the CRD's concern).
    assert crossplane_crds.validate({k: v for k, v in release.items() if k != "status"}) == []
    assert release["spec"]["forProvider"] == {
        "chart": {"name": "aws-dranet", "repository": "https://aws.github.io/eks-charts", "version": "1.0.0"},
        "namespace": "kube-system",
        "values": {"nodeSelector": {"inferplane.dev/dranet": "true"},
                   "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true",
                                    "effect": "NoSchedule"}],
                   "deviceClass": {"create": True, "name": "efa.networking.k8s.aws"}}}
    stack = runtime.get(Key("infrastructure.inferplane.dev", "ServingStack", "", "eks-efa"))
    assert stack["status"]["components"][-1] == "aws-dranet"
    icluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "eks-efa"))
    assert {c["type"]: c["status"] for c in icluster["status"]["conditions"]}["StackReady"] == "True"
    # Its DaemonSet lands on the EFA pool's nodes, which alone publish dra.net devices.
    pods = sorted(p["spec"]["nodeName"] for p in cluster_objects(runtime, "eks-efa", "Pod")
                  if p["metadata"]["name"].startswith("aws-dranet-"))
    assert pods == ["eks-efa-h100-0", "eks-efa-h100-1"]
    slices = [(s["spec"]["nodeName"], len(s["spec"]["devices"]))
              for s in cluster_objects(runtime, "eks-efa", "ResourceSlice") if s["spec"]["driver"] == "dra.net"]
    assert slices == [("eks-efa-h100-0", 4), ("eks-efa-h100-1", 4)]
    assert [f for f in runtime.store.event_log.events(Key("inferplane.dev", "InferenceCluster", "", "eks-efa"))
            if f["reason"].startswith("PlacementAudit")] == []


def test_dranet_pods_tolerate_exactly_the_taints_of_the_pools_they_serve(runtime, tmp_path):
    apply(runtime, tmp_path, *CLASSES, cluster("eks-efa", [("h100", "h100-efa"), ("cpus", "cpu-efa"), ("l4", "l4")]))
    [release] = dranet_releases(runtime, "eks-efa")
    assert release["spec"]["forProvider"]["values"]["tolerations"] == [
        {"key": "inferplane.dev/cpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    nodes = sorted(p["spec"]["nodeName"] for p in cluster_objects(runtime, "eks-efa", "Pod")
                   if p["metadata"]["name"].startswith("aws-dranet-"))
    assert nodes == ["eks-efa-cpus-0", "eks-efa-cpus-1", "eks-efa-h100-0", "eks-efa-h100-1"]


def test_no_release_without_a_pool_that_claims_dranet_nor_off_eks(runtime, tmp_path):
    synthetic = klass("l4-syn", "g6e.12xlarge", [GPU, {**EFA, "claim": "Synthetic"}])
    gke = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "gke-l4"},
           "spec": {"provisioning": {"provider": "GKE", "gke": {"machineType": "g2-standard-8",
                                                                "accelerator": {"type": "nvidia-l4"}}},
                    "devices": [GPU]}}
    apply(runtime, tmp_path, *CLASSES, synthetic, gke, cluster("eks-plain", [("l4", "l4"), ("syn", "l4-syn")]),
          cluster("gke-plain", [("l4", "gke-l4")], source="GKE"))
    assert [o for o in runtime.list("Release") if "aws-dranet" in o["metadata"]["name"]] == []
    assert [s for c in ("eks-plain", "gke-plain") for s in cluster_objects(runtime, c, "ResourceSlice")
            if s["spec"]["driver"] == "dra.net"] == []


def test_it_goes_with_the_last_pool_that_claims_dranet_as_other_device_stacks_do(runtime, tmp_path):
    pools = [("h100", "h100-efa"), ("cpus", "cpu-efa"), ("l4", "l4")]
    apply(runtime, tmp_path, *CLASSES, cluster("eks-efa", pools))
    [before] = dranet_releases(runtime, "eks-efa")
    cpu_driver = [o["metadata"]["uid"] for o in runtime.list("Release") if "dra-driver-cpu" in o["metadata"]["name"]]
    # One of two DRANET pools goes: the same release stays, tolerating only the remaining pool's taint.
    apply(runtime, tmp_path, cluster("eks-efa", [pools[0], pools[2]]))
    [kept] = dranet_releases(runtime, "eks-efa")
    assert kept["metadata"]["uid"] == before["metadata"]["uid"]
    assert kept["spec"]["forProvider"]["values"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    # dra-driver-cpu went with the last CPU pool in the same apply: that is what a device stack does.
    assert [o for o in runtime.list("Release") if o["metadata"]["uid"] in cpu_driver] == []
    # The last one goes: its release goes with it, and nothing else that runs.
    others = {o["metadata"]["uid"] for o in runtime.list("Release") if o["metadata"]["uid"] != kept["metadata"]["uid"]}
    l4_group = [o["metadata"]["uid"] for o in runtime.list("NodeGroup") if "-l4-" in o["metadata"]["name"]]
    apply(runtime, tmp_path, cluster("eks-efa", [pools[2]]))
    assert dranet_releases(runtime, "eks-efa") == []
    assert {o["metadata"]["uid"] for o in runtime.list("Release")} == others
    assert [o["metadata"]["uid"] for o in runtime.list("NodeGroup") if "-l4-" in o["metadata"]["name"]] == l4_group
    events = runtime.store.event_log.events(Key("infrastructure.inferplane.dev", "ServingStack", "", "eks-efa"))
    assert [e["message"] for e in events if e["reason"] == "DeletedComposed" and "aws-dranet" in e["message"]] == [
        f"deleted Release/inferplane-system/{kept['metadata']['name']}: no longer desired"]


def test_deleting_the_cluster_removes_aws_dranet_before_its_provider_config_and_the_cluster(runtime, tmp_path):
    apply(runtime, tmp_path, *CLASSES, cluster("eks-efa", [("h100", "h100-efa")]))
    deleted = []
    store_delete = runtime.store.delete

    def recording(key):
        deleted.append(key.qualified())
        return store_delete(key)

    runtime.store.delete = recording
    runtime.delete(Key("inferplane.dev", "InferenceCluster", "", "eks-efa"))
    dranet = next(i for i, name in enumerate(deleted) if name.startswith("release.") and "aws-dranet" in name)
    assert dranet < deleted.index("clusterproviderconfig.helm.m.crossplane.io/eks-efa")
    assert dranet < next(i for i, name in enumerate(deleted) if name.startswith("cluster.eks."))


def test_a_class_claiming_dranet_on_an_instance_type_without_efa_is_an_audit_finding(runtime, tmp_path):
    apply(runtime, tmp_path, klass("l4-efa", "g6.xlarge", [GPU, EFA]), cluster("eks-l4", [("l4", "l4-efa")]))
    findings = [(e["reason"], e["message"]) for e in runtime.store.event_log.events(
        Key("inferplane.dev", "InferenceCluster", "", "eks-l4")) if e["reason"].startswith("PlacementAudit")]
    # The chart keeps to EC2's EFA-capable instance types: on g6.xlarge nothing publishes the class's EFA devices.
    assert findings == [("PlacementAuditDriverMissing",
                         f"node eks-l4-l4-{i} of GPU pool l4 runs dra.net but DaemonSet/aws-dranet runs no pod there "
                         "(NodeAffinity: node(s) didn't match Pod's node affinity/selector): its devices are never "
                         "published; let the DaemonSet's nodeSelector, affinity and tolerations admit the pool")
                        for i in (0, 1)]
