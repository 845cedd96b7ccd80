"""Discovery as kube-apiserver serves it (k8s.io/apimachinery pkg/apis/meta/v1 types.go, v0.37.0:
APIVersions, APIGroupList, APIResourceList): `/api`, `/api/v1`, `/apis` and `/apis/GROUP/VERSION`; and
aggregated discovery (k8s.io/api apidiscovery/v2 types.go, v0.37.0: APIGroupDiscoveryList), every
group's resources in the one answer to `/api` or `/apis`, for a client that asks for it in Accept (kubectl
does, and then needs no request per group version)."""

from __future__ import annotations

from typing import Any

from inferplane.apiserver.catalog import Catalog, Served

# The verbs kube-apiserver serves for a resource (what kubectl checks before `get -w`, `delete`, ...).
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def api_versions(address: str) -> dict[str, Any]:
    """`/api`: the core group's one version."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]}


def api_group_list(catalog: Catalog) -> dict[str, Any]:
    """`/apis`: every group with its served versions (one each)."""
    groups = []
    for group_version in catalog.group_versions():
        group, version = group_version.rsplit("/", 1)
        entry = {"groupVersion": group_version, "version": version}
        groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _resources(served: Served) -> list[dict[str, Any]]:
    main = {"name": served.plural, "singularName": served.kind.lower(), "namespaced": served.namespaced,
            "kind": served.kind, "verbs": VERBS, **({"shortNames": list(served.short_names)}
                                                     if served.short_names else {})}
    out = [main, {"name": f"{served.plural}/status", "singularName": "", "namespaced": served.namespaced,
                  "kind": served.kind, "verbs": ["get", "patch", "update"]}]
    if served.scale:
        out.append({"name": f"{served.plural}/scale", "singularName": "", "namespaced": served.namespaced,
                    "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
    return out


def api_resource_list(catalog: Catalog, api_version: str) -> dict[str, Any] | None:
    """`/api/v1` or `/apis/GROUP/VERSION`: the resources served there (None: nothing is)."""
    served = catalog.of(api_version)
    if not served:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version,
            "resources": [r for s in served for r in _resources(s)]}


# The media type of aggregated discovery, as a client asks for it and the server names its answer.
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> bool:
    return any(part.replace(" ", "").startswith(AGGREGATED) for part in accept.split(","))


def _discovered(served: Served) -> dict[str, Any]:
    kind = {"group": served.group, "version": served.version, "kind": served.kind}
    subresources = [{"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}]
    if served.scale:
        subresources.append({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1",
                                                                      "kind": "Scale"},
                             "verbs": ["get", "patch", "update"]})
    return {"resource": served.plural, "responseKind": kind, "scope": "Namespaced" if served.namespaced else "Cluster",
            "singularResource": served.kind.lower(), "verbs": VERBS,
            **({"shortNames": list(served.short_names)} if served.short_names else {}), "subresources": subresources}


def aggregated(catalog: Catalog, core: bool) -> dict[str, Any]:
    """`/api` (`core`) or `/apis` as aggregated discovery: each group, its version, its resources."""
    versions = ["v1"] if core else catalog.group_versions()
    items = []
    for api_version in versions:
        group, _, version = api_version.rpartition("/")
        items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": [
            {"version": version, "resources": [_discovered(s) for s in catalog.of(api_version)],
             "freshness": "Current"}]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}
