"""InferenceCluster composition: drivers collected, the gate, role-tagged pools on every source."""

import copy

import pytest

from inferplane.compose.base import Request
from inferplane.compose.inference_cluster import compose_inference_cluster
from inferplane.clouds import CLOUD_MODULES

# Valid machines and cluster settings for every cloud, as each cloud module's sample fleet has them.
SETTINGS = {**{source: module.sample.settings for source, module in CLOUD_MODULES.items()},
            "Existing": {"secretRef": {"name": "kc", "key": "kubeconfig"}, "kubernetesVersion": "1.36"}}
# The (GPU, CPU) machines of each provisioned cloud's sample classes.
MACHINES = {source: tuple(machine for _, _, machine in module.sample.classes)
            for source, module in CLOUD_MODULES.items() if module.provisioned}
VERSION = {"Vultr": "v1.36.1+3"}  # every other source: 1.36
SOURCES = list(SETTINGS)
NVIDIA = {"name": "gpu", "claim": "DRA", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 1,
          "attributes": {}, "capacity": {"memory": {"value": "24Gi"}}}
AMD = {"name": "gpu", "claim": "DRA", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com", "count": 1,
       "attributes": {}, "capacity": {}}
CPU = {"name": "cpu", "claim": "DRA", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "count": 1,
       "attributes": {}, "capacity": {"cpu": {"value": "8"}}}
SYNTHETIC = {"name": "nic", "claim": "Synthetic", "driver": "lab.example.com", "count": 2, "attributes": {},
             "capacity": {}}


def klass(name, source, devices, gpu_machine):
    spec = {"description": "", "devices": copy.deepcopy(devices)}
    if source != "Existing":
        gpu, cpu = MACHINES[source]
        spec["provisioning"] = {"provider": source, source.lower(): copy.deepcopy(gpu if gpu_machine else cpu)}
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": name},
            "spec": spec}


def cluster(source, pools, name="c1"):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": name},
            "spec": {"cluster": {"source": source, source.lower(): dict(SETTINGS[source])},
                     "nodePools": [{"name": p, "className": c, "nodeCount": 2, "zones": []} for p, c in pools]}}


def request(composite, classes, observed=None):
    return Request(composite, observed or {}, {f"class-{k['metadata']['name']}": k for k in classes})


