"""Conventions of every Crossplane managed resource inferplane composes (cloud resources, Helm
releases, Kubernetes objects)."""

import functools
import hashlib
from typing import Any, Mapping

from inferplane.api.json_data import frozen

# The composites are cluster-scoped but the providers' `.m.` kinds are namespaced: composed managed
# resources live in inferplane's own namespace on the control plane.
MANAGED_NAMESPACE = "inferplane-system"
# A cluster-scoped provider config can be referenced from any namespace, so credentials need no
# per-namespace copy.
PROVIDER_CONFIG_KIND = "ClusterProviderConfig"
# Crossplane names the external object (cloud resource, Helm release) after this annotation,
# defaulting to metadata.name.
EXTERNAL_NAME_ANNOTATION = "crossplane.io/external-name"
# Kubernetes object names (DNS subdomains, and label values where Crossplane copies them) fit here.
NAME_MAX = 63
# Crossplane's generated names end in 12 hex characters of a hash.
NAME_HASH_LENGTH = 12


def applied_manifest(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The object a provider-kubernetes Object applies to its target cluster ({} when it names none)."""
    return (((obj or {}).get("spec") or {}).get("forProvider") or {}).get("manifest") or {}


def observed_manifest(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The target cluster's object as the provider last reported it on an Object ({} before it has)."""
    return (((obj or {}).get("status") or {}).get("atProvider") or {}).get("manifest") or {}


@functools.lru_cache(maxsize=1 << 16)  # every reconcile of a composite names the same resources again
def composed_name(owner: str, *parts: str, scope: str = "") -> str:
    """A composed resource's name, unique to its owner and parts: `<owner>-<parts>-<hash>`.

    The prefix is for people and is cut to fit; the hash keeps names apart. It hashes the parts
    NUL-separated (a character no name contains), so owner `a` with pool `b-c` and owner `a-b` with
    pool `c` get different names, where joining with `-` first would give both `a-b-c`. `scope` (the
    owner's kind, say) enters the hash only. The same input gives the same name on every reconcile.
    """
    digest = hashlib.sha256("\0".join((scope, owner, *parts)).encode()).hexdigest()[:NAME_HASH_LENGTH]
    prefix = "-".join((owner, *parts))[:NAME_MAX - NAME_HASH_LENGTH - 1].rstrip("-.")
    return f"{prefix}-{digest}"


def child_name(*parts: str) -> str:
    """`<part>-<part>...` for what is composed on a target cluster (a Service's name, and a
    LeaderWorkerSet's, whose controller names the gang's headless Service after it, must be a DNS
    label), shortened with a digest of the whole when it would not fit, so that distinct parts keep
    distinct names."""
    name = "-".join(parts)
    if len(name) <= NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:NAME_MAX - len(digest) - 1].rstrip('-')}-{digest}"


HELM_API_VERSION = "helm.m.crossplane.io/v1beta1"
# provider-kubernetes' namespaced Object (its v2 `.m.` group), which carries any object to a cluster.
OBJECT_API_VERSION = "kubernetes.m.crossplane.io/v1alpha1"
# How many distinct references and charts are kept built: a reconcile composes one cluster's resources
# one after another, and a fleet has a few dozen charts.
SHARED_REFS_KEPT = 4096


@functools.lru_cache(maxsize=SHARED_REFS_KEPT)
def provider_config_ref(name: str, kind: str = PROVIDER_CONFIG_KIND) -> dict[str, str]:
    """A managed resource's `providerConfigRef`: one unchangeable copy for every resource of a cluster
    (a fleet's composed resources each carry one; json_data.frozen)."""
    return frozen({"kind": kind, "name": name})


@functools.lru_cache(maxsize=SHARED_REFS_KEPT)
def _chart(chart_name: str, repository: str, version: str) -> dict[str, str]:
    return frozen({"name": chart_name, "repository": repository, "version": version})


def helm_release(name: str, provider_config: str, chart: tuple[str, str, str], namespace: str,
                 values: dict | None = None, labels: dict[str, str] | None = None) -> dict:
    """A provider-helm Release in inferplane's namespace: `chart` is (name, repository, version) and
    `namespace` where the chart installs on its cluster."""
    chart_name, repository, version = chart
    for_provider: dict = {"chart": _chart(chart_name, repository, version), "namespace": namespace}
    if values is not None:
        for_provider["values"] = values
    metadata: dict = {"name": name, "namespace": MANAGED_NAMESPACE}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": HELM_API_VERSION, "kind": "Release", "metadata": metadata,
            "spec": {"providerConfigRef": provider_config_ref(provider_config),
                     "forProvider": for_provider}}
