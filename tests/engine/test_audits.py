"""The audits over the seven legs (one fleet per cloud), and mutations that prove each audit can fail."""

import copy
import re
from pathlib import Path

import pytest
import yaml

from inferplane.accelerators import catalog
from inferplane.api.drivers import AMD_GPU, NVIDIA_GPU
from inferplane.simulator import fleet
from inferplane.simulator.audits import audit_cluster
from inferplane.engine.audit import audit_folder
from inferplane.engine.control_plane import ControlPlane
from inferplane.simulator.simulation import ClusterSimulation
from inferplane.simulator.simulation_inputs import EngineObject
from inferplane.runtime.store import Key
from inferplane.simulator.cluster_objects import simulated_objects

REPO = Path(__file__).resolve().parents[2]
# One fleet per cloud, each audited in its own in-memory state.
LEGS = REPO / "tests" / "legs"
EKS_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"
WIDE_OPEN = {"operator": "Exists", "effect": "NoSchedule"}


def results(folder):
    audited = audit_folder(folder)
    assert audited.applied.admission.errors == [] and audited.applied.report.converged
    return {(r.cluster, r.audit): r for r in audited.results}


def failures(folder, audit):
    found = results(folder)
    assert found, f"nothing in {folder} was simulated: the gate refused it, so no audit ran"
    return [f for (_, name), r in found.items() if name == audit for f in r.findings]


def mutate_engines(monkeypatch, change):
    """Every simulated cluster asked to run its engine workloads with `change(pod spec)` applied."""
    class Mutated(ClusterSimulation):
        def __init__(self, name, pools, components, engines=(), **options):
            mutated = []
            for engine in engines:
                manifest = copy.deepcopy(dict(engine.manifest))
                if manifest.get("kind") == "Deployment":
                    change(manifest["spec"]["template"]["spec"])
                mutated.append(EngineObject(engine.namespace, engine.name, manifest))
            super().__init__(name, pools, components, mutated, **options)

    monkeypatch.setattr(fleet, "ClusterSimulation", Mutated)


def component(key):
    return next(c for stack in catalog.CLOUDS.values() for c in stack.components if c.key == key)


# ---- the legs


def test_one_leg_per_cloud_each_with_an_nvidia_and_a_cpu_pool_and_amd_on_existing():
    pools = {}
    for leg in sorted(p for p in LEGS.iterdir() if p.is_dir()):
        cluster = yaml.safe_load((leg / "cluster.yaml").read_text())
        pools[leg.name] = (cluster["spec"]["cluster"]["source"], [p["name"] for p in cluster["spec"]["nodePools"]])
    assert pools == {
        "aks": ("AKS", ["nvidia", "cpu"]), "civo": ("Civo", ["nvidia", "cpu"]), "eks": ("EKS", ["nvidia", "cpu"]),
        "existing": ("Existing", ["nvidia", "amd", "cpu"]), "gke": ("GKE", ["nvidia", "cpu"]),
        "nebius": ("Nebius", ["nvidia", "cpu"]), "vultr": ("Vultr", ["nvidia", "cpu"]),
    }


@pytest.mark.parametrize("leg", ["aks", "civo", "eks", "existing", "gke", "nebius", "vultr"])
def test_every_leg_passes_every_audit(leg):
    found = results(LEGS / leg)
    assert sorted(found) == [(f"leg-{leg}", a) for a in ("claims", "held", "placement", "toleration")]
    assert {a: r.findings for (_, a), r in found.items()} == {
        "placement": (), "toleration": (), "claims": (), "held": ()}
    placement = found[(f"leg-{leg}", "placement")].checked
    # Two NVIDIA nodes with the kubelet plugin and dcgm-exporter each (plus GKE's driver installer, and
    # EKS's aws-dranet for their EFA interfaces), the CPU node with the CPU driver, and on Existing two
    # AMD nodes with the DRA driver and exporter.
    assert placement == {
        "existing": "9 device-stack pods, each on its own pools (amd, cpu, nvidia), none missing",
        "gke": "7 device-stack pods, each on its own pools (cpu, nvidia), none missing",
        "eks": "7 device-stack pods, each on its own pools (cpu, nvidia), none missing",
    }.get(leg, "5 device-stack pods, each on its own pools (cpu, nvidia), none missing")
    gpus = "amd, cpu, nvidia" if leg == "existing" else "cpu, nvidia"
    drivers = {"existing": "dra.cpu, gpu.amd.com, gpu.nvidia.com",
               "eks": "dra.cpu, dra.net, gpu.nvidia.com"}.get(leg, "dra.cpu, gpu.nvidia.com")
    engines = 3 if leg == "existing" else 2
    # One ModelDeployment per pool: each engine pod runs on its own pool with its drivers' devices (on
    # EKS the NVIDIA one claims an EFA interface beside its GPU).
    claims = engines + (leg == "eks")
    assert found[(f"leg-{leg}", "toleration")].checked.endswith(f", {engines} engine pods on their own pools ({gpus})")
    assert found[(f"leg-{leg}", "claims")].checked == (
        f"{claims} claims allocated from their own drivers' slices ({drivers})")
    assert found[(f"leg-{leg}", "held")].checked == "not held by the gate"


