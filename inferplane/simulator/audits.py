"""Audits of a simulated cluster: what it shows that a real one would suffer from.

Each audit is a small named function over the objects `simulate_cluster` returns (or the same
objects read back from a store), and each finding names the pod (its workload), the node and the
scheduling predicate that let the pod in or kept it out:

- `placement`: every device stack's workloads reach every node of their own pools and no other:
  `DriverOnForeignPool` (a node agent on a pool that claims none of its drivers, e.g. a DaemonSet
  tolerating every NoSchedule taint), `DriverMissing` (a pool whose driver's DaemonSet skips it, so
  its devices are never published), and a stack's pod that never runs (`PodPending`,
  `PodCrashLooping`);
- `toleration`: controllers land only on the System pool (`ControllerOutsideSystemPool`); every engine
  pod runs on the pool its replica pins it to (`EnginePending`, `EngineOffPool`) and tolerates no taint
  of another pool that its own pool does not carry (`EngineOverTolerant`);
- `claims`: every engine's ResourceClaim is allocated from its own driver's ResourceSlices on its
  node (`ClaimFromForeignSlices`), and every container a dra.cpu claim pins to CPUs requests and limits
  exactly those CPUs, as the CPU driver requires (`CPUsNotRequested`, `claimed_cpus.py`);
- `held`: on a cluster the gate holds, nodes are judged by the drivers they run, not by what their
  class now wants, and no held-back driver's agent runs (`HeldDriverRunning`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from inferplane.accelerators.workloads import Placement
from inferplane.api.cloud_cluster import PoolRole
from inferplane.api.common import taint_text
from inferplane.api.drivers import POOL_LABEL
from inferplane.simulator.claimed_cpus import unstated_cpus
from inferplane.simulator.simulation import DAEMONSET_PREDICATES
from inferplane.simulator.simulation_objects import (
    DRIVERS_ANNOTATION,
    ENGINE_PLACEMENT,
    HELD_DRIVERS_ANNOTATION,
    PLACEMENT_ANNOTATION,
    POOL_DRIVERS_ANNOTATION,
    POOL_ROLE_ANNOTATION,
    WORKLOAD_ANNOTATION,
    with_daemonset_tolerations,
)
from inferplane.scheduling.dra import DRIVER_OF_CLASS
from inferplane.scheduling.predicates import FILTERING_EFFECTS, NodeInfo, tolerates

Resource = dict[str, Any]


@dataclass(frozen=True)
class Finding:
    audit: str  # the audit that found it: placement, toleration, claims, held
    reason: str  # CamelCase, like a condition's reason
    pod: str | None  # namespace/name
    node: str | None
    message: str

    def to_dict(self) -> dict[str, str | None]:
        return {"audit": self.audit, "reason": self.reason, "pod": self.pod, "node": self.node,
                "message": self.message}


@dataclass
class SimulatedCluster:
    """One simulated cluster's objects, indexed the way the audits read them."""

    nodes: dict[str, Resource] = field(default_factory=dict)
    pods: list[Resource] = field(default_factory=list)
    daemonsets: list[Resource] = field(default_factory=list)
    slices: list[Resource] = field(default_factory=list)
    claims: dict[tuple[str, str], Resource] = field(default_factory=dict)
    # The DeviceClasses the cluster's owner installed with their drivers (known drivers' are DRIVER_OF_CLASS).
    device_classes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, objects: Iterable[Resource]) -> "SimulatedCluster":
        out = cls()
        for obj in objects:
            kind, metadata = obj.get("kind"), obj["metadata"]
            if kind == "Node":
                out.nodes[metadata["name"]] = obj
            elif kind == "Pod":
                out.pods.append(obj)
            elif kind == "DaemonSet":
                out.daemonsets.append(obj)
            elif kind == "ResourceSlice":
                out.slices.append(obj)
            elif kind == "ResourceClaim":
                out.claims[(metadata.get("namespace", ""), metadata["name"])] = obj
            elif kind == "DeviceClass":
                out.device_classes[metadata["name"]] = _annotation(obj, DRIVERS_ANNOTATION)
        return out

    def pods_placed(self, placement: str) -> list[Resource]:
        return [p for p in self.pods if _annotation(p, PLACEMENT_ANNOTATION) == placement]


# ---- placement


