"""What the commands print: tables, describe pages, trace trees and the fleet table."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Any, Callable, NamedTuple

from inferplane.api.function import READY, SYNCED
from inferplane.api import KINDS_BY_NAME, InferenceCluster, ModelDeployment, ModelReplica, ModelService, ServingStack
from inferplane.api.cloud import PROVIDERS
from inferplane.api.common import taint_text
from inferplane.api.drivers import POOL_LABEL
from inferplane.api.inference_cluster import CLUSTER_READY
from inferplane.api.managed import EXTERNAL_NAME_ANNOTATION
from inferplane.api.serving_stack import STACK_READY
from inferplane.api.stored import PROVIDER_CONFIG_KINDS, STORED_KINDS
from inferplane.cli.output import compiled_path, labels_text, qualified_name, table
from inferplane.cli.resources import display_kind
from inferplane.runtime.composed import COMPOSITE_LABEL, COMPOSITION_KEY
from inferplane.runtime.store import controller_of
from inferplane.runtime.store import Resource
from inferplane.simulator.cluster_objects import KUBERNETES_READY


def condition(obj: Resource, type_: str) -> dict[str, str]:
    for c in (obj.get("status") or {}).get("conditions", []) or []:
        if c.get("type") == type_:
            return c
    return {}


def field(obj: Any, path: str) -> Any:
    """The first value a JSONPath (a printer column's `.spec.x`, a `[?(@.type=="X")]` filter) finds."""
    found = compiled_path(path).find(obj)
    return found[0].value if found else None


def age(obj: Resource, now: datetime | None = None) -> str | None:
    """kubectl's AGE: how long ago the object was created, in its two largest units."""
    created = obj["metadata"].get("creationTimestamp")
    return since(created, now) if created else "<unknown>"


def since(timestamp: str, now: datetime | None = None) -> str:
    then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = max(0, int(((now or datetime.now(timezone.utc)) - then).total_seconds()))
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    return f"{days}d{hours % 24}h" if days < 8 and hours % 24 else f"{days}d"


def _pod_ready(pod: Resource) -> str:
    containers = len(pod["spec"].get("containers", []))
    running = pod.get("status", {}).get("phase") == "Running"
    return f"{containers if running else 0}/{containers}"


def _restarts(pod: Resource) -> int:
    return sum(s.get("restartCount", 0) for s in pod.get("status", {}).get("containerStatuses", []))


Column = tuple[str, Callable[[Resource], Any]]
_AGE: Column = ("AGE", age)

# Columns of the Kubernetes kinds a simulated cluster holds, as kubectl shows them: (normal, -o wide extra).
_BUILTIN_COLUMNS: dict[str, tuple[tuple[Column, ...], tuple[Column, ...]]] = {
    "Node": ((("STATUS", lambda o: KUBERNETES_READY if condition(o, KUBERNETES_READY).get("status") == "True"
               else "NotReady"),
              ("POOL", lambda o: o["metadata"].get("labels", {}).get(POOL_LABEL)),
              ("TAINTS", lambda o: ",".join(taint_text(t["key"], t.get("value"), t["effect"])
                                            for t in o["spec"].get("taints", []))), _AGE), ()),
    "Pod": ((("READY", _pod_ready), ("STATUS", lambda o: o.get("status", {}).get("phase")),
             ("RESTARTS", _restarts), _AGE),
            (("NODE", lambda o: o["spec"].get("nodeName")),)),
    "DaemonSet": ((("DESIRED", lambda o: o.get("status", {}).get("desiredNumberScheduled")),
                   ("READY", lambda o: o.get("status", {}).get("numberReady")), _AGE), ()),
    "Deployment": ((("READY", lambda o: f"{o.get('status', {}).get('readyReplicas', 0)}/{o['spec'].get('replicas')}"),
                    _AGE), ()),
    "StatefulSet": ((("READY", lambda o: f"{o.get('status', {}).get('readyReplicas', 0)}/{o['spec'].get('replicas')}"),
                     _AGE), ()),
    "ResourceSlice": ((("NODE", lambda o: o["spec"].get("nodeName")), ("DRIVER", lambda o: o["spec"].get("driver")),
                       ("DEVICES", lambda o: len(o["spec"].get("devices", []))), _AGE), ()),
    "LeaderWorkerSet": ((("SIZE", lambda o: o["spec"]["leaderWorkerTemplate"].get("size")),
                         ("AVAILABLE", lambda o: condition(o, "Available").get("status")), _AGE), ()),
    # The core kinds users apply, with kubectl's columns (k8s.io/kubernetes pkg/printers/internalversion).
    "Namespace": ((("STATUS", lambda o: (o.get("status") or {}).get("phase") or "Active"), _AGE), ()),
    "Secret": ((("TYPE", lambda o: o.get("type")), ("DATA", lambda o: len(o.get("data") or {})), _AGE), ()),
    "ConfigMap": ((("DATA", lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})), _AGE), ()),
    "ResourceClaim": ((("ALLOCATED", lambda o: ",".join(
        f"{r['driver']}/{r['device']}" for r in o.get("status", {}).get("allocation", {}).get("devices", {})
        .get("results", [])) or None), _AGE), ()),
}
# What -o wide adds to inferplane's own kinds and to the managed resources they compose.
_WIDE_COLUMNS: dict[str, tuple[Column, ...]] = {
    InferenceCluster.KIND: (("DRIVERS", lambda o: ",".join((o.get("status") or {}).get("draDrivers", []))),
                            ("POOLS", lambda o: ",".join(p.get("name", "") for p in o["spec"].get("nodePools", [])))),
}
_MANAGED_COLUMNS: tuple[tuple[Column, ...], tuple[Column, ...]] = (
    (("SYNCED", lambda o: condition(o, SYNCED).get("status")),
     ("READY", lambda o: condition(o, READY).get("status")), _AGE),
    (("EXTERNAL-NAME", lambda o: o["metadata"].get("annotations", {}).get(EXTERNAL_NAME_ANNOTATION)),
     ("COMPOSITE", lambda o: o["metadata"].get("labels", {}).get(COMPOSITE_LABEL))))