# ---- mutations: each makes a named audit fail


def test_widening_the_cpu_drivers_tolerations_to_every_noschedule_taint_fails_the_toleration_audit(mutate_component):
    cpu_driver = component("dra-driver-cpu")
    mutate_component("dra-driver-cpu",
                     values=lambda spec: {**cpu_driver.values(spec), "tolerations": [WIDE_OPEN]})
    found = failures(LEGS / "existing", "toleration")
    assert [(f.reason, f.pod, f.node) for f in found] == [
        ("DriverOverTolerant", "kube-system/dra-driver-cpu", "leg-existing-amd-0"),
        ("DriverOverTolerant", "kube-system/dra-driver-cpu", "leg-existing-amd-1"),
        ("DriverOverTolerant", "kube-system/dra-driver-cpu", "leg-existing-nvidia-0"),
        ("DriverOverTolerant", "kube-system/dra-driver-cpu", "leg-existing-nvidia-1"),
    ]
    assert found[2].message == (
        "DaemonSet/dra-driver-cpu serves dra.cpu but tolerates taint nvidia.com/gpu=true:NoSchedule of node "
        "leg-existing-nvidia-0 of GPU pool nvidia, which runs gpu.nvidia.com (TaintToleration: {operator: Exists, "
        "effect: NoSchedule} (it tolerates every taint with effect NoSchedule)): only its nodeSelector keeps it off "
        "that pool; tolerate exactly its own pools' taints")


def test_the_cpu_chart_default_lands_on_every_node_and_fails_the_placement_audit(mutate_component):
    """The chart's own default (every NoSchedule taint, no nodeSelector) puts the agent on GPU nodes."""
    cpu_driver = component("dra-driver-cpu")
    mutate_component("dra-driver-cpu", values=lambda spec: {
        **cpu_driver.values(spec), "tolerations": [WIDE_OPEN], "nodeSelector": None})
    found = sorted(failures(LEGS / "eks", "placement"), key=lambda f: f.node)
    assert [(f.reason, f.node) for f in found] == [
        ("DriverOnForeignPool", "leg-eks-nvidia-0"), ("DriverOnForeignPool", "leg-eks-nvidia-1"),
        ("DriverOnForeignPool", "leg-eks-system-0"), ("DriverOnForeignPool", "leg-eks-system-1")]
    assert re.fullmatch(
        r"DaemonSet/dra-driver-cpu pod kube-system/dra-driver-cpu-\w+ serves dra.cpu but landed on node "
        r"leg-eks-nvidia-0 of GPU pool nvidia, which runs dra.net, gpu.nvidia.com: TaintToleration: taint "
        r"nvidia.com/gpu=true:NoSchedule is tolerated by \{operator: Exists, effect: NoSchedule\} \(it tolerates "
        r"every taint with effect NoSchedule\); limit its nodeSelector and tolerations to its own pools",
        found[0].message)


