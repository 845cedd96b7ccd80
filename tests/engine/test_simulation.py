"""The simulated target cluster: KWOK-shaped nodes, the real catalog's workloads placed by the
scheduling predicates, ResourceSlices shaped like each driver's, and the placement audit."""

import copy
import dataclasses
import json
import random

import pytest

from inferplane.accelerators.catalog import COMPONENT_LABEL
from inferplane.accelerators.workloads import UnknownComponent
from inferplane.api.drivers import AMD_GPU, CPU, NVIDIA_GPU, POOL_LABEL
from inferplane.api.inference_class import DeviceSpec, InferenceClass
from inferplane.api.inference_cluster import NodePool
from inferplane.clouds import CLOUD_MODULES
from inferplane.compose.base import Request
from inferplane.compose.inference_cluster import node_pool
from inferplane.compose.serving_stack import compose_serving_stack
from inferplane.simulator.simulation import simulate_cluster
from inferplane.simulator.simulation_inputs import Pool
from inferplane.simulator.audits import audit, audit_cluster

# ---- fixtures: pools as InferenceCluster composes them, stacks as ServingStack composes them

SYSTEM = Pool.from_wire(CLOUD_MODULES["EKS"].system_pool())


def device(driver, name=None, **fields):
    return DeviceSpec.model_validate({"name": name or driver.split(".")[0], "driver": driver,
                                      "deviceClassName": driver, **fields})


def composed_pool(name, devices, nodes, allocatable=None):
    """A pool of a class with these devices, with the role, labels and taints composition gives it."""
    klass = InferenceClass.model_validate({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass",
                                           "metadata": {"name": name}, "spec": {"devices": list(devices)}})
    pool = Pool.from_wire(node_pool(NodePool(name=name, class_name=name, node_count=nodes), klass, "Existing"),
                          klass.spec.devices)
    return dataclasses.replace(pool, allocatable=allocatable) if allocatable else pool


def gpu_pool(driver, name, nodes=2, **device_fields):
    return composed_pool(name, [device(driver.name, **device_fields)], nodes)


def cpu_pool(name="cpu", nodes=1, cpu="30", allocatable=None, **device_fields):
    return composed_pool(name, [device(CPU.name, capacity={"cpu": {"value": cpu}}, **device_fields)], nodes, allocatable)


def stack(cloud, drivers):
    composite = {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack",
                 "metadata": {"name": "c1"},
                 "spec": {"source": cloud, "clusterName": "c1", "draDrivers": sorted(drivers)}}
    return [d.resource for d in compose_serving_stack(Request(composite)).desired.values()]


def with_values(resources, component, values):
    """The stack with one component's rendered values replaced (as a broken catalog would render)."""
    out = copy.deepcopy(resources)
    for r in out:
        if r["metadata"]["labels"][COMPONENT_LABEL] == component:
            r["spec"]["forProvider"]["values"] = values
    return out


def kinds(objects, kind):
    return [o for o in objects if o["kind"] == kind]


def pods_of(objects, prefix):
    return [p for p in kinds(objects, "Pod") if p["metadata"]["name"].startswith(prefix)]


def placed_on(objects, prefix):
    return sorted(p["spec"]["nodeName"] for p in pods_of(objects, prefix))


def system_placed(objects):
    return [p for p in kinds(objects, "Pod") if p["metadata"]["annotations"]["inferplane.dev/placement"] == "System"]


EKS_POOLS = [SYSTEM, gpu_pool(NVIDIA_GPU, "h100", nodes=2), cpu_pool("cpu", nodes=2)]


@pytest.fixture(scope="module")
def eks():
    return simulate_cluster("c1", EKS_POOLS, stack("EKS", [NVIDIA_GPU.name, CPU.name]))


# ---- placement of the real catalog


