"""The ModelCache claims a cluster's engine pods mount that are not bound yet, as the cluster's simulation
reads them: an engine pod stays Pending, on no node, until its volume's PersistentVolumeClaim is Bound, as
kube-scheduler keeps it (kubernetes/kubernetes, pkg/scheduler/framework/plugins/volumebinding/):

- a claim whose StorageClass binds Immediately: VolumeBinding's PreFilter rejects the pod,
  UnschedulableAndUnresolvable, "pod has unbound immediate PersistentVolumeClaims" (volume_binding.go);
  the scheduler's condition reason is then Unschedulable (schedule_one.go, handleSchedulingFailure);
- a WaitForFirstConsumer claim: the pod passes Filter (no CSIDriver object, no capacity check:
  binder.go, hasEnoughCapacity) and VolumeBinding's PreBind waits for the claim to be bound, failing on
  its timeout with "binding volumes: ..." (binder.go, BindPodVolumes) wrapped as `running PreBind plugin
  "VolumeBinding": ...` (framework/runtime/framework.go, RunPreBindPlugins), an error status whose
  condition reason is SchedulerError, and retried. What follows "binding volumes: " here is ours (the
  scheduler says "context deadline exceeded"): the simulation has no clock, so it names the claim.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from inferplane.api.managed import applied_manifest, observed_manifest
from inferplane.api.model_cache import ModelCache
from inferplane.runtime.store import Key, Resource

# A StorageClass without volumeBindingMode binds at once (the Kubernetes API's default).
IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
# kube-scheduler's own words (volume_binding.go, VolumeBinding.PreFilter).
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def unbound_claims(cluster: str, replicas: Iterable[Resource], get: Callable[[Key], Resource | None],
                   children: Callable[[str], list[Resource]]) -> dict[str, dict[str, str]]:
    """{namespace/name: {phase, storageClassName}} of each claim of a ModelCache that a replica pinned to
    `cluster` mounts, applied on that cluster and not reported Bound. A cache or claim not found is left
    out: what the simulation does not know of, it does not hold back."""
    out: dict[str, dict[str, str]] = {}
    for replica in replicas:
        ref = (replica.get("spec") or {}).get("modelCacheRef") or {}
        namespace = replica["metadata"].get("namespace") or ""
        cache = get(Key(ModelCache.GROUP, ModelCache.KIND, namespace, ref["name"])) if ref.get("name") else None
        for obj in children(cache["metadata"]["uid"]) if cache is not None else []:
            manifest = applied_manifest(obj)
            if (manifest.get("apiVersion"), manifest.get("kind")) != ("v1", "PersistentVolumeClaim") or \
                    ((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name") != cluster:
                continue
            reported = observed_manifest(obj).get("status") or {}
            phase = reported.get("phase") or "Pending"
            if phase != "Bound":
                metadata = manifest.get("metadata") or {}
                out[f"{metadata.get('namespace') or 'default'}/{metadata.get('name')}"] = {
                    "phase": phase, "storageClassName": (manifest.get("spec") or {}).get("storageClassName") or ""}
    return out


def binding_modes(resources: Iterable[Resource]) -> dict[str, str]:
    """{StorageClass: volumeBindingMode} of the StorageClasses the Objects among `resources` apply."""
    return {(m.get("metadata") or {}).get("name"): m.get("volumeBindingMode") or IMMEDIATE
            for o in resources if o.get("kind") == "Object"
            and (m := applied_manifest(o)).get("kind") == "StorageClass"}


def waiting_message(claims: Mapping[str, Mapping[str, str]], node_count: int) -> tuple[str, str]:
    """(PodScheduled reason, message) for a pod whose claims are not bound: kube-scheduler's PreFilter
    rejection when one binds Immediately; else the pod waits in VolumeBinding's PreBind, an error status
    (SchedulerError) retried until its WaitForFirstConsumer claims are bound."""
    if any(c.get("bindingMode", IMMEDIATE) != WAIT_FOR_FIRST_CONSUMER for c in claims.values()):
        return "Unschedulable", f"0/{node_count} nodes are available: {UNBOUND_IMMEDIATE}."
    names = ", ".join(sorted(claims))
    return "SchedulerError", (f'running PreBind plugin "VolumeBinding": binding volumes: waiting for '
                              f"PersistentVolumeClaim {names} (WaitForFirstConsumer) to be bound by its provisioner")


def readiness_reason(claims: Mapping[str, Mapping[str, str]]) -> str:
    """What the replica's condition says of a pod held for its volumes: each claim and its phase."""
    return "; ".join(f"PersistentVolumeClaim {ref} is {claim['phase']} (storage class "
                     f"{claim.get('storageClassName') or 'none'}, {claim.get('bindingMode', IMMEDIATE)}): "
                     "its ModelCache's volume is not bound yet" for ref, claim in sorted(claims.items()))
