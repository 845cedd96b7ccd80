"""What the commands print: tables, describe pages, trace trees and the fleet table."""

from __future__ import annotations

import re
from typing import Any

from inferplane.accelerators import CLOUDS
from inferplane.api import KINDS_BY_NAME
from inferplane.api.common import taint_text
from inferplane.api.drivers import POOL_LABEL
from inferplane.cli.output import table
from inferplane.engine.reconciler import COMPOSITION_KEY, controller_of
from inferplane.engine.store import Resource


def condition(obj: Resource, type_: str) -> dict[str, str]:
    for c in (obj.get("status") or {}).get("conditions", []) or []:
        if c.get("type") == type_:
            return c
    return {}


def json_path(obj: Any, path: str) -> Any:
    """The little of JSONPath printer columns use: .a.b, and [?(@.type=="X")] filters."""
    node = obj
    for part in re.findall(r'\[\?\(@\.(\w+)=="([^"]*)"\)\]|\.(\w+)', path):
        field_, value, name = part
        if name:
            node = node.get(name) if isinstance(node, dict) else None
        else:
            node = next((i for i in node or [] if isinstance(i, dict) and i.get(field_) == value), None) \
                if isinstance(node, list) else None
        if node is None:
            return None
    return node


# Columns of the Kubernetes kinds a simulated cluster holds, as kubectl shows them.
_BUILTIN_COLUMNS: dict[str, tuple[tuple[str, Any], ...]] = {
    "Node": (("STATUS", lambda o: "Ready" if condition(o, "Ready").get("status") == "True" else "NotReady"),
             ("POOL", lambda o: o["metadata"].get("labels", {}).get(POOL_LABEL)),
             ("TAINTS", lambda o: ",".join(taint_text(t["key"], t.get("value"), t["effect"])
                                           for t in o["spec"].get("taints", [])))),
    "Pod": (("STATUS", lambda o: o.get("status", {}).get("phase")),
            ("NODE", lambda o: o["spec"].get("nodeName"))),
    "DaemonSet": (("DESIRED", lambda o: o.get("status", {}).get("desiredNumberScheduled")),
                  ("READY", lambda o: o.get("status", {}).get("numberReady"))),
    "Deployment": (("READY", lambda o: f"{o.get('status', {}).get('readyReplicas', 0)}/{o['spec'].get('replicas')}"),),
    "StatefulSet": (("READY", lambda o: f"{o.get('status', {}).get('readyReplicas', 0)}/{o['spec'].get('replicas')}"),),
    "ResourceSlice": (("NODE", lambda o: o["spec"].get("nodeName")), ("DRIVER", lambda o: o["spec"].get("driver")),
                      ("DEVICES", lambda o: len(o["spec"].get("devices", [])))),
}


def get_table(objects: list[Resource]) -> str:
    kind_name = objects[0]["kind"] if objects else ""
    kind = KINDS_BY_NAME.get(kind_name)
    if kind is not None:
        columns = [(header, lambda o, path=path: json_path(o, path)) for header, path, _ in kind.COLUMNS]
    else:
        columns = list(_BUILTIN_COLUMNS.get(kind_name, (
            ("SYNCED", lambda o: condition(o, "Synced").get("status")),
            ("READY", lambda o: condition(o, "Ready").get("status")))))
    namespaced = any(o["metadata"].get("namespace") for o in objects)
    headers = (["NAMESPACE"] if namespaced else []) + ["NAME"] + [c[0] for c in columns]
    rows = []
    for obj in objects:
        row = ([obj["metadata"].get("namespace", "")] if namespaced else []) + [obj["metadata"]["name"]]
        rows.append(row + [column(obj) for _, column in columns])
    return table(headers, rows)


def describe(obj: Resource, composed: list[Resource], events: list[dict[str, str]]) -> str:
    meta = obj["metadata"]
    lines = [f"Name:         {meta['name']}"]
    if meta.get("namespace"):
        lines.append(f"Namespace:    {meta['namespace']}")
    lines += [f"API Version:  {obj['apiVersion']}", f"Kind:         {obj['kind']}",
              f"Generation:   {meta.get('generation')}"]
    labels = meta.get("labels") or {}
    lines.append("Labels:       " + (", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"))
    conditions = (obj.get("status") or {}).get("conditions") or []
    lines.append("Conditions:")
    if conditions:
        lines += ["  " + line for line in table(
            ("TYPE", "STATUS", "REASON", "MESSAGE"),
            [(c["type"], c["status"], c["reason"], c.get("message")) for c in conditions]).splitlines()]
    else:
        lines.append("  <none>")
    lines.append("Composed Resources:")
    if composed:
        lines += ["  " + line for line in table(
            ("KEY", "KIND", "NAME", "READY"),
            [(c["metadata"].get("annotations", {}).get(COMPOSITION_KEY), c["kind"], c["metadata"]["name"],
              condition(c, "Ready").get("status", "Unknown")) for c in composed]).splitlines()]
    else:
        lines.append("  <none>")
    lines.append("Events:")
    if events:
        lines += ["  " + line for line in table(
            ("TYPE", "REASON", "MESSAGE"), [(e["type"], e["reason"], e["message"]) for e in events]).splitlines()]
    else:
        lines.append("  <none>")
    return "\n".join(lines)