def test_nodes_are_kwok_shaped(eks):
    nodes = {n["metadata"]["name"]: n for n in kinds(eks, "Node")}
    assert sorted(nodes) == ["c1-cpu-0", "c1-cpu-1", "c1-h100-0", "c1-h100-1", "c1-system-0", "c1-system-1"]
    gpu = nodes["c1-h100-0"]
    assert gpu["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert gpu["metadata"]["labels"]["type"] == "kwok"
    assert gpu["metadata"]["labels"]["inferplane.dev/pool"] == "h100"
    assert gpu["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert gpu["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert gpu["status"]["allocatable"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    # A CPU pool's cores are its class's cpu capacity (what the CPU driver counts) and the 2 it keeps back.
    assert nodes["c1-cpu-0"]["status"]["allocatable"]["cpu"] == "32"
    assert "taints" not in nodes["c1-system-0"]["spec"]


def test_each_dra_driver_lands_only_on_its_pools(eks):
    assert placed_on(eks, "dra-driver-cpu-") == ["c1-cpu-0", "c1-cpu-1"]
    assert placed_on(eks, "dra-driver-nvidia-gpu-kubelet-plugin-") == ["c1-h100-0", "c1-h100-1"]


def test_controllers_land_on_the_system_pool(eks):
    controllers = system_placed(eks)
    names = {p["metadata"]["name"].rsplit("-", 2)[0] for p in controllers}
    assert {"cert-manager", "cert-manager-webhook", "envoy-gateway", "lws-controller-manager"} <= names
    assert {p["spec"]["nodeName"] for p in controllers} == {"c1-system-0", "c1-system-1"}
    assert all(p["status"]["phase"] == "Running" for p in kinds(eks, "Pod"))


def test_the_real_catalog_passes_the_audit(eks):
    assert audit(eks) == []


def test_existing_cluster_with_three_vendors_places_each_stack_on_its_pools():
    pools = [SYSTEM, gpu_pool(NVIDIA_GPU, "nv", nodes=1), gpu_pool(AMD_GPU, "mi300", nodes=2), cpu_pool()]
    objects = simulate_cluster("c1", pools, stack("Existing", [AMD_GPU.name, CPU.name, NVIDIA_GPU.name]))
    assert placed_on(objects, "inferplane-dra-driver-") == ["c1-mi300-0", "c1-mi300-1"]
    assert placed_on(objects, "inferplane-metrics-exporter-") == ["c1-mi300-0", "c1-mi300-1"]
    assert placed_on(objects, "dra-driver-nvidia-gpu-kubelet-plugin-") == ["c1-nv-0"]
    assert placed_on(objects, "dra-driver-cpu-") == ["c1-cpu-0"]
    # NFD's worker tolerates both GPU taints, not the CPU pool's: every node but the CPU one.
    assert placed_on(objects, "node-feature-discovery-worker-") == [
        "c1-mi300-0", "c1-mi300-1", "c1-nv-0", "c1-system-0", "c1-system-1"]
    assert {s["spec"]["nodeName"]: s["spec"]["driver"] for s in kinds(objects, "ResourceSlice")} == {
        "c1-mi300-0": AMD_GPU.name, "c1-mi300-1": AMD_GPU.name, "c1-nv-0": NVIDIA_GPU.name, "c1-cpu-0": CPU.name}
    assert audit(objects) == []


def test_workload_objects_report_their_pods(eks):
    daemonsets = {d["metadata"]["name"]: d for d in kinds(eks, "DaemonSet")}
    assert daemonsets["dra-driver-cpu"]["status"]["desiredNumberScheduled"] == 2
    assert daemonsets["dra-driver-cpu"]["status"]["numberReady"] == 2
    deployment = next(d for d in kinds(eks, "Deployment") if d["metadata"]["name"] == "envoy-gateway")
    assert deployment["status"] == {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}


def test_daemonset_pods_are_pinned_and_carry_the_controllers_tolerations(eks):
    (pod, *_) = pods_of(eks, "dra-driver-cpu-")
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pod["spec"]["nodeName"]]}]}]
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"} in pod["spec"][
        "tolerations"]


