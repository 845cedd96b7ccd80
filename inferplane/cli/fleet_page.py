"""`inferplane fleet --html`: the fleet as one self-contained HTML page.

Everything the page needs is inline (CSS, no script, no font, no image), so it reads the same
offline, attached to a ticket or opened years later. Every name and message comes from users'
manifests and is escaped."""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any, Iterable

from inferplane.api.common import taint_text
from inferplane.api.drivers import POOL_LABEL
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.cli.views import FleetRow, condition, fleet_rows
from inferplane.compose.inference_cluster import node_pool
from inferplane.engine.store import Resource

_STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2430;background:#f4f6f9}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 10px;border-bottom:2px solid #c9d2de}
.summary{color:#4a5568;margin:0 0 8px}
.clusters{display:flex;flex-wrap:wrap;gap:16px}
.cluster{background:#fff;border:1px solid #c9d2de;border-radius:8px;padding:12px 14px;min-width:320px;max-width:560px}
.cluster h3{font-size:16px;margin:0 0 6px;display:flex;gap:8px;align-items:center}
.badge{font-size:12px;border-radius:10px;padding:1px 8px;color:#fff}
.ready-True{background:#2f855a} .ready-False{background:#c53030} .ready-Unknown{background:#718096}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:6px 0}
dt{color:#4a5568} dd{margin:0;word-break:break-word}
.gate-True{color:#2f855a} .gate-False{color:#c53030}
.pools{display:flex;flex-wrap:wrap;gap:10px;margin-top:8px}
.pool{border:1px solid #9fb3c8;border-radius:6px;padding:8px 10px;min-width:200px;background:#f8fafc}
.pool h4{margin:0 0 4px;font-size:14px} .role{font-size:11px;color:#fff;border-radius:4px;padding:0 6px}
.role-GPU{background:#6b46c1} .role-CPU{background:#2b6cb0}
.pool.idle{border-style:dashed;color:#718096}
ul{margin:2px 0 0;padding-left:18px} .none{color:#718096;font-style:italic}
"""


def replicas_by_pool(objects: Iterable[Resource]) -> dict[tuple[str, str], list[str]]:
    """(cluster, pool) -> the ModelReplicas with a member pinned there, read as Modelplane's
    ModelReplica states it (`spec.clusterName`, each member's `nodePoolName`). Empty while no
    ModelReplica exists."""
    placed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for replica in objects:
        if replica["kind"] != "ModelReplica":
            continue
        spec = replica.get("spec") or {}
        name = "/".join(filter(None, (replica["metadata"].get("namespace"), replica["metadata"]["name"])))
        pools = {m.get("nodePoolName") for e in spec.get("engines") or [] for m in e.get("members") or []}
        for pool in sorted(p for p in pools if p):
            placed[(spec.get("clusterName", ""), pool)].append(name)
    return placed


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _items(values: Iterable[str]) -> str:
    listed = "".join(f"<li>{escape(v)}</li>" for v in values)
    return f"<ul>{listed}</ul>" if listed else '<span class="none">none</span>'


def _planned_pools(cluster: Resource, classes: dict[str, Resource]) -> list[dict[str, Any]]:
    """The pools of a cluster whose status lists none yet (the gate refused it before provisioning, or
    it waits for a class): their role, devices and taints as they would be provisioned."""
    planned = []
    spec = InferenceCluster.model_validate(cluster).spec
    for pool in spec.node_pools:
        entry: dict[str, Any] = {"name": pool.name, "className": pool.class_name, "nodeCount": pool.node_count}
        if pool.class_name in classes:
            klass = InferenceClass.model_validate(classes[pool.class_name])
            shape = node_pool(pool, klass, spec.cluster.source)
            entry.update(role=shape["role"], taints=shape["taints"],
                         devices=[{"name": d.name, "driver": d.driver, "count": d.count, "claim": d.claim}
                                  for d in klass.spec.devices])
        else:
            entry["classMissing"] = True
        planned.append(entry)
    return planned


def _pool_box(cluster: str, pool: dict[str, Any], nodes: list[Resource], replicas: list[str]) -> str:
    devices = [f"{d['count']}x {d['driver']} ({d['name']}, {d['claim']})" for d in pool.get("devices", [])]
    # What the running nodes carry; for a pool not provisioned, the taint it would get.
    taints = sorted({taint_text(t["key"], t.get("value"), t["effect"])
                     for t in ([t for n in nodes for t in n["spec"].get("taints", [])] or pool.get("taints", []))})
    count = f"{len(nodes)} running" if nodes else f"0 running of {pool.get('nodeCount')} wanted (not provisioned)"
    role = escape(str(pool.get("role", "unknown")))
    klass = escape(str(pool.get("className")))
    return (f'<div class="pool{"" if nodes else " idle"}" data-pool="{escape(cluster)}/{escape(pool["name"])}">'
            f'<h4>{escape(pool["name"])} <span class="role role-{role}">{role}</span></h4><dl>'
            f"<dt>class</dt><dd>{klass}{' (not found)' if pool.get('classMissing') else ''}</dd>"
            f"<dt>devices</dt><dd>{_items(devices)}</dd>"
            f"<dt>taint</dt><dd>{_items(taints)}</dd>"
            f"<dt>nodes</dt><dd>{escape(count)}</dd>"
            f"<dt>replicas</dt><dd>{_items(replicas)}</dd></dl></div>")


def _cluster_card(cluster: Resource, row: FleetRow, nodes: list[Resource], classes: dict[str, Resource],
                  replicas: dict[tuple[str, str], list[str]]) -> str:
    name = cluster["metadata"]["name"]
    gate = condition(cluster, "ClusterReady")
    gate_status = gate.get("status", "Unknown")
    gate_text = f"{gate.get('reason', 'not reconciled')}: {gate.get('message', '')}".rstrip(": ")
    by_pool: dict[str, list[Resource]] = defaultdict(list)
    for node in nodes:
        by_pool[node["metadata"].get("labels", {}).get(POOL_LABEL, "")].append(node)
    pools = (cluster.get("status") or {}).get("schedulablePools") or _planned_pools(cluster, classes)
    boxes = "".join(_pool_box(name, p, by_pool.get(p["name"], []), replicas.get((name, p["name"]), []))
                    for p in pools)
    return (f'<section class="cluster" data-cluster="{escape(name)}">'
            f'<h3>{escape(name)} <span class="badge ready-{escape(row.ready)}">Ready {escape(row.ready)}'
            f"{' · ' + escape(row.reason) if row.reason else ''}</span></h3><dl>"
            f'<dt>gate</dt><dd class="gate gate-{escape(gate_status)}">{escape(gate_text)}</dd>'
            f"<dt>drivers</dt><dd>{_items(row.drivers)}</dd>"
            f"<dt>device stacks</dt><dd>{_items(row.device_stacks)}</dd>"
            f"<dt>wanted drivers</dt><dd>{_items(row.wanted_drivers)}</dd></dl>"
            f'<div class="pools">{boxes or "<span class=none>no node pools</span>"}</div></section>')


def fleet_page(objects: list[Resource], cluster_objects: dict[str, list[Resource]]) -> str:
    """The page: clusters grouped by cloud, each with its gate verdict, drivers, device stacks and
    a box per pool (devices, role, taint, nodes, replicas placed there)."""
    clusters = {o["metadata"]["name"]: o for o in objects if o["kind"] == "InferenceCluster"}
    classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "InferenceClass"}
    replicas = replicas_by_pool(objects)
    by_cloud: dict[str, list[str]] = defaultdict(list)
    rows = {row.cluster: row for row in fleet_rows(objects)}
    for row in rows.values():
        by_cloud[row.cloud].append(row.cluster)
    sections = []
    for cloud in sorted(by_cloud):
        cards = "".join(_cluster_card(clusters[name], rows[name],
                                      [o for o in cluster_objects.get(name, []) if o["kind"] == "Node"], classes,
                                      replicas)
                        for name in sorted(by_cloud[cloud]))
        sections.append(f'<h2 data-cloud="{escape(cloud)}">{escape(cloud)}</h2><div class="clusters">{cards}</div>')
    ready = sum(1 for row in rows.values() if row.ready == "True")
    body = "".join(sections) or '<p class="none">No InferenceClusters.</p>'
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>inferplane fleet</title>"
            f"<style>{_STYLE}</style></head><body><h1>inferplane fleet</h1>"
            f'<p class="summary">{_count(len(rows), "cluster")} on {_count(len(by_cloud), "cloud")}, {ready} ready</p>'
            f"{body}</body></html>\n")
