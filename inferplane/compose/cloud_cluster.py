"""The cloud cluster kinds (EKSCluster, GKECluster, ...): the cloud's cluster and node pool resources.

The cloud module of the composite's kind does the translation; this function adds readiness and
the Ready condition. A composite it cannot read keeps everything already composed, as it was.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from inferplane.accelerators.chart_values import chart_value_errors
from inferplane.accelerators.component import Chart
from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.api.managed import EXTERNAL_NAME_ANNOTATION, HELM_API_VERSION, MANAGED_NAMESPACE, OBJECT_API_VERSION, \
    PROVIDER_CONFIG_KIND, composed_name, helm_release
from inferplane.clouds import CLOUD_MODULES, CLUSTER_KEY
from inferplane.clouds.base import KUBECONFIG_KEY, connection_secret_name
from inferplane.clouds.storage import SharedStorage
from inferplane.compose.base import READY, RECONCILE_ERROR, SYNCED, Composer, Desired, Event, Request, Response, \
    composite_name, condition_of, refused_by_provider, validation_problems

# What the cluster's shared storage puts on the workload cluster (its StorageClass) is never deleted by
# Crossplane: it goes with the cluster, and a delete would have to reach a cluster being torn down.
# Every management policy but Delete, as Modelplane v0.3.1 composes its StorageClass Objects (and its
# Nebius CSI driver Release).
ORPHAN_MANAGEMENT = ["Observe", "Create", "Update", "LateInitialize"]
STORAGE_PROVIDER_CONFIG = "storage-provider-config"
STORAGE_HELM_PROVIDER_CONFIG = "storage-provider-config-helm"
# The provider a cloud cluster kind belongs to: EKSCluster -> EKS.
PROVIDER_OF_KIND = {kind.KIND: provider for provider, kind in CLOUD_CLUSTER_KINDS.items()}


class CloudClusterComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.composite = request.composite
        self.name = composite_name(self.composite)

    def compose(self) -> Response:
        provider = self.compose_provider()
        if provider is None:
            return self.response
        cluster = self.compose_cluster_model(provider)
        if cluster is None:
            return self.response
        held = self.compose_resources(provider, cluster)
        self.compose_status(provider, held)
        self.compose_storage(provider, cluster)
        return self.response

    # ---- steps

    def compose_provider(self) -> str | None:
        kind = self.composite.get("kind")
        provider = PROVIDER_OF_KIND.get(kind)
        if provider is None:
            self.hold("UnknownKind", f"{kind} {self.name} is not a cloud cluster kind: use one of "
                                     f"{', '.join(sorted(PROVIDER_OF_KIND))}")
        return provider

    def compose_cluster_model(self, provider: str) -> Any | None:
        kind = CLOUD_CLUSTER_KINDS[provider]
        try:
            return kind.model_validate(self.composite)
        except ValidationError as exc:
            self.hold("InvalidSpec", f"{kind.KIND} {self.name} is invalid: {validation_problems(exc)}: fix the spec")
            return None

    def compose_resources(self, provider: str, cluster: Any) -> dict[str, str]:
        """Compose what can be composed now; returns the pools held back, with what each waits for."""
        module = CLOUD_MODULES[provider]
        for key, resource in module.resources(cluster, self.request.observed).items():
            if resource["apiVersion"] == "v1":
                # A plain Kubernetes object (Nebius's cloud-init Secret) reports no readiness: it is ready
                # once applied, as Modelplane marks its cloud-init Secret.
                self.response.desired[key] = Desired(resource, ready=True)
            else:
                self.desire(key, resource)
        held = module.held_pools(cluster, self.request.observed)
        if held:
            # A held pool may be running already (its fabric just changed): while anything waits,
            # nothing composed before is deleted.
            self.keep_observed(only_undesired=True)
        return held

    def compose_status(self, provider: str, held: dict[str, str]) -> None:
        endpoint = CLOUD_MODULES[provider].endpoint(self.request.observed.get(CLUSTER_KEY))
        if endpoint:
            self.response.status = {"endpoint": endpoint}
        waiting = [f"{d.resource['kind']} {d.resource['metadata']['name']}"
                   for d in self.response.desired.values() if not d.ready]
        waiting += [f"pool {pool} (waits for {reason})" for pool, reason in sorted(held.items())]
        failed = self.failed_to_create()
        if failed:
            self.condition(READY, "False", RECONCILE_ERROR, f"{provider} cluster {self.name} cannot be provisioned: "
                                                           f"{'; '.join(failed)}")
        elif waiting:
            self.condition(READY, "False", "Creating", f"{provider} cluster {self.name} is being provisioned; "
                                                f"not ready yet: {', '.join(waiting)}")
        else:
            self.condition(READY, "True", "Available", f"{provider} cluster {self.name} and its pools are ready")

    def compose_storage(self, provider: str, cluster: Any) -> None:
        """The workload cluster's side of the shared storage (its StorageClass, and the CSI driver a chart
        installs where the cloud runs none), and status.cache: the StorageClass ModelCache volumes use,
        published at once, as Modelplane does (the class may still be on its way: a volume waits for it to
        bind). The objects go through ClusterProviderConfigs of this composite's own on the cluster's
        kubeconfig, as Modelplane's cloud compositions compose theirs: so everything here is deleted before
        the cluster, whatever happens to the serving stack."""
        storage = CLOUD_MODULES[provider].shared_storage(cluster, self.request.observed)
        config = composed_name(self.name, STORAGE_PROVIDER_CONFIG)
        if storage.workload_objects:
            self.storage_provider_config(STORAGE_PROVIDER_CONFIG, OBJECT_API_VERSION, config)
        for key, manifest in storage.workload_objects.items():
            self.response.desired[key] = Desired({
                "apiVersion": OBJECT_API_VERSION, "kind": "Object",
                "metadata": {"name": composed_name(self.name, key), "namespace": MANAGED_NAMESPACE},
                "spec": {"managementPolicies": list(ORPHAN_MANAGEMENT), "readiness": {"policy": "SuccessfulCreate"},
                         "providerConfigRef": {"kind": PROVIDER_CONFIG_KIND, "name": config},
                         "forProvider": {"manifest": manifest}}}, ready=True)
        if not self.compose_storage_releases(storage, config):
            return  # fail closed: no class is published for a driver that is not installed
        if storage.storage_class:
            self.response.status["cache"] = {"storageClassName": storage.storage_class}

    def compose_storage_releases(self, storage: SharedStorage, config: str) -> bool:
        """The Helm releases of the storage (a CSI driver), each ready once its provider says so; whether all
        of them could be composed. Values the pinned chart does not take (chart_values) compose none of
        them, and a Warning event names each problem."""
        problems = [problem for release in storage.releases.values() for problem in chart_value_errors(
            Chart(release.chart.name, release.chart.repository, release.chart.version), release.values)]
        if problems:
            self.response.events.append(Event("Warning", "InvalidChartValues", (
                f"the shared storage of cluster {self.name} is not installed: {'; '.join(problems)}")))
            return False
        if storage.releases:
            self.storage_provider_config(STORAGE_HELM_PROVIDER_CONFIG, HELM_API_VERSION, config)
        for key, release in storage.releases.items():
            chart = release.chart
            resource = helm_release(composed_name(self.name, key), config, (chart.name, chart.repository, chart.version),
                                    chart.namespace, dict(release.values))
            resource["metadata"]["annotations"] = {EXTERNAL_NAME_ANNOTATION: chart.release}
            resource["spec"]["managementPolicies"] = list(ORPHAN_MANAGEMENT)
            self.desire(key, resource)
        return True

    def storage_provider_config(self, key: str, api_version: str, name: str) -> None:
        """A ClusterProviderConfig of one provider (kubernetes, helm) on the cluster's kubeconfig."""
        self.response.desired[key] = Desired({
            "apiVersion": api_version, "kind": PROVIDER_CONFIG_KIND, "metadata": {"name": name},
            "spec": {"credentials": {"source": "Secret", "secretRef": {
                "name": connection_secret_name(self.name), "namespace": MANAGED_NAMESPACE,
                "key": KUBECONFIG_KEY}}}}, ready=True)

    # ---- helpers

    def failed_to_create(self) -> list[str]:
        """`Kind name: the provider's error` for each composed resource the provider failed to create."""
        out = []
        for key, desired in sorted(self.response.desired.items()):
            observed = self.request.observed.get(key)
            if refused_by_provider(observed):
                resource = desired.resource
                out.append(f"{resource['kind']} {resource['metadata']['name']}: "
                           f"{condition_of(observed, SYNCED).get('message')}")
        return out

    def hold(self, reason: str, message: str) -> None:
        """Keep every composed resource desired as observed (nothing deleted) and say why."""
        self.keep_observed()
        self.condition(READY, "False", reason, message)


def compose_cloud_cluster(request: Request) -> Response:
    return CloudClusterComposer(request).compose()
