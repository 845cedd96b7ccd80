"""The Kubernetes objects a simulated cluster holds, as their controllers would write them: KWOK-shaped
Nodes, the stack's workloads and their Pods, the engines' workloads and allocated ResourceClaims, the
DeviceClasses an owner's driver install creates; with the names those controllers give them, and the
annotations that let the audits read a node's pool and a pod's workload from the objects themselves.
"""

from __future__ import annotations

import functools
import hashlib
from fractions import Fraction
from typing import Any, Mapping, Sequence

from inferplane import API_GROUP
from inferplane.accelerators import cpu as cpu_driver
from inferplane.accelerators.catalog import COMPONENT_LABEL
from inferplane.accelerators.workloads import Workload
from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.json_data import json_copy
from inferplane.api.managed import NAME_MAX, composed_name
from inferplane.cel.quantity import format_quantity, parse_quantity
from inferplane.simulator.cluster_objects import KUBERNETES_READY
from inferplane.simulator.simulation_inputs import EngineObject, Pool

Resource = dict[str, Any]

# KWOK's marks of a fake node. The taint KWOK usually adds (kwok.x-k8s.io/node=fake:NoSchedule)
# is left off: these nodes stand in for the cloud's real ones, so placement must be judged by the
# taints the real nodes carry, not by one that no chart tolerates.
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_LABEL = "type"
# What the audit needs to know about a node and a pod, carried on the objects themselves so that
# the audit can run over objects read back from a store.
POOL_ROLE_ANNOTATION = f"{API_GROUP}/pool-role"
POOL_DRIVERS_ANNOTATION = f"{API_GROUP}/pool-drivers"
WORKLOAD_ANNOTATION = f"{API_GROUP}/workload"
PLACEMENT_ANNOTATION = f"{API_GROUP}/placement"
DRIVERS_ANNOTATION = f"{API_GROUP}/drivers"
# On a cluster the gate holds: the drivers a node's class wants that the cluster does not run.
HELD_DRIVERS_ANNOTATION = f"{API_GROUP}/held-drivers"
APP_LABEL = "app.kubernetes.io/name"
# The kubelet's label naming its node: the only label that differs between the nodes of one pool.
HOSTNAME_LABEL = "kubernetes.io/hostname"

# A node without a declared size: a common 8-core general-purpose machine. A CPU pool's cores come
# from its class's `cpu` capacity, which is what the CPU driver hands out, plus the CPUs it keeps back.
DEFAULT_ALLOCATABLE = {"cpu": "8", "memory": "32Gi", "pods": "110"}

# Tolerations the DaemonSet controller adds to every pod it creates, so that node agents survive
# node conditions (DaemonSet util.AddOrUpdateDaemonPodTolerations).
DAEMONSET_TOLERATIONS = tuple(
    {"key": f"node.kubernetes.io/{condition}", "operator": "Exists", "effect": effect}
    for condition, effect in (("not-ready", "NoExecute"), ("unreachable", "NoExecute"),
                              ("disk-pressure", "NoSchedule"), ("memory-pressure", "NoSchedule"),
                              ("pid-pressure", "NoSchedule"), ("unschedulable", "NoSchedule")))

KIND_ORDER = {"Node": 0, "DaemonSet": 1, "Deployment": 2, "StatefulSet": 3, "LeaderWorkerSet": 4, "Pod": 5,
              "ResourceSlice": 6, "ResourceClaim": 7, "DeviceClass": 8}
# Where an engine pod belongs: on the device pool its replica pins it to (the audit checks it).
ENGINE_PLACEMENT = "Engine"
# Which of the replica's composed Objects a workload came from, so its readiness reaches that Object.
OBJECT_ANNOTATION = f"{API_GROUP}/object"


def node_name(cluster: str, pool: str, index: int) -> str:
    """`<cluster>-<pool>-<index>`; a longer one is cut with a digest, as clouds cut theirs, because the
    name is also the node's kubernetes.io/hostname label value (at most 63 characters)."""
    name = f"{cluster}-{pool}-{index}"
    return name if len(name) <= NAME_MAX else composed_name(cluster, pool, str(index))


def daemon_pod_name(daemonset: str, node: str) -> str:
    """The DaemonSet controller's name for its pod on a node: the DaemonSet's and a suffix of the node's."""
    return f"{daemonset}-{generated_suffix(node, 5)}"