def columns_of(kind_name: str, wide: bool, api_version: str = "") -> list[Column]:
    kind = KINDS_BY_NAME.get(kind_name)
    provider_config = STORED_KINDS.get((api_version, kind_name))
    if provider_config is not None and provider_config in PROVIDER_CONFIG_KINDS:
        normal, extra = _crd_columns(provider_config)
    elif kind is not None:
        normal: tuple[Column, ...] = tuple((header, lambda o, path=path: field(o, path))
                                           for header, path, _ in kind.COLUMNS) + (_AGE,)
        extra = _WIDE_COLUMNS.get(kind_name, ())
    else:
        normal, extra = _BUILTIN_COLUMNS.get(kind_name, _MANAGED_COLUMNS)
    return list(normal) + (list(extra) if wide else [])


def _crd_columns(kind: type) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    """A provider config's columns as its CRD prints them (priority 0, then -o wide's)."""
    from inferplane.admission.stored_kinds import printer_columns

    columns = [((name, age if path == ".metadata.creationTimestamp" else lambda o, path=path: field(o, path)),
                priority) for name, path, priority in printer_columns(kind)]
    return tuple(c for c, p in columns if p == 0), tuple(c for c, p in columns if p > 0)


def get_table(objects: list[Resource], wide: bool = False, namespaces: bool = False,
              qualify: bool = False, show_labels: bool = False, no_headers: bool = False) -> str:
    """One kind's objects as kubectl prints them: NAMESPACE first with -A, kind.group/name where
    several kinds are printed at once, LABELS last with --show-labels."""
    columns = columns_of(objects[0]["kind"] if objects else "", wide, objects[0]["apiVersion"] if objects else "")
    if show_labels:
        columns.append(("LABELS", labels_text))
    headers = (["NAMESPACE"] if namespaces else []) + ["NAME"] + [c[0] for c in columns]
    rows = []
    for obj in objects:
        name = qualified_name(obj) if qualify else obj["metadata"]["name"]
        row = ([obj["metadata"].get("namespace", "")] if namespaces else []) + [name]
        rows.append(row + [column(obj) for _, column in columns])
    return table(headers, rows, no_headers=no_headers)


def held(obj: Resource) -> str | None:
    """Why a composed object is held as it was by its cluster's gate (None when it is not)."""
    from inferplane.compose.inference_cluster import HELD_ANNOTATION

    return (obj["metadata"].get("annotations") or {}).get(HELD_ANNOTATION)


def _section(lines: list[str], title: str, headers: tuple[str, ...], rows: list[tuple]) -> None:
    lines.append(f"{title}:")
    lines += ["  " + line for line in table(headers, rows).splitlines()] if rows else ["  <none>"]


