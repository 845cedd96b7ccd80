"""Cloud cluster composition: the module's resources, readiness from observed state, the Ready condition."""

import json

import pytest

from inferplane.api.cloud import PROVIDERS
from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.clouds import CLOUD_MODULES
from inferplane.compose.base import Condition, Desired, Request
from inferplane.compose.cloud_cluster import compose_cloud_cluster

SETTINGS = {
    "EKS": {"region": "us-east-1", "roleArn": "arn:aws:iam::1:role/c", "nodeRoleArn": "arn:aws:iam::1:role/n",
            "subnetIds": ["subnet-a"]},
    "GKE": {"region": "us-central1"},
    "AKS": {"location": "eastus", "resourceGroupName": "inference"},
    "Nebius": {"parentId": "project-e00abc", "subnetId": "vpcsubnet-e00abc"},
    "Vultr": {"region": "ewr"},
    "Civo": {"region": "LON1"},
}
GPU_MACHINE = {"EKS": {"instanceType": "g6.xlarge"}, "GKE": {"machineType": "g2-standard-8"},
               "AKS": {"vmSize": "Standard_NC24ads_A100_v4"},
               "Nebius": {"platform": "gpu-h100-sxm", "preset": "1gpu-16vcpu-200gb"},
               "Vultr": {"plan": "vcg-l40s-16c-180g-48vram"}, "Civo": {"size": "an.g1.l40s.kube.x1"}}


def composite(cloud, name="c1", **spec):
    kind = CLOUD_CLUSTER_KINDS[cloud]
    gpu = {"name": "gpu", "role": "GPU", "nodeCount": 1, "machine": GPU_MACHINE[cloud]}
    body = {**SETTINGS[cloud], "nodePools": [CLOUD_MODULES[cloud].system_pool(), gpu], **spec}
    return {"apiVersion": kind.api_version_string(), "kind": kind.KIND, "metadata": {"name": name}, "spec": body}


def ready(status="True", **at_provider):
    out = {"status": {"conditions": [{"type": "Ready", "status": status, "reason": "Available"}]}}
    if at_provider:
        out["status"]["atProvider"] = at_provider
    return out


def compose(cloud, observed=None, **kw):
    return compose_cloud_cluster(Request(composite=composite(cloud, **kw), observed=observed or {}))


def keys(cloud):
    """The cluster and pool keys; the foundation's (network, identities, addons) follow them."""
    return ["cluster", "nodepool-gpu"] if cloud in ("AKS", "Vultr", "Civo") else \
        ["cluster", "nodepool-system", "nodepool-gpu"]


# The EKS foundation of SETTINGS["EKS"], whose roles and subnets are the user's own.
EKS_FOUNDATION = ["addon-vpc-cni", "addon-kube-proxy", "addon-coredns", "addon-eks-pod-identity-agent",
                  "cluster-auth", "efs-filesystem", "efs-mount-target-0", "iam-role-efs-csi",
                  "iam-attach-efs-csi-policy", "pod-identity-efs-csi", "addon-aws-efs-csi-driver"]


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_desired_are_the_modules_resources(cloud):
    response = compose(cloud)
    model = CLOUD_CLUSTER_KINDS[cloud].model_validate(composite(cloud))
    expected = CLOUD_MODULES[cloud].resources(model)
    # Beside the cloud's resources: the StorageClass of its shared storage, on the workload cluster, and
    # the CSI driver's Release where a chart installs it (Nebius).
    storage = {k: d.resource for k, d in response.desired.items()
               if k in ("storage-class-rwx", "storage-provider-config", "storage-provider-config-helm",
                        "release-csi-mounted-fs-path")}
    assert {k: d.resource for k, d in response.desired.items() if k not in storage} == expected
    assert list(response.desired)[:len(keys(cloud))] == keys(cloud)
    assert response.requirements == {} and response.events == []


def test_eks_desires_its_foundation_after_the_cluster_and_pools():
    assert list(compose("EKS").desired) == keys("EKS") + EKS_FOUNDATION


# (observed keys that are ready on EKS, what the Ready condition says is not ready yet; None: all ready)
READINESS = [
    ([], "Cluster c1, NodeGroup c1-system-33ef50e4845a, NodeGroup c1-gpu-1af500eb1109"),
    (["cluster"], "NodeGroup c1-system-33ef50e4845a, NodeGroup c1-gpu-1af500eb1109"),
    (["cluster", "nodepool-system"], "NodeGroup c1-gpu-1af500eb1109"),
    (["nodepool-system", "nodepool-gpu"], "Cluster c1"),
    (["cluster", "nodepool-system", "nodepool-gpu"], None),
]