def trace_tree(root: Resource, objects: list[Resource]) -> dict[str, Any]:
    """The tree of everything composed under `root`, each node with its readiness."""
    children: dict[str, list[Resource]] = {}
    for obj in objects:
        owner = controller_of(obj)
        if owner:
            children.setdefault(owner, []).append(obj)

    def node(obj: Resource) -> dict[str, Any]:
        ready = condition(obj, "Ready")
        synced = condition(obj, "Synced")
        return {
            "apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "namespace": obj["metadata"].get("namespace"),
            "resource": obj["metadata"].get("annotations", {}).get(COMPOSITION_KEY),
            "synced": synced.get("status", "Unknown"), "ready": ready.get("status", "Unknown"),
            "reason": ready.get("reason", ""), "message": ready.get("message", ""),
            "children": [node(c) for c in sorted(children.get(obj["metadata"]["uid"], []),
                                                 key=lambda o: (o["kind"], o["metadata"]["name"]))],
        }

    return node(root)


def trace_table(tree: dict[str, Any]) -> str:
    rows: list[tuple[str, ...]] = []

    def walk(node: dict[str, Any], prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─ " if last else "├─ ")
        status = node["reason"] + (f": {node['message']}" if node["message"] and node["ready"] != "True" else "")
        rows.append((f"{prefix}{branch}{node['kind']}/{node['name']}", node["synced"], node["ready"], status))
        extension = "" if top else ("   " if last else "│  ")
        for i, child in enumerate(node["children"]):
            walk(child, prefix + extension, i == len(node["children"]) - 1, False)

    walk(tree, "", True, True)
    return table(("NAME", "SYNCED", "READY", "STATUS"), rows)


def cluster_readiness(cluster: Resource) -> tuple[str, str]:
    """(READY, REASON) of an InferenceCluster: ready only when the cluster and its stack both are.

    The reason is what holds it (the gate, an invalid stack, provisioning) or, when ready, how the
    cluster came to be (Available, Existing)."""
    overall = condition(cluster, "Ready")
    parts = [condition(cluster, t) for t in ("ClusterReady", "StackReady")]
    if overall.get("status") == "True" and all(p.get("status") == "True" for p in parts):
        return "True", parts[0].get("reason", "")
    if not overall and not any(parts):
        return "Unknown", ""
    held = next((p for p in parts if p.get("status") != "True"), None) or overall
    return "False", held.get("reason", "")


def fleet_table(objects: list[Resource]) -> str:
    """One row per InferenceCluster: cloud, gate, claimed drivers, pools, installed device stacks."""
    stacks = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ServingStack"}
    tagged = {c.key for stack in CLOUDS.values() for c in stack.components if c.dra_drivers}
    rows = []
    for cluster in (o for o in objects if o["kind"] == "InferenceCluster"):
        name = cluster["metadata"]["name"]
        ready_status, reason = cluster_readiness(cluster)
        status = cluster.get("status") or {}
        pools = []
        for pool in status.get("schedulablePools", []):
            devices = "+".join(f"{d['count']}x{d['driver']}" for d in pool.get("devices", []) if d["claim"] == "DRA")
            pools.append(f"{pool['name']}({pool['role']}:{devices or 'none'})")
        stack = stacks.get(name)
        installed = [c for c in ((stack or {}).get("status") or {}).get("components", []) if c in tagged]
        rows.append((name, cluster["spec"]["cluster"]["source"], ready_status, reason,
                     ",".join(status.get("draDrivers", [])) or "none", " ".join(pools), ",".join(installed) or "none"))
    return table(("CLUSTER", "CLOUD", "READY", "REASON", "DRIVERS", "POOLS", "DEVICE-STACKS"), rows)


def composed_kinds() -> set[str]:
    """Kinds inferplane composes, known even while none exists (kubectl knows them from CRDs)."""
    from inferplane.clouds import CLOUD_MODULES

    kinds = {"Release", "Object"}
    for module in CLOUD_MODULES.values():
        kinds.update(k for k in (getattr(module, "cluster_kind", None), getattr(module, "pool_kind", None)) if k)
    return kinds


def resolve_kind(name: str, present: list[str]) -> str | None:
    """A kind from what a user types: InferenceCluster, inferencecluster(s), or a short name."""
    wanted = name.lower()
    candidates = sorted(set(present) | set(KINDS_BY_NAME) | composed_kinds())
    for kind in candidates:
        resource = KINDS_BY_NAME.get(kind)
        names = {kind.lower(), kind.lower() + "s", kind.lower() + "es"}
        if resource is not None:
            names.update((resource.PLURAL, *resource.SHORT_NAMES))
        if wanted in names:
            return kind
    return None