def test_a_component_tagged_with_the_wrong_driver_fails_the_placement_audit(mutate_component):
    # NVIDIA's DRA driver tagged as serving AMD GPUs: its kubelet plugin still goes where its affinity
    # takes it (the NVIDIA pool), which runs another driver, and never reaches the AMD pool it claims.
    mutate_component("dra-driver-nvidia-gpu", dra_drivers=frozenset({AMD_GPU.name}))
    found = sorted(failures(LEGS / "existing", "placement"), key=lambda f: (f.node, f.reason))
    assert [(f.reason, f.node) for f in found] == [
        ("DriverMissing", "leg-existing-amd-0"), ("DriverMissing", "leg-existing-amd-1"),
        ("DriverOnForeignPool", "leg-existing-nvidia-0"), ("DriverOnForeignPool", "leg-existing-nvidia-1")]
    assert found[0].message == (
        "node leg-existing-amd-0 of GPU pool amd runs gpu.amd.com but DaemonSet/dra-driver-nvidia-gpu-kubelet-plugin "
        "runs no pod there (TaintToleration: node(s) had untolerated taint {amd.com/gpu: true}; NodeAffinity: node(s) "
        "didn't match Pod's node affinity/selector): its devices are never published; let the DaemonSet's nodeSelector, affinity and tolerations admit the pool")
    assert re.fullmatch(
        r"DaemonSet/dra-driver-nvidia-gpu-kubelet-plugin pod nvidia-dra-driver-gpu/dra-driver-nvidia-gpu-kubelet-"
        r"plugin-\w+ serves gpu.amd.com but landed on node leg-existing-nvidia-0 of GPU pool nvidia, which runs "
        r"gpu.nvidia.com: TaintToleration: taint nvidia.com/gpu=true:NoSchedule is tolerated by \{key: nvidia.com/gpu, "
        r"operator: Exists, effect: NoSchedule\}; limit its nodeSelector and tolerations to its own pools",
        found[2].message)


def test_the_amd_operands_tagged_nvidia_fail_the_placement_audit_on_existing(mutate_component):
    mutate_component("amd-gpu-operator", dra_drivers=frozenset({NVIDIA_GPU.name}))
    found = failures(LEGS / "existing", "placement")
    assert {(f.reason, f.node) for f in found} >= {
        ("DriverOnForeignPool", "leg-existing-amd-0"), ("DriverOnForeignPool", "leg-existing-amd-1")}


# ---- held: judged on what runs


def held_eks_cluster(tmp_path):
    """The EKS recipe's cluster, running, whose class then asks for AMD GPUs (not served on EKS)."""
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    # An AMD device, as AMD's driver publishes one (the NVIDIA attributes are not its).
    klass["spec"]["devices"][0].update(driver=AMD_GPU.name, deviceClassName=AMD_GPU.device_class,
                                       attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, capacity={})
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    assert runtime.apply([tmp_path / "class.yaml"]).report.converged
    return runtime


def test_a_held_cluster_is_judged_on_what_runs_not_on_what_its_class_wants(tmp_path):
    runtime = held_eks_cluster(tmp_path)
    events = runtime.store.event_log.events(Key("inferplane.dev", "InferenceCluster", "", "eks-l4"))
    # Before: four "DriverOnForeignPool" warnings telling the user to narrow the NVIDIA driver's
    # tolerations, on the very pool it was installed for.
    assert [e["reason"] for e in events if e["reason"].startswith("PlacementAudit")] == []
    audited = {r.audit: r for r in audit_cluster("eks-l4", simulated_objects(runtime.store, "eks-l4")["eks-l4"])}
    assert all(r.passed for r in audited.values())
    assert audited["held"].checked == ("held by the gate, judged on what runs: pool l4 runs gpu.nvidia.com "
                                       "(wants gpu.amd.com)")
    nodes = [o for o in simulated_objects(runtime.store, "eks-l4")["eks-l4"] if o["kind"] == "Node"
             and o["metadata"]["labels"]["inferplane.dev/pool"] == "l4"]
    assert {n["metadata"]["annotations"]["inferplane.dev/held-drivers"] for n in nodes} == {AMD_GPU.name}


def serving_state(runtime):
    """The recipe's replicas and endpoints with their specs, and what runs for them on the cluster."""
    served = {(o["kind"], o["metadata"]["name"]): (o["metadata"].get("labels"), o["spec"])
              for kind in ("ModelReplica", "ModelEndpoint") for o in runtime.store.list(kind)}
    on_cluster = sorted((o["kind"], o["metadata"]["name"], (o.get("status") or {}).get("phase"))
                        for o in simulated_objects(runtime.store, "eks-l4")["eks-l4"]
                        if o["kind"] in ("Pod", "ResourceClaim", "ResourceSlice")
                        and o["metadata"].get("namespace") in (None, "default"))
    return served, on_cluster


