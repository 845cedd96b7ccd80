"""ModelCache composition: a model's weights staged once on every cluster the cache selects.

On each selected InferenceCluster that is Ready and has a ReadWriteMany StorageClass, three
provider-kubernetes Objects on the cluster's ClusterProviderConfig, in the workload cluster's
`default` namespace (where engine pods run: a pod mounts only a claim of its own namespace):
- a PersistentVolumeClaim `modelcache-<namespace>-<name>` of `sizeGiB` on that StorageClass;
- once it is Bound, the hydration Job, which downloads the repo at `revision` into the volume (skipped
  when a marker says an earlier run finished), on a pinned image (an unpinned one composes no Job);
- with `authSecret`, a Secret carrying the token copied from the control plane's Secret, which the Job
  reads. A Secret that is missing, or lacks the key, holds the Job back and says so.
Once a cluster is Ready the Job and token Secret are dropped (the Job is orphaned, not deleted: its own
TTL removes it and the completed pod that pins the volume); Ready is latched in the status, so the
volume stays staged. A cluster that cannot stage (not ready, no StorageClass) keeps what it had.

Status: `clusters[{name, phase, message}]` (Pending, Hydrating, Ready, Failed), `summary.ready` ("2/3":
staged of selected) and the conditions `ClustersMatched` and `ArtifactReady`.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from inferplane import API_GROUP
from inferplane.accelerators.component import is_pinned_image
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.managed import PROVIDER_CONFIG_KIND, child_name, observed_manifest
from inferplane.api.model_cache import CACHE_MOUNT_PATH, READY_PHASE, ModelCache, cache_volume_name
from inferplane.clouds import CLOUD_MODULES
from inferplane.compose.base import READY, Composer, Event, Request, Requirement, Resource, Response, composite_name, \
    is_ready, validation_problems
from inferplane.compose.model_replica import REMOTE_NAMESPACE
from inferplane.compose.serving_stack import OBJECT_API_VERSION
from inferplane.scheduling.fleet import selector_refusal

CLUSTERS_REQUIREMENT = "clusters"
AUTH_REQUIREMENT = "auth-secret"
CLUSTERS_MATCHED = "ClustersMatched"
ARTIFACT_READY = "ArtifactReady"
CACHE_LABEL = f"{API_GROUP}/modelcache"
# What the simulated provider reports of a running hydration Job: the GiB downloaded so far.
DOWNLOADED_ANNOTATION = f"simulation.{API_GROUP}/downloaded-gib"

# The hydration Job's image and the downloader it installs, each pinned to one exact release (a
# floating tag would stage with whatever it is that day). `hf download` is huggingface_hub's CLI
# (1.x and later; `huggingface-cli` is gone). An unpinned value composes no Job (fail closed).
HYDRATION_IMAGE = "python:3.11.11-slim-bookworm"
HUGGINGFACE_HUB_VERSION = "2.4.0"
# Where the Job mounts the volume; engines mount the same volume at CACHE_MOUNT_PATH.
HYDRATION_MOUNT = "/mnt/artifact"
# Written only after a download finished: a rerun (eviction, retry) skips, and an interrupted one resumes
# (`hf download` is resumable) rather than taking a half-filled volume for a staged one.
HYDRATED_MARKER = f"{HYDRATION_MOUNT}/.inferplane-hydrated"
# Long enough for the provider to report the Job's success before its TTL controller removes it.
JOB_TTL_SECONDS = 180
JOB_BACKOFF_LIMIT = 3
# Every management policy but Delete: dropping the Job from the composition orphans it, and its TTL
# then removes it with the completed pod (Crossplane's delete would orphan that pod, pinning the volume).
JOB_MANAGEMENT = ["Observe", "Create", "Update", "LateInitialize"]
PVC_READY_QUERY = 'object.status.phase == "Bound"'
JOB_READY_QUERY = ('has(object.status.conditions) && '
                   'object.status.conditions.exists(c, c.type == "Complete" && c.status == "True")')
# The repo and revision reach the shell through the environment, quoted, never spliced into the script.
HYDRATE_SCRIPT = (
    f'set -e; if [ -f {HYDRATED_MARKER} ]; then echo "already hydrated"; exit 0; fi; '
    f'pip install --quiet "huggingface_hub=={HUGGINGFACE_HUB_VERSION}"; '
    f'if [ -n "$HF_REVISION" ]; then hf download "$HF_REPO" --revision "$HF_REVISION" --local-dir {HYDRATION_MOUNT}; '
    f'else hf download "$HF_REPO" --local-dir {HYDRATION_MOUNT}; fi; '
    f'touch {HYDRATED_MARKER}')


def rwx_storage_class(stored: Resource) -> str | None:
    """The cluster's ReadWriteMany StorageClass for cache volumes, as Modelplane reads it: the stored
    InferenceCluster's status.cache.storageClassName (an Existing cluster's own class, or the one its
    cloud's shared storage provides)."""
    cache = ((stored.get("status") or {}).get("cache") or {})
    return cache.get("storageClassName") or None