# ---- the audit


def test_a_driver_that_tolerates_everything_is_caught():
    # The CPU chart's own default: every NoSchedule taint, no nodeSelector.
    resources = with_values(stack("EKS", [NVIDIA_GPU.name, CPU.name]), "dra-driver-cpu",
                            {"tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]})
    objects = simulate_cluster("c1", EKS_POOLS, resources)
    assert len(placed_on(objects, "dra-driver-cpu-")) == 6  # every node
    findings = [f for f in audit(objects) if f.reason == "DriverOnForeignPool"]
    assert sorted(f.node for f in findings) == ["c1-h100-0", "c1-h100-1", "c1-system-0", "c1-system-1"]
    gpu = next(f for f in findings if f.node == "c1-h100-0")
    assert gpu.pod.startswith("kube-system/dra-driver-cpu-")
    assert "serves dra.cpu" in gpu.message and "GPU pool h100, which runs gpu.nvidia.com" in gpu.message
    assert "TaintToleration: taint nvidia.com/gpu=true:NoSchedule is tolerated by {operator: Exists, effect: NoSchedule} " \
           "(it tolerates every taint with effect NoSchedule)" in gpu.message
    system = next(f for f in findings if f.node == "c1-system-0")
    assert "runs no driver" in system.message and "has no taints" in system.message


def test_a_controller_outside_the_system_pool_is_caught():
    resources = with_values(stack("EKS", [NVIDIA_GPU.name, CPU.name]), "lws",
                            {"replicaCount": 6, "tolerations": [{"operator": "Exists"}]})
    findings = audit(simulate_cluster("c1", EKS_POOLS, resources))
    assert {f.reason for f in findings} == {"ControllerOutsideSystemPool"}
    assert {f.node for f in findings} == {"c1-cpu-0", "c1-cpu-1", "c1-h100-0", "c1-h100-1"}
    assert all(f.pod.startswith("lws-system/lws-controller-manager-") for f in findings)
    assert "controllers belong on the System pool" in findings[0].message


def test_without_a_system_pool_controllers_stay_pending_with_the_schedulers_reason():
    objects = simulate_cluster("c1", EKS_POOLS[1:], stack("EKS", [NVIDIA_GPU.name, CPU.name]))
    pending = [p for p in kinds(objects, "Pod") if p["status"]["phase"] == "Pending"]
    assert pending and all(p["metadata"]["annotations"]["inferplane.dev/placement"] == "System" for p in pending)
    condition = pending[0]["status"]["conditions"][0]
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == ("0/4 nodes are available: 2 node(s) had untolerated taint {inferplane.dev/cpu: "
                                    "true}, 2 node(s) had untolerated taint {nvidia.com/gpu: true}.")
    findings = audit(objects)
    assert {f.reason for f in findings} == {"PodPending"}
    assert len(findings) == len(pending)
    assert findings[0].message.endswith(
        "untolerated taint {nvidia.com/gpu: true}. (TaintToleration kept it off c1-cpu-0, c1-cpu-1, c1-h100-0, c1-h100-1)")


def test_a_pool_its_driver_never_reaches_is_caught():
    resources = with_values(stack("EKS", [CPU.name]), "dra-driver-cpu",
                            {"nodeSelector": {"cpu-nodes": "yes"}, "tolerations": [CPU.pool_taint.toleration()]})
    objects = simulate_cluster("c1", [SYSTEM, cpu_pool()], resources)
    assert kinds(objects, "ResourceSlice") == []
    (finding,) = audit(objects)
    assert (finding.reason, finding.pod, finding.node) == ("DriverMissing", None, "c1-cpu-0")
    assert "runs dra.cpu but DaemonSet/dra-driver-cpu runs no pod there (NodeSelector: " in finding.message
    assert "didn't match Pod's node affinity/selector" in finding.message


def test_a_daemonset_pod_that_does_not_fit_stays_pending():
    small = cpu_pool("cpu", nodes=1, cpu="30", allocatable={"cpu": "50m"})
    objects = simulate_cluster("c1", [SYSTEM, small], stack("EKS", [CPU.name]))
    (pod,) = pods_of(objects, "dra-driver-cpu-")
    assert pod["status"]["phase"] == "Pending"
    assert pod["status"]["conditions"][0]["message"] == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector.")
    daemonset = next(d for d in kinds(objects, "DaemonSet") if d["metadata"]["name"] == "dra-driver-cpu")
    assert daemonset["status"]["numberUnavailable"] == 1
    assert [f.reason for f in audit(objects)] == ["PodPending"]


# ---- ResourceSlices


def slices(objects, driver):
    return [s for s in kinds(objects, "ResourceSlice") if s["spec"]["driver"] == driver]


def test_nvidia_slices_have_the_drivers_shape_for_the_model_the_class_names():
    pool = gpu_pool(NVIDIA_GPU, "a100", nodes=1, count=2, capacity={"memory": {"value": "40960Mi"}},
                    attributes={"productName": {"string": "NVIDIA A100-SXM4-40GB"},
                                "architecture": {"string": "Ampere"}, "driverVersion": {"version": "580.65.6"}})
    (slice_,) = slices(simulate_cluster("c1", [SYSTEM, pool], stack("EKS", [NVIDIA_GPU.name])), NVIDIA_GPU.name)
    assert slice_["metadata"]["name"] == "c1-a100-0-gpu.nvidia.com"
    assert slice_["spec"]["nodeName"] == "c1-a100-0"
    assert slice_["spec"]["pool"] == {"name": "c1-a100-0", "generation": 1, "resourceSliceCount": 1}
    devices = slice_["spec"]["devices"]
    assert [d["name"] for d in devices] == ["gpu-0", "gpu-1"]
    first = devices[0]
    # The attributes dra-driver-nvidia-gpu v0.4.0's own test lists (tests/bats/test_gpu_basic.bats).
    assert set(first["attributes"]) == {"type", "uuid", "productName", "brand", "architecture",
                                        "cudaComputeCapability", "driverVersion", "cudaDriverVersion",
                                        "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot",
                                        "addressingMode"}
    assert first["attributes"]["productName"] == {"string": "NVIDIA A100-SXM4-40GB"}
    assert first["attributes"]["type"] == {"string": "gpu"}
    assert first["attributes"]["cudaComputeCapability"] == {"version": "8.0.0"}
    # The host's driver version, as the class states it (one per node).
    assert first["attributes"]["driverVersion"] == {"version": "580.65.6"}
    assert first["capacity"] == {"memory": {"value": "40960Mi"}}
    assert devices[0]["attributes"]["uuid"] != devices[1]["attributes"]["uuid"]
    assert (devices[0]["attributes"]["resource.kubernetes.io/pciBusID"]
            != devices[1]["attributes"]["resource.kubernetes.io/pciBusID"])


def test_cpu_slices_are_the_real_nodes_with_the_class_cpu():
    pool = cpu_pool(cpu="30")
    (slice_,) = slices(simulate_cluster("c1", [SYSTEM, pool], stack("Civo", [CPU.name])), CPU.name)
    (dev,) = slice_["spec"]["devices"]
    # As a Civo node running dra-driver-cpu 0.3.0 published it (Modelplane PR #556's test), its 6 CPUs here the class's 30.
    assert dev == {
        "name": "cpudevnuma000",
        "attributes": {"dra.cpu/numCPUs": {"int": 30}, "dra.cpu/numaNodeID": {"int": 0},
                       "dra.cpu/smtEnabled": {"bool": True}, "dra.cpu/socketID": {"int": 0},
                       "dra.net/numaNode": {"int": 0}, "resource.kubernetes.io/numaNode": {"int": 0}},
        "capacity": {"dra.cpu/cpu": {"value": "30"}},
        "allowMultipleAllocations": True,
    }


def test_amd_slices_have_the_drivers_shape():
    pool = gpu_pool(AMD_GPU, "mi325x", nodes=1, count=2,
                    attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}})
    (slice_,) = slices(simulate_cluster("c1", [SYSTEM, pool], stack("Existing", [AMD_GPU.name])), AMD_GPU.name)
    first, second = slice_["spec"]["devices"]
    assert (first["name"], second["name"]) == ("gpu-1-128", "gpu-2-129")
    # v1.0 publishes no family, and no driverVersion over the in-kernel amdgpu module (the host's driver).
    assert set(first["attributes"]) == {"type", "productName", "deviceID", "partitionProfile", "numaNode",
                                        "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot"}
    assert first["attributes"]["productName"] == {"string": "AMD_Instinct_MI325X_OAM"}
    assert first["attributes"]["deviceID"] == {"string": "0x74a5"}
    assert (first["attributes"]["numaNode"], second["attributes"]["numaNode"]) == ({"int": 0}, {"int": 1})
    assert first["capacity"] == {"memory": {"value": "262128Mi"}, "computeUnits": {"value": "304"},
                                 "simdUnits": {"value": "1216"}}


