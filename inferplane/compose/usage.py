"""Crossplane's `Usage`, derived from the objects themselves: what a running thing uses cannot be
deleted from under it, and a deletion removes users before what they use.

An object uses:
- the InferenceClasses its pools name (an InferenceCluster);
- the Secret its credentials or kubeconfig reference names (a ProviderConfig, a ServingStack, an
  Existing InferenceCluster), and therefore the managed resource that writes that Secret (a cloud
  cluster's `writeConnectionSecretToRef`): deleting the writer deletes the Secret;
- the ProviderConfig its `providerConfigRef` names (a Helm Release, a Kubernetes Object, a cloud's
  cluster and node pools: the ClusterProviderConfig a user applied with the cloud's credentials);
- the cloud cluster its cluster reference names (a node pool: the cloud deletes pools first);
- the Gateway an HTTPRoute attaches to (a ModelService's route keeps the InferenceGateway), and the
  GatewayClass a Gateway names;
- its Namespace (any namespaced object): Kubernetes deletes a Namespace's contents with it, so a
  Namespace is deleted only once it holds nothing.
"""

from __future__ import annotations

from inferplane.clouds import CLOUD_MODULES
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.managed import MANAGED_NAMESPACE
from inferplane.api.stored import PROVIDER_CONFIG_GROUPS
from inferplane.runtime.store import Key, Resource
from inferplane.routing.gateway import GATEWAY_API_GROUP, GATEWAY_API_VERSION

_INFERENCE_CLASS = (InferenceClass.GROUP, InferenceClass.KIND)
# A cloud's node pool (apiVersion, kind) -> (the field referencing its cluster, the cluster's kind).
_POOL_CLUSTER_REFS = {(module.api_version, module.pool_kind): (module.cluster_ref, module.cluster_kind)
                      for module in CLOUD_MODULES.values() if module.pool_kind}


def _secret(ref: object, default_namespace: str = MANAGED_NAMESPACE) -> Key | None:
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
        return None
    return Key("", "Secret", ref.get("namespace") or default_namespace, ref["name"])


def _provider_config_group(group: str) -> str:
    """The group of the provider configs a managed resource of `group` names. An Upbound provider
    family's resources use its family provider's configs (`eks.aws.m.upbound.io`'s Cluster names an
    `aws.m.upbound.io` ClusterProviderConfig: provider-family-aws installs the ProviderConfig CRDs, its
    service providers only their resources); Helm's and Kubernetes' resources, their own group's."""
    return next((config for config in PROVIDER_CONFIG_GROUPS if group.endswith("." + config)), group)


def references(obj: Resource) -> set[Key]:
    """Every object `obj` uses (whether or not it exists)."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    used: set[Key] = set()
    if obj["kind"] == InferenceCluster.KIND:
        for pool in spec.get("nodePools") or []:
            if isinstance(pool, dict) and isinstance(pool.get("className"), str):
                used.add(Key(*_INFERENCE_CLASS, "", pool["className"]))
        existing = (spec.get("cluster") or {}).get("existing") or {}
        used.add(_secret(existing.get("secretRef")))
        used.add(_secret(existing.get("identitySecretRef")))
    used.add(_secret(spec.get("kubeconfigSecretRef")))
    used.add(_secret(spec.get("identitySecretRef")))
    used.add(_secret((spec.get("credentials") or {}).get("secretRef")))
    used.add(_secret((spec.get("identity") or {}).get("secretRef")))
    ref = spec.get("providerConfigRef")
    if isinstance(ref, dict) and isinstance(ref.get("name"), str) and ref.get("kind"):
        group = _provider_config_group(obj["apiVersion"].rsplit("/", 1)[0])
        kind_scoped = ref["kind"].startswith("Cluster")
        namespace = "" if kind_scoped else obj["metadata"].get("namespace", "")
        used.add(Key(group, ref["kind"], namespace, ref["name"]))
    pool_of = _POOL_CLUSTER_REFS.get((obj["apiVersion"], obj["kind"]))
    if pool_of is not None:
        field, cluster_kind = pool_of
        cluster = (spec.get("forProvider") or {}).get(field)
        if isinstance(cluster, dict) and isinstance(cluster.get("name"), str):
            group = obj["apiVersion"].rsplit("/", 1)[0]
            used.add(Key(group, cluster_kind, obj["metadata"].get("namespace", ""), cluster["name"]))
    if obj["apiVersion"] == GATEWAY_API_VERSION:
        namespace = obj["metadata"].get("namespace", "")
        for parent in spec.get("parentRefs") or []:
            if isinstance(parent, dict) and isinstance(parent.get("name"), str) and \
                    parent.get("kind", "Gateway") == "Gateway":
                used.add(Key(GATEWAY_API_GROUP, "Gateway", parent.get("namespace") or namespace, parent["name"]))
        if isinstance(spec.get("gatewayClassName"), str):
            used.add(Key(GATEWAY_API_GROUP, "GatewayClass", "", spec["gatewayClassName"]))
    namespace = obj["metadata"].get("namespace")
    if namespace:
        used.add(Key("", "Namespace", "", namespace))
    used.discard(None)
    return used


def provides(obj: Resource) -> set[Key]:
    """The object itself and what goes with it when it is deleted (the Secret it writes)."""
    out = {Key.of(obj)}
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    written = _secret(spec.get("writeConnectionSecretToRef"), obj["metadata"].get("namespace") or MANAGED_NAMESPACE)
    if written is not None:
        out.add(written)
    return out


class InferplaneUsage:
    """These rules, as the embedded runtime takes them (runtime.controller.UsageRules)."""

    references = staticmethod(references)
    provides = staticmethod(provides)


USAGE = InferplaneUsage()