def placement(cluster: SimulatedCluster) -> list[Finding]:
    """Every device stack's node agents on every node of their own pools and on no other node, and
    every pod of the stack running."""
    findings = []
    for pod in cluster.pods:
        if _annotation(pod, PLACEMENT_ANNOTATION) == ENGINE_PLACEMENT:
            continue  # engine pods are the toleration audit's
        findings += _not_running(pod, "placement", cluster)
        node = cluster.nodes.get(pod["spec"].get("nodeName") or "")
        if node is None or _annotation(pod, PLACEMENT_ANNOTATION) != Placement.DRIVERS:
            continue
        drivers = _drivers(pod, DRIVERS_ANNOTATION)
        pool_drivers = _pool(node)[2]
        if not drivers & pool_drivers:
            claims = ", ".join(sorted(pool_drivers)) or "no driver"
            findings.append(Finding(
                "placement", "DriverOnForeignPool", _name(pod), node["metadata"]["name"],
                f"{_owner(pod)} pod {_name(pod)} serves {', '.join(sorted(drivers))} but landed on "
                f"{_where(node)}, which runs {claims}: {_admitted(pod['spec'], node)}; "
                "limit its nodeSelector and tolerations to its own pools"))
    for daemonset in cluster.daemonsets:
        findings += _missing_agents(daemonset, cluster)
    return findings


def _not_running(pod: Resource, audit: str, cluster: SimulatedCluster) -> list[Finding]:
    """A pod left Pending (with the scheduler's message and which predicate kept it off which nodes) or
    crash-looping, or nothing."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if not spec.get("nodeName"):
        message = next((c.get("message", "") for c in status.get("conditions") or []
                        if c.get("type") == "PodScheduled"), "")
        reason = "EnginePending" if audit == "toleration" else "PodPending"
        return [Finding(audit, reason, _name(pod), None, f"{_owner(pod)} pod {_name(pod)} is Pending: {message} "
                        f"({_kept_off(spec, cluster)})")]
    crashing = [c["state"]["waiting"].get("message", "") for c in status.get("containerStatuses") or []
                if (c.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff"]
    if crashing:
        return [Finding(audit, "PodCrashLooping", _name(pod), spec["nodeName"],
                        f"{_owner(pod)} pod {_name(pod)} is in CrashLoopBackOff: {'; '.join(crashing)}")]
    return []


def _missing_agents(daemonset: Resource, cluster: SimulatedCluster) -> list[Finding]:
    metadata = daemonset["metadata"]
    if _annotation(daemonset, PLACEMENT_ANNOTATION) != Placement.DRIVERS:
        return []
    drivers = _drivers(daemonset, DRIVERS_ANNOTATION)
    owner = f"DaemonSet/{metadata['name']}"
    own = [p for p in cluster.pods if _annotation(p, WORKLOAD_ANNOTATION) == owner
           and p["metadata"].get("namespace") == metadata.get("namespace")]
    covered = {p["spec"].get("nodeName") for p in own}
    template = daemonset["spec"]["template"]["spec"]
    candidate = {**template, "tolerations": with_daemonset_tolerations(template.get("tolerations"))}
    out = []
    for node_name, node in sorted(cluster.nodes.items()):
        wanted = drivers & _pool(node)[2]
        # A Pending pod for the node is reported as such; only a node the DaemonSet skips is missing.
        if not wanted or node_name in covered or any(_pinned_to(p, node_name) for p in own):
            continue
        out.append(Finding(
            "placement", "DriverMissing", None, node_name,
            f"{_where(node)} runs {', '.join(sorted(wanted))} but {owner} runs no pod there "
            f"({_kept_out(candidate, node)}): its devices are never published; let the DaemonSet's "
            "nodeSelector, affinity and tolerations admit the pool"))
    return out


def _pinned_to(pod: Resource, node: str) -> bool:
    """A DaemonSet's Pending pod is pinned to its node by a metadata.name matchFields term."""
    if pod["spec"].get("nodeName"):
        return False
    terms = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    return any(node in f.get("values", []) for t in terms for f in t.get("matchFields") or [])


# ---- toleration