def test_devices_report_the_facts_of_the_part_their_class_names():
    """A class that names a part (by productName or deviceID) gets that part's facts, as the real driver reports them."""
    mi325x = gpu_pool(AMD_GPU, "mi325x", nodes=1, attributes={"deviceID": {"string": "0x74a5"}})
    mi300x = gpu_pool(AMD_GPU, "mi300x", nodes=1, attributes={"productName": {"string": "AMD_Instinct_MI300X_OAM"}})
    objects = simulate_cluster("c1", [SYSTEM, mi325x, mi300x], stack("Existing", [AMD_GPU.name]))
    names = {s["spec"]["nodeName"]: s["spec"]["devices"][0]["attributes"]["productName"]
             for s in slices(objects, AMD_GPU.name)}
    assert names == {"c1-mi325x-0": {"string": "AMD_Instinct_MI325X_OAM"},
                     "c1-mi300x-0": {"string": "AMD_Instinct_MI300X_OAM"}}

    l4 = gpu_pool(NVIDIA_GPU, "l4", nodes=1, attributes={"productName": {"string": "NVIDIA L4"}})
    (slice_,) = slices(simulate_cluster("c1", [SYSTEM, l4], stack("GKE", [NVIDIA_GPU.name])), NVIDIA_GPU.name)
    attributes = slice_["spec"]["devices"][0]["attributes"]
    assert attributes["architecture"] == {"string": "Ada Lovelace"}
    assert attributes["cudaComputeCapability"] == {"version": "8.9.0"}
    assert slice_["spec"]["devices"][0]["capacity"] == {"memory": {"value": "23034Mi"}}


