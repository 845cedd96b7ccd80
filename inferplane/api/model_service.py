"""ModelService: one OpenAI-compatible address over the ModelEndpoints its entries select, by weight."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import ApiModel, Condition, Resource, list_map

# Gateway API caps a backendRef's weight here (HTTPRoute CRD: maximum 1000000); an entry's weight is
# bounded the same, so that one entry alone always fits.
MAX_WEIGHT = 1_000_000


class EndpointSelector(ApiModel):
    match_labels: dict[str, str] = Field(description="Labels every selected ModelEndpoint carries.")


class EndpointsEntry(ApiModel):
    weight: int = Field(
        1, ge=1, le=MAX_WEIGHT,
        description="This entry's share of traffic relative to the other entries, spread evenly over the endpoints "
                    "it selects: an entry weighted 2 receives twice the traffic of one weighted 1.")
    selector: EndpointSelector


class ModelServiceSpec(ApiModel):
    endpoints: list[EndpointsEntry] = Field(
        min_length=1, description="Entries selecting ModelEndpoints by label; traffic is split across entries by "
                                  "weight and evenly across each entry's endpoints.")


class ModelServiceStatus(ApiModel):
    address: str | None = Field(None, description="Public address where this service is reachable.")
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))


class ModelService(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "ModelService"
    PLURAL: ClassVar[str] = "modelservices"
    SCOPE: ClassVar[str] = "Namespaced"
    DESCRIPTION: ClassVar[str] = "One OpenAI-compatible address over the ModelEndpoints its entries select."
    SHORT_NAMES: ClassVar = ("ms",)
    COLUMNS: ClassVar = (("ADDRESS", ".status.address", "string"),)

    spec: ModelServiceSpec
    status: ModelServiceStatus | None = None
