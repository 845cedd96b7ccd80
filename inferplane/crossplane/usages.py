"""Crossplane `Usage`s for what a composition desires, composed by a late pipeline step.

The embedded engine refuses a deletion that would pull something from under its users
(`engine/usage.py`); on Crossplane the API server does it, through Usages:
- a provider config the composition desires is held by each desired resource that references it, so
  that deleting the composite removes the Helm releases and Kubernetes objects before the
  ProviderConfig they need to be uninstalled;
- a cloud cluster the composition desires is held by the serving stack desired beside it, so that the
  stack (and every release on the cluster) is uninstalled before the cluster goes.

A Usage's `by` selector resolves to one resource (Crossplane takes the first match), so each consumer
gets its own Usage and a label naming it; `matchControllerRef` keeps the selection inside this
composite. `replayDeletion` deletes the held resource again once its last user is gone, rather than
waiting for the next garbage collection.
"""

from __future__ import annotations

from typing import Any

from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.api.serving_stack import ServingStack
from inferplane.engine.store import Key
from inferplane.engine.usage import references

Resource = dict[str, Any]

USAGE_API_VERSION = "protection.crossplane.io/v1beta1"
# Stamped on a consumer so that its Usage's `by` selects it alone: the value is its composition
# resource name, unique within the composite.
CONSUMER_LABEL = "inferplane.dev/usage-consumer"
_CLOUD_CLUSTERS = {(kind.api_version_string(), kind.KIND) for kind in CLOUD_CLUSTER_KINDS.values()}


def _ref(obj: Resource, **selector: Any) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], **selector}


def _key(obj: Resource) -> Key | None:
    metadata = obj.get("metadata") or {}
    if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str) or not metadata.get("name"):
        return None
    return Key(obj["apiVersion"].rsplit("/", 1)[0], obj["kind"], metadata.get("namespace") or "", metadata["name"])


def compose_usages(desired: dict[str, Resource]) -> tuple[dict[str, Resource], dict[str, Resource]]:
    """(consumers with their label stamped, by composition-resource name; the Usages to add, by name)."""
    by_key = {key: (name, obj) for name, obj in desired.items() if (key := _key(obj)) is not None}
    labelled: dict[str, Resource] = {}
    usages: dict[str, Resource] = {}
    for name, obj in sorted(desired.items()):
        if "metadata" not in obj or not isinstance(obj.get("kind"), str):
            continue
        namespace = obj["metadata"].get("namespace")
        for used in sorted(references(obj)):
            held = by_key.get(used)
            if held is None or not used.kind.endswith("ProviderConfig") or not namespace:
                continue
            labels = {**(obj["metadata"].get("labels") or {}), CONSUMER_LABEL: name}
            labelled[name] = {**obj, "metadata": {**obj["metadata"], "labels": labels}}
            usages[f"usage-{held[0]}-by-{name}"] = {
                "apiVersion": USAGE_API_VERSION, "kind": "Usage",
                "metadata": {"namespace": namespace},
                "spec": {"of": _ref(held[1], resourceRef={"name": used.name}),
                         "by": _ref(obj, resourceSelector={"matchControllerRef": True,
                                                           "matchLabels": {CONSUMER_LABEL: name}}),
                         "replayDeletion": True}}
    stacks = sorted(n for n, o in desired.items() if o.get("kind") == ServingStack.KIND)
    clusters = sorted(n for n, o in desired.items() if (o.get("apiVersion"), o.get("kind")) in _CLOUD_CLUSTERS)
    for stack in stacks:
        for cluster in clusters:
            usages[f"usage-{cluster}-by-{stack}"] = {
                "apiVersion": USAGE_API_VERSION, "kind": "ClusterUsage", "metadata": {},
                "spec": {"of": _ref(desired[cluster], resourceSelector={"matchControllerRef": True}),
                         "by": _ref(desired[stack], resourceSelector={"matchControllerRef": True}),
                         "replayDeletion": True}}
    return labelled, usages