def test_synthetic_devices_and_unsimulated_drivers_publish_nothing():
    # The NVIDIA driver runs on this pool and publishes its claimed GPU only: not the synthetic one
    # beside it, and nothing for dra.net, whose driver (aws-dranet) this stack does not install.
    mixed = composed_pool("syn", [device(NVIDIA_GPU.name), device(NVIDIA_GPU.name, name="shadow", claim="Synthetic"),
                                  device("dra.net", name="nic")], nodes=1)
    objects = simulate_cluster("c1", [SYSTEM, mixed], stack("EKS", [NVIDIA_GPU.name]))
    assert placed_on(objects, "dra-driver-nvidia-gpu-kubelet-plugin-") == ["c1-syn-0"]
    assert [(s["spec"]["driver"], [d["name"] for d in s["spec"]["devices"]])
            for s in kinds(objects, "ResourceSlice")] == [("gpu.nvidia.com", ["gpu-0"])]


# ---- inputs and determinism


def test_same_input_same_output_whatever_the_order():
    resources = stack("Existing", [AMD_GPU.name, CPU.name, NVIDIA_GPU.name])
    pools = [SYSTEM, gpu_pool(NVIDIA_GPU, "nv"), gpu_pool(AMD_GPU, "amd"), cpu_pool(nodes=2)]
    first = json.dumps(simulate_cluster("c1", pools, resources), sort_keys=True)
    assert json.dumps(simulate_cluster("c1", pools, resources), sort_keys=True) == first
    shuffled_pools, shuffled_resources = pools[:], resources[:]
    random.Random(7).shuffle(shuffled_pools)
    random.Random(7).shuffle(shuffled_resources)
    assert json.dumps(simulate_cluster("c1", shuffled_pools, shuffled_resources), sort_keys=True) == first


