"""The function registry: which composition function composes each kind. Both runtimes take it from
here (the embedded reconciler and the RunFunction server)."""

from __future__ import annotations

from typing import Callable

from inferplane.api.function import Request, Response


def composition_functions() -> dict[str, Callable[[Request], Response]]:
    """Kind -> composition function. Imported lazily: functions pull in the whole catalog."""
    from inferplane.api import (CLOUD_CLUSTER_KINDS, InferenceCluster, InferenceGateway, ModelCache, ModelDeployment,
                                ModelEndpoint, ModelReplica, ModelService, ServingStack)
    from inferplane.compose.cloud_cluster import compose_cloud_cluster
    from inferplane.compose.inference_cluster import compose_inference_cluster
    from inferplane.compose.inference_gateway import compose_inference_gateway
    from inferplane.compose.model_cache import compose_model_cache
    from inferplane.compose.model_deployment import compose_model_deployment
    from inferplane.compose.model_endpoint import compose_model_endpoint
    from inferplane.compose.model_replica import compose_model_replica
    from inferplane.compose.model_service import compose_model_service
    from inferplane.compose.serving_stack import compose_serving_stack

    functions = {InferenceCluster.KIND: compose_inference_cluster, ServingStack.KIND: compose_serving_stack,
                 ModelDeployment.KIND: compose_model_deployment, ModelReplica.KIND: compose_model_replica,
                 InferenceGateway.KIND: compose_inference_gateway, ModelEndpoint.KIND: compose_model_endpoint,
                 ModelService.KIND: compose_model_service, ModelCache.KIND: compose_model_cache}
    functions.update({kind.KIND: compose_cloud_cluster for kind in CLOUD_CLUSTER_KINDS.values()})
    return functions