def selection_refusal(cache: ModelCache, cluster: Resource) -> str | None:
    """Why the cache's clusterSelector leaves a stored InferenceCluster out, or None when it selects it."""
    selector = cache.spec.cluster_selector
    wanted = {"matchLabels": selector.match_labels or {}} if selector else {}
    return selector_refusal(wanted, (cluster.get("metadata") or {}).get("labels") or {})


def no_storage_class(cluster: InferenceCluster) -> tuple[str, str]:
    """(phase, message) of a cluster that reports no ReadWriteMany StorageClass: Failed, saying what fixes
    it, where none will come (an Existing cluster that names none, a cloud without shared storage);
    Pending while a cloud's shared storage is on its way."""
    name = cluster.metadata.name
    refusal = CLOUD_MODULES[cluster.spec.cluster.source].storage_refusal(name)
    if refusal:
        return "Failed", refusal
    return "Pending", (f"InferenceCluster {name} has not reported its ReadWriteMany StorageClass yet "
                       "(status.cache): it is composed with the cluster's shared storage; wait")


def job_condition(observed: Resource | None, type_: str) -> dict[str, Any]:
    """A condition the target cluster reports for the observed Job Object's Job."""
    status = observed_manifest(observed).get("status")
    return next((c for c in (status or {}).get("conditions") or [] if c.get("type") == type_
                 and c.get("status") == "True"), {})


def download_progress(observed_job: Resource | None, size_gib: int) -> str:
    """How far the (simulated) download got, as the provider reports it on the Job's pod: "" unless known."""
    manifest = observed_manifest(observed_job)
    done = ((manifest.get("metadata") or {}).get("annotations") or {}).get(DOWNLOADED_ANNOTATION)
    return f" ({done} of {size_gib} GiB)" if done else ""


def pvc_phase(observed: Resource | None) -> str | None:
    status = observed_manifest(observed).get("status")
    return (status or {}).get("phase")


class ModelCacheComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.name = composite_name(request.composite)
        # The token's key -> its base64 value, copied from the control plane's Secret; empty without one.
        self.token: dict[str, str] = {}
        self.clusters: list[dict[str, Any]] = []

    def compose(self) -> Response:
        if not self.read_cache() or not self.require_inputs():
            return self.response
        for stored, cluster in self.selected():
            self.clusters.append(self.compose_cluster(stored, cluster))
        self.record_transitions()
        self.compose_status()
        return self.response

    # ---- steps

    def read_cache(self) -> bool:
        try:
            self.cache = ModelCache.model_validate(self.request.composite)
        except ValidationError as error:
            self.keep_observed()
            self.condition(ARTIFACT_READY, "False", "InvalidSpec", f"ModelCache {self.name} is invalid "
                           f"({validation_problems(error)}): fix the spec; what is staged is kept")
            return False
        self.namespace = self.cache.metadata.namespace or "default"
        self.source = self.cache.spec.hugging_face
        if self.source is None:  # admission requires it with source HuggingFace, the only source
            self.keep_observed()
            self.condition(ARTIFACT_READY, "False", "InvalidSpec",
                           f"ModelCache {self.name}: spec.huggingFace is required when spec.source is HuggingFace")
            return False
        return True

    def require_inputs(self) -> bool:
        """Every InferenceCluster (the selector is applied here, so each refusal can be named), and the
        authSecret from the cache's namespace when it names one."""
        requirements = self.response.requirements
        requirements[CLUSTERS_REQUIREMENT] = Requirement(InferenceCluster.api_version_string(), InferenceCluster.KIND)
        auth = self.source.auth_secret
        if auth is not None:
            requirements[AUTH_REQUIREMENT] = Requirement("v1", "Secret", auth.name, self.namespace)
        if any(name not in self.request.required for name in requirements):
            self.keep_observed()  # first call: the runtime fetches them and calls again
            return False
        if auth is not None:
            data = (self.request.required[AUTH_REQUIREMENT] or {}).get("data") or {}
            if isinstance(data, dict) and data.get(auth.key):
                self.token = {auth.key: data[auth.key]}
        return True

    def selected(self) -> list[tuple[Resource, InferenceCluster]]:
        """The clusters the selector picks (all without one), as stored and as read."""
        out = []
        for obj in self.request.required[CLUSTERS_REQUIREMENT]:
            if selection_refusal(self.cache, obj) is not None:
                continue
            try:
                out.append((obj, InferenceCluster.model_validate(obj)))
            except ValidationError:
                continue  # the cluster's own status says what is wrong with it
        return sorted(out, key=lambda pair: pair[1].metadata.name)

    def compose_cluster(self, stored: Resource, cluster: InferenceCluster) -> dict[str, Any]:
        """Stage on one cluster: its status entry {name, phase, message}."""
        name = cluster.metadata.name
        if not is_ready(stored):
            self.keep_cluster(name)
            ready = next((c for c in (cluster.status.conditions if cluster.status else []) if c.type == READY), None)
            why = f" ({ready.reason}: {ready.message})" if ready is not None and ready.message else ""
            return self.entry(name, "Pending", f"InferenceCluster {name} is not ready{why}")
        storage_class = rwx_storage_class(stored)
        if storage_class is None:
            self.keep_cluster(name)
            return self.entry(name, *no_storage_class(cluster))
        volume = cache_volume_name(self.namespace, self.cache.metadata.name)
        self.desire_object(name, "pvc", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": volume, "namespace": REMOTE_NAMESPACE, "labels": self.labels()},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": f"{self.source.size_gib}Gi"}}},
        }, PVC_READY_QUERY)
        bound = pvc_phase(self.request.observed.get(self.key("pvc", name))) == "Bound"
        observed_job = self.request.observed.get(self.key("hydrate", name))
        if bound and (job_condition(observed_job, "Complete") or self.was_ready(name)):
            return self.entry(name, READY_PHASE, f"{self.source.repo} is staged on PersistentVolumeClaim "
                              f"{REMOTE_NAMESPACE}/{volume}, mounted at {CACHE_MOUNT_PATH} by engine pods")
        held = self.compose_hydration(name, volume)
        if held is not None:
            return held
        job = f"hydration Job {REMOTE_NAMESPACE}/{child_name(volume, 'hydrate')}"
        if not bound:
            # The Job's pod is the volume's first consumer: a WaitForFirstConsumer class binds it then.
            return self.entry(name, "Pending", f"PersistentVolumeClaim {REMOTE_NAMESPACE}/{volume} "
                              f"({self.source.size_gib}Gi, storage class {storage_class}) is not bound yet; {job} waits")
        failed = job_condition(observed_job, "Failed")
        if failed:
            return self.entry(name, "Failed", f"{job} failed: "
                              f"{failed.get('message') or failed.get('reason') or 'no reason given'}")
        return self.entry(name, "Hydrating", f"{job} downloads {self.revision_text()} into the volume"
                          f"{download_progress(observed_job, self.source.size_gib)}")

    def compose_hydration(self, name: str, volume: str) -> dict[str, Any] | None:
        """The hydration Job (and the token Secret it reads), or the entry saying why it is held back."""
        if not is_pinned_image(HYDRATION_IMAGE):
            return self.entry(name, "Failed", f"the hydration image {HYDRATION_IMAGE!r} is not pinned to an exact "
                                              "release: no Job is composed until it is")
        auth = self.source.auth_secret
        if auth is not None and not self.token:
            return self.entry(name, "Pending", f"authSecret {self.namespace}/{auth.name} is missing or has no key "
                              f"{auth.key}: create it in namespace {self.namespace}; the hydration Job waits for it")
        if self.token:
            self.desire_object(name, "auth", {
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": child_name(volume, "auth"), "namespace": REMOTE_NAMESPACE,
                             "labels": self.labels()},
                "data": dict(self.token)})
        self.desire_object(name, "hydrate", self.job(volume), JOB_READY_QUERY, management=JOB_MANAGEMENT)
        return None

    def compose_status(self) -> None:
        ready = sum(1 for c in self.clusters if c["phase"] == READY_PHASE)
        self.response.status = {"summary": {"ready": f"{ready}/{len(self.clusters)}"}, "clusters": self.clusters}
        if not self.clusters:
            message = f"ModelCache {self.name}: no InferenceCluster is selected by its clusterSelector"
            self.condition(CLUSTERS_MATCHED, "False", "NoClusters", message)
            self.warn(ARTIFACT_READY, "NoClusters", message)
            return
        self.condition(CLUSTERS_MATCHED, "True", "Matched", f"ModelCache {self.name} stages on "
                       f"{', '.join(c['name'] for c in self.clusters)}")
        failed = [c for c in self.clusters if c["phase"] == "Failed"]
        waiting = [c for c in self.clusters if c["phase"] != READY_PHASE]
        summary = f"{self.revision_text()} staged on {ready} of {len(self.clusters)} clusters"
        if failed:
            self.warn(ARTIFACT_READY, "Failed", f"{summary}; " + "; ".join(f"{c['name']}: {c['message']}" for c in failed))
        elif waiting:
            # Waiting on a token is no progress: say so over the phase.
            reason = "AuthSecretMissing" if self.source.auth_secret is not None and not self.token else \
                "Partial" if ready else "Hydrating"
            message = f"{summary}; " + "; ".join(f"{c['name']}: {c['message']}" for c in waiting)
            if reason == "AuthSecretMissing":
                self.warn(ARTIFACT_READY, reason, message)
            else:
                self.condition(ARTIFACT_READY, "False", reason, message)
        else:
            self.condition(ARTIFACT_READY, "True", "Staged", summary)

    def record_transitions(self) -> None:
        """A Normal event when a cluster starts hydrating and when it is staged (Modelplane keeps its events
        to transitions too): the status before this reconcile says where each cluster was."""
        before = {c.get("name"): c.get("phase") for c in (self.request.composite.get("status") or {}).get("clusters")
                  or []}
        for entry in self.clusters:
            if entry["phase"] in ("Hydrating", READY_PHASE) and before.get(entry["name"]) != entry["phase"]:
                self.response.events.append(Event("Normal", entry["phase"], f"{entry['name']}: {entry['message']}"))

    # ---- helpers

    def job(self, volume: str) -> Resource:
        env: list[dict[str, Any]] = [{"name": "HF_REPO", "value": self.source.repo},
                                     {"name": "HF_REVISION", "value": self.source.revision or ""}]
        auth = self.source.auth_secret
        if auth is not None:
            env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
                "name": child_name(volume, "auth"), "key": auth.key}}})
        return {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": child_name(volume, "hydrate"), "namespace": REMOTE_NAMESPACE, "labels": self.labels()},
            "spec": {"backoffLimit": JOB_BACKOFF_LIMIT, "ttlSecondsAfterFinished": JOB_TTL_SECONDS, "template": {
                "metadata": {"labels": self.labels()},
                "spec": {"restartPolicy": "OnFailure", "containers": [{
                    "name": "hydrate", "image": HYDRATION_IMAGE, "command": ["/bin/sh", "-c", HYDRATE_SCRIPT],
                    "env": env, "volumeMounts": [{"name": "artifact", "mountPath": HYDRATION_MOUNT}]}],
                    "volumes": [{"name": "artifact", "persistentVolumeClaim": {"claimName": volume}}]}}},
        }

    def desire_object(self, cluster: str, part: str, manifest: Resource, ready_query: str | None = None,
                      management: list[str] | None = None) -> None:
        readiness = ({"policy": "DeriveFromCelQuery", "celQuery": ready_query} if ready_query
                     else {"policy": "SuccessfulCreate"})
        spec: dict[str, Any] = {"providerConfigRef": {"kind": PROVIDER_CONFIG_KIND, "name": cluster},
                                "readiness": readiness, "forProvider": {"manifest": manifest}}
        if management is not None:
            spec["managementPolicies"] = list(management)
        self.desire(self.key(part, cluster), {
            "apiVersion": OBJECT_API_VERSION, "kind": "Object",
            "metadata": {"name": child_name(self.cache.metadata.name, part, cluster), "namespace": self.namespace,
                         "labels": self.labels()},
            "spec": spec})

    def keep_cluster(self, cluster: str) -> None:
        """Keep what this cluster had, as composed: a cluster that cannot stage now loses nothing."""
        for part in ("pvc", "hydrate", "auth"):
            if self.key(part, cluster) in self.request.observed:
                self.keep(self.key(part, cluster))

    def was_ready(self, cluster: str) -> bool:
        """Whether the last status said this cluster was staged (the Job is dropped once it is)."""
        status = self.request.composite.get("status") or {}
        return any(c.get("name") == cluster and c.get("phase") == READY_PHASE for c in status.get("clusters") or [])

    def entry(self, cluster: str, phase: str, message: str) -> dict[str, Any]:
        return {"name": cluster, "phase": phase, "message": message}

    def revision_text(self) -> str:
        return f"{self.source.repo}@{self.source.revision}" if self.source.revision else self.source.repo

    def labels(self) -> dict[str, str]:
        return {CACHE_LABEL: self.cache.metadata.name}

    @staticmethod
    def key(part: str, cluster: str) -> str:
        return f"{part}-{cluster}"


def compose_model_cache(request: Request) -> Response:
    return ModelCacheComposer(request).compose()