@pytest.mark.parametrize("ready_keys,waiting", READINESS, ids=lambda v: "+".join(v) if isinstance(v, list) else "")
def test_readiness_and_ready_condition(ready_keys, waiting):
    response = compose("EKS", {k: ready() for k in ready_keys + EKS_FOUNDATION})
    assert {k: d.ready for k, d in response.desired.items()} == \
        {**{k: k in ready_keys for k in keys("EKS")}, **{k: True for k in EKS_FOUNDATION}}
    if waiting:
        expected = Condition("Ready", "False", "Creating",
                             f"EKS cluster c1 is being provisioned; not ready yet: {waiting}")
    else:
        expected = Condition("Ready", "True", "Available", "EKS cluster c1 and its pools are ready")
    assert response.conditions == [expected]


def test_an_inline_system_pool_is_ready_with_its_cluster():
    response = compose("Civo", {"cluster": ready(), "nodepool-gpu": ready()})
    assert response.condition("Ready").status == "True"


def test_a_resource_observed_not_ready_is_not_ready():
    observed = {"cluster": ready("False"), "nodepool-system": ready(), "nodepool-gpu": ready(), "network": ready()}
    response = compose("GKE", observed)
    assert response.desired["cluster"].ready is False
    assert response.condition("Ready").message == \
        "GKE cluster c1 is being provisioned; not ready yet: Cluster c1, Subnetwork c1-subnetwork-d0864b07212b, " \
        "ProjectService c1-projectservice-filestore-75fb79b2860b, ServiceAccount c1-service-account-21e1746fcded"


def test_gke_grants_the_node_account_its_roles_once_it_reports_its_email():
    # SETTINGS["GKE"] names no project: the account's email, read back, says which.
    assert not any(k.startswith("iam-member") for k in compose("GKE").desired)
    email = "c1-service-account@acme-ml.iam.gserviceaccount.com"
    desired = compose("GKE", {"service-account": ready(email=email)}).desired
    assert [k for k in desired if k.startswith("iam-member")] == ["iam-member-node", "iam-member-registry"]
    assert desired["iam-member-node"].resource["spec"]["forProvider"] == {
        "project": "acme-ml", "role": "roles/container.defaultNodeServiceAccount", "member": f"serviceAccount:{email}"}


def test_an_efa_pool_held_for_its_security_group_keeps_the_cluster_from_ready():
    efa = {"name": "efa", "role": "GPU", "nodeCount": 1, "machine": {"instanceType": "p5.48xlarge"},
           "fabric": {"type": "EFA"}}
    pools = [CLOUD_MODULES["EKS"].system_pool(), efa]
    observed = {k: ready() for k in ["cluster", "nodepool-system"] + EKS_FOUNDATION}
    response = compose("EKS", observed, nodePools=pools)
    assert "nodepool-efa" not in response.desired
    assert response.condition("Ready") == Condition(
        "Ready", "False", "Creating", "EKS cluster c1 is being provisioned; not ready yet: pool efa (waits for the "
        "cluster's security group ids, which the provider reports once the cluster and the EFA security group exist)")
    # A pool already running when it turns to EFA keeps running while it waits.
    running = {"apiVersion": "eks.aws.m.upbound.io/v1beta1", "kind": "NodeGroup",
               "metadata": {"name": "c1-efa-0", "namespace": "inferplane-system"},
               "spec": {"forProvider": {"instanceTypes": ["p5.48xlarge"]}}, **ready()}
    kept = compose("EKS", {**observed, "nodepool-efa": running}, nodePools=pools).desired["nodepool-efa"]
    assert kept.resource == {k: v for k, v in running.items() if k != "status"} and kept.ready
    # The user's subnets: no EFA security group; the cluster's, once reported, is all it waits for.
    observed["cluster"] = ready(vpcConfig={"clusterSecurityGroupId": "sg-0c"})
    response = compose("EKS", observed, nodePools=pools)
    assert response.desired["nodepool-efa"].resource["spec"]["forProvider"]["launchTemplate"]["version"] == "$Latest"
    assert "launch-template-efa" in response.desired