def test_pool_from_the_cloud_clusters_wire_format():
    entry = {"name": "cpu", "role": "CPU", "nodeCount": 3, "labels": {POOL_LABEL: "cpu"},
             "taints": [CPU.pool_taint.to_dict()], "machine": {"size": "g4p.kube.medium"}}
    pool = Pool.from_wire(entry, [{"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu",
                                   "capacity": {"cpu": {"value": "4"}}}])
    assert (pool.name, pool.role, pool.node_count, pool.drivers) == ("cpu", "CPU", 3, ("dra.cpu",))
    assert pool.taints == (CPU.pool_taint.to_dict(),)


def test_unlabelled_resources_are_ignored_and_unknown_components_refused():
    resources = stack("EKS", [])
    unlabelled = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    assert simulate_cluster("c1", [SYSTEM], resources + [unlabelled]) == simulate_cluster("c1", [SYSTEM], resources)
    stray = copy.deepcopy(resources[0])
    stray["metadata"]["labels"][COMPONENT_LABEL] = "mystery"
    with pytest.raises(UnknownComponent, match="mystery"):
        simulate_cluster("c1", [SYSTEM], resources + [stray])


# ---- Kubernetes' published schemas


@pytest.mark.parametrize("version", ["1.34", "1.36"])
def test_objects_validate_against_kubernetes_schemas(version):
    # kubernetes-validate is a test dependency: a missing schema fails here rather than skipping.
    from kubernetes_schemas import schema_errors

    pools = [SYSTEM, gpu_pool(NVIDIA_GPU, "nv"), gpu_pool(AMD_GPU, "amd"), cpu_pool()]
    objects = simulate_cluster("c1", pools, stack("Existing", [AMD_GPU.name, CPU.name, NVIDIA_GPU.name]))
    assert schema_errors(objects, version) == []


def test_amd_operator_without_kmm_watch_off_crash_loops_and_the_audit_says_so():
    pools = [SYSTEM, gpu_pool(AMD_GPU, "mi300", nodes=1)]
    healthy = simulate_cluster("c1", pools, stack("Existing", [AMD_GPU.name]))
    assert audit(healthy) == []
    assert not [d for d in kinds(healthy, "Deployment") if d["metadata"]["name"].endswith("workflow-controller")]

    broken = simulate_cluster("c1", pools, with_values(stack("Existing", [AMD_GPU.name]), "amd-gpu-operator",
                                                        {"kmm": {"enabled": False}}))
    findings = [f for f in audit(broken) if f.reason == "PodCrashLooping"]
    assert len(findings) == 1
    assert findings[0].pod.startswith("kube-amd-gpu/amd-gpu-operator-gpu-operator-charts-controller-manager-")
    manager = next(d for d in kinds(broken, "Deployment")
                   if d["metadata"]["name"] == "amd-gpu-operator-gpu-operator-charts-controller-manager")
    assert manager["status"]["readyReplicas"] == 0