def toleration(cluster: SimulatedCluster) -> list[Finding]:
    """Controllers only on the System pool; each device stack's node agent and each engine pod
    tolerating no taint of a pool it does not belong on (that its own pools do not carry too), and each
    engine pod running on its own pool."""
    findings = []
    for pod in cluster.pods_placed(Placement.SYSTEM):
        node = cluster.nodes.get(pod["spec"].get("nodeName") or "")
        if node is not None and _pool(node)[0] != PoolRole.SYSTEM:
            findings.append(Finding(
                "toleration", "ControllerOutsideSystemPool", _name(pod), node["metadata"]["name"],
                f"{_owner(pod)} pod {_name(pod)} is a controller but landed on {_where(node)}: "
                f"{_admitted(pod['spec'], node)}; controllers belong on the System pool: drop the tolerations "
                "that admit them to device pools"))
    for daemonset in cluster.daemonsets:
        if _annotation(daemonset, PLACEMENT_ANNOTATION) != Placement.DRIVERS:
            continue
        drivers = _drivers(daemonset, DRIVERS_ANNOTATION)
        owner = f"DaemonSet/{daemonset['metadata']['name']}"
        for name, taint, let_in in _foreign_taints_tolerated(
                daemonset["spec"]["template"]["spec"], lambda node: bool(drivers & _pool(node)[2]), cluster):
            findings.append(Finding(
                "toleration", "DriverOverTolerant", f"{daemonset['metadata'].get('namespace', '')}/"
                f"{daemonset['metadata']['name']}", name,
                f"{owner} serves {', '.join(sorted(drivers))} but tolerates taint {_shown(taint)} of "
                f"{_where(cluster.nodes[name])}, which runs {', '.join(sorted(_pool(cluster.nodes[name])[2])) or 'no driver'} "
                f"(TaintToleration: {_show(let_in)}{_blanket(let_in)}): only its nodeSelector keeps it off that pool; "
                "tolerate exactly its own pools' taints"))
    for pod in cluster.pods_placed(ENGINE_PLACEMENT):
        findings += _engine_findings(pod, cluster)
    return findings


def _engine_findings(pod: Resource, cluster: SimulatedCluster) -> list[Finding]:
    spec = pod["spec"]
    own_pool = (spec.get("nodeSelector") or {}).get(POOL_LABEL)
    not_running = _not_running(pod, "toleration", cluster)
    if not_running:
        return not_running
    node = cluster.nodes.get(spec["nodeName"])
    if node is None:
        return []
    if own_pool is None or _pool(node)[1] != own_pool:
        belongs = f"pool {own_pool}" if own_pool else f"a pool, yet has no {POOL_LABEL} nodeSelector,"
        return [Finding("toleration", "EngineOffPool", _name(pod), node["metadata"]["name"],
                        f"engine pod {_name(pod)} belongs on {belongs} but landed on {_where(node)}: "
                        f"{_admitted(spec, node)}; pin it to its pool")]
    return [Finding("toleration", "EngineOverTolerant", _name(pod), name,
                    f"engine pod {_name(pod)} of pool {own_pool} tolerates taint {_shown(taint)} of "
                    f"{_where(cluster.nodes[name])} (TaintToleration: {_show(let_in)}{_blanket(let_in)}), which its own "
                    "pool does not carry: tolerate exactly its pool's taints")
            for name, taint, let_in in _foreign_taints_tolerated(spec, lambda n: _pool(n)[1] == own_pool, cluster)]


def _foreign_taints_tolerated(spec: Mapping[str, Any], own: Callable[[Resource], bool], cluster: SimulatedCluster
                              ) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """(node, taint, the toleration that tolerates it) for the first such taint of each node the pod
    does not belong on, among the taints its own nodes do not carry."""
    own_taints = {_taint_id(t) for n in cluster.nodes.values() if own(n) for t in _filtering_taints(n)}
    out = []
    for name, node in sorted(cluster.nodes.items()):
        if own(node):
            continue
        for taint in _filtering_taints(node):
            let_in = next((t for t in spec.get("tolerations") or [] if tolerates(t, taint)), None)
            if _taint_id(taint) not in own_taints and let_in is not None:
                out.append((name, taint, let_in))
                break
    return out


# ---- claims