@pytest.mark.parametrize("cloud,at_provider,endpoint", [
    ("EKS", {"endpoint": "https://eks.example"}, "https://eks.example"),
    ("AKS", {"fqdn": "c1-abc.hcp.eastus.azmk8s.io"}, "c1-abc.hcp.eastus.azmk8s.io"),
    ("Civo", {"apiEndpoint": "https://civo.example:6443"}, "https://civo.example:6443"),
    ("Nebius", {}, None),
])
def test_endpoint_status(cloud, at_provider, endpoint):
    response = compose(cloud, {"cluster": ready(**at_provider)} if at_provider else {"cluster": ready()})
    storage = CLOUD_MODULES[cloud].shared_storage(None).storage_class if cloud in ("AKS", "Nebius") else \
        "inferplane-rwx-efs" if cloud == "EKS" else None
    cache = {"cache": {"storageClassName": storage}} if storage else {}
    assert response.status == ({"endpoint": endpoint} if endpoint else {}) | cache


def test_whole_response_for_a_ready_vultr_cluster():
    observed = {"cluster": ready(endpoint="https://vke.example"), "nodepool-gpu": ready()}
    response = compose("Vultr", observed, kubernetesVersion="v1.36.2+1")
    pool_ref = {"kind": "ClusterProviderConfig", "name": "default"}
    assert response.desired == {
        "cluster": Desired({
            "apiVersion": "vke.vultr.m.upbound.io/v1beta1", "kind": "Kubernetes",
            "metadata": {"name": "c1", "namespace": "inferplane-system"},
            "spec": {"forProvider": {"label": "c1", "region": "ewr", "version": "v1.36.2+1",
                                     "nodePools": {"label": "system", "plan": "vc2-4c-8gb", "nodeQuantity": 2,
                                                   "labels": [{"key": "inferplane.dev/pool", "value": "system"}]}},
                     "providerConfigRef": pool_ref, "writeConnectionSecretToRef": {"name": "c1-connection"}}},
            ready=True),
        "nodepool-gpu": Desired({
            "apiVersion": "vke.vultr.m.upbound.io/v1beta1", "kind": "KubernetesNodePool",
            "metadata": {"name": "c1-gpu-1af500eb1109", "namespace": "inferplane-system"},
            "spec": {"forProvider": {"clusterIdRef": {"name": "c1"}, "label": "gpu",
                                     "plan": "vcg-l40s-16c-180g-48vram", "nodeQuantity": 1},
                     "providerConfigRef": pool_ref}},
            ready=True),
    }
    assert response.status == {"endpoint": "https://vke.example"}
    assert response.conditions == [Condition("Ready", "True", "Available", "Vultr cluster c1 and its pools are ready")]


# ---- a composite the function cannot read keeps what it composed


def observed_resources(cloud):
    desired = compose(cloud).desired
    out = {}
    for key, d in desired.items():
        resource = json.loads(json.dumps(d.resource))
        resource["metadata"].update(uid=f"uid-{key}", resourceVersion="7")
        resource["status"] = ready()["status"]
        out[key] = resource
    return out


def test_an_invalid_spec_keeps_every_composed_resource():
    observed = observed_resources("EKS")
    bad = composite("EKS")
    bad["spec"]["nodePools"][1]["role"] = "TPU"
    response = compose_cloud_cluster(Request(composite=bad, observed=observed))
    # As composed: what the API server added (uid, resourceVersion, status) is not re-declared.
    assert {k: d.resource for k, d in response.desired.items()} == \
        {k: d.resource for k, d in compose("EKS").desired.items()}
    assert all(d.ready for d in response.desired.values())
    condition = response.condition("Ready")
    assert (condition.status, condition.reason) == ("False", "InvalidSpec")
    assert condition.message.startswith("EKSCluster c1 is invalid: spec.nodePools.1.role: ")
    assert condition.message.endswith(": fix the spec")


def test_an_invalid_new_composite_composes_nothing():
    bad = composite("GKE")
    del bad["spec"]["region"]
    response = compose_cloud_cluster(Request(composite=bad))
    assert response.desired == {}
    assert response.condition("Ready").reason == "InvalidSpec"
    assert "spec.region: Field required" in response.condition("Ready").message


def test_an_unknown_kind_is_a_condition():
    response = compose_cloud_cluster(Request(composite={"apiVersion": "infrastructure.inferplane.dev/v1alpha1",
                                                        "kind": "ExistingCluster", "metadata": {"name": "c1"}}))
    assert response.desired == {}
    assert response.conditions == [Condition(
        "Ready", "False", "UnknownKind",
        "ExistingCluster c1 is not a cloud cluster kind: use one of AKSCluster, CivoCluster, EKSCluster, "
        "GKECluster, NebiusCluster, VultrCluster")]


# ---- determinism


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_same_request_same_response(cloud):
    observed = {"cluster": ready()}

    def dump(response):
        return json.dumps({"desired": {k: [d.resource, d.ready] for k, d in response.desired.items()},
                           "status": response.status, "conditions": [c.to_dict() for c in response.conditions]})

    assert dump(compose(cloud, observed)) == dump(compose(cloud, observed))


