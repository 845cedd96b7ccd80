"""Engine pods whose containers do not state the CPUs their dra.cpu claims pin: what a real cluster then suffers.

dra-driver-cpu requires a container using a CPU claim to request and limit exactly the CPUs the claim pins, and
refuses nothing that does not: the driver pins the container anyway, kube-scheduler counts only what pods request
against the node's allocatable cpu, and the kubelet derives the QoS class from the spec alone (the rule and its
sources: `accelerators/cpu.py`, `pinned_cpu_resources`). The simulation behaves the same (such a pod runs, and
its claimed CPUs count against nothing: `scheduling.predicates.pod_requests`); the claims audit reads each
running engine pod back with `unstated_cpus` and says what its node suffers from it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, Mapping

from inferplane.accelerators.cpu import CPU_CAPACITY
from inferplane.api.drivers import CPU
from inferplane.cel.quantity import format_quantity, parse_quantity
from inferplane.scheduling.predicates import pod_requests, qos_class

Resource = dict[str, Any]
# A device the node's slices publish, by (node, driver, pool, device): its capacity, as a slice writes it.
Published = Callable[[tuple[str, str, str, str]], Mapping[str, Any] | None]


def pinned(claim: Resource, published: Published, node: str) -> Fraction:
    """The CPUs an allocated claim pins: what each dra.cpu share consumes, or a whole device's `cpu` capacity."""
    total = Fraction(0)
    for result in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
        if result.get("driver") != CPU.name:
            continue
        consumed = (result.get("consumedCapacity") or {}).get(CPU_CAPACITY)
        if consumed is None:
            capacity = (published((node, CPU.name, result.get("pool", ""), result.get("device", ""))) or {})
            consumed = (capacity.get(CPU_CAPACITY) or {}).get("value", 0)
        total += parse_quantity(str(consumed))
    return total


def containers_pinned(pod: Resource, claims: Mapping[tuple[str, str], Resource], published: Published
                      ) -> list[tuple[Mapping[str, Any], Fraction, list[str]]]:
    """(container, CPUs its claims pin, the claims' names) for each container of a running pod that uses a CPU claim."""
    namespace, node = pod["metadata"].get("namespace", ""), pod["spec"].get("nodeName") or ""
    stamped = {s.get("name"): s.get("resourceClaimName", "") for s in (pod.get("status") or {}).get(
        "resourceClaimStatuses") or []}
    out = []
    for container in pod["spec"].get("containers") or []:
        names = [stamped.get(c.get("name"), "") for c in (container.get("resources") or {}).get("claims") or []]
        cpus = sum((pinned(claims[(namespace, n)], published, node) for n in names if (namespace, n) in claims),
                   Fraction(0))
        if cpus:
            out.append((container, cpus, names))
    return out


def unstated_cpus(pod: Resource, claims: Mapping[tuple[str, str], Resource], published: Published,
                  node: Resource, node_pods: Iterable[Resource]) -> list[str]:
    """What is wrong, and what the node suffers, for each container of a running engine pod whose requests.cpu or
    limits.cpu differ from the CPUs its dra.cpu claims pin; empty when each states them."""
    out = []
    for container, cpus, names in containers_pinned(pod, claims, published):
        requested, limited = (_cpu(container, field) for field in ("requests", "limits"))
        if requested == cpus and limited == cpus:
            continue
        stated = (f"requests {format_quantity(requested) if requested is not None else 'no'} cpu and limits "
                  f"{format_quantity(limited) if limited is not None else 'no'} cpu")
        out.append(f"engine pod {pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}'s container "
                   f"{container.get('name')} is pinned to {format_quantity(cpus)} CPUs by dra.cpu claim "
                   f"{', '.join(names)} but {stated}: {_suffers(node, node_pods, claims, published)}, and the kubelet "
                   f"classes the pod {qos_class(pod['spec'])}; set its resources.requests.cpu and resources.limits.cpu "
                   f"to {format_quantity(cpus)} (dra-driver-cpu docs/user/workload-requirements.md)")
    return out


def _suffers(node: Resource, node_pods: Iterable[Resource], claims: Mapping[tuple[str, str], Resource],
             published: Published) -> str:
    """How far the node's CPUs are counted: what its pods request, of its allocatable, and the claimed CPUs no
    request counts (kube-scheduler counts requests only, DRANodeAllocatableResources being alpha and off)."""
    name = node["metadata"]["name"]
    allocatable = parse_quantity(str(((node.get("status") or {}).get("allocatable") or {}).get("cpu", 0)))
    requested = uncounted = Fraction(0)
    for pod in node_pods:
        requested += pod_requests(pod["spec"]).get("cpu", Fraction(0))
        for container, cpus, _ in containers_pinned(pod, claims, published):
            uncounted += max(cpus - (_cpu(container, "requests") or 0), 0)
    over = requested + uncounted - allocatable
    return (f"kube-scheduler counts only requests against node {name}'s allocatable cpu, where pods request "
            f"{format_quantity(requested)} of {format_quantity(allocatable)} while {format_quantity(uncounted)} "
            "claimed CPUs count nowhere" + (f" (overcommitted by {format_quantity(over)})" if over > 0 else ""))


def _cpu(container: Mapping[str, Any], field: str) -> Fraction | None:
    value = ((container.get("resources") or {}).get(field) or {}).get("cpu")
    return None if value is None else parse_quantity(str(value))
