"""InferenceGateway: the control plane's own gateway, the one address every ModelService is served at."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from inferplane import API_GROUP, API_VERSION
from inferplane.api.common import SEMVER, ApiModel, Condition, Resource, list_map, rule

# The Traefik chart Modelplane v0.3.1 documents (manifests/concepts/inference-gateway.yaml): Traefik
# v3.7, which serves Gateway API v1.5.1. A gateway that names no version gets this one.
TRAEFIK_CHART_VERSION = "40.2.0"
# ModelServices route through the InferenceGateway of this name (Modelplane: "It must be named default").
DEFAULT_GATEWAY_NAME = "default"


class MetalLB(ApiModel):
    address_pool: str = Field(
        description="IP address range for the MetalLB pool, as MetalLB's IPAddressPool takes it: a range "
                    "(\"172.18.255.200-172.18.255.250\") or a CIDR (\"172.18.255.0/24\"). Must be within the "
                    "cluster's network CIDR.")


class Traefik(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("!has(self.loadBalancer) || self.loadBalancer != 'MetalLB' || has(self.metallb)",
             "spec.traefik.metallb is required when spec.traefik.loadBalancer is MetalLB.")]})

    version: str = Field(
        TRAEFIK_CHART_VERSION, pattern=SEMVER,
        description="Traefik Helm chart version, exact: a range would let the installed chart drift")
    load_balancer: Literal["MetalLB"] | None = Field(
        None, description="Load balancer implementation for the gateway Service. Omit for cloud environments "
                          "where a native LB controller is available.")
    metallb: MetalLB | None = Field(
        None, description="MetalLB configuration. Required when loadBalancer is MetalLB. Use for kind or "
                          "bare-metal clusters.")


class InferenceGatewaySpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("self.backend != 'Traefik' || has(self.traefik)",
             "spec.traefik is required when spec.backend is Traefik.")]})

    backend: Literal["Traefik"] = Field(description="Gateway implementation.")
    traefik: Traefik | None = Field(None, description="Traefik Proxy configuration. Required when backend is Traefik.")


class InferenceGatewayStatus(ApiModel):
    address: str | None = Field(None, description="External address of the control plane gateway.")
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=list_map("type"))


class InferenceGateway(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "InferenceGateway"
    PLURAL: ClassVar[str] = "inferencegateways"
    SCOPE: ClassVar[str] = "Cluster"
    DESCRIPTION: ClassVar[str] = "The control plane's gateway: Traefik, its GatewayClass and Gateway, and its address."
    SHORT_NAMES: ClassVar = ("ig",)
    COLUMNS: ClassVar = (("GATEWAY", ".spec.backend", "string"), ("ADDRESS", ".status.address", "string"))

    spec: InferenceGatewaySpec
    status: InferenceGatewayStatus | None = None
