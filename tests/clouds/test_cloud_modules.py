"""Cloud modules: the whole composed output per cloud, pool shapes, formats, CRD validation."""

import json

import pytest
from pydantic import ValidationError
from hypothesis import given, settings
from hypothesis import strategies as st

from inferplane.api.drivers import CPU, CPU_LABEL, NVIDIA_GPU, POOL_LABEL
from inferplane.api.cloud import PROVIDERS, SOURCES
from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.clouds import CLOUD_MODULES
from inferplane.clouds.kubernetes_version import minor

NS = "inferplane-system"
GPU_TAINT = NVIDIA_GPU.pool_taint.to_dict()
CPU_TAINT = CPU.pool_taint.to_dict()
GPU_LABELS = {POOL_LABEL: "gpu", **NVIDIA_GPU.node_labels}
CPU_LABELS = {POOL_LABEL: "cpu", CPU_LABEL: "true"}
SYSTEM_LABELS = {POOL_LABEL: "system"}

# Each cloud's settings (every optional one set, to show it passed through), a GPU machine, a CPU
# machine and a zone.
CLOUDS = {
    "EKS": ({"region": "us-east-1", "roleArn": "arn:aws:iam::111122223333:role/eks-cluster",
             "nodeRoleArn": "arn:aws:iam::111122223333:role/eks-nodes", "subnetIds": ["subnet-a", "subnet-b"]},
            {"instanceType": "g6.xlarge", "diskSizeGb": 200, "accelerator": {"type": "nvidia-l4", "count": 1}},
            {"instanceType": "m7i.2xlarge"}, "us-east-1a"),
    "GKE": ({"project": "acme-ml", "region": "us-central1"},
            {"machineType": "g2-standard-8", "diskSizeGb": 200, "accelerator": {"type": "nvidia-l4", "count": 1}},
            {"machineType": "c4-standard-8"}, "us-central1-a"),
    "AKS": ({"location": "eastus", "resourceGroupName": "inference"},
            {"vmSize": "Standard_NC24ads_A100_v4", "diskSizeGb": 200}, {"vmSize": "Standard_D8s_v5"}, "1"),
    "Nebius": ({"parentId": "project-e00abc", "subnetId": "vpcsubnet-e00abc"},
               {"platform": "gpu-h100-sxm", "preset": "1gpu-16vcpu-200gb", "diskSizeGb": 200},
               {"platform": "cpu-d3", "preset": "8vcpu-32gb"}, "eu-north1-a"),
    "Vultr": ({"region": "ewr"}, {"plan": "vcg-l40s-16c-180g-48vram"}, {"plan": "voc-c-8c-16gb-150s-amd"}, "ewr-1"),
    "Civo": ({"region": "LON1", "firewallId": "fw-1", "networkId": "net-1"}, {"size": "an.g1.l40s.kube.x1"},
             {"size": "g4p.kube.medium"}, "lon1-a"),
}


def gpu_pool(cloud, zones=True, bounds=True):
    pool = {"name": "gpu", "role": "GPU", "nodeCount": 2, "labels": dict(GPU_LABELS), "taints": [dict(GPU_TAINT)],
            "machine": CLOUDS[cloud][1]}
    if bounds:
        pool.update(minNodeCount=1, maxNodeCount=4)
    if zones:
        pool["zones"] = [CLOUDS[cloud][3]]
    return pool


def cpu_pool(cloud):
    return {"name": "cpu", "role": "CPU", "nodeCount": 1, "labels": dict(CPU_LABELS), "taints": [dict(CPU_TAINT)],
            "machine": CLOUDS[cloud][2]}


def cluster(cloud, *pools, version=None, config="creds", name="c1"):
    kind = CLOUD_CLUSTER_KINDS[cloud]
    spec = {**CLOUDS[cloud][0], "credentials": {"name": config}, "nodePools": list(pools)}
    if version:
        spec["kubernetesVersion"] = version
    return kind.model_validate({"apiVersion": kind.api_version_string(), "kind": kind.KIND,
                                "metadata": {"name": name}, "spec": spec})


def system(cloud):
    return CLOUD_MODULES[cloud].system_pool()


def compose(cloud, *pools, **kw):
    return CLOUD_MODULES[cloud].resources(cluster(cloud, *pools, **kw))


def external(pool):
    """The annotation naming a pool on clouds that show its name and scope it to its cluster."""
    return {"crossplane.io/external-name": pool}


def cluster_and_pools(cloud, *pools, **kw):
    """The cluster and pool resources, without the foundation (tests/clouds/test_foundations.py)."""
    return {k: v for k, v in compose(cloud, *pools, **kw).items() if k == "cluster" or k.startswith("nodepool-")}


def mr(api_version, kind, name, *args, init=None, annotations=None, connection=False):
    """A managed resource: mr(api, kind, name, [annotations,] forProvider)."""
    *leading, for_provider = args
    if leading:
        annotations, = leading
    metadata = {"name": name, "namespace": NS}
    if annotations:
        metadata["annotations"] = annotations
    spec = {"forProvider": for_provider}
    if init:
        spec["initProvider"] = init
    spec["providerConfigRef"] = {"kind": "ClusterProviderConfig", "name": "creds"}
    if connection:
        spec["writeConnectionSecretToRef"] = {"name": f"{name}-connection"}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


# ---- the whole output, per cloud, for a System pool + an autoscaled zonal GPU pool + a fixed CPU pool

EKS_API = "eks.aws.m.upbound.io/v1beta1"
EKS_POOL = {"clusterNameRef": {"name": "c1"}, "region": "us-east-1",
            "nodeRoleArn": "arn:aws:iam::111122223333:role/eks-nodes", "subnetIds": ["subnet-a", "subnet-b"]}