def _cluster_essentials(obj: Resource, lines: list[str]) -> None:
    """An InferenceCluster's spec essentials and what its status says runs: pools and DRA drivers."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    source = (spec.get("cluster") or {}).get("source")
    settings = (spec.get("cluster") or {}).get(str(source).lower()) or {}
    lines.append(f"Source:       {source}")
    for field_, value in sorted(settings.items()):
        if isinstance(value, (str, int)):
            lines.append(f"  {field_}: {value}")
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            lines.append(f"  {field_}: {', '.join(value) or '<none>'}")
    _section(lines, "Node Pools", ("NAME", "CLASS", "NODES", "ZONES"),
             [(p.get("name"), p.get("className"), p.get("nodeCount"), ",".join(p.get("zones") or []))
              for p in spec.get("nodePools") or []])
    _section(lines, "Schedulable Pools", ("NAME", "ROLE", "NODES", "DEVICES"),
             [(p["name"], p.get("role"), p.get("nodeCount"),
               ", ".join(f"{d['count']}x{d['driver']} ({d['claim']})" for d in p.get("devices", [])))
              for p in status.get("schedulablePools") or []])
    owners = (settings.get("preinstalledDrivers") or []) if source not in PROVIDERS else []
    _section(lines, "DRA Drivers", ("DRIVER", "SERVED BY"),
             [(d, _served_by(source, d, owners)) for d in status.get("draDrivers") or []])


def _served_by(source: Any, driver: str, owners: list[str]) -> str:
    """Who serves a claimed driver on a cluster: its owner, the stack's components, or nothing."""
    from inferplane.accelerators import CLOUDS, serving

    if driver in owners:
        installs = ("inferplane installs no stack for it" if source in CLOUDS and serving(source, driver)
                    else "inferplane has no stack for it")
        return f"the cluster's owner (spec.cluster.existing.preinstalledDrivers): {installs}"
    if source in CLOUDS and serving(source, driver):
        return ", ".join(c.key for c in serving(source, driver))
    return f"nothing: {source} does not serve it"


def event_rows(events: list[dict[str, Any]], now: datetime | None = None) -> list[tuple]:
    return [(e["type"], e["reason"], since(e["lastTimestamp"], now) if e["lastTimestamp"] else "<unknown>",
             e["count"], e["message"]) for e in events]


def describe(obj: Resource, composed: list[Resource], events: list[dict[str, Any]],
             placement: list[str] | None = None) -> str:
    """kubectl describe's layout; `placement` is a ModelDeployment's verdict (where its replicas run)."""
    meta = obj["metadata"]
    lines = [f"Name:         {meta['name']}"]
    if meta.get("namespace"):
        lines.append(f"Namespace:    {meta['namespace']}")
    lines += [f"API Version:  {obj['apiVersion']}", f"Kind:         {obj['kind']}",
              f"Generation:   {meta.get('generation')}"]
    labels = meta.get("labels") or {}
    lines.append("Labels:       " + (", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"))
    if obj["kind"] == InferenceCluster.KIND:
        _cluster_essentials(obj, lines)
    elif obj["apiVersion"] == "v1" and obj["kind"] in _CORE_DESCRIBED:
        _CORE_DESCRIBED[obj["kind"]](obj, lines)
    elif obj.get("spec"):
        # As the manifest wrote it (defaults filled in), the way kubectl describe shows a custom resource's spec.
        import yaml

        lines.append("Spec:")
        lines += ["  " + line for line in yaml.safe_dump(obj["spec"], sort_keys=False, width=1_000_000).rstrip("\n").splitlines()]
    if placement is not None:
        lines += ["Placement:", *(f"  {line}" for line in placement)]
    conditions = (obj.get("status") or {}).get("conditions") or []
    _section(lines, "Conditions", ("TYPE", "STATUS", "REASON", "MESSAGE"),
             [(c["type"], c["status"], c["reason"], c.get("message")) for c in conditions])
    _section(lines, "Composed Resources", ("KEY", "KIND", "NAME", "READY"),
             [(c["metadata"].get("annotations", {}).get(COMPOSITION_KEY), display_kind(c["kind"], c["apiVersion"]),
               c["metadata"]["name"],
               f"Held ({held(c)})" if held(c) else condition(c, READY).get("status", "Unknown")) for c in composed])
    _section(lines, "Events", ("TYPE", "REASON", "AGE", "COUNT", "MESSAGE"), event_rows(events))
    return "\n".join(lines)