def claims(cluster: SimulatedCluster) -> list[Finding]:
    """Every engine pod's ResourceClaims allocated on its node, each device from a ResourceSlice of the
    driver its request's DeviceClass names, and the CPUs its dra.cpu claims pin stated by the containers they pin."""
    # Every device the slices publish, by (node, driver, pool, device): its capacity.
    published = {(s["spec"]["nodeName"], s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): d.get("capacity")
                 for s in cluster.slices for d in s["spec"].get("devices") or []}
    on_node: dict[str, list[Resource]] = {}
    for pod in cluster.pods:
        on_node.setdefault(pod["spec"].get("nodeName") or "", []).append(pod)
    out = []
    for pod in cluster.pods_placed(ENGINE_PLACEMENT):
        node = pod["spec"].get("nodeName")
        namespace = pod["metadata"].get("namespace", "")
        if node in cluster.nodes:
            out += [Finding("claims", "CPUsNotRequested", _name(pod), node, message) for message in unstated_cpus(
                pod, cluster.claims, published.get, cluster.nodes[node], on_node[node])]
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            claim = cluster.claims.get((namespace, status.get("resourceClaimName", "")))
            if claim is None:
                continue
            requests = {r["name"]: (r.get("exactly") or {}).get("deviceClassName", "")
                        for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []}
            for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
                device_class = requests.get(result.get("request", ""), "")
                wanted = DRIVER_OF_CLASS.get(device_class) or cluster.device_classes.get(device_class)
                where = (node, result.get("driver"), result.get("pool"), result.get("device"))
                if result.get("driver") == wanted and where in published:
                    continue
                source = (f"driver {result.get('driver')}'s slice on node {node}" if where in published else
                          f"no slice node {node} publishes")
                out.append(Finding(
                    "claims", "ClaimFromForeignSlices", _name(pod), node,
                    f"engine pod {_name(pod)}'s claim {claim['metadata']['name']} request {result.get('request')} "
                    f"(DeviceClass {device_class}, driver {wanted}) was allocated device {result.get('device')} of "
                    f"pool {result.get('pool')} from {source}: DRA allocation may only take devices of the "
                    "request's own driver from the node's ResourceSlices"))
    return out


# ---- held


def held(cluster: SimulatedCluster) -> list[Finding]:
    """A cluster the gate holds runs what it ran: no agent of a driver held back from its pools runs."""
    held_back = set().union(*(_drivers(n, HELD_DRIVERS_ANNOTATION) for n in cluster.nodes.values()))
    running = set().union(*(_pool(n)[2] for n in cluster.nodes.values()))
    out = []
    for pod in cluster.pods_placed(Placement.DRIVERS):
        leaked = _drivers(pod, DRIVERS_ANNOTATION) & (held_back - running)
        node = pod["spec"].get("nodeName")
        if leaked and node:
            out.append(Finding(
                "held", "HeldDriverRunning", _name(pod), node,
                f"{_owner(pod)} pod {_name(pod)} serves {', '.join(sorted(leaked))}, which the gate holds back from "
                f"this cluster, yet runs on {_where(cluster.nodes[node])}: a held stack is kept as it was, with no "
                "new drivers"))
    return out


AUDITS: dict[str, Callable[[SimulatedCluster], list[Finding]]] = {
    "placement": placement, "toleration": toleration, "claims": claims, "held": held}


@dataclass(frozen=True)
class AuditResult:
    """One audit over one cluster: its findings (none when it passes) and, when it passes, what it checked."""

    cluster: str
    audit: str
    findings: tuple[Finding, ...]
    checked: str

    @property
    def passed(self) -> bool:
        return not self.findings


def audit_cluster(name: str, objects: Iterable[Resource]) -> list[AuditResult]:
    """Every audit over one simulated cluster, in the order of `AUDITS`."""
    cluster = SimulatedCluster.of(objects)
    return [AuditResult(name, audit_name, tuple(findings), _checked(audit_name, cluster))
            for audit_name, findings in run_audits_on(cluster).items()]


def run_audits_on(cluster: SimulatedCluster) -> dict[str, list[Finding]]:
    return {name: sorted(check(cluster), key=lambda f: (f.reason, f.pod or "", f.node or ""))
            for name, check in AUDITS.items()}


def _checked(audit_name: str, cluster: SimulatedCluster) -> str:
    """What a passing audit looked at, in a few words."""
    if audit_name == "placement":
        agents = cluster.pods_placed(Placement.DRIVERS)
        pools = sorted({_pool(n)[1] for n in cluster.nodes.values() if _pool(n)[2]})
        return f"{_count(agents, 'device-stack pod')}, each on its own pools ({', '.join(pools) or 'none'}), none missing"
    if audit_name == "toleration":
        engines = cluster.pods_placed(ENGINE_PLACEMENT)
        pools = sorted({(p["spec"].get("nodeSelector") or {}).get(POOL_LABEL, "") for p in engines})
        return (f"{_count(cluster.pods_placed(Placement.SYSTEM), 'controller')} on the System pool, "
                + (f"{_count(engines, 'engine pod')} on their own pools ({', '.join(pools)})" if engines else "no engine pods"))
    if audit_name == "claims":
        drivers = sorted({r.get("driver", "") for c in cluster.claims.values()
                          for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []})
        if not cluster.claims:
            return "no claims"
        return f"{_count(cluster.claims, 'claim')} allocated from their own drivers' slices ({', '.join(drivers)})"
    held_back = {}
    for node in cluster.nodes.values():
        if _drivers(node, HELD_DRIVERS_ANNOTATION):
            _, pool, runs = _pool(node)
            held_back[pool] = (runs, _drivers(node, HELD_DRIVERS_ANNOTATION))
    if not held_back:
        return "not held by the gate"
    return "held by the gate, judged on what runs: " + "; ".join(
        f"pool {pool} runs {', '.join(sorted(runs)) or 'no driver'} (wants {', '.join(sorted(back))})"
        for pool, (runs, back) in sorted(held_back.items()))


