"""The placement audit: what the simulated cluster shows that a real one would suffer from.

It reads the objects `simulate_cluster` returns (or the same objects read back from a store) and
reports, each finding naming the pod, the node and why:
- `PodPending`: a pod that fits no node, with the scheduler's message;
- `PodCrashLooping`: a pod whose container exits at start-up with the values it was given;
- `ControllerOutsideSystemPool`: a controller that landed on a GPU or CPU pool, where it takes the
  capacity the pool was bought for (and, on a CPU pool, the cores the CPU driver hands out);
- `DriverOnForeignPool`: a device stack's node agent on a pool that claims none of its drivers,
  e.g. a DaemonSet that tolerates every NoSchedule taint and so lands on every node;
- `DriverMissing`: a pool that claims a driver whose node agent its DaemonSet does not place
  there, so the pool's devices are never published and no claim can allocate them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from inferplane.accelerators.workloads import Placement
from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.common import taint_text
from inferplane.api.drivers import POOL_LABEL
from inferplane.engine.simulation import (
    DAEMONSET_PREDICATES,
    DRIVERS_ANNOTATION,
    PLACEMENT_ANNOTATION,
    POOL_DRIVERS_ANNOTATION,
    POOL_ROLE_ANNOTATION,
    WORKLOAD_ANNOTATION,
    with_daemonset_tolerations,
)
from inferplane.scheduling.predicates import FILTERING_EFFECTS, filter_nodes, tolerates

Resource = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    reason: str  # CamelCase, like a condition's reason
    pod: str | None  # namespace/name
    node: str | None
    message: str

    def to_dict(self) -> dict[str, str | None]:
        return {"reason": self.reason, "pod": self.pod, "node": self.node, "message": self.message}


def audit(objects: Iterable[Resource]) -> list[Finding]:
    """Every placement problem in one simulated cluster, sorted by reason, pod and node."""
    objects = list(objects)
    nodes = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Node"}
    pods = [o for o in objects if o.get("kind") == "Pod"]
    findings = [f for pod in pods for f in _pod_findings(pod, nodes)]
    for daemonset in (o for o in objects if o.get("kind") == "DaemonSet"):
        findings += _missing_agents(daemonset, pods, nodes)
    return sorted(findings, key=lambda f: (f.reason, f.pod or "", f.node or ""))


def _pod_findings(pod: Resource, nodes: Mapping[str, Resource]) -> list[Finding]:
    metadata, spec = pod["metadata"], pod.get("spec") or {}
    name = f"{metadata.get('namespace', '')}/{metadata['name']}"
    annotations = metadata.get("annotations") or {}
    owner = annotations.get(WORKLOAD_ANNOTATION, "pod")
    node_name = spec.get("nodeName")
    if not node_name:
        message = next((c.get("message", "") for c in (pod.get("status") or {}).get("conditions") or []
                        if c.get("type") == "PodScheduled"), "")
        return [Finding("PodPending", name, None, f"{owner} pod {name} is Pending: {message}")]
    crashing = [c["state"]["waiting"].get("message", "") for c in (pod.get("status") or {}).get("containerStatuses") or []
                if (c.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff"]
    if crashing:
        return [Finding("PodCrashLooping", name, node_name,
                        f"{owner} pod {name} is in CrashLoopBackOff: {'; '.join(crashing)}")]
    node = nodes.get(node_name)
    if node is None:
        return []
    role, pool, pool_drivers = _pool(node)
    placement = annotations.get(PLACEMENT_ANNOTATION)
    where = f"node {node_name} of {role} pool {pool}"
    if placement == Placement.SYSTEM and role != PoolRole.SYSTEM:
        return [Finding("ControllerOutsideSystemPool", name, node_name,
                        f"{owner} pod {name} is a controller but landed on {where}: {_admitted(spec, node)}; "
                        "controllers belong on the System pool: drop the tolerations that admit them to device pools")]
    drivers = set(filter(None, annotations.get(DRIVERS_ANNOTATION, "").split(",")))
    if placement == "Drivers" and not drivers & pool_drivers:
        claims = ", ".join(sorted(pool_drivers)) or "no driver"
        return [Finding("DriverOnForeignPool", name, node_name,
                        f"{owner} pod {name} serves {', '.join(sorted(drivers))} but landed on {where}, which claims "
                        f"{claims}: {_admitted(spec, node)}; limit its nodeSelector and tolerations to its own pools")]
    return []


def _missing_agents(daemonset: Resource, pods: list[Resource], nodes: Mapping[str, Resource]) -> list[Finding]:
    metadata = daemonset["metadata"]
    annotations = metadata.get("annotations") or {}
    if annotations.get(PLACEMENT_ANNOTATION) != "Drivers":
        return []
    drivers = set(filter(None, annotations.get(DRIVERS_ANNOTATION, "").split(",")))
    owner = f"DaemonSet/{metadata['name']}"
    covered = {p["spec"].get("nodeName") for p in pods
               if (p["metadata"].get("annotations") or {}).get(WORKLOAD_ANNOTATION) == owner
               and p["metadata"].get("namespace") == metadata.get("namespace")}
    template = daemonset["spec"]["template"]["spec"]
    candidate = {**template, "tolerations": with_daemonset_tolerations(template.get("tolerations"))}
    out = []
    for node_name, node in sorted(nodes.items()):
        role, pool, pool_drivers = _pool(node)
        wanted = drivers & pool_drivers
        # A Pending pod for the node is reported as such; only a node the DaemonSet skips is missing.
        if not wanted or node_name in covered or _has_pending_pod(pods, owner, node_name):
            continue
        _, rejected = filter_nodes(candidate, [node], DAEMONSET_PREDICATES)
        why = "; ".join(rejected.get(node_name, [])) or "no reason found"
        out.append(Finding("DriverMissing", None, node_name,
                           f"node {node_name} of {role} pool {pool} claims {', '.join(sorted(wanted))} but {owner} "
                           f"runs no pod there ({why}): its devices are never published; let the DaemonSet's "
                           "nodeSelector, affinity and tolerations admit the pool"))
    return out


def _has_pending_pod(pods: list[Resource], owner: str, node: str) -> bool:
    """A DaemonSet's Pending pod is pinned to its node by a metadata.name matchFields term."""
    for pod in pods:
        if (pod["metadata"].get("annotations") or {}).get(WORKLOAD_ANNOTATION) != owner or pod["spec"].get("nodeName"):
            continue
        terms = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
        if any(node in f.get("values", []) for t in terms for f in t.get("matchFields") or []):
            return True
    return False


