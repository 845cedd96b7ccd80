"""The simulated provider: what the cloud and the target clusters do with applied resources.

Managed resources (cloud clusters and pools, Helm releases, Kubernetes objects) become ready as
soon as they are applied, as a provider reports them once the external resource exists. inferplane's
own kinds never reach it: the reconciler hands composed composites to their composition functions.
A cloud cluster or pool naming a region, machine or accelerator type its cloud's table of offerings
lacks (`inferplane/clouds/offerings/`) is refused as the cloud's API would refuse it: never Ready, with
Synced=False `ReconcileError` and the API's error.

An observe-only provider-kubernetes Object (managementPolicies [Observe]) reports the object it
observes on the target cluster as `status.atProvider.manifest`, as provider-kubernetes does. The
simulated target clusters hold one such object: kubeadm's `kube-system/kubeadm-config` ConfigMap,
whose ClusterConfiguration names the version the cluster runs (`kubernetes_version`, chosen by
whoever builds the provider; tests pick old ones). Anything else observed is not found.

The control plane's gateway controllers are simulated too: Traefik accepts the GatewayClass naming its
controller and programs a Gateway of that class, whose address is MetalLB's (the lowest address of
its pool, as MetalLB's allocator hands out the lowest free one) or, without a pool, the simulated
cloud load balancer's. A target cluster's Gateway (applied through a provider-kubernetes Object) gets
its cluster's own simulated load balancer address, reported in the Object's `atProvider.manifest`.
A ModelCache's PersistentVolumeClaim is reported Bound, and its hydration Job Complete, the same way;
a claim whose StorageClass's provisioner is a CSI driver a Helm chart installs (a cloud's `storage_charts`:
Nebius's csi-mounted-fs-path) stays Pending until a Release of that chart is Ready on the claim's cluster
(the cluster its ProviderConfig's kubeconfig Secret reaches). A plain Kubernetes object the control plane
holds (apiVersion v1: Nebius's cloud-init Secret) has no provider: nothing is reported on it.
An Object applying one of the Inference Extension's kinds (a PrefillDecode replica's InferencePool) is
created only on a cluster where another Object applies the CRD serving it, as the serving stack does;
elsewhere it reports the API server's "no matches for kind".
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

from inferplane.api.function import READY, RECONCILE_ERROR, RECONCILE_SUCCESS, SYNCED, is_ready
from inferplane.api.json_data import frozen, json_copy
from inferplane.api.managed import EXTERNAL_NAME_ANNOTATION, HELM_API_VERSION, OBJECT_API_VERSION, applied_manifest, \
    observed_manifest
from inferplane.clouds import CLOUD_MODULES, refusal
from inferplane.compose.inference_cluster import KUBEADM_CONFIG
from inferplane.compose.model_cache import DOWNLOADED_ANNOTATION
from inferplane.runtime.store import Resource
from inferplane.routing import gateway as gw
from inferplane.routing.addresses import first_pool_address, simulated_load_balancer_address
from inferplane.routing.inference_extension import served_kinds

# A hydration Job downloads this many GiB per reconcile step, or 1/MAX_DOWNLOAD_STEPS of its volume when
# that is more: the steps stay well within the reconciler's bound on reconciles per object.
GIB_PER_STEP = 100
MAX_DOWNLOAD_STEPS = 8
# The version simulated target clusters run unless a test picks another.
SIMULATED_KUBERNETES_VERSION = "v1.36.1"
OBSERVE_ONLY = ["Observe"]
# The CSI drivers a cloud's shared storage installs with a chart, by driver name (a StorageClass's provisioner).
CHART_PROVISIONERS = {chart.provisioner: chart for module in CLOUD_MODULES.values()
                      for chart in module.storage_charts}


def kubeadm_config(version: str) -> Resource:
    """The ConfigMap kubeadm writes at `kubeadm init`, reduced to the field that names the version."""
    return {**json_copy(KUBEADM_CONFIG),
            "data": {"ClusterConfiguration": ("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"
                                              f"kubernetesVersion: {version}\n")}}


# The project a simulated Google service account lives in when its spec names none (the real
# provider takes its ProviderConfig's).
SIMULATED_GCP_PROJECT = "simulated-project"


def simulated_id(prefix: str, obj: Resource) -> str:
    """A stable AWS-style id (sg-0123abcd...) for a simulated resource, from its kind and name."""
    metadata = obj.get("metadata") or {}
    digest = hashlib.sha256(f"{obj.get('kind')}/{metadata.get('namespace')}/{metadata.get('name')}".encode())
    return f"{prefix}-{digest.hexdigest()[:17]}"


# What a provider reports on a resource it created: one list for every such resource (nearly every
# composed object of a fleet), unchangeable, as nothing changes a status once reported.
AVAILABLE = frozen([{"type": READY, "status": "True", "reason": "Available", "message": ""},
                    {"type": SYNCED, "status": "True", "reason": RECONCILE_SUCCESS, "message": ""}])
# The whole status of a resource the provider created and says nothing more of.
CREATED = frozen({"atProvider": {}, "conditions": AVAILABLE})


class SimulatedProvider:
    def __init__(self, kubernetes_version: str = SIMULATED_KUBERNETES_VERSION):
        self.kubernetes_version = kubernetes_version

    def observe(self, obj: Resource, of_kind: Callable[[str], list[Resource]] = lambda kind: []) -> dict:
        """The status the provider reports for an applied resource; `of_kind` lists the control plane's
        objects of a kind (a Gateway's address comes from MetalLB's pool)."""
        if obj.get("apiVersion") == gw.GATEWAY_API_VERSION and obj.get("kind") in ("GatewayClass", "Gateway"):
            return self.observe_gateway_api(obj, of_kind)
        if obj.get("apiVersion") == "v1":
            return {}  # a plain Kubernetes object the control plane holds (Nebius's cloud-init Secret): no provider
        status = dict(obj.get("status") or {})
        if obj.get("apiVersion") == gw.GATEWAY_API_VERSION and obj.get("kind") == "HTTPRoute":
            status["parents"] = self.route_parents(obj, of_kind)  # Traefik says which parents accepted it
        status.setdefault("atProvider", {})
        spec = obj.get("spec") or {}
        if obj.get("kind") == "Object" and self.observe_object(status, obj, of_kind):
            return status
        if (spec.get("readiness") or {}).get("policy") == "DeriveFromCelQuery":
            # An Object whose readiness is its workload's: ready once the target cluster runs it (the
            # cluster's simulation reports it); until then, what was last reported stands.
            if not status.get("conditions"):
                status["conditions"] = [
                    {"type": READY, "status": "False", "reason": "Creating",
                     "message": "waiting for the target cluster to run the workload"},
                    {"type": SYNCED, "status": "True", "reason": RECONCILE_SUCCESS, "message": ""}]
            return status
        if (refused := refusal(obj)) is not None:
            return self.refused(status, refused)
        status["conditions"] = AVAILABLE
        status["atProvider"] = cloud_reported(obj, status["atProvider"])
        # Most resources report no more than that: they share one status, in the same key order.
        return CREATED if status == CREATED and list(status) == list(CREATED) else status

    def observe_object(self, status: dict, obj: Resource, of_kind: Callable[[str], list[Resource]]) -> bool:
        """What provider-kubernetes reports of an Object, into `status`: the target cluster's object it
        observes, a Gateway's address, a kind the cluster lacks, a settled claim or Job. True when that is
        the whole status (False: an Object applied as any other resource, which `observe` goes on with)."""
        spec = obj.get("spec") or {}
        manifest = (spec.get("forProvider") or {}).get("manifest")
        if spec.get("managementPolicies") == OBSERVE_ONLY:
            wanted = manifest or {}
            found = self.target_object(wanted)
            if found is None:
                status["conditions"] = [
                    {"type": READY, "status": "False", "reason": "Unavailable", "message": ""},
                    {"type": SYNCED, "status": "False", "reason": RECONCILE_ERROR,
                     "message": f"observe failed: {wanted.get('kind')} {(wanted.get('metadata') or {}).get('name')} "
                                "not found on the cluster"}]
                return True
            status["atProvider"] = {**status["atProvider"], "manifest": found}
        elif _is_gateway(manifest):
            # The cluster's load balancer gives its Gateway an address; the Object reports it.
            cluster = (spec.get("providerConfigRef") or {}).get("name", "")
            address = {"type": "IPAddress", "value": simulated_load_balancer_address(cluster)}
            status["atProvider"] = {**status["atProvider"],
                                    "manifest": {**manifest, "status": {"addresses": [address]}}}
        elif (missing := missing_definition(spec, of_kind)) is not None:
            # The target cluster's API server has no such kind: provider-kubernetes cannot create it.
            status["conditions"] = [
                {"type": READY, "status": "False", "reason": "Unavailable", "message": ""},
                {"type": SYNCED, "status": "False", "reason": RECONCILE_ERROR, "message": missing}]
            return True
        elif (settled := settled_status(spec, of_kind) or hydration_status(obj, of_kind)) is not None:
            # A ModelCache's volume binds and its hydration Job completes on the target cluster.
            status["atProvider"] = {**status["atProvider"], "manifest": settled}
            done = (settled.get("status") or {}).get("phase") != "Pending" and (
                settled.get("kind") != "Job" or bool((settled.get("status") or {}).get("succeeded")))
            status["conditions"] = [_condition(READY, done, "Available" if done else "Creating"),
                                    _condition(SYNCED, True, RECONCILE_SUCCESS)]
            return True
        return False

    @staticmethod
    def refused(status: dict, error: str) -> dict:
        """The status of a cloud resource whose create the cloud's API refuses (a region, machine or
        accelerator type it does not offer), as crossplane-runtime reports it: Creating and the error,
        retried. One that exists already stays as it runs (Ready), its update failing."""
        running = any(c.get("type") == READY and c.get("status") == "True" for c in status.get("conditions") or [])
        ready = {"type": READY, "status": "True", "reason": "Available", "message": ""} if running else \
            {"type": READY, "status": "False", "reason": "Creating", "message": ""}
        failed = f"{'update' if running else 'create'} failed: {error}"
        return {**status, "conditions": [ready, {"type": SYNCED, "status": "False", "reason": RECONCILE_ERROR,
                                                 "message": failed}]}

    def target_object(self, wanted: Resource) -> Resource | None:
        """The object a simulated target cluster holds under the wanted kind, namespace and name."""
        config = kubeadm_config(self.kubernetes_version)
        keys = ("apiVersion", "kind")
        if all(wanted.get(k) == config[k] for k in keys) and \
                {k: (wanted.get("metadata") or {}).get(k) for k in ("name", "namespace")} == config["metadata"]:
            return config
        return None

    @staticmethod
    def observes_others(obj: Resource) -> bool:
        """Whether what the provider reports on `obj` changes without `obj` changing, so that it is observed
        again on every apply: Gateway API's kinds, which Traefik accepts by their class, their Gateway or
        their pool; a hydration Job, which downloads a step further each time."""
        if obj.get("kind") == "Object":
            manifest = applied_manifest(obj)
            reported = observed_manifest(obj).get("status") or {}
            if (manifest.get("apiVersion"), manifest.get("kind")) == ("v1", "PersistentVolumeClaim"):
                return reported.get("phase") != "Bound"  # its class's driver may have been installed since
            return manifest.get("kind") == "Job" and manifest.get("apiVersion") == "batch/v1" and \
                not reported.get("succeeded")
        return obj.get("apiVersion") == gw.GATEWAY_API_VERSION and obj.get("kind") in (
            "GatewayClass", "Gateway", "HTTPRoute")

    def route_parents(self, route: Resource, of_kind: Callable[[str], list[Resource]]) -> list[dict]:
        """Traefik's status.parents for an HTTPRoute on the control plane: each parentRef is accepted
        once its Gateway exists and Traefik accepted it (Gateway API's `NoMatchingParent` until then)."""
        namespace = (route.get("metadata") or {}).get("namespace") or "default"
        accepted = {((g.get("metadata") or {}).get("namespace"), (g.get("metadata") or {}).get("name"))
                    for g in of_kind("Gateway") if g.get("apiVersion") == gw.GATEWAY_API_VERSION
                    and any(c.get("type") == "Accepted" and c.get("status") == "True"
                            for c in (g.get("status") or {}).get("conditions") or [])}
        parents = []
        for ref in (route.get("spec") or {}).get("parentRefs") or []:
            ok = (ref.get("namespace") or namespace, ref.get("name")) in accepted
            parents.append({"parentRef": ref, "controllerName": gw.TRAEFIK_CONTROLLER,
                            "conditions": [_condition("Accepted", ok, "Accepted" if ok else "NoMatchingParent")]})
        return parents

    def observe_gateway_api(self, obj: Resource, of_kind: Callable[[str], list[Resource]]) -> dict:
        """Traefik's answer to a GatewayClass or Gateway: accepted when its class is Traefik's."""
        spec = obj.get("spec") or {}
        if obj["kind"] == "GatewayClass":
            ours = spec.get("controllerName") == gw.TRAEFIK_CONTROLLER
            return {"conditions": [_condition("Accepted", ours, "Accepted" if ours else "NotOurs")]}
        classes = {c["metadata"]["name"]: c for c in of_kind("GatewayClass")}
        klass = classes.get(spec.get("gatewayClassName", ""))
        if klass is None or (klass.get("spec") or {}).get("controllerName") != gw.TRAEFIK_CONTROLLER:
            return {"conditions": [_condition("Accepted", False, "Pending")]}  # no controller claims it
        pools = [p for p in of_kind("IPAddressPool") if (p.get("spec") or {}).get("addresses")]
        address = first_pool_address(pools[0]["spec"]["addresses"][0]) if pools else gw.SIMULATED_CLOUD_ADDRESS
        return {"addresses": [{"type": "IPAddress", "value": address}],
                "conditions": [_condition("Accepted", True, "Accepted"), _condition("Programmed", True, "Programmed")]}


def cloud_reported(obj: Resource, at_provider: dict[str, Any]) -> dict[str, Any]:
    """A created cloud resource's status.atProvider with the fields the cloud reports once it exists: the ids
    of EKS's cluster security group, an EC2 security group and an EFS file system, a Google service
    account's email."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind")
    if api_version.startswith("eks.aws.") and kind == "Cluster":
        # EKS makes a security group for the cluster's control plane and nodes; a launch template
        # that names its own interfaces (EFA) must name it.
        at_provider = {**at_provider, "vpcConfig": {
            **(at_provider.get("vpcConfig") or {}), "clusterSecurityGroupId": simulated_id("sg", obj)}}
    if api_version.startswith("ec2.aws.") and kind == "SecurityGroup":
        at_provider = {**at_provider, "id": simulated_id("sg", obj)}
    if api_version.startswith("efs.aws.") and kind == "FileSystem":
        at_provider = {**at_provider, "id": simulated_id("fs", obj)}
    if kind == "ServiceAccount" and api_version.startswith("cloudplatform.gcp."):
        # A Google service account reports its email, which IAM members name it by.
        metadata, for_provider = obj.get("metadata") or {}, (obj.get("spec") or {}).get("forProvider") or {}
        account = (metadata.get("annotations") or {}).get(EXTERNAL_NAME_ANNOTATION) or metadata.get("name")
        project = for_provider.get("project") or SIMULATED_GCP_PROJECT
        at_provider = {**at_provider, "email": f"{account}@{project}.iam.gserviceaccount.com"}
    return at_provider


def settled_status(spec: Resource, of_kind: Callable[[str], list[Resource]]) -> Resource | None:
    """The object a target cluster holds once it settled, for the kinds that settle on their own: a
    PersistentVolumeClaim Bound by its StorageClass's provisioner (the simulation takes the class a
    cluster declares to exist), or Pending while that provisioner is a CSI driver not installed yet
    (`unserved_provisioner`). None for any other manifest."""
    manifest = (spec.get("forProvider") or {}).get("manifest")
    if not isinstance(manifest, dict):
        return None
    if manifest.get("apiVersion") == "v1" and manifest.get("kind") == "PersistentVolumeClaim":
        if unserved_provisioner(spec, of_kind) is not None:
            return {**manifest, "status": {"phase": "Pending"}}
        claim = manifest.get("spec") or {}
        return {**manifest, "status": {"phase": "Bound", "accessModes": list(claim.get("accessModes") or []),
                                       "capacity": dict((claim.get("resources") or {}).get("requests") or {})}}
    return None


def unserved_provisioner(spec: Resource, of_kind: Callable[[str], list[Resource]]) -> str | None:
    """The provisioner of a claim's StorageClass when it is a CSI driver a chart installs and no Release of
    that chart is Ready on the claim's cluster: Kubernetes then leaves the claim Pending, "waiting for a
    volume to be created, either by external provisioner". None when the claim can bind."""
    claim = (spec.get("forProvider") or {}).get("manifest") or {}
    class_name = (claim.get("spec") or {}).get("storageClassName")
    on_cluster = cluster_configs(OBJECT_API_VERSION, spec, of_kind("ClusterProviderConfig"))

    def here(api_version: str, obj: Resource) -> bool:
        return (api_version, ((obj.get("spec") or {}).get("providerConfigRef") or {}).get("name")) in on_cluster

    classes = [manifest for other in of_kind("Object") if here(OBJECT_API_VERSION, other)
               and (manifest := applied_manifest(other))
               .get("kind") == "StorageClass" and (manifest.get("metadata") or {}).get("name") == class_name]
    chart = CHART_PROVISIONERS.get(classes[0].get("provisioner")) if classes else None
    if chart is None:
        return None
    for release in of_kind("Release"):
        pinned = ((release.get("spec") or {}).get("forProvider") or {}).get("chart") or {}
        if (pinned.get("name"), pinned.get("version")) == (chart.name, chart.version) and is_ready(release) \
                and here(HELM_API_VERSION, release):
            return None
    return chart.provisioner


