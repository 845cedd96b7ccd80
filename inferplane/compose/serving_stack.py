"""ServingStack composition: the catalog's components for the stack's cloud and claimed drivers,
as provider-helm Releases and provider-kubernetes Objects on the target cluster.

Conditions this function sets:
- `DriversSupported`: False with reason `UnsupportedDrivers` when `spec.draDrivers` names a driver
  the cloud cannot serve (nothing is installed for it; the rest installs normally); True with reason
  `NotStamped` while `spec.draDrivers` is absent (the cloud's full list is installed, so that an
  upgrade never strips a running stack); True with `AllSupported` otherwise.
- `StackReady`: True (`Available`) when every composed resource is observed ready, else False
  (`Creating`, naming what is still pending); False (`InvalidSpec`) when the stack cannot be read.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from inferplane.accelerators.catalog import CLUSTER_GATEWAY, COMPONENT_LABEL, components, stack_drivers, supported_drivers
from inferplane.accelerators.component import Component
from inferplane.api.serving_stack import STACK_READY, ServingStack, ServingStackSpec
from inferplane.api.json_data import json_copy, shared_copy
from inferplane.api.managed import EXTERNAL_NAME_ANNOTATION, HELM_API_VERSION, MANAGED_NAMESPACE, OBJECT_API_VERSION, \
    PROVIDER_CONFIG_KIND, composed_name, helm_release, observed_manifest, provider_config_ref
from inferplane.compose.base import Composer, Desired, Event, Request, Resource, Response, composite_name, \
    validation_problems

PROVIDER_CONFIG_API_VERSIONS = {"helm": HELM_API_VERSION, "kubernetes": OBJECT_API_VERSION}
# The composition resource key of the ProviderConfig each provider reaches a cluster with (the gateway's
# composition names its helm one the same).
PROVIDER_CONFIG_KEYS = {"helm": "provider-config-helm", "kubernetes": "provider-config-kubernetes"}
# provider-helm names the Helm release after the external name (EXTERNAL_NAME_ANNOTATION): the
# component key keeps release names on the target cluster stable whatever the stack is called.

DRIVERS_SUPPORTED = "DriversSupported"


def resource_key(component: Component) -> str:
    """The stable key of a component's composed resource: `release-<key>` or `object-<key>`."""
    return f"{component.kind}-{component.key}"


def observed_gateway_address(gateway_object: Resource | None) -> str | None:
    """The address a cluster's Gateway reports, read through the Object that applied it."""
    manifest = observed_manifest(gateway_object)
    addresses = (manifest.get("status") or {}).get("addresses") or []
    value = addresses[0].get("value") if addresses and isinstance(addresses[0], dict) else None
    return value if isinstance(value, str) and value else None


def secret_ref(ref: Any) -> dict[str, str]:
    """A Secret key reference as a ProviderConfig takes it, in inferplane's namespace unless named."""
    return {"name": ref.name, "namespace": ref.namespace or MANAGED_NAMESPACE, "key": ref.key}


class ServingStackComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.stack: ServingStack | None = None
        self.installed: tuple[Component, ...] = ()

    def compose(self) -> Response:
        if not self.read_stack():
            return self.response
        self.compose_drivers()
        self.compose_provider_configs()
        self.compose_components()
        self.compose_status()
        self.compose_readiness()
        return self.response

    # ---- steps

    def read_stack(self) -> bool:
        """Parse the composite; an unreadable one keeps what was composed and says why."""
        try:
            self.stack = ServingStack.model_validate(self.request.composite)
            return True
        except ValidationError as error:
            self.condition(STACK_READY, "False", "InvalidSpec",
                           f"ServingStack {composite_name(self.request.composite)} is invalid "
                           f"({validation_problems(error)}): fix the spec; composed components are kept as they are")
            # Returning nothing would let the runtime garbage-collect a live stack.
            self.keep_observed()
            return False

    def compose_drivers(self) -> None:
        """Choose the drivers to install and report any the cloud cannot serve."""
        spec = self.spec
        supported = supported_drivers(spec.source)
        if spec.dra_drivers is None:
            self.condition(DRIVERS_SUPPORTED, "True", "NotStamped",
                           f"ServingStack {self.name} has no spec.draDrivers yet: installing every device stack "
                           f"{spec.source} supports ({', '.join(supported)}) so that a running stack keeps them")
        else:
            claimed = frozenset(spec.dra_drivers)
            unsupported = sorted(claimed - set(supported))
            if unsupported:
                them = "it" if len(unsupported) == 1 else "them"
                message = (f"ServingStack {self.name} claims {', '.join(unsupported)}, which {spec.source} clusters "
                           f"cannot serve; {spec.source} clusters support {', '.join(supported)}. Nothing is "
                           f"installed for {them}: remove {them} from spec.draDrivers, or run the classes that "
                           f"claim {them} on a cluster whose cloud serves {them}")
                self.condition(DRIVERS_SUPPORTED, "False", "UnsupportedDrivers", message)
                self.response.events.append(Event("Warning", "UnsupportedDrivers", message))
            else:
                self.condition(DRIVERS_SUPPORTED, "True", "AllSupported",
                               f"{spec.source} serves every driver ServingStack {self.name} claims")
        self.installed = tuple(c for c in components(spec.source, stack_drivers(spec)) if c.when(spec))

    def compose_provider_configs(self) -> None:
        """The credentials every Release and Object of the stack reaches its cluster with."""
        ref = self.spec.kubeconfig_secret_ref
        if ref is None:
            return
        spec: dict[str, Any] = {"credentials": {"source": "Secret", "secretRef": secret_ref(ref)}}
        identity = self.spec.identity_secret_ref
        if identity is not None:
            spec["identity"] = {"type": identity.type, "source": "Secret", "secretRef": secret_ref(identity)}
        for provider, api_version in PROVIDER_CONFIG_API_VERSIONS.items():
            config = {"apiVersion": api_version, "kind": PROVIDER_CONFIG_KIND,
                      "metadata": {"name": self.spec.cluster_name}, "spec": json_copy(spec)}
            # A ProviderConfig reports no Ready condition: it is usable as soon as it exists.
            self.response.desired[PROVIDER_CONFIG_KEYS[provider]] = Desired(config, ready=True)

    def compose_components(self) -> None:
        for component in self.installed:
            key = resource_key(component)
            self.desire(key, self.release(component) if component.chart else self.object(component))

    def compose_status(self) -> None:
        self.response.status["components"] = shared_copy([c.key for c in self.installed])  # one list per stack shape
        self.response.status["gateway"] = {"address": observed_gateway_address(
            self.request.observed.get(resource_key(CLUSTER_GATEWAY)))}

    def compose_readiness(self) -> None:
        pending = [key for key, desired in self.response.desired.items() if not desired.ready]
        if pending:
            self.condition(STACK_READY, "False", "Creating",
                           f"ServingStack {self.name} is waiting for {', '.join(pending)} to become ready")
        else:
            self.condition(STACK_READY, "True", "Available", f"every component of ServingStack {self.name} is ready")

    # ---- resources

    def release(self, component: Component) -> Resource:
        chart = component.chart
        assert chart is not None
        # Values are rendered per stack; a copy keeps the catalog's data out of reach of callers, one that
        # refuses changes for every stack whose values are equal.
        release = helm_release(composed_name(self.name, component.key), self.spec.cluster_name,
                               (chart.name, chart.repository, chart.version), component.namespace,
                               shared_copy(component.values(self.spec)), labels={COMPONENT_LABEL: component.key})
        release["metadata"]["annotations"] = {EXTERNAL_NAME_ANNOTATION: component.key}
        return release

    def object(self, component: Component) -> Resource:
        assert component.manifest is not None
        return self.managed(component, OBJECT_API_VERSION, "Object",
                            {"manifest": shared_copy(component.manifest(self.spec))})

    def managed(self, component: Component, api_version: str, kind: str, for_provider: dict[str, Any]) -> Resource:
        """A namespaced Crossplane managed resource aimed at the stack's cluster."""
        return {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {
                "name": composed_name(self.name, component.key),
                "namespace": MANAGED_NAMESPACE,
                "labels": {COMPONENT_LABEL: component.key},
            },
            "spec": {
                "providerConfigRef": provider_config_ref(self.spec.cluster_name),
                "forProvider": for_provider,
            },
        }

    # ---- helpers

    @property
    def spec(self) -> ServingStackSpec:
        assert self.stack is not None
        return self.stack.spec

    @property
    def name(self) -> str:
        assert self.stack is not None
        return self.stack.metadata.name



def compose_serving_stack(request: Request) -> Response:
    return ServingStackComposer(request).compose()