def _pool(node: Resource) -> tuple[str, str, set[str]]:
    """(role, pool name, claimed drivers) of a simulated node."""
    metadata = node["metadata"]
    annotations = metadata.get("annotations") or {}
    drivers = set(filter(None, annotations.get(POOL_DRIVERS_ANNOTATION, "").split(",")))
    pool = (metadata.get("labels") or {}).get(POOL_LABEL, "<unlabelled>")
    return annotations.get(POOL_ROLE_ANNOTATION, "unknown"), pool, drivers


def _admitted(spec: Mapping[str, Any], node: Resource) -> str:
    """Why the pod could land there: which of its tolerations tolerates each of the node's taints."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") in FILTERING_EFFECTS]
    if not taints:
        return "the node has no taints and the pod's nodeSelector and affinity do not exclude it"
    parts = []
    for taint in taints:
        toleration = next((t for t in spec.get("tolerations") or [] if tolerates(t, taint)), None)
        shown = taint_text(taint["key"], taint.get("value"), taint["effect"])
        if toleration is not None:
            everything = "" if toleration.get("key") else " (it tolerates every taint" + (
                f" with effect {toleration['effect']})" if toleration.get("effect") else ")")
            parts.append(f"taint {shown} is tolerated by {_show(toleration)}{everything}")
    return "; ".join(parts)


def _show(toleration: Mapping[str, Any]) -> str:
    fields = ", ".join(f"{k}: {toleration[k]}" for k in ("key", "operator", "value", "effect") if toleration.get(k))
    return "{" + fields + "}"