def _secret_essentials(obj: Resource, lines: list[str]) -> None:
    """As kubectl describes a Secret: its type, and each key with the size of its value, never the value."""
    import base64

    lines += [f"Type:         {obj.get('type', 'Opaque')}", "Data:"]
    data = obj.get("data") or {}
    lines += [f"  {key}:  {len(base64.b64decode(value))} bytes" for key, value in sorted(data.items())] or ["  <none>"]


def _config_map_essentials(obj: Resource, lines: list[str]) -> None:
    """As kubectl describes a ConfigMap: each key with its value, binaryData keys with their sizes."""
    import base64

    lines.append("Data:")
    lines += [line for key, value in sorted((obj.get("data") or {}).items())
              for line in (f"  {key}:", "  ----", *(f"  {v}" for v in value.splitlines()))] or ["  <none>"]
    binary = obj.get("binaryData") or {}
    if binary:
        lines += ["BinaryData:", *(f"  {key}:  {len(base64.b64decode(value))} bytes" for key, value in sorted(binary.items()))]


def _namespace_essentials(obj: Resource, lines: list[str]) -> None:
    lines.append(f"Status:       {(obj.get('status') or {}).get('phase') or 'Active'}")


_CORE_DESCRIBED: dict[str, Callable[[Resource, list[str]], None]] = {
    "Secret": _secret_essentials, "ConfigMap": _config_map_essentials, "Namespace": _namespace_essentials}


def event_name(event: dict[str, Any]) -> str:
    """An event's name: its object's, then 16 hex digits, as Kubernetes names them (k8s.io/client-go
    tools/record/event.go, v0.37.0: `fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())`); here the digits are
    of what the event says about which object, so that the name stays the same while it repeats."""
    key = event["involvedObject"]
    said = "\0".join([key.group, key.kind, key.namespace, key.name, event["type"], event["reason"], event["message"]])
    return f"{key.name}.{hashlib.sha256(said.encode()).hexdigest()[:16]}"


def event_objects(events: list[dict[str, Any]]) -> list[Resource]:
    """The store's events as v1 Events, as `get events -o json` prints them. An event about a
    cluster-scoped object lives in `default`, as Kubernetes puts it."""
    out = []
    for event in events:
        key = event["involvedObject"]
        namespace = key.namespace or "default"
        out.append({"apiVersion": "v1", "kind": "Event",
                    "metadata": {"name": event_name(event), "namespace": namespace},
                    "involvedObject": {"apiVersion": key.group, "kind": key.kind, "name": key.name,
                                       **({"namespace": key.namespace} if key.namespace else {})},
                    **{k: event[k] for k in ("type", "reason", "message", "count", "firstTimestamp",
                                             "lastTimestamp")}})
    return out


def _event_subject(event: Resource) -> str:
    subject = event["involvedObject"]
    kind = display_kind(subject["kind"], f"{subject['apiVersion']}/v") if subject["apiVersion"] else subject["kind"]
    return f"{kind.lower()}/{subject['name']}"


def event_columns(now: datetime | None = None) -> list[Column]:
    """An Event's columns after its namespace, as `get events` prints them (and `inferplane serve`'s Table)."""
    return [("LAST SEEN", lambda e: since(e["lastTimestamp"], now) if e["lastTimestamp"] else "<unknown>"),
            ("TYPE", lambda e: e["type"]), ("REASON", lambda e: e["reason"]), ("OBJECT", _event_subject),
            ("COUNT", lambda e: e["count"]), ("MESSAGE", lambda e: e["message"])]


def events_table(events: list[Resource], wide: bool = False, namespaces: bool = False, qualify: bool = False,
                 now: datetime | None = None, show_labels: bool = False, no_headers: bool = False) -> str:
    columns = event_columns(now)
    headers = ((["NAMESPACE"] if namespaces else []) + [header for header, _ in columns]
               + (["LABELS"] if show_labels else []))
    rows = [([e["metadata"]["namespace"]] if namespaces else []) + [show(e) for _, show in columns]
            + ([labels_text(e)] if show_labels else []) for e in events]
    return table(headers, rows, no_headers=no_headers)