def kwok_node(name: str, pool: Pool) -> Resource:
    allocatable = node_allocatable(pool)
    annotations = {KWOK_ANNOTATION: "fake", POOL_ROLE_ANNOTATION: pool.role}
    if pool.drivers:
        annotations[POOL_DRIVERS_ANNOTATION] = ",".join(pool.drivers)
    if pool.held_back:
        annotations[HELD_DRIVERS_ANNOTATION] = ",".join(pool.held_back)
    node: Resource = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": annotations,
            # The kubelet's well-known labels first; the pool's own labels may not override `type`.
            "labels": {"kubernetes.io/arch": "amd64", HOSTNAME_LABEL: name, "kubernetes.io/os": "linux",
                       **pool.labels, KWOK_LABEL: "kwok"},
        },
        "spec": {},
        "status": {
            "allocatable": allocatable,
            "capacity": dict(allocatable),
            "conditions": [{"type": KUBERNETES_READY, "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status"}],
        },
    }
    if pool.taints:
        node["spec"]["taints"] = [_taint(t) for t in pool.taints]
    return node


def node_allocatable(pool: Pool) -> dict[str, str]:
    """The pool's node size: declared, else a CPU pool's class `cpu` capacity (what the CPU driver counts)
    with the CPUs the driver keeps back (reservedCPUs), else the default."""
    out = dict(DEFAULT_ALLOCATABLE)
    if pool.role == PoolRole.CPU:
        cpu = sum((parse_quantity(d.capacity["cpu"].value) * d.count for d in pool.devices
                   if d.claim == "DRA" and "cpu" in d.capacity), Fraction(0))
        if cpu > 0:
            out["cpu"] = format_quantity(cpu + cpu_driver.RESERVED)
    out.update(pool.allocatable or {})
    return out


def _taint(taint: Mapping[str, str]) -> dict[str, str]:
    out = {"key": taint["key"]}
    if taint.get("value"):
        out["value"] = taint["value"]
    out["effect"] = taint.get("effect", "NoSchedule")
    return out


def pod_object(workload: Workload, name: str, spec: Resource, node: str | None, pending: str | None) -> Resource:
    annotations = {WORKLOAD_ANNOTATION: _owner_of(workload), **_placement(workload)}
    if node is not None and workload.crash:
        # Scheduled and started, but its container exits at start-up: the kubelet restarts it.
        spec = {"nodeName": node, **spec}
        status = {"phase": "Running",
                  "conditions": [{"type": "PodScheduled", "status": "True"},
                                 {"type": KUBERNETES_READY, "status": "False", "reason": "ContainersNotReady"}],
                  "containerStatuses": [{"name": workload.container, "ready": False, "restartCount": 5,
                                         "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                               "message": workload.crash}}}]}
    elif node is not None:
        spec = {"nodeName": node, **spec}
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"},
                                                     {"type": KUBERNETES_READY, "status": "True"}]}
    else:
        status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                      "reason": "Unschedulable", "message": pending}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": workload.namespace, "labels": _labels(workload),
                     "annotations": annotations},
        "spec": spec,
        "status": status,
    }


def workload_object(workload: Workload, *, desired: int, ready: int) -> Resource:
    spec: Resource = {
        "selector": {"matchLabels": {APP_LABEL: workload.name}},
        "template": {"metadata": {"labels": _labels(workload)}, "spec": workload.pod_spec()},
    }
    if workload.kind == "DaemonSet":
        status = {"currentNumberScheduled": desired, "desiredNumberScheduled": desired, "numberMisscheduled": 0,
                  "numberReady": ready, "numberAvailable": ready}
        if desired > ready:
            status["numberUnavailable"] = desired - ready
    else:
        spec = {"replicas": workload.replicas, **spec}
        if workload.kind == "StatefulSet":
            # The Prometheus operator's governing Services are `prometheus-operated` and
            # `alertmanager-operated`, the first word of the StatefulSet's name.
            spec["serviceName"] = f"{workload.name.split('-')[0]}-operated"
        status = {"replicas": desired, "readyReplicas": ready, "availableReplicas": ready}
    return {
        "apiVersion": "apps/v1",
        "kind": workload.kind,
        "metadata": {"name": workload.name, "namespace": workload.namespace,
                     "labels": {COMPONENT_LABEL: workload.component}, "annotations": _placement(workload)},
        "spec": spec,
        "status": status,
    }


