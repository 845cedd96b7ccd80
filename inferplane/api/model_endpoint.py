"""ModelEndpoint: one reachable inference endpoint a ModelService can route to."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ConfigDict, Field

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import ApiModel, Condition, Resource, list_map, rule

# What a replica's composed ModelEndpoint is labelled with, for ModelServices to select: the deployment
# (Modelplane's `modelplane.ai/deployment`) and the cluster the replica runs on.
DEPLOYMENT_LABEL = f"{API_GROUP}/deployment"
CLUSTER_LABEL = f"{API_GROUP}/cluster"
# Gateway API's HTTPPathModifier caps a replacement path at this length (replacePrefixMatch maxLength).
REWRITE_PATH_MAX = 1024


class ModelEndpointSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("self.url.startsWith('http://') || self.url.startsWith('https://')",
             "must be an http:// or https:// URL: the control plane gateway forwards HTTP, e.g. "
             "https://api.together.xyz/", field_path=".url", reason="FieldValueInvalid"),
        rule("!has(self.rewritePath) || self.rewritePath.startsWith('/')",
             "must be an absolute path starting with /, e.g. / or /openai/: it replaces the service's prefix",
             field_path=".rewritePath", reason="FieldValueInvalid")]})

    url: str = Field(min_length=1, description="URL of the inference endpoint. Used to configure routing to it.")
    rewrite_path: str | None = Field(
        None, max_length=REWRITE_PATH_MAX,
        description="Path prefix requests are rewritten to when routed through this endpoint: a ModelService "
                    "replaces its /<namespace>/<name>/ prefix with it (URLRewrite on its HTTPRoute). For composed "
                    "endpoints, the replica's serving path on its cluster's gateway.")


class Routing(ApiModel):
    backend_name: str | None = Field(None, description="The Service a ModelService's HTTPRoute sends this endpoint's "
                                                       "share to.")


class ModelEndpointStatus(ApiModel):
    routing: Routing | None = None
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))


class ModelEndpoint(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ModelEndpoint"
    PLURAL: ClassVar[str] = "modelendpoints"
    SCOPE: ClassVar[str] = "Namespaced"
    DESCRIPTION: ClassVar[str] = "A reachable inference endpoint: a replica's, or an external provider's."
    SHORT_NAMES: ClassVar = ("me",)
    COLUMNS: ClassVar = (("URL", ".spec.url", "string"),)

    spec: ModelEndpointSpec
    status: ModelEndpointStatus | None = None