GPU_POOL = {"name": "gpus", "role": "GPU", "nodeCount": 2,
            "labels": {"inferplane.dev/pool": "gpus", "nvidia.com/gpu.present": "true"},
            "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}
CPU_POOL = {"name": "cpus", "role": "CPU", "nodeCount": 2,
            "labels": {"inferplane.dev/pool": "cpus", "inferplane.dev/cpu": "true"},
            "taints": [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NoSchedule"}]}

CASES = {
    # case: (classes as (name, devices, gpu machine), pools as (pool, class), expected pools, drivers)
    "nvidia": ([("nv", [NVIDIA], True)], [("gpus", "nv")], [GPU_POOL], ["gpu.nvidia.com"]),
    "cpu": ([("cpu", [CPU], False)], [("cpus", "cpu")], [CPU_POOL], ["dra.cpu"]),
    "nvidia+cpu": ([("nv", [NVIDIA], True), ("cpu", [CPU], False)], [("gpus", "nv"), ("cpus", "cpu")],
                   [GPU_POOL, CPU_POOL], ["dra.cpu", "gpu.nvidia.com"]),
    "synthetic-only": ([("syn", [SYNTHETIC], False)], [("cpus", "syn")], [CPU_POOL], []),
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("case", list(CASES))
def test_supported_clusters_compose_their_cloud_cluster_and_stack(source, case):
    class_specs, pools, expected_pools, drivers = CASES[case]
    classes = [klass(n, source, d, gpu) for n, d, gpu in class_specs]
    response = compose_inference_cluster(request(cluster(source, pools), classes))

    expected_keys = {"serving-stack"} if source == "Existing" else {"cluster", "serving-stack"}
    assert set(response.desired) == expected_keys
    assert response.desired["serving-stack"].resource == {
        "apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack", "metadata": {"name": "c1"},
        "spec": {"source": source, "clusterName": "c1", "draDrivers": drivers,
                 "versions": {"kubernetes": VERSION.get(source, "1.36")},
                 "kubeconfigSecretRef": {"name": "kc" if source == "Existing" else "c1-connection",
                                         "namespace": "inferplane-system", "key": "kubeconfig"}}}
    if source != "Existing":
        composed = response.desired["cluster"].resource
        assert (composed["apiVersion"], composed["kind"]) == ("infrastructure.inferplane.dev/v1alpha1",
                                                              f"{source}Cluster")
        spec = composed["spec"]
        assert {k: v for k, v in spec.items() if k != "nodePools"} == {
            **SETTINGS[source], "kubernetesVersion": VERSION.get(source, "1.36"),
            "credentials": {"type": "ClusterProviderConfig", "name": "default"}}
        system, *user_pools = spec["nodePools"]
        assert (system["name"], system["role"]) == ("system", "System")
        by_class = {pool: name for pool, name in pools}
        expected = []
        for pool in expected_pools:
            gpu_machine = next(g for n, _, g in class_specs if n == by_class[pool["name"]])
            machine = dict(MACHINES[source][0 if gpu_machine else 1])
            if "accelerator" in machine:
                machine["accelerator"] = {**machine["accelerator"], "count": 1}
            if source in ("EKS", "GKE", "AKS", "Nebius"):
                machine["diskSizeGb"] = 100
            if source == "Nebius":
                machine["driversPreset"] = "cuda13.0"
            # Without bounds, pools on EKS, GKE and AKS autoscale 0..8 (Modelplane's meaning).
            bounds = {"minNodeCount": 0, "maxNodeCount": 8} if source in ("EKS", "GKE", "AKS") else {}
            expected.append({**pool, **bounds, "machine": machine})
        assert user_pools == expected
    status = response.status
    assert status["draDrivers"] == drivers
    assert [(p["name"], p["role"], p["drivers"]) for p in status["schedulablePools"]] == \
        [(p["name"], p["role"], [d for d in drivers if d in {x["driver"] for c in class_specs for x in c[1]
                                                              if c[0] == dict(pools)[p["name"]]}])
         for p in expected_pools]
    conditions = {c.type: (c.status, c.reason) for c in response.conditions}
    assert conditions == {"ClusterReady": ("True", "Existing") if source == "Existing" else ("False", "Creating"),
                          "StackReady": ("False", "Installing")}


@pytest.mark.parametrize("source", [s for s in SOURCES if s != "Existing"])
def test_amd_on_a_provisioned_cloud_is_refused_before_anything_is_provisioned(source):
    classes = [klass("amd", source, [AMD], True), klass("nv", source, [NVIDIA], True)]
    response = compose_inference_cluster(request(cluster(source, [("a", "amd"), ("n", "nv")]), classes))
    assert response.desired == {}
    ready = response.condition("ClusterReady")
    supported = {"EKS": "dra.cpu, dra.net, gpu.nvidia.com, neuron.aws.com",
                 "GKE": "dra.cpu, gpu.nvidia.com, tpu.google.com"}.get(source, "dra.cpu, gpu.nvidia.com")
    assert (ready.status, ready.reason, ready.message) == (
        "False", "UnsupportedDevices",
        f"class amd claims gpu.amd.com; {source} clusters support {supported}: use classes whose drivers the cloud "
        "serves, or run these devices on an Existing cluster")


def test_the_gate_names_every_offending_class():
    classes = [klass("amd-a", "EKS", [AMD], True), klass("amd-b", "EKS", [AMD, SYNTHETIC], True),
               klass("nv", "EKS", [NVIDIA], True)]
    response = compose_inference_cluster(
        request(cluster("EKS", [("a", "amd-a"), ("b", "amd-b"), ("n", "nv")]), classes))
    assert response.condition("ClusterReady").message.startswith(
        "class amd-a claims gpu.amd.com; class amd-b claims gpu.amd.com; EKS clusters support")


def test_existing_cluster_serves_amd_and_cpu():
    classes = [klass("amd", "Existing", [AMD], True), klass("cpu", "Existing", [CPU], False)]
    response = compose_inference_cluster(request(cluster("Existing", [("gpus", "amd"), ("cpus", "cpu")]), classes))
    assert set(response.desired) == {"serving-stack"}
    assert response.desired["serving-stack"].resource["spec"]["draDrivers"] == ["dra.cpu", "gpu.amd.com"]
    assert [(p["name"], p["role"]) for p in response.status["schedulablePools"]] == [("gpus", "GPU"), ("cpus", "CPU")]


def test_missing_classes_are_named_and_nothing_is_composed():
    response = compose_inference_cluster(
        Request(cluster("EKS", [("a", "x"), ("b", "y")]), {}, {"class-x": None, "class-y": None}))
    ready = response.condition("ClusterReady")
    assert (ready.reason, ready.message) == (
        "WaitingForClasses", "InferenceCluster c1 references InferenceClass x, y, which do not exist: create the "
                             "class or change the pool's className")
    assert response.desired == {}


def test_first_call_asks_for_the_classes():
    response = compose_inference_cluster(Request(cluster("GKE", [("a", "x")]), {}, {}))
    assert {k: (r.kind, r.name) for k, r in response.requirements.items()} == {"class-x": ("InferenceClass", "x")}
    assert response.desired == {}


def test_a_class_of_another_cloud_is_refused():
    response = compose_inference_cluster(request(cluster("EKS", [("a", "g")]), [klass("g", "GKE", [NVIDIA], True)]))
    ready = response.condition("ClusterReady")
    assert (ready.reason, ready.message) == (
        "InvalidPoolClass", "pool a uses class g, which provisions on GKE, not EKS: use a EKS class")


def test_a_live_cluster_that_becomes_unsupported_keeps_everything_as_it_was():
    classes = [klass("nv", "EKS", [NVIDIA], True)]
    first = compose_inference_cluster(request(cluster("EKS", [("gpus", "nv")]), classes))
    observed = {key: {**d.resource, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
                for key, d in first.desired.items()}
    changed = [klass("nv", "EKS", [AMD], True)]
    held = compose_inference_cluster(request(cluster("EKS", [("gpus", "nv")]), changed, observed))
    # Every spec as it was; the stack is only marked as held, so that views do not call it Ready.
    assert {k: d.resource["spec"] for k, d in held.desired.items()} == {
        k: d.resource["spec"] for k, d in first.desired.items()}
    assert held.desired["serving-stack"].resource["metadata"]["annotations"] == {
        "inferplane.dev/held": "UnsupportedDevices: kept as it was, not updated to the classes' drivers"}
    assert "annotations" not in held.desired["cluster"].resource["metadata"]
    assert all(d.ready for d in held.desired.values())
    ready = held.condition("ClusterReady")
    assert ready.reason == "UnsupportedDevices"
    assert ready.message.endswith("(the running cluster is kept as it is: no new pools, no new drivers)")


def test_a_cpu_class_on_an_old_kubernetes_is_held_with_the_version_it_needs():
    old = cluster("Civo", [("cpus", "cpu")])
    old["spec"]["cluster"]["civo"]["kubernetesVersion"] = "1.34"
    response = compose_inference_cluster(request(old, [klass("cpu", "Civo", [CPU], False)]))
    assert response.desired == {}
    ready = response.condition("ClusterReady")
    assert (ready.reason, ready.message) == (
        "KubernetesVersionTooOld",
        "pool cpus uses class cpu, which claims dra.cpu; that needs Kubernetes >= 1.36, and this cluster has 1.34 "
        "(declared): set spec.cluster.civo.kubernetesVersion to \"1.36\" or later")


def test_an_invalid_live_cluster_keeps_everything_and_says_why():
    classes = [klass("nv", "EKS", [NVIDIA], True)]
    first = compose_inference_cluster(request(cluster("EKS", [("gpus", "nv")]), classes))
    observed = {key: {**d.resource, "metadata": {**d.resource["metadata"], "uid": "u1", "resourceVersion": "9"},
                      "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
                for key, d in first.desired.items()}
    broken = cluster("EKS", [("gpus", "nv")])
    broken["spec"]["nodePools"][0]["nodeCount"] = "many"
    held = compose_inference_cluster(request(broken, classes, observed))
    assert {k: d.resource["spec"] for k, d in held.desired.items()} == {
        k: d.resource["spec"] for k, d in first.desired.items()}
    ready = held.condition("ClusterReady")
    assert (ready.status, ready.reason) == ("False", "InvalidSpec")
    assert ready.message == (
        "InferenceCluster c1 is invalid: spec.nodePools.0.nodeCount: Input should be a valid integer, unable to "
        "parse string as an integer: fix the spec (the running cluster is kept as it is: no new pools, no new "
        "drivers)")


@pytest.mark.parametrize("composite", [{}, {"metadata": "x"}, {"metadata": {"name": "c1"}, "spec": None}])
def test_garbage_never_raises(composite):
    response = compose_inference_cluster(Request(composite))
    assert response.condition("ClusterReady").reason == "InvalidSpec"
    assert response.desired == {}


def test_an_invalid_class_is_a_condition():
    bad = klass("nv", "EKS", [NVIDIA], True)
    bad["spec"]["devices"][0]["count"] = "two"
    response = compose_inference_cluster(request(cluster("EKS", [("gpus", "nv")]), [bad]))
    assert response.desired == {}
    ready = response.condition("ClusterReady")
    assert (ready.reason, ready.message) == (
        "InvalidClass", "InferenceClass nv is invalid: spec.devices.0.count: Input should be a valid integer, "
        "unable to parse string as an integer: fix the class that InferenceCluster c1 uses")


# ---- Modelplane's meanings

def test_zones_are_ignored_with_a_warning_where_the_cloud_has_none():
    composite = cluster("Nebius", [("gpus", "nv")])
    composite["spec"]["nodePools"][0]["zones"] = ["eu-north1-a"]
    response = compose_inference_cluster(request(composite, [klass("nv", "Nebius", [NVIDIA], True)]))
    assert [(e.type, e.reason, e.message) for e in response.events] == [(
        "Warning", "ZonesIgnored", "pool gpus of InferenceCluster c1 set zones, which Nebius clusters ignore (zones "
                                   "apply on EKS, GKE, AKS): remove them")]
    assert "zones" not in response.desired["cluster"].resource["spec"]["nodePools"][1]
    assert response.condition("ClusterReady").reason == "Creating"


def test_zones_reach_the_pools_on_eks():
    composite = cluster("EKS", [("gpus", "nv")])
    composite["spec"]["nodePools"][0]["zones"] = ["us-west-2a", "us-west-2b"]
    response = compose_inference_cluster(request(composite, [klass("nv", "EKS", [NVIDIA], True)]))
    assert response.events == []
    assert response.desired["cluster"].resource["spec"]["nodePools"][1]["zones"] == ["us-west-2a", "us-west-2b"]


@pytest.mark.parametrize("source,bounds", [
    ("EKS", {"minNodeCount": 0, "maxNodeCount": 8}), ("GKE", {"minNodeCount": 0, "maxNodeCount": 8}),
    ("AKS", {"minNodeCount": 0, "maxNodeCount": 8}), ("Nebius", {}), ("Vultr", {}), ("Civo", {}),
])
def test_pools_without_bounds_autoscale_as_on_modelplane(source, bounds):
    composite = cluster(source, [("gpus", "nv"), ("big", "nv")])
    composite["spec"]["nodePools"][1]["nodeCount"] = 10
    response = compose_inference_cluster(request(composite, [klass("nv", source, [NVIDIA], True)]))
    _, gpus, big = response.desired["cluster"].resource["spec"]["nodePools"]
    assert {k: gpus[k] for k in ("minNodeCount", "maxNodeCount") if k in gpus} == bounds
    # A pool that starts above 8 nodes keeps its size as its upper bound.
    assert {k: big[k] for k in ("minNodeCount", "maxNodeCount") if k in big} == \
        ({"minNodeCount": 0, "maxNodeCount": 10} if bounds else {})


def test_another_sources_block_is_ignored():
    composite = cluster("Vultr", [("gpus", "nv")])
    composite["spec"]["cluster"]["eks"] = {"region": "us-west-2"}
    response = compose_inference_cluster(request(composite, [klass("nv", "Vultr", [NVIDIA], True)]))
    assert response.desired["cluster"].resource["spec"]["region"] == "ewr"
    assert "eks" not in response.desired["cluster"].resource["spec"]


def test_a_cluster_without_pools_gets_its_system_pool_and_stack():
    composite = cluster("EKS", [])
    del composite["spec"]["nodePools"]
    response = compose_inference_cluster(request(composite, []))
    assert [p["name"] for p in response.desired["cluster"].resource["spec"]["nodePools"]] == ["system"]
    assert response.desired["serving-stack"].resource["spec"]["draDrivers"] == []


def test_an_existing_clusters_identity_reaches_its_stack_with_modelplanes_defaults():
    composite = cluster("Existing", [("gpus", "nv")])
    composite["spec"]["cluster"]["existing"] = {"secretRef": {"name": "byo-kubeconfig"},
                                                "identitySecretRef": {"name": "byo-sa-key"}, "kubernetesVersion": "1.36"}
    response = compose_inference_cluster(request(composite, [klass("nv", "Existing", [NVIDIA], True)]))
    spec = response.desired["serving-stack"].resource["spec"]
    assert spec["kubeconfigSecretRef"] == {"name": "byo-kubeconfig", "namespace": "inferplane-system",
                                           "key": "kubeconfig"}
    assert spec["identitySecretRef"] == {"name": "byo-sa-key", "key": "private_key",
                                         "type": "GoogleApplicationCredentials"}


def test_a_cloud_cluster_that_lost_a_name_says_so_on_the_inference_cluster():
    message = ("NodeGroup/inferplane-system/c1-gpus-0 is controlled by EKSCluster other, so EKSCluster c1 cannot "
               "apply it: rename or delete one of the two")
    observed = {"cluster": {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "EKSCluster",
                            "metadata": {"name": "c1"}, "status": {"conditions": [
                                {"type": "Ready", "status": "False", "reason": "ComposedResourceConflict",
                                 "message": message}]}}}
    response = compose_inference_cluster(request(cluster("EKS", [("gpus", "nv")]),
                                                 [klass("nv", "EKS", [NVIDIA], True)], observed))
    ready = response.condition("ClusterReady")
    assert (ready.status, ready.reason, ready.message) == ("False", "ComposedResourceConflict", message)


def test_capacity_blocks_and_fabrics_reach_the_cloud_pools():
    composite = cluster("EKS", [("p5", "nv"), ("l4", "nv")])
    composite["spec"]["nodePools"][0].update(capacityBlock={"capacityReservationId": "cr-0123456789abcdef0"},
                                             fabric={"type": "EFA"})
    response = compose_inference_cluster(request(composite, [klass("nv", "EKS", [NVIDIA], True)]))
    _, p5, l4 = response.desired["cluster"].resource["spec"]["nodePools"]
    assert (p5["capacityBlock"], p5["fabric"]) == ({"capacityReservationId": "cr-0123456789abcdef0"}, {"type": "EFA"})
    assert "capacityBlock" not in l4 and "fabric" not in l4


EFA = {"name": "efa", "claim": "DRA", "driver": "dra.net", "deviceClassName": "efa.networking.k8s.aws", "count": 4,
       "attributes": {}, "capacity": {}}
SYNTHETIC_EFA = {**EFA, "claim": "Synthetic"}


def test_pools_whose_classes_claim_dranet_are_labelled_and_their_taints_stamped_on_the_stack():
    classes = [klass("nv-efa", "EKS", [NVIDIA, EFA], True), klass("cpu-efa", "EKS", [CPU, EFA], False),
               klass("nv", "EKS", [NVIDIA], True), klass("nv-syn", "EKS", [NVIDIA, SYNTHETIC_EFA], True)]
    composite = cluster("EKS", [("h100", "nv-efa"), ("cpus", "cpu-efa"), ("l4", "nv"), ("a10", "nv-syn")])
    response = compose_inference_cluster(request(composite, classes))
    pools = {p["name"]: p for p in response.desired["cluster"].resource["spec"]["nodePools"]}
    assert pools["h100"]["labels"] == {"inferplane.dev/pool": "h100", "nvidia.com/gpu.present": "true",
                                       "inferplane.dev/dranet": "true"}
    assert pools["cpus"]["labels"] == {"inferplane.dev/pool": "cpus", "inferplane.dev/cpu": "true",
                                       "inferplane.dev/dranet": "true"}
    # A pool that claims no DRANET device (a Synthetic one claims nothing) is not labelled.
    assert pools["l4"]["labels"] == pools["a10"]["labels"] | {"inferplane.dev/pool": "l4"} == {
        "inferplane.dev/pool": "l4", "nvidia.com/gpu.present": "true"}
    stack = response.desired["serving-stack"].resource["spec"]
    assert stack["draDrivers"] == ["dra.cpu", "dra.net", "gpu.nvidia.com"]
    # Only DRANET's: the GPU and CPU drivers' pools carry their own taint.
    assert stack["poolTaints"] == {"dra.net": [
        {"key": "inferplane.dev/cpu", "value": "true", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}


def test_a_cluster_without_dranet_pools_stamps_no_pool_taints():
    classes = [klass("nv-syn", "EKS", [NVIDIA, SYNTHETIC_EFA], True)]
    response = compose_inference_cluster(request(cluster("EKS", [("a10", "nv-syn")]), classes))
    assert "poolTaints" not in response.desired["serving-stack"].resource["spec"]


@pytest.mark.parametrize("source", [s for s in SOURCES if s != "EKS"])
def test_dranet_off_eks_is_refused_before_anything_is_provisioned(source):
    classes = [klass("nv-efa", source, [NVIDIA, EFA], True)]
    response = compose_inference_cluster(request(cluster(source, [("gpus", "nv-efa")]), classes))
    assert response.desired == {}
    ready = response.condition("ClusterReady")
    assert (ready.status, ready.reason) == ("False", "UnsupportedDevices")
    assert ready.message.startswith("class nv-efa claims dra.net; ")


def test_a_pool_claiming_dranet_without_the_efa_fabric_is_warned_about():
    classes = [klass("nv-efa", "EKS", [NVIDIA, EFA], True)]
    composite = cluster("EKS", [("bare", "nv-efa"), ("efa", "nv-efa")])
    composite["spec"]["nodePools"][1]["fabric"] = {"type": "EFA"}
    response = compose_inference_cluster(request(composite, classes))
    assert [(e.type, e.reason, e.message) for e in response.events] == [(
        "Warning", "NoEFAInterfaces",
        "pool bare of InferenceCluster c1 claims dra.net devices (EFA interfaces) but has no fabric.type: EFA, so "
        "its nodes get no EFA interface for aws-dranet to publish: set fabric.type: EFA on the pool")]
    # Still composed: the warning stops nothing.
    assert set(response.desired) == {"cluster", "serving-stack"}