def trace_tree(root: Resource, objects: list[Resource]) -> dict[str, Any]:
    """The tree of everything composed under `root`, each node with its readiness."""
    children: dict[str, list[Resource]] = {}
    for obj in objects:
        owner = controller_of(obj)
        if owner:
            children.setdefault(owner, []).append(obj)

    def node(obj: Resource) -> dict[str, Any]:
        ready = condition(obj, READY)
        synced = condition(obj, SYNCED)
        return {
            "apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "namespace": obj["metadata"].get("namespace"),
            "resource": obj["metadata"].get("annotations", {}).get(COMPOSITION_KEY),
            "synced": synced.get("status", "Unknown"),
            "ready": "Held" if held(obj) else ready.get("status", "Unknown"),
            "reason": held(obj) or ready.get("reason", ""), "message": "" if held(obj) else ready.get("message", ""),
            "children": [node(c) for c in sorted(children.get(obj["metadata"]["uid"], []),
                                                 key=lambda o: (o["kind"], o["metadata"]["name"]))],
        }

    return node(root)


def trace_table(tree: dict[str, Any]) -> str:
    rows: list[tuple[str, ...]] = []

    def walk(node: dict[str, Any], prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─ " if last else "├─ ")
        status = node["reason"] + (f": {node['message']}" if node["message"] and node["ready"] != "True" else "")
        kind = display_kind(node["kind"], node["apiVersion"])
        rows.append((f"{prefix}{branch}{kind}/{node['name']}", node["synced"], node["ready"], status))
        extension = "" if top else ("   " if last else "│  ")
        for i, child in enumerate(node["children"]):
            walk(child, prefix + extension, i == len(node["children"]) - 1, False)

    walk(tree, "", True, True)
    return table(("NAME", "SYNCED", "READY", "STATUS"), rows)


def cluster_readiness(cluster: Resource) -> tuple[str, str]:
    """(READY, REASON) of an InferenceCluster: ready only when the cluster and its stack both are.

    The reason is what holds it (the gate, an invalid stack, provisioning, a reconcile that failed)
    or, when ready, how the cluster came to be (Available, Existing)."""
    overall = condition(cluster, READY)
    parts = [condition(cluster, t) for t in (CLUSTER_READY, STACK_READY)]
    if overall.get("status") == "True" and all(p.get("status") == "True" for p in parts):
        return "True", parts[0].get("reason", "")
    holding = holding_condition(cluster)
    return ("Unknown" if not overall and not any(parts) else "False"), holding.get("reason", "")


def holding_condition(cluster: Resource) -> dict[str, str]:
    """The condition that holds an InferenceCluster that is not ready: the gate's (ClusterReady) or the
    stack's (StackReady) when either is not True, else Ready; when nothing composed it yet, a Synced
    that failed (ReconcileError). {} when nothing says why."""
    parts = [condition(cluster, t) for t in (CLUSTER_READY, STACK_READY)]
    overall = condition(cluster, READY)
    if not overall and not any(parts):
        synced = condition(cluster, SYNCED)
        return synced if synced.get("status") == "False" else {}
    return next((p for p in parts if p.get("status") != "True"), None) or overall


class FleetRow(NamedTuple):
    """One InferenceCluster as the fleet table and the fleet page show it."""

    cluster: str
    cloud: str
    ready: str
    reason: str
    drivers: list[str]
    pools: list[str]
    device_stacks: list[str]
    wanted_drivers: list[str]


# After a driver the cluster's owner runs (an Existing cluster's preinstalledDrivers), in the fleet's views.
OWNER_MARK = "(owner)"


def fleet_rows(objects: list[Resource]) -> list[FleetRow]:
    """Per InferenceCluster: what runs (readiness, drivers its stack serves, pools, installed device
    stacks) and, apart, what its classes want that does not run yet (WANTED-DRIVERS)."""
    from inferplane.accelerators import CLOUDS

    stacks = {o["metadata"]["name"]: o for o in objects if o["kind"] == ServingStack.KIND}
    tagged = {c.key for stack in CLOUDS.values() for c in stack.components if c.dra_drivers}
    rows = []
    for cluster in (o for o in objects if o["kind"] == InferenceCluster.KIND):
        name = cluster["metadata"]["name"]
        ready_status, reason = cluster_readiness(cluster)
        status = cluster.get("status") or {}
        stack = stacks.get(name) or {}
        stacked = (stack.get("spec") or {}).get("draDrivers") or []
        owners = (stack.get("spec") or {}).get("preinstalledDrivers") or []
        running = [*stacked, *owners]
        # Pools are listed once provisioned: a cluster the gate refused before provisioning has none.
        pools = []
        for pool in status.get("schedulablePools", []) if stack else []:
            devices = "+".join(f"{d['count']}x{d['driver']}" for d in pool.get("devices", []) if d["claim"] == "DRA")
            pools.append(f"{pool['name']}({pool['role']}:{devices or 'none'})")
        installed = [c for c in (stack.get("status") or {}).get("components", []) if c in tagged]
        wanted = [d for d in status.get("draDrivers", []) if d not in running]
        # The owner's drivers run with no device stack of ours: each says so where a stack would be named.
        rows.append(FleetRow(name, cluster["spec"]["cluster"]["source"], ready_status, reason,
                             sorted([*stacked, *(f"{d}{OWNER_MARK}" for d in owners)]), pools,
                             installed + [f"owner:{d}" for d in owners], wanted))
    return rows


def fleet_table(objects: list[Resource]) -> str:
    rows = [(r.cluster, r.cloud, r.ready, r.reason, ",".join(r.drivers) or "none", " ".join(r.pools),
             ",".join(r.device_stacks) or "none", ",".join(r.wanted_drivers)) for r in fleet_rows(objects)]
    return table(("CLUSTER", "CLOUD", "READY", "REASON", "DRIVERS", "POOLS", "DEVICE-STACKS", "WANTED-DRIVERS"),
                 rows)


def services_table(objects: list[Resource]) -> str:
    """One row per ModelService: its address, how many endpoints it routes to, and its readiness ("" when
    there is no service)."""
    rows = []
    backends = service_backends(objects)
    for service in sorted((o for o in objects if o["kind"] == ModelService.KIND),
                          key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])):
        status = service.get("status") or {}
        ready = condition(service, READY)
        rows.append((f"{service['metadata'].get('namespace', '')}/{service['metadata']['name']}",
                     status.get("address") or "<none>", len(backends.get(service["metadata"].get("uid"), [])),
                     ready.get("status", "Unknown"), ready.get("reason", "")))
    return table(("SERVICE", "ADDRESS", "ENDPOINTS", "READY", "REASON"), rows) if rows else ""


