"""ModelCache: a model's weights staged once per cluster, on a ReadWriteMany volume engine pods mount."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import ApiModel, ClusterSelector, Condition, ObjectName, Resource, list_map, rule
from inferplane.api.managed import child_name

# Where every engine pod of a replica that references a cache mounts its volume (Modelplane's contract:
# engines are pointed there, e.g. vLLM's --model=/mnt/models).
CACHE_MOUNT_PATH = "/mnt/models"
# The per-cluster phases of status.clusters[].phase, Modelplane's.
Phase = Literal["Pending", "Hydrating", "Ready", "Failed"]
# The phase of a cluster the model is staged on.
READY_PHASE: Phase = "Ready"


def cache_volume_name(namespace: str, cache: str) -> str:
    """The PersistentVolumeClaim of a cache on every cluster it stages on, which engine pods mount:
    qualified by the cache's namespace, since caches of every namespace share the workload cluster's
    `default` namespace (where engines run: a pod mounts only a claim of its own namespace)."""
    return child_name("modelcache", namespace, cache)


class AuthSecret(ApiModel):
    name: ObjectName = Field(description="A Secret in the ModelCache's own namespace, propagated to each matched "
                                         "cluster for the hydration Job to read.")
    key: str = Field("HF_TOKEN", min_length=1, description="The Secret's key holding the Hugging Face token.")


class HuggingFace(ApiModel):
    repo: str = Field(min_length=1, description="Hugging Face repository ID, e.g. Qwen/Qwen2.5-0.5B-Instruct.")
    revision: str | None = Field(None, min_length=1,
                                 description="Branch, tag, or commit SHA. Defaults to the repo's default branch.")
    auth_secret: AuthSecret | None = Field(None, description="Token for gated or private repos.")
    size_gib: int = Field(ge=1, le=100000, alias="sizeGiB",
                          description="Capacity of the cache volume on each matched cluster, in GiB.")


class ModelCacheSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("self.source != 'HuggingFace' || has(self.huggingFace)",
             "spec.huggingFace is required when spec.source is HuggingFace: add huggingFace with its repo and "
             "sizeGiB", field_path=".huggingFace", reason="FieldValueRequired")]})

    source: Literal["HuggingFace"] = Field(description="Which kind of artifact source to stage from; the matching "
                                                       "source object (spec.huggingFace) must be set.")
    hugging_face: HuggingFace | None = Field(None, description="Required when source is HuggingFace.")
    cluster_selector: ClusterSelector | None = Field(
        None, description="The InferenceClusters that stage this artifact; omitted, every cluster. Narrowing it "
                          "also narrows where a referencing ModelDeployment places new replicas.")


class Summary(ApiModel):
    ready: str | None = Field(None, description='Clusters staged of clusters selected, e.g. "2/3".')


class ClusterStaging(ApiModel):
    name: str
    phase: Phase | None = None
    message: str | None = None


class ModelCacheStatus(ApiModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))
    summary: Summary | None = None
    clusters: list[ClusterStaging] | None = Field(None, description="Per-cluster staging status.")


class ModelCache(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ModelCache"
    PLURAL: ClassVar[str] = "modelcaches"
    SCOPE: ClassVar[str] = "Namespaced"
    DESCRIPTION: ClassVar[str] = "A model's weights staged once per cluster on a ReadWriteMany volume."
    SHORT_NAMES: ClassVar = ("mc",)
    COLUMNS: ClassVar = (("SOURCE", ".spec.huggingFace.repo", "string"), ("READY", ".status.summary.ready", "string"))

    spec: ModelCacheSpec
    status: ModelCacheStatus | None = None