def pin_to_node(affinity: Mapping[str, Any] | None, node: str) -> Resource:
    """The DaemonSet controller's node pinning: each required term also has to match the node's
    name (an existing term keeps its expressions; a pod without required terms gets one)."""
    # New dicts along the path written here only: the rest is shared with the template, as nothing
    # modifies a pod spec once built (a copy per pod was a tenth of a fleet's simulation).
    node_affinity = dict((affinity or {}).get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    field_term = [{"key": "metadata.name", "operator": "In", "values": [node]}]
    terms = required.get("nodeSelectorTerms") or []
    required["nodeSelectorTerms"] = [{**t, "matchFields": field_term} for t in terms] or [{"matchFields": field_term}]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    return {**(affinity or {}), "nodeAffinity": node_affinity}


def with_daemonset_tolerations(tolerations: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    out = [dict(t) for t in tolerations or []]
    out += [dict(t) for t in DAEMONSET_TOLERATIONS if t not in out]
    return out


def _placement(workload: Workload) -> dict[str, str]:
    """Where the workload belongs, for the audit: its placement and the drivers it serves."""
    out = {PLACEMENT_ANNOTATION: workload.placement.value}
    if workload.drivers:
        out[DRIVERS_ANNOTATION] = ",".join(sorted(workload.drivers))
    return out


def _labels(workload: Workload) -> dict[str, str]:
    return {APP_LABEL: workload.name, COMPONENT_LABEL: workload.component}


def _owner_of(workload: Workload) -> str:
    return f"{workload.kind}/{workload.name}"


# Kubernetes' generated-name alphabet: no vowels (no words) and no look-alike characters.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@functools.lru_cache(maxsize=16384)
def generated_suffix(text: str, length: int) -> str:
    """A stable generated-name suffix: the same text always gives the same characters (cached: every
    cluster names the same workloads, and every DaemonSet the same nodes)."""
    digest = hashlib.sha256(text.encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:length])


def object_order(obj: Resource) -> tuple:
    metadata = obj["metadata"]
    return KIND_ORDER.get(obj["kind"], 9), metadata.get("namespace", ""), metadata["name"]


def device_class(name: str, driver: str) -> Resource:
    """A DeviceClass that selects one driver's devices, as drivers' charts create theirs; annotated with
    the driver, so that the audit reads which driver it selects from the object itself."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": name, "annotations": {DRIVERS_ANNOTATION: driver}},
            "spec": {"selectors": [{"cel": {"expression": owner_selector(driver)}}]}}


def owner_selector(driver: str) -> str:
    """The selector of the DeviceClass an owner's driver install creates: that driver's devices."""
    return f"device.driver == '{driver}'"


def engine_pods(manifest: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(pod name, pod template) of every pod an engine workload runs, named as its controller names
    them: a Deployment's `<name>-<hash>-<suffix>`, a LeaderWorkerSet group's leader `<name>-<group>`
    and workers `<name>-<group>-<index>`."""
    name, spec = manifest["metadata"]["name"], manifest["spec"]
    replicas = int(spec.get("replicas", 1))
    if manifest["kind"] == "Deployment":
        template_hash = generated_suffix(f"{manifest['metadata'].get('namespace')}/{name}", 10)
        return [(f"{name}-{template_hash}-{generated_suffix(f'{name}/{i}', 5)}", spec["template"])
                for i in range(replicas)]
    group_template = spec["leaderWorkerTemplate"]
    size = int(group_template.get("size", 1))
    out = []
    for group in range(replicas):
        out.append((f"{name}-{group}", group_template.get("leaderTemplate") or group_template["workerTemplate"]))
        out += [(f"{name}-{group}-{index}", group_template["workerTemplate"]) for index in range(1, size)]
    return out


def engine_workload_object(engine: EngineObject, desired: int, running: int) -> Resource:
    """The engine workload as the cluster holds it, with the status its controller would write
    (Available once every pod runs, the condition the Object's readiness query reads)."""
    manifest = json_copy(dict(engine.manifest))
    available = "True" if running == desired else "False"
    conditions = [{"type": "Available", "status": available,
                   "reason": "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable"}]
    if manifest["kind"] == "Deployment":
        manifest["status"] = {"replicas": desired, "readyReplicas": running, "availableReplicas": running,
                              "conditions": conditions}
    else:
        manifest["status"] = {"replicas": int(manifest["spec"].get("replicas", 1)), "conditions": conditions}
    metadata = manifest["metadata"]
    metadata["annotations"] = {**(metadata.get("annotations") or {}), OBJECT_ANNOTATION: engine.ref}
    return manifest


def allocated_claim(name: str, namespace: str, claim_spec: Mapping[str, Any], node: str,
                    results: list[dict[str, str]]) -> Resource:
    """The ResourceClaim a template stamps for one pod, allocated on `node`."""
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": json_copy(dict(claim_spec)),
        "status": {"allocation": {
            "devices": {"results": results},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
    }
