"""The fleet page's parts as the live console shows them (`inferplane serve`, /console/): the same
gathering (fleet_page.page_data) and the same markup (templates/fleet_parts.html.j2) as the static page,
read again from the state as it changes, and cut into what the console's script replaces on the open
page: the summary and state lines, the problems', models' and services' sections, the clusters'
heading, and one row (with its card's texts) per cluster.

Reading the state again costs most in the simulated clusters' objects (decompressed per cluster), so
a change re-reads those of the clusters it can touch only (an InferenceCluster written, a ModelReplica
placed on or taken off one); `refresh` re-reads them all, which the console does once the fleet is
quiet, in case a cluster's objects changed without a write the console saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, NamedTuple

from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.model_replica import ModelReplica
from inferplane.cli import fleet_page
from inferplane.runtime.store import Key, Resource, Store
from inferplane.simulator.cluster_objects import simulated_objects

# The kinds whose changes the page shows (the Events only time it: their changes alone are not followed).
WATCHED = frozenset(fleet_page.PAGE_KINDS)
# Sections replaced whole, by the id the script finds them by.
SECTIONS = ("summary", "state-time", "problems", "models", "services", "clusters-heading")


def script() -> bytes:
    """The console's script, which keeps the open page up to date."""
    return (Path(__file__).parent / "templates" / "fleet_console.js").read_bytes()


class View(NamedTuple):
    """The page at one state: each section's markup, and each cluster's row markup and card texts, by
    name in the table's order."""

    sections: dict[str, str]
    clusters: dict[str, tuple[str, list[Any]]]

    def whole(self) -> dict[str, Any]:
        """The view as the console's list answers it."""
        return {"sections": self.sections, "clusters": [[name, *row] for name, row in self.clusters.items()]}

    def changes_to(self, newer: "View") -> dict[str, Any] | None:
        """What the script changes to turn this view into `newer` (None: nothing)."""
        sections = {k: v for k, v in newer.sections.items() if self.sections.get(k) != v}
        clusters = [[name, *row] for name, row in newer.clusters.items() if self.clusters.get(name) != row]
        removed = [name for name in self.clusters if name not in newer.clusters]
        if not (sections or clusters or removed):
            return None
        return {"sections": sections, "clusters": clusters, "removed": removed}


def _clusters_touched(before: Resource | None, after: Resource | None) -> set[str]:
    names = set()
    for obj in (before, after):
        if obj is None:
            continue
        if obj["kind"] == InferenceCluster.KIND:
            names.add(obj["metadata"]["name"])
        elif obj["kind"] == ModelReplica.KIND:
            names.add((obj.get("spec") or {}).get("clusterName", ""))
    return names - {""}


class ConsoleView:
    """The state's page, kept up to date by `update` (the changed keys) or `refresh` (all of it)."""

    def __init__(self):
        self.objects: dict[Key, Resource] = {}
        self.cluster_objects: dict[str, list[Resource]] = {}
        self.data: dict[str, Any] | None = None
        self.view = View({}, {})

    @staticmethod
    def watches(key: Key) -> bool:
        return key.kind in WATCHED

    def refresh(self, store: Store) -> View:
        with store.reading():
            self.objects = {Key.of(o): o for kind in fleet_page.PAGE_KINDS for o in store.list(kind)}
            self.cluster_objects = simulated_objects(store, kinds=fleet_page.CLUSTER_KINDS)
            events = store.event_log.events()
        return self._render(events)

    def update(self, store: Store, keys: Iterable[Key]) -> View:
        """The view after the objects of `keys` changed (written or deleted)."""
        touched: set[str] = set()
        with store.reading():
            for key in set(keys):
                before, after = self.objects.pop(key, None), store.get(key)
                if after is not None:
                    self.objects[key] = after
                touched |= _clusters_touched(before, after)
            for name in touched:
                self.cluster_objects.pop(name, None)
                self.cluster_objects.update(simulated_objects(store, cluster=name, kinds=fleet_page.CLUSTER_KINDS))
            events = store.event_log.events()
        return self._render(events)

    def _render(self, events: list[dict[str, Any]]) -> View:
        objects = sorted(self.objects.values(), key=lambda o: (o["kind"], o["metadata"].get("namespace", ""),
                                                                o["metadata"]["name"]))
        self.data = data = fleet_page.page_data(objects, self.cluster_objects, events)
        parts = fleet_page.parts()
        sections = {
            "summary": str(parts.summary(data["clusters"], data["clouds"], data["models"], data["services"])),
            "state-time": str(parts.state_line(data["state_time"])),
            "problems": str(parts.problems_section(data["problems"])),
            "models": str(parts.models_section(data["models"])),
            "services": str(parts.services_section(data["services"])),
            "clusters-heading": str(parts.clusters_heading(data["clusters"]))}
        clusters = {c.name: (str(parts.cluster_row(c)), fleet_page.card_texts(c)) for c in data["clusters"]}
        self.view = View(sections, clusters)
        return self.view

    def page(self, version: str, script: str) -> str:
        """The console's page of the current view (rendered as the static page is), live from `version`."""
        assert self.data is not None, "refresh first"
        return fleet_page.render_page(self.data, {"version": version, "script": script})