GKE_API = "container.gcp.m.upbound.io/v1beta1"
GKE_POOL = {"clusterRef": {"name": "c1"}, "location": "us-central1", "project": "acme-ml"}
AKS_API = "containerservice.azure.m.upbound.io/v1beta1"
NEBIUS_API = "mk8s.nebius.m.upbound.io/v1beta1"
VULTR_API = "vke.vultr.m.upbound.io/v1beta1"
CIVO_API = "kubernetes.civo.m.upbound.io/v1beta1"
# What the foundations add to clusters and pools (tests/clouds/test_foundations.py has the rest).
GKE_NODE_ACCOUNT = {"serviceAccountRef": {"name": "c1-service-account-21e1746fcded"},
                    "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]}
AKS_NETWORK = {"networkPlugin": "azure", "networkPluginMode": "overlay", "podCidr": "10.244.0.0/16",
               "serviceCidr": "10.96.0.0/16", "dnsServiceIp": "10.96.0.10"}
NEBIUS_TEMPLATE = {"networkInterfaces": [{"subnetId": "vpcsubnet-e00abc"}],
                   "filesystems": [{"attachMode": "READ_WRITE", "mountTag": "inferplane-cache",
                                    "existingFilesystem": {"idRef": {"name": "c1-filesystem-0f9e5826c1fa"}}}],
                   # cloud-init mounts the filesystem on every node (the foundation's Secret).
                   "cloudInitUserDataSecretRef": {"name": "c1-cloud-init-6c86d2f43c45", "key": "userData"}}

EXPECTED = {
    "EKS": {
        "cluster": mr(EKS_API, "Cluster", "c1", {
            "region": "us-east-1", "version": "1.36",
            "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP",
                             "bootstrapClusterCreatorAdminPermissions": True},
            "vpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]},
            "roleArn": "arn:aws:iam::111122223333:role/eks-cluster"}),
        "nodepool-system": mr(EKS_API, "NodeGroup", "c1-system-33ef50e4845a", external("system"), {
            **EKS_POOL, "instanceTypes": ["m7i.xlarge"], "diskSize": 100, "amiType": "AL2023_x86_64_STANDARD",
            "scalingConfig": {"desiredSize": 2, "minSize": 2, "maxSize": 2}, "labels": SYSTEM_LABELS}),
        "nodepool-gpu": mr(EKS_API, "NodeGroup", "c1-gpu-1af500eb1109", external("gpu"), {
            **EKS_POOL, "instanceTypes": ["g6.xlarge"], "diskSize": 200, "amiType": "AL2023_x86_64_NVIDIA",
            "scalingConfig": {"minSize": 1, "maxSize": 4}, "labels": GPU_LABELS,
            "taint": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]},
            init={"scalingConfig": {"desiredSize": 2}}),
        "nodepool-cpu": mr(EKS_API, "NodeGroup", "c1-cpu-f49cefed1434", external("cpu"), {
            **EKS_POOL, "instanceTypes": ["m7i.2xlarge"], "diskSize": 100, "amiType": "AL2023_x86_64_STANDARD",
            "scalingConfig": {"desiredSize": 1, "minSize": 1, "maxSize": 1}, "labels": CPU_LABELS,
            "taint": [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NO_SCHEDULE"}]}),
    },
    "GKE": {
        "cluster": mr(GKE_API, "Cluster", "c1", {
            "location": "us-central1", "project": "acme-ml", "minMasterVersion": "1.36",
            "removeDefaultNodePool": True, "initialNodeCount": 1, "deletionProtection": False,
            "addonsConfig": {"gcpFilestoreCsiDriverConfig": {"enabled": True}},
            "networkRef": {"name": "c1-network-800fb7271103"}, "subnetworkRef": {"name": "c1-subnetwork-d0864b07212b"},
            "ipAllocationPolicy": {"clusterSecondaryRangeName": "pods", "servicesSecondaryRangeName": "services"}},
            connection=True),
        "nodepool-system": mr(GKE_API, "NodePool", "c1-system-33ef50e4845a", external("system"), {
            **GKE_POOL, "nodeCount": 2, "nodeConfig": {
                "machineType": "e2-standard-4", "diskSizeGb": 100, "imageType": "COS_CONTAINERD",
                "labels": SYSTEM_LABELS, **GKE_NODE_ACCOUNT}}),
        "nodepool-gpu": mr(GKE_API, "NodePool", "c1-gpu-1af500eb1109", external("gpu"), {
            **GKE_POOL, "autoscaling": {"minNodeCount": 1, "maxNodeCount": 4}, "nodeConfig": {
                "machineType": "g2-standard-8", "diskSizeGb": 200, "imageType": "COS_CONTAINERD",
                "guestAccelerator": [{"type": "nvidia-l4", "count": 1,
                                      "gpuDriverInstallationConfig": {"gpuDriverVersion": "INSTALLATION_DISABLED"}}],
                "labels": {**GPU_LABELS, "gke-no-default-nvidia-gpu-device-plugin": "true"},
                "taint": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}], **GKE_NODE_ACCOUNT},
            "nodeLocations": ["us-central1-a"]},
            init={"initialNodeCount": 2}),
        "nodepool-cpu": mr(GKE_API, "NodePool", "c1-cpu-f49cefed1434", external("cpu"), {
            **GKE_POOL, "nodeCount": 1, "nodeConfig": {
                "machineType": "c4-standard-8", "diskSizeGb": 100, "imageType": "COS_CONTAINERD",
                "labels": CPU_LABELS,
                "taint": [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NO_SCHEDULE"}],
                **GKE_NODE_ACCOUNT}}),
    },
    "AKS": {
        "cluster": mr(AKS_API, "KubernetesCluster", "c1", {
            "location": "eastus", "kubernetesVersion": "1.36", "dnsPrefix": "c1",
            "identity": {"type": "SystemAssigned"},
            "defaultNodePool": {"name": "system", "vmSize": "Standard_D4s_v5", "osDiskSizeGb": 100, "nodeCount": 2,
                                "nodeLabels": SYSTEM_LABELS, "vnetSubnetIdRef": {"name": "c1-subnet-3452b590c298"}},
            "resourceGroupName": "inference", "networkProfile": AKS_NETWORK, "nodeResourceGroup": "c1-nodes"},
            connection=True),
        "nodepool-gpu": mr(AKS_API, "KubernetesClusterNodePool", "c1-gpu-1af500eb1109", {
            "kubernetesClusterIdRef": {"name": "c1"}, "mode": "User", "nodeTaints": ["nvidia.com/gpu=true:NoSchedule"],
            "vmSize": "Standard_NC24ads_A100_v4", "osDiskSizeGb": 200, "autoScalingEnabled": True, "minCount": 1,
            "maxCount": 4, "nodeLabels": GPU_LABELS, "zones": ["1"], "gpuDriver": "Install",
            "vnetSubnetIdRef": {"name": "c1-subnet-3452b590c298"}},
            init={"nodeCount": 2}, annotations={"crossplane.io/external-name": "gpu"}),
        "nodepool-cpu": mr(AKS_API, "KubernetesClusterNodePool", "c1-cpu-f49cefed1434", {
            "kubernetesClusterIdRef": {"name": "c1"}, "mode": "User",
            "nodeTaints": ["inferplane.dev/cpu=true:NoSchedule"], "vmSize": "Standard_D8s_v5", "osDiskSizeGb": 100,
            "nodeCount": 1, "nodeLabels": CPU_LABELS, "vnetSubnetIdRef": {"name": "c1-subnet-3452b590c298"}},
            annotations={"crossplane.io/external-name": "cpu"}),
    },
    "Nebius": {
        "cluster": mr(NEBIUS_API, "Cluster", "c1", {
            "name": "c1", "parentId": "project-e00abc",
            "controlPlane": {"version": "1.36", "endpoints": {"publicEndpoint": {}}, "subnetId": "vpcsubnet-e00abc"}},
            connection=True),
        "nodepool-system": mr(NEBIUS_API, "NodeGroup", "c1-system-33ef50e4845a", {
            "parentIdRef": {"name": "c1"}, "name": "system", "fixedNodeCount": 2, "template": {
                "resources": {"platform": "cpu-d3", "preset": "4vcpu-16gb"},
                "bootDisk": {"sizeGibibytes": 100, "type": "NETWORK_SSD"},
                "metadata": {"labels": SYSTEM_LABELS}, **NEBIUS_TEMPLATE}}),
        "nodepool-gpu": mr(NEBIUS_API, "NodeGroup", "c1-gpu-1af500eb1109", {
            "parentIdRef": {"name": "c1"}, "name": "gpu", "autoscaling": {"minNodeCount": 1, "maxNodeCount": 4},
            "template": {
                "resources": {"platform": "gpu-h100-sxm", "preset": "1gpu-16vcpu-200gb"},
                "bootDisk": {"sizeGibibytes": 200, "type": "NETWORK_SSD"},
                "metadata": {"labels": GPU_LABELS},
                "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}],
                "gpuSettings": {"driversPreset": "cuda13.0"}, **NEBIUS_TEMPLATE}}),
        "nodepool-cpu": mr(NEBIUS_API, "NodeGroup", "c1-cpu-f49cefed1434", {
            "parentIdRef": {"name": "c1"}, "name": "cpu", "fixedNodeCount": 1, "template": {
                "resources": {"platform": "cpu-d3", "preset": "8vcpu-32gb"},
                "bootDisk": {"sizeGibibytes": 100, "type": "NETWORK_SSD"},
                "metadata": {"labels": CPU_LABELS},
                "taints": [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NO_SCHEDULE"}],
                **NEBIUS_TEMPLATE}}),
    },
    "Vultr": {
        "cluster": mr(VULTR_API, "Kubernetes", "c1", {
            "label": "c1", "region": "ewr", "version": "v1.36.1+3",
            "nodePools": {"label": "system", "plan": "vc2-4c-8gb", "nodeQuantity": 2,
                          "labels": [{"key": "inferplane.dev/pool", "value": "system"}]}}, connection=True),
        "nodepool-gpu": mr(VULTR_API, "KubernetesNodePool", "c1-gpu-1af500eb1109", {
            "clusterIdRef": {"name": "c1"}, "label": "gpu", "plan": "vcg-l40s-16c-180g-48vram", "autoScaler": True,
            "minNodes": 1, "maxNodes": 4,
            "labels": [{"key": "inferplane.dev/pool", "value": "gpu"}, {"key": "nvidia.com/gpu.present", "value": "true"}],
            "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
            init={"nodeQuantity": 2}),
        "nodepool-cpu": mr(VULTR_API, "KubernetesNodePool", "c1-cpu-f49cefed1434", {
            "clusterIdRef": {"name": "c1"}, "label": "cpu", "plan": "voc-c-8c-16gb-150s-amd", "nodeQuantity": 1,
            "labels": [{"key": "inferplane.dev/cpu", "value": "true"}, {"key": "inferplane.dev/pool", "value": "cpu"}],
            "taints": [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NoSchedule"}]}),
    },
    "Civo": {
        "cluster": mr(CIVO_API, "Cluster", "c1", {
            "name": "c1", "region": "LON1", "kubernetesVersion": "1.36", "firewallId": "fw-1", "networkId": "net-1",
            "pools": {"label": "system", "size": "g4s.kube.large", "nodeCount": 2, "labels": SYSTEM_LABELS}},
            connection=True),
        "nodepool-gpu": mr(CIVO_API, "NodePool", "c1-gpu-1af500eb1109", {
            "clusterIdRef": {"name": "c1"}, "region": "LON1", "label": "gpu", "size": "an.g1.l40s.kube.x1",
            "nodeCount": 2, "labels": GPU_LABELS,
            "taint": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}),
        "nodepool-cpu": mr(CIVO_API, "NodePool", "c1-cpu-f49cefed1434", {
            "clusterIdRef": {"name": "c1"}, "region": "LON1", "label": "cpu", "size": "g4p.kube.medium",
            "nodeCount": 1, "labels": CPU_LABELS,
            "taint": [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NoSchedule"}]}),
    },
}
# The clouds whose cluster resource holds the System pool inline (it has no resource of its own).
INLINE = {"AKS", "Vultr", "Civo"}


def only(expected, *keys):
    return {k: v for k, v in expected.items() if k in keys}


def system_keys(cloud):
    return ("cluster",) if cloud in INLINE else ("cluster", "nodepool-system")


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_system_gpu_and_cpu_pools(cloud):
    assert cluster_and_pools(cloud, system(cloud), gpu_pool(cloud), cpu_pool(cloud)) == EXPECTED[cloud]


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_system_and_gpu_pool(cloud):
    assert cluster_and_pools(cloud, system(cloud), gpu_pool(cloud)) == only(EXPECTED[cloud], *system_keys(cloud), "nodepool-gpu")


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_system_and_cpu_pool(cloud):
    assert cluster_and_pools(cloud, system(cloud), cpu_pool(cloud)) == only(EXPECTED[cloud], *system_keys(cloud), "nodepool-cpu")


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_keys_follow_the_pools_in_order(cloud):
    assert list(cluster_and_pools(cloud, system(cloud), cpu_pool(cloud), gpu_pool(cloud))) == \
        [*system_keys(cloud), "nodepool-cpu", "nodepool-gpu"]


# ---- zones: set only when the pool has some, on the clouds whose pools have a zone field

ZONE_FIELD = {"GKE": "nodeLocations", "AKS": "zones"}


@pytest.mark.parametrize("cloud", PROVIDERS)
@pytest.mark.parametrize("zones", [True, False], ids=["zones", "no-zones"])
def test_zones(cloud, zones):
    pool = compose(cloud, system(cloud), gpu_pool(cloud, zones=zones))["nodepool-gpu"]["spec"]["forProvider"]
    zone_fields = {k for k, v in pool.items() if v == [CLOUDS[cloud][3]]}
    assert zone_fields == ({ZONE_FIELD[cloud]} if zones and cloud in ZONE_FIELD else set())


def test_zones_of_the_inline_system_pool():
    pool = {**system("AKS"), "zones": ["1", "2"]}
    assert compose("AKS", pool)["cluster"]["spec"]["forProvider"]["defaultNodePool"]["zones"] == ["1", "2"]


# ---- labels and taints in each provider's exact format

# (cloud, path from forProvider to the labels, their format, path to the taints, their format)
FORMATS = [
    ("EKS", ("labels",), GPU_LABELS, ("taint",),
     [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"},
      {"key": "dedicated", "effect": "PREFER_NO_SCHEDULE"}]),
    ("GKE", ("nodeConfig", "labels"), {**GPU_LABELS, "gke-no-default-nvidia-gpu-device-plugin": "true"},
     ("nodeConfig", "taint"),
     [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"},
      {"key": "dedicated", "effect": "PREFER_NO_SCHEDULE"}]),
    ("AKS", ("nodeLabels",), GPU_LABELS, ("nodeTaints",),
     ["nvidia.com/gpu=true:NoSchedule", "dedicated:PreferNoSchedule"]),
    ("Nebius", ("template", "metadata", "labels"), GPU_LABELS, ("template", "taints"),
     [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"},
      {"key": "dedicated", "effect": "PREFER_NO_SCHEDULE"}]),
    ("Vultr", ("labels",),
     [{"key": "inferplane.dev/pool", "value": "gpu"}, {"key": "nvidia.com/gpu.present", "value": "true"}],
     ("taints",),
     [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
      {"key": "dedicated", "effect": "PreferNoSchedule"}]),
    ("Civo", ("labels",), GPU_LABELS, ("taint",),
     [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
      {"key": "dedicated", "effect": "PreferNoSchedule"}]),
]


def at(node, path):
    for part in path:
        node = node[part]
    return node


@pytest.mark.parametrize("cloud,label_path,labels,taint_path,taints", FORMATS, ids=[f[0] for f in FORMATS])
def test_label_and_taint_formats(cloud, label_path, labels, taint_path, taints):
    pool = gpu_pool(cloud)
    # A taint without a value, and another effect, to show both spelled the provider's way.
    pool["taints"].append({"key": "dedicated", "effect": "PreferNoSchedule"})
    for_provider = compose(cloud, system(cloud), pool)["nodepool-gpu"]["spec"]["forProvider"]
    assert at(for_provider, label_path) == labels
    assert at(for_provider, taint_path) == taints


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_a_pool_without_labels_or_taints_sends_none(cloud):
    pool = {**cpu_pool(cloud), "labels": {}, "taints": []}
    text = json.dumps(compose(cloud, system(cloud), pool)["nodepool-cpu"])
    assert "inferplane.dev" not in text
    assert not any(word in text for word in ('"taint"', '"taints"', '"nodeTaints"'))


def test_inline_system_pools_carry_the_pool_label_their_cloud_way():
    assert compose("Vultr", system("Vultr"))["cluster"]["spec"]["forProvider"]["nodePools"]["labels"] == \
        [{"key": POOL_LABEL, "value": "system"}]
    assert compose("Civo", system("Civo"))["cluster"]["spec"]["forProvider"]["pools"]["labels"] == SYSTEM_LABELS


# ---- GPU vs CPU shapes


def gpu_markers(cloud, resource):
    """The fields that make a pool a GPU pool on its cloud, as found in its forProvider."""
    fp = resource["spec"]["forProvider"]
    return {
        "EKS": lambda: fp["amiType"],
        "GKE": lambda: ("guestAccelerator" in fp["nodeConfig"],
                        "gke-no-default-nvidia-gpu-device-plugin" in fp["nodeConfig"].get("labels", {})),
        "AKS": lambda: fp.get("gpuDriver"),
        "Nebius": lambda: fp["template"].get("gpuSettings"),
    }[cloud]()


@pytest.mark.parametrize("cloud,gpu,cpu", [
    ("EKS", "AL2023_x86_64_NVIDIA", "AL2023_x86_64_STANDARD"),
    ("GKE", (True, True), (False, False)),
    ("AKS", "Install", None),
    ("Nebius", {"driversPreset": "cuda13.0"}, None),
])
def test_gpu_and_cpu_pool_shapes(cloud, gpu, cpu):
    resources = compose(cloud, system(cloud), gpu_pool(cloud), cpu_pool(cloud))
    assert gpu_markers(cloud, resources["nodepool-gpu"]) == gpu
    assert gpu_markers(cloud, resources["nodepool-cpu"]) == cpu


def test_gke_sets_guest_accelerators_only_for_a_machine_with_one():
    pool = gpu_pool("GKE")
    pool["machine"] = {"machineType": "a3-highgpu-8g"}  # its GPUs come with the machine type
    node_config = compose("GKE", pool)["nodepool-gpu"]["spec"]["forProvider"]["nodeConfig"]
    assert "guestAccelerator" not in node_config
    assert node_config["labels"]["gke-no-default-nvidia-gpu-device-plugin"] == "true"


def test_civo_cpu_recipe_pool():
    pool = compose("Civo", system("Civo"), cpu_pool("Civo"))["nodepool-cpu"]["spec"]["forProvider"]
    assert pool["size"] == "g4p.kube.medium"


# ---- node counts and autoscaling bounds

# (cloud, forProvider size fields, initProvider fields) of a pool with nodeCount 3, min 0, max 5.
AUTOSCALED = [
    ("EKS", {"scalingConfig": {"minSize": 0, "maxSize": 5}}, {"scalingConfig": {"desiredSize": 3}}),
    ("GKE", {"autoscaling": {"minNodeCount": 0, "maxNodeCount": 5}}, {"initialNodeCount": 3}),
    ("AKS", {"autoScalingEnabled": True, "minCount": 0, "maxCount": 5}, {"nodeCount": 3}),
    ("Nebius", {"autoscaling": {"minNodeCount": 0, "maxNodeCount": 5}}, {}),
    ("Vultr", {"autoScaler": True, "minNodes": 0, "maxNodes": 5}, {"nodeQuantity": 3}),
    ("Civo", {"nodeCount": 3}, {}),  # Civo pools have no bounds
]
SIZE_FIELDS = {"scalingConfig", "autoscaling", "autoScalingEnabled", "minCount", "maxCount", "nodeCount",
               "minNodes", "maxNodes", "autoScaler", "nodeQuantity", "fixedNodeCount", "initialNodeCount"}


@pytest.mark.parametrize("cloud,size,init", AUTOSCALED, ids=[a[0] for a in AUTOSCALED])
def test_autoscaled_pool_bounds(cloud, size, init):
    pool = {**cpu_pool(cloud), "nodeCount": 3, "minNodeCount": 0, "maxNodeCount": 5}
    spec = compose(cloud, system(cloud), pool)["nodepool-cpu"]["spec"]
    assert {k: v for k, v in spec["forProvider"].items() if k in SIZE_FIELDS} == size
    assert spec.get("initProvider", {}) == init


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_bounds_equal_to_the_count_make_a_fixed_pool(cloud):
    pool = {**cpu_pool(cloud), "nodeCount": 2, "minNodeCount": 2, "maxNodeCount": 2}
    plain = {**cpu_pool(cloud), "nodeCount": 2}
    assert compose(cloud, system(cloud), pool) == compose(cloud, system(cloud), plain)


def test_eks_group_scaled_to_zero_keeps_a_max_size_of_one():
    pool = {**cpu_pool("EKS"), "nodeCount": 0}
    assert compose("EKS", pool)["nodepool-cpu"]["spec"]["forProvider"]["scalingConfig"] == \
        {"desiredSize": 0, "minSize": 0, "maxSize": 1}


def test_autoscaled_inline_system_pool_starts_from_its_count():
    pool = {**system("Vultr"), "minNodeCount": 1, "maxNodeCount": 3}
    spec = compose("Vultr", pool)["cluster"]["spec"]
    assert spec["forProvider"]["nodePools"] == {"label": "system", "plan": "vc2-4c-8gb", "autoScaler": True,
                                                "minNodes": 1, "maxNodes": 3,
                                                "labels": [{"key": POOL_LABEL, "value": "system"}]}
    assert spec["initProvider"] == {"nodePools": {"nodeQuantity": 2}}


# ---- the cluster: versions, inline pools, names


@pytest.mark.parametrize("cloud,path,default", [
    ("EKS", ("version",), "1.36"), ("GKE", ("minMasterVersion",), "1.36"), ("AKS", ("kubernetesVersion",), "1.36"),
    ("Nebius", ("controlPlane", "version"), "1.36"), ("Vultr", ("version",), "v1.36.1+3"),
    ("Civo", ("kubernetesVersion",), "1.36"),
])
def test_kubernetes_version_defaults_to_the_clouds(cloud, path, default):
    for_provider = compose(cloud, system(cloud), version=None)["cluster"]["spec"]["forProvider"]
    assert at(for_provider, path) == default


@pytest.mark.parametrize("cloud", sorted(INLINE))
def test_an_inline_cloud_without_a_system_pool_gets_the_default_one(cloud):
    with_default = compose(cloud, system(cloud), cpu_pool(cloud))
    assert compose(cloud, cpu_pool(cloud)) == with_default


@pytest.mark.parametrize("cloud", sorted(INLINE))
def test_a_second_system_pool_is_its_own_resource(cloud):
    second = {**system(cloud), "name": "system-b", "labels": {POOL_LABEL: "system-b"}}
    resources = cluster_and_pools(cloud, system(cloud), second)
    assert list(resources) == ["cluster", "nodepool-system-b"]


def test_a_second_aks_system_pool_has_system_mode():
    second = {**system("AKS"), "name": "system-b"}
    assert compose("AKS", system("AKS"), second)["nodepool-system-b"]["spec"]["forProvider"]["mode"] == "System"


@pytest.mark.parametrize("name,aks_name", [
    ("gpu", "gpu"), ("system", "system"), ("abcdefghijkl", "abcdefghijkl"),
    ("gpu-l4", None), ("abcdefghijklm", None), ("1gpu", None), ("a-100-pool-with-long-name", None),
])
def test_aks_pool_names(name, aks_name):
    from inferplane.clouds.aks import POOL_NAME, aks_pool_name

    got = aks_pool_name(name)
    assert POOL_NAME.match(got)
    assert got == (aks_name or got)
    if aks_name is None:
        assert got != name and got == aks_pool_name(name)


def test_aks_pool_names_differ_when_their_legal_prefixes_match():
    from inferplane.clouds.aks import aks_pool_name

    assert aks_pool_name("gpu-l4-a") != aks_pool_name("gpu-l4a")


def test_provider_config_and_connection_secret_follow_the_composite():
    resources = compose("GKE", system("GKE"), config="gcp-prod", name="fleet-a")
    assert resources["cluster"]["metadata"]["name"] == "fleet-a"
    assert resources["cluster"]["spec"]["writeConnectionSecretToRef"] == {"name": "fleet-a-connection"}
    assert resources["nodepool-system"]["spec"]["forProvider"]["clusterRef"] == {"name": "fleet-a"}
    for resource in resources.values():
        assert resource["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "gcp-prod"}


def test_an_eks_cluster_needs_only_its_region():
    kind = CLOUD_CLUSTER_KINDS["EKS"]
    parsed = kind.model_validate({"apiVersion": kind.api_version_string(), "kind": kind.KIND,
                                  "metadata": {"name": "c1"}, "spec": {"region": "eu-west-1",
                                                                       "nodePools": [system("EKS")]}})
    assert (parsed.spec.role_arn, parsed.spec.node_role_arn, parsed.spec.subnet_ids) == (None, None, None)
    assert parsed.spec.kubernetes_version == "1.36"
    with pytest.raises(ValidationError) as error:
        kind.model_validate({"apiVersion": kind.api_version_string(), "kind": kind.KIND, "metadata": {"name": "c1"},
                             "spec": {"nodePools": [system("EKS")]}})
    assert [e["loc"][-1] for e in error.value.errors()] == ["region"]


# ---- every composed resource is accepted by its provider's CRD


@pytest.mark.parametrize("cloud", PROVIDERS)
@pytest.mark.parametrize("shape", ["gpu+cpu", "gpu", "cpu", "system-only", "no-zones", "default-version"])
def test_every_resource_validates_against_its_provider_crd(provider_crds, cloud, shape):
    pools = {"gpu+cpu": [system(cloud), gpu_pool(cloud), cpu_pool(cloud)],
             "gpu": [system(cloud), gpu_pool(cloud)], "cpu": [system(cloud), cpu_pool(cloud)],
             "system-only": [system(cloud)], "no-zones": [gpu_pool(cloud, zones=False, bounds=False)],
             "default-version": [system(cloud), cpu_pool(cloud)]}[shape]
    explicit = "v1.36.1+3" if cloud == "Vultr" else "1.36"
    resources = compose(cloud, *pools, version=None if shape == "default-version" else explicit)
    for key, resource in resources.items():
        assert provider_crds.violations(resource) == [], key


def test_the_crd_check_catches_what_the_api_server_refuses(provider_crds):
    resource = compose("EKS", system("EKS"))["cluster"]
    del resource["spec"]["forProvider"]["vpcConfig"]
    assert provider_crds.violations(resource) == ["spec: spec.forProvider.vpcConfig is a required parameter"]
    resource = compose("EKS", system("EKS"))["nodepool-system"]
    resource["spec"]["forProvider"]["taints"] = []
    assert provider_crds.violations(resource)


LABEL_KEYS = st.sampled_from([POOL_LABEL, CPU_LABEL, "nvidia.com/gpu.present", "team"])
TAINTS = st.builds(lambda key, value, effect: {"key": key, "value": value, "effect": effect},
                   st.sampled_from(["nvidia.com/gpu", "amd.com/gpu", "inferplane.dev/cpu", "dedicated"]),
                   st.sampled_from(["", "true"]), st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]))


@st.composite
def pools(draw, cloud):
    count = draw(st.integers(0, 6))
    pool = {"name": draw(st.sampled_from(["gpu", "cpu", "pool-a", "big-gpu-pool-1"])),
            "role": draw(st.sampled_from(["System", "GPU", "CPU"])), "nodeCount": count,
            "labels": draw(st.dictionaries(LABEL_KEYS, st.sampled_from(["true", "x"]), max_size=3)),
            "taints": draw(st.lists(TAINTS, max_size=2, unique_by=lambda t: (t["key"], t["effect"]))),
            "zones": draw(st.lists(st.sampled_from(["z1", "z2"]), max_size=2, unique=True)),
            "machine": draw(st.sampled_from([CLOUDS[cloud][1], CLOUDS[cloud][2]]))}
    if draw(st.booleans()):
        pool["minNodeCount"] = draw(st.integers(0, count))
    if draw(st.booleans()):
        pool["maxNodeCount"] = draw(st.integers(max(count, 1), 10))
    return pool


@pytest.mark.parametrize("cloud", PROVIDERS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_pools_validate_against_the_provider_crds(provider_crds, cloud, data):
    drawn = data.draw(st.lists(pools(cloud), min_size=1, max_size=4, unique_by=lambda p: p["name"]))
    for key, resource in compose(cloud, *drawn).items():
        assert provider_crds.violations(resource) == [], key


# ---- determinism, Existing, the registry


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_same_input_same_output(cloud):
    first = compose(cloud, system(cloud), gpu_pool(cloud), cpu_pool(cloud))
    second = compose(cloud, system(cloud), gpu_pool(cloud), cpu_pool(cloud))
    assert json.dumps(first) == json.dumps(second)


def wipe(node):
    """Empty every dict and list reachable from node, as a careless caller might."""
    children = list(node.values()) if isinstance(node, dict) else list(node)
    for child in children:
        if isinstance(child, (dict, list)):
            wipe(child)
    node.clear()


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_outputs_share_nothing_with_the_module_or_each_other(cloud):
    wipe(compose(cloud, system(cloud), gpu_pool(cloud), cpu_pool(cloud)))
    assert cluster_and_pools(cloud, system(cloud), gpu_pool(cloud), cpu_pool(cloud)) == EXPECTED[cloud]


def test_existing_composes_nothing():
    existing = CLOUD_MODULES["Existing"]
    assert existing.resources(object()) == {}
    assert existing.held_pools(object()) == {}
    assert existing.system_pool() is None
    assert existing.endpoint({"status": {"atProvider": {"endpoint": "x"}}}) is None


def test_registry_covers_every_source():
    expected = ["EKS", "GKE", "AKS", "Nebius", "Vultr", "Civo", "Existing"]
    assert list(SOURCES) == expected
    assert list(PROVIDERS) == expected[:-1]
    assert list(CLOUD_MODULES) == expected
    assert [m.source for m in CLOUD_MODULES.values()] == expected


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_system_pool_fits_the_cloud_cluster_kind(cloud):
    pool = system(cloud)
    assert pool["role"] == "System" and pool["labels"] == SYSTEM_LABELS and "taints" not in pool
    assert pool["nodeCount"] == 2
    cluster(cloud, pool)  # the kind's pool model accepts it


@pytest.mark.parametrize("cloud,field", [("EKS", "endpoint"), ("GKE", "endpoint"), ("AKS", "fqdn"),
                                         ("Vultr", "endpoint"), ("Civo", "apiEndpoint"), ("Nebius", None)])
def test_endpoint_from_the_observed_cluster(cloud, field):
    module = CLOUD_MODULES[cloud]
    observed = {"status": {"atProvider": {field or "endpoint": "https://api.example"}}}
    assert module.endpoint(observed) == ("https://api.example" if field else None)
    assert module.endpoint(None) is None
    assert module.endpoint({"status": {}}) is None


@pytest.mark.parametrize("version,parsed", [
    ("1.36", (1, 36)), ("1.36.2", (1, 36)), ("1.35.1-gke.1200", (1, 35)), ("v1.36.1+3", (1, 36)),
    ("v1.37.0-eks-4f3a2b", (1, 37)),
])
def test_one_parser_reads_every_clouds_version_format(version, parsed):
    assert minor(version) == parsed


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_a_namespaced_provider_config_is_referenced_by_its_kind(cloud):
    kind = CLOUD_CLUSTER_KINDS[cloud]
    spec = {**CLOUDS[cloud][0], "credentials": {"type": "ProviderConfig", "name": "team-a"},
            "nodePools": [system(cloud)]}
    resources = CLOUD_MODULES[cloud].resources(kind.model_validate(
        {"apiVersion": kind.api_version_string(), "kind": kind.KIND, "metadata": {"name": "c1"}, "spec": spec}))
    managed = [r for r in resources.values() if r["apiVersion"] != "v1"]  # not a plain Secret: no provider
    assert {r["spec"]["providerConfigRef"]["kind"] for r in managed} == {"ProviderConfig"}
    assert {r["spec"]["providerConfigRef"]["name"] for r in managed} == {"team-a"}


def test_a_nebius_class_chooses_its_drivers_preset():
    pool = {**gpu_pool("Nebius"), "machine": {**CLOUDS["Nebius"][1], "driversPreset": "cuda12.4"}}
    template = compose("Nebius", system("Nebius"), pool)["nodepool-gpu"]["spec"]["forProvider"]["template"]
    assert template["gpuSettings"] == {"driversPreset": "cuda12.4"}


# ---- bring your own: a named network or identity replaces what would be composed of that kind

FOUNDATION_KINDS = {
    "EKS": {"VPC", "Subnet", "InternetGateway", "EIP", "NATGateway", "RouteTable", "Route", "RouteTableAssociation",
            "Role", "RolePolicyAttachment", "Addon", "ClusterAuth", "FileSystem", "MountTarget", "SecurityGroup",
            "SecurityGroupIngressRule", "PodIdentityAssociation"},
    # The Filestore API is enabled on the project whatever the user brings.
    "GKE": {"Network", "Subnetwork", "ServiceAccount", "ProjectIAMMember", "ProjectService"},
    "AKS": {"ResourceGroup", "VirtualNetwork", "Subnet"},
    "Nebius": {"Network", "Subnet", "Filesystem", "Secret"},
}
# cloud, what the user names, the foundation kinds then left out, and (resource key, field path, value)
# that must now carry the user's own.
BRING_YOUR_OWN = [
    ("EKS", {"subnetIds": ["subnet-1", "subnet-2"]},
     # The EFS mount targets then take the VPC's default security group: no NFS group is composed.
     {"VPC", "Subnet", "InternetGateway", "EIP", "NATGateway", "RouteTable", "Route", "RouteTableAssociation",
      "SecurityGroup", "SecurityGroupIngressRule"},
     [("cluster", "vpcConfig", {"subnetIds": ["subnet-1", "subnet-2"]}),
      ("efs-mount-target-1", "subnetId", "subnet-2"),
      ("nodepool-gpu", "subnetIds", ["subnet-1", "subnet-2"])]),
    ("EKS", {"roleArn": "arn:aws:iam::1:role/c"}, set(),
     [("cluster", "roleArn", "arn:aws:iam::1:role/c")]),
    ("EKS", {"nodeRoleArn": "arn:aws:iam::1:role/n"}, set(),
     [("nodepool-gpu", "nodeRoleArn", "arn:aws:iam::1:role/n")]),
    # The EFS CSI driver's role stays: no user role replaces it.
    ("EKS", {"roleArn": "arn:aws:iam::1:role/c", "nodeRoleArn": "arn:aws:iam::1:role/n"},
     set(), [("nodepool-system", "nodeRoleArn", "arn:aws:iam::1:role/n")]),
    ("GKE", {"network": "shared-vpc", "subnetwork": "gpu-nodes"}, {"Network", "Subnetwork"},
     [("cluster", "network", "shared-vpc"), ("cluster", "subnetwork", "gpu-nodes")]),
    ("GKE", {"serviceAccount": "nodes@acme.iam.gserviceaccount.com"}, {"ServiceAccount", "ProjectIAMMember"},
     [("nodepool-gpu", "nodeConfig.serviceAccount", "nodes@acme.iam.gserviceaccount.com")]),
    ("AKS", {"resourceGroupName": "inference"}, {"ResourceGroup"},
     [("cluster", "resourceGroupName", "inference"), ("virtual-network", "resourceGroupName", "inference")]),
    ("AKS", {"subnetId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/n"},
     {"VirtualNetwork", "Subnet"},
     [("cluster", "defaultNodePool.vnetSubnetId",
       "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/n"),
      ("nodepool-gpu", "vnetSubnetId",
       "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/n")]),
    ("Nebius", {"subnetId": "vpcsubnet-e00byo"}, {"Network", "Subnet"},
     [("cluster", "controlPlane.subnetId", "vpcsubnet-e00byo"),
      ("nodepool-gpu", "template.networkInterfaces", [{"subnetId": "vpcsubnet-e00byo"}])]),
]
# Each cloud's least settings: nothing brought (GKE names its project, so its IAM members need not wait
# for the account's email).
MINIMAL = {"EKS": {"region": "us-east-1"}, "GKE": {"region": "us-central1", "project": "acme-ml"}, "AKS": {"location": "eastus"},
           "Nebius": {}}


def compose_with(cloud, settings, *pools, observed=None):
    kind = CLOUD_CLUSTER_KINDS[cloud]
    spec = {**MINIMAL[cloud], **settings, "nodePools": list(pools) or [system(cloud), gpu_pool(cloud)]}
    return CLOUD_MODULES[cloud].resources(kind.model_validate(
        {"apiVersion": kind.api_version_string(), "kind": kind.KIND, "metadata": {"name": "c1"}, "spec": spec}),
        observed)


def foundation_kinds(resources):
    return {r["kind"] for key, r in resources.items() if key != "cluster" and not key.startswith("nodepool-")}


def field_at(resource, path):
    value = resource["spec"]["forProvider"]
    for part in path.split("."):
        value = value[part]
    return value


@pytest.mark.parametrize("cloud", list(MINIMAL))
def test_from_the_least_settings_every_foundation_kind_is_composed(cloud):
    assert foundation_kinds(compose_with(cloud, {})) == FOUNDATION_KINDS[cloud]


@pytest.mark.parametrize("cloud, settings, left_out, fields", BRING_YOUR_OWN,
                         ids=[f"{c}-{'+'.join(s)}" for c, s, _, _ in BRING_YOUR_OWN])
def test_what_a_user_brings_replaces_that_kind(provider_crds, cloud, settings, left_out, fields):
    resources = compose_with(cloud, settings)
    assert foundation_kinds(resources) == FOUNDATION_KINDS[cloud] - left_out
    for key, path, value in fields:
        assert field_at(resources[key], path) == value, (key, path)
    # Nothing still references a resource of a kind no longer composed.
    names = {r["metadata"]["name"] for r in resources.values()}
    refs = [v["name"] for r in resources.values() for v in references((r.get("spec") or {}).get("forProvider"))]
    assert set(refs) <= names
    for key, resource in resources.items():
        assert provider_crds.violations(resource) == [], key


def references(value):
    """Every {name: ...} under a field ending in Ref or Refs."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("Ref") and isinstance(item, dict):
                yield item
            elif key.endswith("Refs") and isinstance(item, list):
                yield from item
            else:
                yield from references(item)
    elif isinstance(value, list):
        for item in value:
            yield from references(item)


def test_an_eks_cluster_from_its_region_alone_gets_subnets_and_roles_by_reference():
    resources = compose_with("EKS", {})
    vpc = resources["cluster"]["spec"]["forProvider"]["vpcConfig"]
    assert (vpc["endpointPrivateAccess"], vpc["endpointPublicAccess"]) == (True, True)
    # Public and private subnets in the GPU pool's zone and the next default one (the control plane needs two).
    subnets = [resources[key] for key in resources if resources[key]["kind"] == "Subnet"]
    assert sorted((s["spec"]["forProvider"]["availabilityZone"], s["spec"]["forProvider"]["mapPublicIpOnLaunch"])
                  for s in subnets) == [("us-east-1a", False), ("us-east-1a", True),
                                        ("us-east-1b", False), ("us-east-1b", True)]
    assert sorted(r["name"] for r in vpc["subnetIdRefs"]) == sorted(s["metadata"]["name"] for s in subnets)
    gpu = resources["nodepool-gpu"]["spec"]["forProvider"]
    # The GPU pool's nodes go to the private subnet of its own zone.
    private_a = next(s for s in subnets if s["spec"]["forProvider"]["availabilityZone"] == "us-east-1a"
                     and not s["spec"]["forProvider"]["mapPublicIpOnLaunch"])
    assert gpu["subnetIdRefs"] == [{"name": private_a["metadata"]["name"]}]
    assert gpu["nodeRoleArnRef"]["name"].startswith("c1-iam-role-node-")
    assert resources["cluster"]["spec"]["forProvider"]["roleArnRef"]["name"].startswith("c1-iam-role-cluster-")


# ---- capacity blocks and fabrics on a pool reach the foundation

CLUSTER_SG = {"status": {"atProvider": {"vpcConfig": {"clusterSecurityGroupId": "sg-0c"}}}}
EFA_SG = {"status": {"atProvider": {"id": "sg-0e"}}}


def p5_pool(**extra):
    return {"name": "p5", "role": "GPU", "nodeCount": 2, "machine": {"instanceType": "p5.48xlarge", "diskSizeGb": 500},
            **extra}


def test_an_eks_capacity_block_pool_runs_through_a_launch_template(provider_crds):
    resources = compose_with("EKS", {}, system("EKS"),
                             p5_pool(capacityBlock={"capacityReservationId": "cr-0123456789abcdef0"}))
    template = resources["launch-template-p5"]["spec"]["forProvider"]
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
    assert (template["instanceType"], template["blockDeviceMappings"][0]["ebs"]) == ("p5.48xlarge", {"volumeSize": 500})
    group = resources["nodepool-p5"]["spec"]["forProvider"]
    assert group["launchTemplate"] == {"name": resources["launch-template-p5"]["metadata"]["name"],
                                       "version": "$Latest"}
    assert group["capacityType"] == "CAPACITY_BLOCK"
    # EKS refuses a node group naming an instance type or disk beside a launch template that has them.
    assert "instanceTypes" not in group and "diskSize" not in group
    assert "instanceTypes" in resources["nodepool-system"]["spec"]["forProvider"]
    for key, resource in resources.items():
        assert provider_crds.violations(resource) == [], key


def test_an_eks_efa_pool_waits_for_the_security_groups_then_gets_its_interfaces(provider_crds):
    pool = p5_pool(fabric={"type": "EFA"})
    before = compose_with("EKS", {}, system("EKS"), pool)
    assert "nodepool-p5" not in before and "launch-template-p5" not in before
    assert {"efa-security-group", "efa-security-group-ingress", "efa-security-group-egress"} <= set(before)
    after = compose_with("EKS", {}, system("EKS"), pool,
                         observed={"cluster": CLUSTER_SG, "efa-security-group": EFA_SG})
    interfaces = after["launch-template-p5"]["spec"]["forProvider"]["networkInterfaces"]
    assert (len(interfaces), interfaces[0]["interfaceType"], interfaces[0]["securityGroups"]) == \
        (32, "efa", ["sg-0c", "sg-0e"])
    assert "capacityType" not in after["nodepool-p5"]["spec"]["forProvider"]
    for key, resource in after.items():
        assert provider_crds.violations(resource) == [], key


def test_a_nebius_infiniband_pool_joins_the_gpu_cluster_of_its_fabric(provider_crds):
    pool = {"name": "h100", "role": "GPU", "nodeCount": 2,
            "machine": {"platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb"},
            "fabric": {"type": "InfiniBand", "infiniband": {"fabric": "fabric-3"}}}
    resources = compose_with("Nebius", {}, system("Nebius"), pool)
    gpu_clusters = [r for r in resources.values() if r["kind"] == "GpuCluster"]
    assert [r["spec"]["forProvider"]["infinibandFabric"] for r in gpu_clusters] == ["fabric-3"]
    template = resources["nodepool-h100"]["spec"]["forProvider"]["template"]
    assert template["gpuCluster"] == {"idRef": {"name": gpu_clusters[0]["metadata"]["name"]}}
    assert "gpuCluster" not in resources["nodepool-system"]["spec"]["forProvider"]["template"]
    for key, resource in resources.items():
        assert provider_crds.violations(resource) == [], key


def test_fabric_none_composes_nothing_for_a_fabric():
    resources = compose_with("EKS", {}, system("EKS"), p5_pool(fabric={"type": "None"}))
    assert "launch-template-p5" not in resources and "efa-security-group" not in resources
    assert resources["nodepool-p5"]["spec"]["forProvider"]["instanceTypes"] == ["p5.48xlarge"]
