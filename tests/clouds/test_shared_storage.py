"""Each cloud's shared storage for ModelCache volumes: the StorageClass it puts on the workload cluster
(valid for Kubernetes, wrapped in a provider-kubernetes Object valid for its CRD, through a ProviderConfig
of the cloud cluster's own), the CSI driver that serves it (the cloud's, or a chart installed with the
cluster), the class its status reports, and the refusal of a cloud without any."""

import pytest

from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.clouds import CLOUD_MODULES
from inferplane.compose.base import Request
from inferplane.compose.cloud_cluster import compose_cloud_cluster
from kubernetes_schemas import schema_errors

SETTINGS = {"EKS": {"region": "us-east-1"}, "GKE": {"region": "us-central1", "project": "acme"},
            "AKS": {"location": "eastus"}, "Nebius": {}, "Vultr": {"region": "ewr"}, "Civo": {"region": "LON1"}}
MACHINES = {"EKS": {"instanceType": "m7i.xlarge"}, "GKE": {"machineType": "e2-standard-4"},
            "AKS": {"vmSize": "Standard_D4s_v5"}, "Nebius": {"platform": "cpu-d3", "preset": "4vcpu-16gb"},
            "Vultr": {"plan": "vc2-4c-8gb"}, "Civo": {"size": "g4s.kube.large"}}
# cloud -> (StorageClass, provisioner, parameters, volumeBindingMode)
CLASSES = {
    "EKS": ("inferplane-rwx-efs", "efs.csi.aws.com",
            {"provisioningMode": "efs-ap", "directoryPerms": "700", "fileSystemId": "fs-0123"}, "Immediate"),
    "GKE": ("inferplane-rwx-filestore", "filestore.csi.storage.gke.io",
            {"tier": "enterprise", "network": "<the composed network>"}, "Immediate"),
    "AKS": ("inferplane-rwx-azurefile-nfs", "file.csi.azure.com", {"skuName": "Premium_LRS", "protocol": "nfs"},
            "Immediate"),
    "Nebius": ("inferplane-rwx-fs", "mounted-fs-path.csi.nebius.ai", None, "WaitForFirstConsumer"),
}


def composite(cloud):
    kind = CLOUD_CLUSTER_KINDS[cloud]
    return {"apiVersion": kind.api_version_string(), "kind": kind.KIND, "metadata": {"name": "c1", "uid": "u1"},
            "spec": {**SETTINGS[cloud], "credentials": {"type": "ClusterProviderConfig", "name": "default"},
                     "nodePools": [{"name": "system", "role": "System", "nodeCount": 2,
                                    "machine": MACHINES[cloud]}]}}


def observed_for(cloud):
    """The EFS file system as the provider reports it once it exists: its id pins the class."""
    return {"efs-filesystem": {"status": {"atProvider": {"id": "fs-0123"}}}} if cloud == "EKS" else {}


@pytest.mark.parametrize("cloud", list(CLASSES))
def test_each_cloud_puts_its_storage_class_on_the_workload_cluster(crossplane_crds, cloud):
    response = compose_cloud_cluster(Request(composite(cloud), observed_for(cloud), {}))
    name, provisioner, parameters, binding = CLASSES[cloud]
    if cloud == "GKE":  # the composed Network, by its name (a managed resource's external name by default)
        parameters = {**parameters, "network": response.desired["network"].resource["metadata"]["name"]}
    assert response.status["cache"] == {"storageClassName": name}
    obj = response.desired["storage-class-rwx"].resource
    manifest = obj["spec"]["forProvider"]["manifest"]
    assert (manifest["metadata"]["name"], manifest["provisioner"], manifest.get("parameters"),
            manifest["volumeBindingMode"]) == (name, provisioner, parameters, binding)
    assert schema_errors([manifest], "1.36") == []
    # Never deleted on the cluster (it goes with it), through a provider config of the composite's own.
    assert "Delete" not in obj["spec"]["managementPolicies"]
    config = response.desired["storage-provider-config"].resource
    assert obj["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": config["metadata"]["name"]}
    assert config["spec"]["credentials"]["secretRef"] == {"name": "c1-connection", "namespace": "inferplane-system",
                                                          "key": "kubeconfig"}
    for resource in (obj, config):
        assert [f"{v.path}: {v.message}" for v in crossplane_crds.validate(resource)] == []


def test_the_efs_class_waits_for_the_file_systems_id():
    response = compose_cloud_cluster(Request(composite("EKS"), {}, {}))
    assert "storage-class-rwx" not in response.desired
    assert response.status["cache"] == {"storageClassName": "inferplane-rwx-efs"}
    storage = CLOUD_MODULES["EKS"].shared_storage(None, {})
    assert storage.waiting == "the EFS file system's id, which the provider reports once it exists"


def test_gke_enables_the_filestore_csi_driver_on_the_cluster(provider_crds):
    kind = CLOUD_CLUSTER_KINDS["GKE"]
    cluster = CLOUD_MODULES["GKE"].resources(kind.model_validate(composite("GKE")))["cluster"]
    assert cluster["spec"]["forProvider"]["addonsConfig"] == {"gcpFilestoreCsiDriverConfig": {"enabled": True}}
    assert provider_crds.violations(cluster) == []


def test_gke_enables_the_filestore_api_the_driver_provisions_through(provider_crds):
    response = compose_cloud_cluster(Request(composite("GKE"), {}, {}))
    service = response.desired["projectservice-filestore"].resource
    assert (service["kind"], service["spec"]["forProvider"]) == (
        "ProjectService", {"project": "acme", "service": "file.googleapis.com", "disableOnDestroy": False})
    assert provider_crds.violations(service) == []


# cloud -> what runs the CSI driver its StorageClass names: the cloud (a composed add-on, a cluster setting,
# built in) or a Helm chart inferplane installs on the workload cluster.
DRIVERS = {"EKS": ("addon-aws-efs-csi-driver", "Addon"), "GKE": ("cluster", "Cluster"), "AKS": None,
           "Nebius": ("release-csi-mounted-fs-path", "Release")}


@pytest.mark.parametrize("cloud", list(CLASSES))
def test_each_clouds_class_is_served_by_a_driver_that_runs_there(cloud):
    response = compose_cloud_cluster(Request(composite(cloud), observed_for(cloud), {}))
    releases = {k for k, d in response.desired.items() if d.resource["kind"] == "Release"}
    assert releases == ({"release-csi-mounted-fs-path"} if cloud == "Nebius" else set())
    if DRIVERS[cloud] is not None:  # AKS runs the Azure Files CSI driver built in
        key, kind = DRIVERS[cloud]
        assert response.desired[key].resource["kind"] == kind
    charts = {(c.provisioner, c.name) for c in getattr(CLOUD_MODULES[cloud], "storage_charts", ())}
    assert charts == ({(CLASSES[cloud][1], "csi-mounted-fs-path")} if cloud == "Nebius" else set())


@pytest.mark.parametrize("cloud", ["Vultr", "Civo"])
def test_a_cloud_without_shared_storage_composes_none_and_says_what_to_do(cloud):
    response = compose_cloud_cluster(Request(composite(cloud), {}, {}))
    assert "storage-class-rwx" not in response.desired and "cache" not in response.status
    refusal = CLOUD_MODULES[cloud].shared_storage(None).refusal
    assert refusal.startswith(f"{cloud} clusters have no ReadWriteMany storage inferplane can compose")
    assert "leave" in refusal and "clusterSelector" in refusal