def test_a_held_cluster_keeps_serving_what_it_served(tmp_path):
    """Its class now wants AMD GPUs, which EKS cannot serve: the gate holds the cluster, and its
    replicas, their engine pods with their NVIDIA claims, and their endpoints stay exactly as they ran
    (before, both replicas were deleted: the scheduler matched them against the changed class)."""
    runtime = ControlPlane(None)
    runtime.apply([EKS_RECIPE])
    before = serving_state(runtime)
    assert sorted(name for kind, name in before[0] if kind == "ModelReplica") == [
        "qwen2-5-0-5b-l4-eks-l4-0", "qwen2-5-0-5b-l4-eks-l4-1"]
    assert [k for k, _, phase in before[1] if k == "Pod" and phase == "Running"] and \
        [k for k, _, _ in before[1] if k == "ResourceClaim"]
    klass = yaml.safe_load((EKS_RECIPE / "class.yaml").read_text())
    # An AMD device, as AMD's driver publishes one (the NVIDIA attributes are not its).
    klass["spec"]["devices"][0].update(driver=AMD_GPU.name, deviceClassName=AMD_GPU.device_class,
                                       attributes={"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, capacity={})
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    assert runtime.apply([tmp_path / "class.yaml"]).report.converged

    assert serving_state(runtime) == before
    deployment = runtime.store.list("ModelDeployment")[0]
    assert deployment["status"]["replicas"] == {"total": 2, "ready": 2}
    replica = runtime.store.list("ModelReplica")[0]
    composed = next(c for c in replica["status"]["conditions"] if c["type"] == "Composed")
    assert (composed["reason"], composed["message"]) == (
        "KeptAsRunning", "InferenceCluster eks-l4 is not ready: ModelReplica qwen2-5-0-5b-l4-eks-l4-0's workloads "
        "are kept as they run until it is")


def test_dropping_an_engines_pool_toleration_fails_the_toleration_audit(monkeypatch):
    mutate_engines(monkeypatch, lambda spec: spec.update(
        tolerations=[t for t in spec.get("tolerations") or [] if t.get("key") != NVIDIA_GPU.pool_taint.key]))
    found = failures(LEGS / "gke", "toleration")
    assert [(f.reason, f.node) for f in found] == [("EnginePending", None)]
    assert re.fullmatch(r"Deployment/\S+ pod default/\S+ is Pending: 0/5 nodes are available: 1 node\(s\) had "
                        r"untolerated taint \{inferplane.dev/cpu: true\}, 2 node\(s\) didn't match Pod's node "
                        r"affinity/selector, 2 node\(s\) had untolerated taint \{nvidia.com/gpu: true\}\. \(TaintToleration "
                        r"kept it off leg-gke-cpu-0, leg-gke-nvidia-0, leg-gke-nvidia-1; NodeSelector kept it off "
                        r"leg-gke-system-0, leg-gke-system-1\)", found[0].message), \
        found[0].message


def test_a_blanket_toleration_on_an_engine_fails_the_toleration_audit(tmp_path):
    # The user's own deployment asks its engines to tolerate everything: they may now land anywhere.
    for name in ("classes.yaml", "cluster.yaml"):
        (tmp_path / name).write_text((LEGS / "aks" / name).read_text())
    models = list(yaml.safe_load_all((LEGS / "aks" / "models.yaml").read_text()))
    for model in models:
        model["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
    (tmp_path / "models.yaml").write_text(yaml.safe_dump_all(models))
    found = failures(tmp_path, "toleration")
    assert sorted((f.reason, f.node) for f in found) == [
        ("EngineOverTolerant", "leg-aks-cpu-0"), ("EngineOverTolerant", "leg-aks-nvidia-0"),
        ("EngineOverTolerant", "leg-aks-nvidia-1")]
    gpu_engine = next(f for f in found if f.node == "leg-aks-cpu-0")
    assert re.fullmatch(r"engine pod default/\S+ of pool nvidia tolerates taint inferplane.dev/cpu=true:NoSchedule of "
                        r"node leg-aks-cpu-0 of CPU pool cpu \(TaintToleration: \{operator: Exists\} \(it tolerates "
                        r"every taint\)\), which its own pool does not carry: tolerate exactly its pool's taints",
                        gpu_engine.message), gpu_engine.message


def test_a_claim_allocated_from_another_drivers_slices_fails_the_claims_audit(monkeypatch):
    """The allocator handing the NVIDIA engine a CPU device: its claim names the CPU driver's slice."""
    simulate = ClusterSimulation.simulate

    def misallocating(self):
        objects = simulate(self)
        cpu_slice = next(o for o in objects if o["kind"] == "ResourceSlice" and o["spec"]["driver"] == "dra.cpu")
        for claim in (o for o in objects if o["kind"] == "ResourceClaim"):
            for result in claim["status"]["allocation"]["devices"]["results"]:
                if result["driver"] == NVIDIA_GPU.name:
                    result.update(driver="dra.cpu", pool=cpu_slice["spec"]["pool"]["name"],
                                  device=cpu_slice["spec"]["devices"][0]["name"])
        return objects

    monkeypatch.setattr(ClusterSimulation, "simulate", misallocating)
    found = failures(LEGS / "nebius", "claims")
    assert [(f.reason, f.node) for f in found] == [("ClaimFromForeignSlices", found[0].node)]
    assert found[0].node.startswith("leg-nebius-nvidia-")
    assert re.fullmatch(
        r"engine pod default/\S+'s claim \S+ request gpu \(DeviceClass gpu.nvidia.com, driver gpu.nvidia.com\) was "
        r"allocated device cpudevnuma000 of pool leg-nebius-cpu-0 from no slice node leg-nebius-nvidia-\d publishes: "
        r"DRA allocation may only take devices of the request's own driver from the node's ResourceSlices",
        found[0].message), found[0].message


def cpu_engine_pods(found_folder):
    runtime = ControlPlane(None)
    assert runtime.apply([found_folder]).admission.ok
    return [o for objects in simulated_objects(runtime.store).values() for o in objects
            if o["kind"] == "Pod" and o["spec"].get("nodeName", "").endswith("-cpu-0")
            and "resourceClaimStatuses" in o.get("status", {})]


def test_a_cpu_engine_that_does_not_request_its_claimed_cpus_runs_and_fails_the_claims_audit(monkeypatch):
    """As the CPU driver does: nothing refuses the pod, it runs pinned to its whole NUMA-node device, and its 6
    CPUs count against nothing; the engine asks no cpu, so it is BestEffort."""
    def unstated(spec):
        for container in spec["containers"]:
            for field in ("requests", "limits"):
                (container.get("resources") or {}).pop(field, None)

    mutate_engines(monkeypatch, unstated)
    (pod,) = cpu_engine_pods(LEGS / "civo")
    assert pod["status"]["phase"] == "Running" and "requests" not in pod["spec"]["containers"][0]["resources"]
    found = failures(LEGS / "civo", "claims")
    assert [(f.reason, f.node) for f in found] == [("CPUsNotRequested", "leg-civo-cpu-0")]
    assert re.fullmatch(
        r"engine pod default/\S+'s container engine is pinned to 6 CPUs by dra.cpu claim \S+ but requests no cpu and "
        r"limits no cpu: kube-scheduler counts only requests against node leg-civo-cpu-0's allocatable cpu, where pods "
        r"request 100m of 8 while 6 claimed CPUs count nowhere, and the kubelet classes the pod BestEffort; set its "
        r"resources.requests.cpu and resources.limits.cpu to 6 \(dra-driver-cpu docs/user/workload-requirements.md\)",
        found[0].message), found[0].message


def test_claimed_cpus_requested_short_of_the_claim_count_the_rest_nowhere_and_fail_the_claims_audit(monkeypatch):
    def understated(spec):
        for container in spec["containers"]:
            if "requests" in (container.get("resources") or {}):
                container["resources"]["requests"] = {"cpu": "1", "memory": "1Gi"}

    mutate_engines(monkeypatch, understated)
    found = failures(LEGS / "civo", "claims")
    assert [(f.reason, f.node) for f in found] == [("CPUsNotRequested", "leg-civo-cpu-0")]
    assert ("but requests 1 cpu and limits 6 cpu: kube-scheduler counts only requests against node leg-civo-cpu-0's "
            "allocatable cpu, where pods request 1100m of 8 while 5 claimed CPUs count nowhere, and the kubelet "
            "classes the pod Burstable") in found[0].message


def test_the_cpu_engine_composed_for_a_whole_device_requests_and_limits_its_published_cpus():
    (pod,) = cpu_engine_pods(LEGS / "civo")
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "6"}, "limits": {"cpu": "6"}, "claims": [{"name": "cpu"}]}