def test_the_request_is_not_modified():
    request = Request(composite=composite("AKS"), observed=observed_resources("AKS"))
    before = json.dumps([request.composite, request.observed], sort_keys=True)
    compose_cloud_cluster(request)
    assert json.dumps([request.composite, request.observed], sort_keys=True) == before


# ---- Nebius: the CSI driver that serves its shared filesystem, installed with the cluster


def test_nebius_installs_the_csi_driver_its_storage_class_names(crossplane_crds):
    gpu_taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    cpu = {"name": "cpu", "role": "CPU", "nodeCount": 1, "machine": {"platform": "cpu-d3", "preset": "8vcpu-32gb"},
           "taints": [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NoSchedule"}]}
    pools = [CLOUD_MODULES["Nebius"].system_pool(),
             {"name": "gpu", "role": "GPU", "nodeCount": 1, "machine": GPU_MACHINE["Nebius"], "taints": [gpu_taint]}, cpu]
    response = compose("Nebius", nodePools=pools)
    config = "c1-storage-provider-config-462e7ff6c574"
    release = response.desired["release-csi-mounted-fs-path"]
    assert release.resource == {
        "apiVersion": "helm.m.crossplane.io/v1beta1", "kind": "Release",
        "metadata": {"name": "c1-release-csi-mounted-fs-path-706b625f0dcf", "namespace": "inferplane-system",
                     "annotations": {"crossplane.io/external-name": "csi-mounted-fs-path"}},
        "spec": {"providerConfigRef": {"kind": "ClusterProviderConfig", "name": config},
                 "managementPolicies": ["Observe", "Create", "Update", "LateInitialize"],
                 "forProvider": {
                     "chart": {"name": "csi-mounted-fs-path", "repository": "oci://cr.eu-north1.nebius.cloud/mk8s/helm",
                               "version": "0.1.6"},
                     "namespace": "kube-system",
                     # The node plugin runs on every pool engines mount cache volumes on, whatever its taint.
                     "values": {"dataDir": "/mnt/data/csi-mounted-fs-path-data/", "tolerations": [
                         {"key": "inferplane.dev/cpu", "operator": "Exists", "effect": "NoSchedule"},
                         {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}}}
    assert release.ready is False  # until provider-helm reports it installed
    # Through the cluster's own kubeconfig, as the StorageClass, whose provisioner is the driver the chart runs.
    helm = response.desired["storage-provider-config-helm"].resource
    assert helm["apiVersion"] == "helm.m.crossplane.io/v1beta1" and helm["metadata"]["name"] == config
    assert helm["spec"]["credentials"]["secretRef"] == {"name": "c1-connection", "namespace": "inferplane-system",
                                                        "key": "kubeconfig"}
    manifest = response.desired["storage-class-rwx"].resource["spec"]["forProvider"]["manifest"]
    assert manifest["provisioner"] == "mounted-fs-path.csi.nebius.ai"
    for key in ("release-csi-mounted-fs-path", "storage-provider-config-helm", "storage-provider-config"):
        assert [str(v) for v in crossplane_crds.validate(response.desired[key].resource)] == [], key
    assert compose("Nebius", {"release-csi-mounted-fs-path": ready()}).desired["release-csi-mounted-fs-path"].ready


def test_a_storage_chart_value_the_chart_may_not_take_installs_nothing_and_publishes_no_class(monkeypatch):
    from inferplane.clouds import nebius

    monkeypatch.setattr(nebius, "NEBIUS_CSI_DATA_DIR", 7)  # a number where Modelplane sets a string
    response = compose("Nebius")
    assert "release-csi-mounted-fs-path" not in response.desired and "cache" not in response.status
    (event,) = response.events
    assert (event.type, event.reason) == ("Warning", "InvalidChartValues")
    assert event.message.startswith("the shared storage of cluster c1 is not installed: chart csi-mounted-fs-path "
                                    "0.1.6: `dataDir` is a number, but the chart's default is a string")


def test_an_invalid_nebius_spec_keeps_the_cloud_init_secret_as_composed():
    observed = observed_resources("Nebius")
    bad = composite("Nebius")
    bad["spec"]["nodePools"][1]["role"] = "TPU"
    response = compose_cloud_cluster(Request(composite=bad, observed=observed))
    secret = response.desired["cloud-init"].resource
    assert secret == compose("Nebius").desired["cloud-init"].resource and secret["data"]["userData"]