def test_a_cpu_capacity_written_as_an_integer_sizes_the_nodes_and_the_slices(tmp_path):
    from inferplane.engine.control_plane import ControlPlane

    (tmp_path / "fleet.yaml").write_text("""
apiVersion: inferplane.dev/v1alpha1
kind: InferenceClass
metadata: {name: gke-cpu}
spec:
  provisioning: {provider: GKE, gke: {machineType: n2-standard-16}}
  devices: [{name: cpu, driver: dra.cpu, deviceClassName: dra.cpu, capacity: {cpu: {value: 14}}}]
---
apiVersion: inferplane.dev/v1alpha1
kind: InferenceCluster
metadata: {name: gke-c}
spec:
  cluster:
    source: GKE
    gke: {project: p, region: us-central1, kubernetesVersion: "1.36"}
  nodePools: [{name: cpu, className: gke-cpu, nodeCount: 1}]
""")
    runtime = ControlPlane(None)
    assert runtime.apply([tmp_path]).admission.ok
    objects = runtime.store.cluster_objects("gke-c")["gke-c"]
    (node,) = [o for o in objects if o["kind"] == "Node" and o["metadata"]["labels"].get(POOL_LABEL) == "cpu"]
    (slice_,) = [o for o in objects if o["kind"] == "ResourceSlice"]
    # 16 vCPUs, of which the driver counts 14 (reservedCPUs 0-1).
    assert node["status"]["allocatable"]["cpu"] == "16"
    assert slice_["spec"]["devices"][0]["attributes"]["dra.cpu/numCPUs"] == {"int": 14}


def test_a_held_back_driver_that_runs_anyway_fails_the_held_audit():
    amd = composed_pool("mi300x", [device(AMD_GPU.name)], 1)
    # The pool runs nothing yet (its class changed to AMD while the gate held the cluster), but the
    # AMD stack was installed all the same.
    held_pool = dataclasses.replace(amd, runs=(), held_back=(AMD_GPU.name,))
    objects = simulate_cluster("c1", [SYSTEM, held_pool], stack("Existing", [AMD_GPU.name]))
    found = {r.audit: r.findings for r in audit_cluster("c1", objects)}
    assert {(f.reason, f.node) for f in found["held"]} == {("HeldDriverRunning", "c1-mi300x-0")}
    assert "serves gpu.amd.com, which the gate holds back from this cluster, yet runs on node c1-mi300x-0" \
        in found["held"][0].message


def test_pools_nodes_are_judged_alike_unless_a_pod_names_one():
    """The static predicates are answered once per pool for a pod that names no node; a pod that names
    one (hostname label or metadata.name field) is judged node by node."""
    from inferplane.api.cloud_cluster import PoolRole
    from inferplane.simulator.simulation import ClusterSimulation

    pools = [Pool("gpu", PoolRole.GPU, 2, taints=({"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},)),
             Pool("system", PoolRole.SYSTEM, 2)]
    simulation = ClusterSimulation("c", pools, {})
    simulation.make_nodes()
    tolerant = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    assert simulation.filter_all({"tolerations": tolerant})[0] == ["c-gpu-0", "c-gpu-1", "c-system-0", "c-system-1"]
    assert simulation.filter_all({}) == (["c-system-0", "c-system-1"], {
        "c-gpu-0": ["node(s) had untolerated taint {nvidia.com/gpu: true}"],
        "c-gpu-1": ["node(s) had untolerated taint {nvidia.com/gpu: true}"]})
    by_label = {"tolerations": tolerant, "nodeSelector": {"kubernetes.io/hostname": "c-gpu-1"}}
    assert simulation.filter_all(by_label)[0] == ["c-gpu-1"]
    by_field = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c-system-1"]}]}]}}}}
    feasible, rejected = simulation.filter_all(by_field)
    assert feasible == ["c-system-1"] and rejected["c-system-0"] == ["node(s) didn't match Pod's node affinity/selector"]