def cluster_configs(api_version: str, spec: Resource, configs: list[Resource]) -> set[tuple[str, str]]:
    """(apiVersion, name) of every ClusterProviderConfig reaching the same cluster as a managed resource's,
    of any provider: those naming the same kubeconfig Secret (empty when its own is not found)."""
    def secret(config: Resource) -> tuple:
        ref = ((config.get("spec") or {}).get("credentials") or {}).get("secretRef") or {}
        return ref.get("namespace"), ref.get("name")

    name = (spec.get("providerConfigRef") or {}).get("name")
    own = next((secret(c) for c in configs if c.get("apiVersion") == api_version
                and (c.get("metadata") or {}).get("name") == name), None)
    return {(c.get("apiVersion"), (c.get("metadata") or {}).get("name")) for c in configs if secret(c) == own} \
        if own is not None else set()


def hydration_status(obj: Resource, of_kind: Callable[[str], list[Resource]]) -> Resource | None:
    """A ModelCache's hydration Job as its cluster runs it: each observation (one per reconcile of the
    cache, which re-applies the Job) downloads GIB_PER_STEP GiB of its volume's size, or a larger share
    when that would take more than MAX_DOWNLOAD_STEPS steps; Complete once all of it is there. Logical
    steps, never wall time. None for any other manifest."""
    spec = obj.get("spec") or {}
    manifest = (spec.get("forProvider") or {}).get("manifest")
    if not isinstance(manifest, dict) or (manifest.get("apiVersion"), manifest.get("kind")) != ("batch/v1", "Job"):
        return None
    size = claimed_gib(manifest, (spec.get("providerConfigRef") or {}).get("name"), of_kind)
    if not size:  # its volume is not there (yet): the pod waits for it
        return {**manifest, "status": {"active": 1, "ready": 0}}
    done = downloaded_gib(obj, of_kind)
    done = min(size, done + max(GIB_PER_STEP, -(-size // MAX_DOWNLOAD_STEPS)))
    metadata = {**(manifest.get("metadata") or {}), "annotations": {DOWNLOADED_ANNOTATION: str(done)}}
    if done < size:
        return {**manifest, "metadata": metadata, "status": {"active": 1, "ready": 1}}
    return {**manifest, "metadata": metadata, "status": {"succeeded": 1, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}}


def downloaded_gib(obj: Resource, of_kind: Callable[[str], list[Resource]]) -> int:
    """The GiB the Job downloaded by its last observation: its own status, else the stored Object's (a
    re-applied Object comes without its status)."""
    metadata = obj.get("metadata") or {}
    stored = [o for o in of_kind("Object") if (o.get("metadata") or {}).get("name") == metadata.get("name")
              and (o.get("metadata") or {}).get("namespace") == metadata.get("namespace")]
    for candidate in [obj, *stored]:
        manifest = observed_manifest(candidate)
        done = ((manifest.get("metadata") or {}).get("annotations") or {}).get(DOWNLOADED_ANNOTATION)
        if done:
            return int(done)
    return 0


def claimed_gib(job: Resource, cluster: str | None, of_kind: Callable[[str], list[Resource]]) -> int:
    """The GiB of the claim a Job's pod mounts, from the Object applying it on the same cluster (0: none, or
    not Bound yet: the pod waits for its volume)."""
    volumes = ((((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get("volumes")) or []
    claims = {(v.get("persistentVolumeClaim") or {}).get("claimName") for v in volumes}
    for other in of_kind("Object"):
        other_spec = other.get("spec") or {}
        claim = applied_manifest(other)
        reported = observed_manifest(other).get("status") or {}
        if claim.get("kind") == "PersistentVolumeClaim" and (claim.get("metadata") or {}).get("name") in claims \
                and (other_spec.get("providerConfigRef") or {}).get("name") == cluster and reported.get("phase") == "Bound":
            storage = str((((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage", "0"))
            return int(storage.removesuffix("Gi")) if storage.removesuffix("Gi").isdigit() else 0
    return 0


def missing_definition(spec: Resource, of_kind: Callable[[str], list[Resource]]) -> str | None:
    """Why an Object's manifest cannot be created on its cluster, for the kinds whose definitions the
    serving stack installs (the Inference Extension's): no Object on the same cluster applies the CRD
    that serves the manifest's group, version and kind. None when it can be, or for any other kind."""
    manifest = (spec.get("forProvider") or {}).get("manifest")
    if not isinstance(manifest, dict) or (manifest.get("apiVersion"), manifest.get("kind")) not in served_kinds():
        return None
    cluster = (spec.get("providerConfigRef") or {}).get("name")
    group, _, version = str(manifest["apiVersion"]).partition("/")
    for other in of_kind("Object"):
        crd = applied_manifest(other)
        if crd.get("kind") != "CustomResourceDefinition" or \
                ((other.get("spec") or {}).get("providerConfigRef") or {}).get("name") != cluster:
            continue
        crd_spec = crd.get("spec") or {}
        if crd_spec.get("group") == group and (crd_spec.get("names") or {}).get("kind") == manifest["kind"] and any(
                v.get("name") == version and v.get("served") for v in crd_spec.get("versions") or []):
            return None
    return (f'cannot create object: no matches for kind "{manifest["kind"]}" in version "{manifest["apiVersion"]}" '
            f"on cluster {cluster}: its serving stack does not install the CustomResourceDefinition")


def _is_gateway(manifest: object) -> bool:
    return isinstance(manifest, dict) and manifest.get("apiVersion") == gw.GATEWAY_API_VERSION and \
        manifest.get("kind") == "Gateway"


def _condition(type_: str, true: bool, reason: str) -> dict:
    return {"type": type_, "status": "True" if true else "False", "reason": reason, "message": ""}
