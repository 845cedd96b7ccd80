"""inferplane's resource kinds, one module per kind; `KINDS` indexes them by (apiVersion, kind)."""

from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.api.common import Resource
from inferplane.api.inference_class import InferenceClass
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.inference_gateway import InferenceGateway
from inferplane.api.model_cache import ModelCache
from inferplane.api.model_deployment import ModelDeployment
from inferplane.api.model_endpoint import ModelEndpoint
from inferplane.api.model_replica import ModelReplica
from inferplane.api.model_service import ModelService
from inferplane.api.serving_stack import ServingStack

ALL_KINDS: tuple[type[Resource], ...] = (
    InferenceClass, InferenceCluster, InferenceGateway, ModelCache, ModelDeployment, ModelEndpoint, ModelReplica,
    ModelService,
    ServingStack, *CLOUD_CLUSTER_KINDS.values())
KINDS: dict[tuple[str, str], type[Resource]] = {(k.api_version_string(), k.KIND): k for k in ALL_KINDS}
KINDS_BY_NAME: dict[str, type[Resource]] = {k.KIND: k for k in ALL_KINDS}
