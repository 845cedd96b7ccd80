"""Crossplane `Usage`s for what a composition desires, composed by a late pipeline step.

The embedded engine refuses a deletion that would pull something from under its users
(`compose/usage.py`); on Crossplane the API server does it, through Usages:
- the provider config a Helm release or Kubernetes object names is held by it, so that deleting a
  stack (or a cluster) uninstalls the releases and a replica's objects before the ClusterProviderConfig
  they need to be uninstalled, as Modelplane's `compose-usages` does;
- a cloud cluster the composition desires is held by the serving stack desired beside it, so that the
  stack (and every release on the cluster) is uninstalled before the cluster goes.

A Usage's `by` selector resolves to one resource (Crossplane takes the first match), so each consumer
gets its own Usage and a label naming it; `matchControllerRef` keeps the selection inside this
composite. `replayDeletion` deletes the held resource again once its last user is gone, rather than
waiting for the next garbage collection.
"""

from __future__ import annotations

from typing import Any

from inferplane import API_GROUP
from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.api.serving_stack import ServingStack
from inferplane.api.managed import HELM_API_VERSION, OBJECT_API_VERSION
from inferplane.compose.usage import references

Resource = dict[str, Any]

USAGE_API_VERSION = "protection.crossplane.io/v1beta1"
# Stamped on a consumer so that its Usage's `by` selects it alone: the value is its composition
# resource name, unique within the composite.
CONSUMER_LABEL = f"{API_GROUP}/usage-consumer"
# What holds a provider config: the kinds the serving stack and the model replicas compose on a
# cluster through its ClusterProviderConfigs.
CONSUMERS = {(HELM_API_VERSION, "Release"), (OBJECT_API_VERSION, "Object")}
_CLOUD_CLUSTERS = {(kind.api_version_string(), kind.KIND) for kind in CLOUD_CLUSTER_KINDS.values()}


def _ref(obj: Resource, **selector: Any) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], **selector}


def compose_usages(desired: dict[str, Resource]) -> tuple[dict[str, Resource], dict[str, Resource]]:
    """(consumers with their label stamped, by composition-resource name; the Usages to add, by name)."""
    labelled: dict[str, Resource] = {}
    usages: dict[str, Resource] = {}
    for name, obj in sorted(desired.items()):
        if (obj.get("apiVersion"), obj.get("kind")) not in CONSUMERS or not isinstance(obj.get("metadata"), dict):
            continue
        namespace = obj["metadata"].get("namespace")
        configs = [k for k in sorted(references(obj)) if k.kind.endswith("ProviderConfig")]
        if not namespace or not configs:
            continue
        labels = {**(obj["metadata"].get("labels") or {}), CONSUMER_LABEL: name}
        labelled[name] = {**obj, "metadata": {**obj["metadata"], "labels": labels}}
        for config in configs:
            usages[f"usage-provider-config-by-{name}"] = {
                "apiVersion": USAGE_API_VERSION, "kind": "Usage",
                "metadata": {"namespace": namespace},
                # A provider config shares its consumers' API version (helm.m... Release and
                # ClusterProviderConfig alike).
                "spec": {"of": {"apiVersion": obj["apiVersion"], "kind": config.kind, "resourceRef": {"name": config.name}},
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