def audit(objects: Iterable[Resource]) -> list[Finding]:
    """Every audit's findings over one simulated cluster, sorted by reason, pod and node."""
    found = [f for findings in run_audits_on(SimulatedCluster.of(objects)).values() for f in findings]
    return sorted(found, key=lambda f: (f.reason, f.pod or "", f.node or ""))


# ---- reading the objects


def _count(items: Any, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _annotation(obj: Resource, key: str) -> str:
    return (obj["metadata"].get("annotations") or {}).get(key, "")


def _drivers(obj: Resource, key: str) -> set[str]:
    return set(filter(None, _annotation(obj, key).split(",")))


def _name(pod: Resource) -> str:
    return f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}"


def _owner(pod: Resource) -> str:
    return _annotation(pod, WORKLOAD_ANNOTATION) or "pod"


def _pool(node: Resource) -> tuple[str, str, set[str]]:
    """(role, pool name, the drivers it runs) of a simulated node."""
    pool = (node["metadata"].get("labels") or {}).get(POOL_LABEL, "<unlabelled>")
    return _annotation(node, POOL_ROLE_ANNOTATION) or "unknown", pool, _drivers(node, POOL_DRIVERS_ANNOTATION)


def _where(node: Resource) -> str:
    role, pool, _ = _pool(node)
    return f"node {node['metadata']['name']} of {role} pool {pool}"


def _filtering_taints(node: Resource) -> list[Mapping[str, Any]]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") in FILTERING_EFFECTS]


def _taint_id(taint: Mapping[str, Any]) -> tuple[str, str, str]:
    return taint["key"], taint.get("value") or "", taint["effect"]


def _shown(taint: Mapping[str, Any]) -> str:
    return taint_text(taint["key"], taint.get("value"), taint["effect"])


def _admitted(spec: Mapping[str, Any], node: Resource) -> str:
    """Why the pod could land there: which of its tolerations tolerates each of the node's taints."""
    taints = _filtering_taints(node)
    if not taints:
        return ("the node has no taints (TaintToleration admits any pod) and the pod's NodeSelector and "
                "NodeAffinity do not exclude it")
    parts = []
    for taint in taints:
        let_in = next((t for t in spec.get("tolerations") or [] if tolerates(t, taint)), None)
        if let_in is not None:
            parts.append(f"TaintToleration: taint {_shown(taint)} is tolerated by {_show(let_in)}{_blanket(let_in)}")
    return "; ".join(parts)


def _kept_out(pod: Mapping[str, Any], node: Resource) -> str:
    """Each DaemonSet-controller predicate that rejects the node, with its reasons."""
    info = NodeInfo(node)
    parts = [f"{type(p).__name__}: {'; '.join(reasons)}" for p in DAEMONSET_PREDICATES
             if (reasons := p.filter(pod, info))]
    return "; ".join(parts) or "no predicate rejects it"


def _kept_off(spec: Mapping[str, Any], cluster: SimulatedCluster) -> str:
    """Which placement predicate kept a Pending pod off which nodes (the first that rejects each, in the
    scheduler's order); nodes all of them admit were refused for resources or devices."""
    kept: dict[str, list[str]] = {}
    for name, node in sorted(cluster.nodes.items()):
        info = NodeInfo(node)
        predicate = next((type(p).__name__ for p in DAEMONSET_PREDICATES if p.filter(spec, info)),
                         "resources or DRA allocation")
        kept.setdefault(predicate, []).append(name)
    return "; ".join(f"{predicate} kept it off {', '.join(nodes)}" for predicate, nodes in kept.items())


def _blanket(toleration_: Mapping[str, Any]) -> str:
    if toleration_.get("key"):
        return ""
    return " (it tolerates every taint" + (f" with effect {toleration_['effect']})" if toleration_.get("effect") else ")")


def _show(toleration_: Mapping[str, Any]) -> str:
    fields = ", ".join(f"{k}: {toleration_[k]}" for k in ("key", "operator", "value", "effect") if toleration_.get(k))
    return "{" + fields + "}"