def service_backends(objects: list[Resource]) -> dict[str, list[str]]:
    """ModelService uid -> the backends (ModelEndpoints' Services) its HTTPRoute's rules reach, by name."""
    out: dict[str, list[str]] = {}
    for route in (o for o in objects if o["kind"] == "HTTPRoute"):
        owner = controller_of(route)
        if owner is not None:
            out.setdefault(owner, []).extend(ref["name"] for rule in (route.get("spec") or {}).get("rules") or []
                                             for ref in rule.get("backendRefs") or [])
    return out


def models_table(objects: list[Resource]) -> str:
    """One row per ModelDeployment: replicas wanted, placed and ready, and where each runs
    (cluster/pool of its engines), with why the rest fit nowhere."""
    placed = replica_placements(objects)
    rows = []
    for deployment in (o for o in objects if o["kind"] == ModelDeployment.KIND):
        status = deployment.get("status") or {}
        counts = status.get("replicas") or {}
        where = placed.get(deployment["metadata"]["uid"], [])
        rows.append((deployment["metadata"].get("namespace") or "default", deployment["metadata"]["name"],
                     str(deployment["spec"]["replicas"]), str(counts.get("total", 0)), str(counts.get("ready", 0)),
                     " ".join(where) or "<none>"))
    return table(("NAMESPACE", "MODEL", "REPLICAS", "PLACED", "READY", "PLACEMENTS"), rows)


def replica_placements(objects: list[Resource]) -> dict[str, list[str]]:
    """ModelDeployment uid -> where each of its ModelReplicas runs, `cluster/pool` (`pool+pool` when its
    engines span pools), sorted."""
    placed: dict[str, list[str]] = {}
    for replica in (o for o in objects if o["kind"] == ModelReplica.KIND):
        pools = sorted({m["nodePoolName"] for e in replica["spec"].get("engines", []) for m in e.get("members", [])})
        where = f"{replica['spec']['clusterName']}/{'+'.join(pools)}"
        placed.setdefault(controller_of(replica) or "", []).append(where)
    return {uid: sorted(where) for uid, where in placed.items()}


def fleet_view(objects: list[Resource]) -> str:
    """What `fleet` and `render` print: the fleet table, the models table when models are deployed, and
    the services with their addresses when there are any."""
    view = fleet_table(objects)
    if any(o["kind"] == ModelDeployment.KIND for o in objects):
        view += "\n\n" + models_table(objects)
    services = services_table(objects)
    return f"{view}\n\n{services}" if services else view
