"""Each cloud's foundation: network, identities, addons and kubeconfig publisher, with what a user
brings replacing what would be composed. Every resource is checked against its provider's CRD."""

import base64
import json

import pytest

from inferplane.clouds.aks_foundation import AKSInputs, aks_foundation
from inferplane.clouds.eks_foundation import EKSInputs, eks_foundation
from inferplane.clouds.foundation import FoundationError, FoundationPool, merge
from inferplane.clouds.gke_foundation import GKEInputs, account_id, gke_foundation
from inferplane.clouds.nebius import NEBIUS_CSI_DATA_DIR
from inferplane.clouds.nebius_foundation import NebiusInputs, nebius_foundation

NS = "inferplane-system"
CREDS = {"kind": "ClusterProviderConfig", "name": "default"}


def namer(key):
    return "c1" if key == "cluster" else f"c1-{key}"


def ref(key):
    return {"name": namer(key)}


def mr(api_version, kind, key, for_provider, annotations=None, secret=None):
    metadata = {"name": namer(key), "namespace": NS}
    if annotations:
        metadata["annotations"] = annotations
    spec = {"forProvider": for_provider, "providerConfigRef": CREDS}
    if secret:
        spec["writeConnectionSecretToRef"] = {"name": secret}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def eks(*pools, **kw):
    return eks_foundation(EKSInputs(name="c1", region="us-east-1", pools=pools, connection_secret="c1-connection",
                                    **kw), namer, CREDS)


def gke(**kw):
    return gke_foundation(GKEInputs(name="c1", region="us-central1", pools=["system", "gpu"], **kw), namer, CREDS)


def aks(**kw):
    return aks_foundation(AKSInputs(cluster_name="c1", location="eastus", pools=["gpu"], **kw), namer, CREDS)


def nebius(*pools, **kw):
    return nebius_foundation(NebiusInputs(pools=pools or (FoundationPool("gpu"),), **kw), namer, CREDS)


GPU = FoundationPool("gpu", zones=("us-east-1b",), machine_type="p5.48xlarge", disk_size_gb=500)
SYSTEM = FoundationPool("system")

# ---- EKS

EC2 = "ec2.aws.m.upbound.io/v1beta1"
IAM = "iam.aws.m.upbound.io/v1beta1"
EKS = "eks.aws.m.upbound.io/v1beta1"
TRUST = ('{"Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "%s"}}], '
         '"Version": "2012-10-17"}')


def test_eks_from_region_alone_composes_network_roles_addons_and_cluster_auth():
    out = eks(SYSTEM, GPU)
    # A pool names zone b: the control plane needs two zones, so a is added.
    assert list(out.resources) == [
        "vpc", "subnet-public-us-east-1a", "subnet-private-us-east-1a", "subnet-public-us-east-1b",
        "subnet-private-us-east-1b", "internet-gateway", "nat-eip", "nat-gateway",
        "route-table-public", "route-public-default", "route-table-association-public-us-east-1a",
        "route-table-association-public-us-east-1b", "route-table-private", "route-private-default",
        "route-table-association-private-us-east-1a", "route-table-association-private-us-east-1b",
        "iam-role-cluster", "iam-attach-cluster-policy", "iam-role-node", "iam-attach-node-worker",
        "iam-attach-node-cni", "iam-attach-node-ecr", "addon-vpc-cni", "addon-kube-proxy", "addon-coredns",
        "addon-eks-pod-identity-agent", "cluster-auth", "efs-filesystem", "efs-security-group",
        "efs-security-group-ingress", "efs-mount-target-0", "efs-mount-target-1", "iam-role-efs-csi",
        "iam-attach-efs-csi-policy", "pod-identity-efs-csi", "addon-aws-efs-csi-driver"]
    r = out.resources
    # EFS: a mount target per private (node) subnet behind a group open to NFS from the VPC, the CSI add-on
    # and its role bound to the driver's service account through Pod Identity.
    assert r["efs-filesystem"] == mr("efs.aws.m.upbound.io/v1beta1", "FileSystem", "efs-filesystem", {
        "region": "us-east-1", "throughputMode": "elastic", "encrypted": True})
    assert r["efs-security-group-ingress"]["spec"]["forProvider"] == {
        "region": "us-east-1", "securityGroupIdRef": ref("efs-security-group"), "ipProtocol": "tcp",
        "fromPort": 2049, "toPort": 2049, "cidrIpv4": "10.0.0.0/16"}
    assert r["efs-mount-target-1"]["spec"]["forProvider"] == {
        "region": "us-east-1", "fileSystemIdRef": ref("efs-filesystem"), "subnetIdRef": ref("subnet-private-us-east-1b"),
        "securityGroupsRefs": [ref("efs-security-group")]}
    assert r["pod-identity-efs-csi"]["spec"]["forProvider"] == {
        "region": "us-east-1", "clusterNameRef": ref("cluster"), "namespace": "kube-system",
        "serviceAccount": "efs-csi-controller-sa", "roleArnRef": ref("iam-role-efs-csi")}
    assert r["iam-attach-efs-csi-policy"]["spec"]["forProvider"]["policyArn"] == \
        "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"
    assert r["addon-aws-efs-csi-driver"]["spec"]["forProvider"]["addonName"] == "aws-efs-csi-driver"
    assert r["vpc"] == mr(EC2, "VPC", "vpc", {"region": "us-east-1", "cidrBlock": "10.0.0.0/16",
                                              "enableDnsHostnames": True, "enableDnsSupport": True})
    assert r["subnet-public-us-east-1b"] == mr(EC2, "Subnet", "subnet-public-us-east-1b", {
        "region": "us-east-1", "vpcIdRef": ref("vpc"), "availabilityZone": "us-east-1b", "cidrBlock": "10.0.16.0/20",
        "mapPublicIpOnLaunch": True, "tags": {"kubernetes.io/role/elb": "1"}})
    assert r["subnet-private-us-east-1a"]["spec"]["forProvider"]["cidrBlock"] == "10.0.128.0/20"
    assert r["subnet-private-us-east-1b"]["spec"]["forProvider"]["tags"] == {"kubernetes.io/role/internal-elb": "1"}
    assert r["nat-gateway"]["spec"]["forProvider"] == {
        "region": "us-east-1", "allocationIdRef": ref("nat-eip"), "subnetIdRef": ref("subnet-public-us-east-1a")}
    assert r["route-private-default"]["spec"]["forProvider"] == {
        "region": "us-east-1", "routeTableIdRef": ref("route-table-private"), "destinationCidrBlock": "0.0.0.0/0",
        "natGatewayIdRef": ref("nat-gateway")}
    assert r["route-public-default"]["spec"]["forProvider"]["gatewayIdRef"] == ref("internet-gateway")
    assert r["route-table-association-private-us-east-1b"]["spec"]["forProvider"] == {
        "region": "us-east-1", "routeTableIdRef": ref("route-table-private"),
        "subnetIdRef": ref("subnet-private-us-east-1b")}
    assert r["iam-role-cluster"] == mr(IAM, "Role", "iam-role-cluster",
                                       {"assumeRolePolicy": TRUST % "eks.amazonaws.com"})
    assert r["iam-role-node"]["spec"]["forProvider"] == {"assumeRolePolicy": TRUST % "ec2.amazonaws.com"}
    assert {k: v["spec"]["forProvider"]["policyArn"] for k, v in r.items() if k.startswith("iam-attach")} == {
        "iam-attach-cluster-policy": "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",
        "iam-attach-node-worker": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "iam-attach-node-cni": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "iam-attach-node-ecr": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
        "iam-attach-efs-csi-policy": "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"}
    assert r["iam-attach-node-cni"]["spec"]["forProvider"]["roleRef"] == ref("iam-role-node")
    assert [v["spec"]["forProvider"]["addonName"] for v in r.values() if v["kind"] == "Addon"] == \
        ["vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent", "aws-efs-csi-driver"]
    assert r["addon-coredns"]["spec"]["forProvider"]["clusterNameRef"] == {"name": "c1"}
    assert r["cluster-auth"] == mr(EKS, "ClusterAuth", "cluster-auth",
                                   {"region": "us-east-1", "clusterNameRef": {"name": "c1"}}, secret="c1-connection")
    assert out.cluster_fields == {
        "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP", "bootstrapClusterCreatorAdminPermissions": True},
        "vpcConfig": {"endpointPrivateAccess": True, "endpointPublicAccess": True, "subnetIdRefs": [
            ref("subnet-public-us-east-1a"), ref("subnet-public-us-east-1b"),
            ref("subnet-private-us-east-1a"), ref("subnet-private-us-east-1b")]},
        "roleArnRef": ref("iam-role-cluster")}
    # A pool with zones runs in their private subnets; a pool without, in every private subnet.
    assert out.pool_fields == {
        "system": {"nodeRoleArnRef": ref("iam-role-node"),
                   "subnetIdRefs": [ref("subnet-private-us-east-1a"), ref("subnet-private-us-east-1b")]},
        "gpu": {"nodeRoleArnRef": ref("iam-role-node"), "subnetIdRefs": [ref("subnet-private-us-east-1b")]}}


def test_eks_output_is_byte_identical_across_calls():
    assert json.dumps(eks(SYSTEM, GPU).resources) == json.dumps(eks(SYSTEM, GPU).resources)


@pytest.mark.parametrize("zones,expected", [
    ((), ["us-east-1a", "us-east-1b", "us-east-1c"]),
    (("us-east-1a",), ["us-east-1a", "us-east-1b"]),
    (("us-east-1d", "us-east-1f"), ["us-east-1d", "us-east-1f"]),
])
def test_eks_zones(zones, expected):
    out = eks(FoundationPool("gpu", zones=zones))
    assert [v["spec"]["forProvider"]["availabilityZone"] for k, v in out.resources.items()
            if k.startswith("subnet-public")] == expected


def test_eks_refuses_more_zones_than_the_vpc_holds():
    pool = FoundationPool("gpu", zones=tuple(f"us-east-1{c}" for c in "abcdefghi"))
    with pytest.raises(FoundationError, match="the pools name 9 zones .* at most 8: name fewer zones"):
        eks(pool)


def test_eks_bring_your_own_network_and_roles_composes_none_of_them():
    out = eks(SYSTEM, GPU, role_arn="arn:aws:iam::1:role/c", node_role_arn="arn:aws:iam::1:role/n",
              subnet_ids=["subnet-1", "subnet-2"])
    # EFS stays (the user's subnets get its mount targets, with the VPC's default security group).
    assert sorted(out.resources) == ["addon-aws-efs-csi-driver", "addon-coredns", "addon-eks-pod-identity-agent",
                                     "addon-kube-proxy", "addon-vpc-cni", "cluster-auth", "efs-filesystem",
                                     "efs-mount-target-0", "efs-mount-target-1", "iam-attach-efs-csi-policy",
                                     "iam-role-efs-csi", "pod-identity-efs-csi"]
    assert out.resources["efs-mount-target-1"]["spec"]["forProvider"] == {
        "region": "us-east-1", "fileSystemIdRef": ref("efs-filesystem"), "subnetId": "subnet-2"}
    assert out.cluster_fields["vpcConfig"] == {"subnetIds": ["subnet-1", "subnet-2"]}
    assert out.cluster_fields["roleArn"] == "arn:aws:iam::1:role/c"
    assert out.pool_fields["gpu"] == {"nodeRoleArn": "arn:aws:iam::1:role/n", "subnetIds": ["subnet-1", "subnet-2"]}


def test_eks_each_role_is_brought_on_its_own():
    out = eks(SYSTEM, role_arn="arn:aws:iam::1:role/c")
    assert "iam-role-cluster" not in out.resources and "iam-role-node" in out.resources
    assert [k for k in out.resources if k.startswith("iam-attach")] == \
        ["iam-attach-node-worker", "iam-attach-node-cni", "iam-attach-node-ecr", "iam-attach-efs-csi-policy"]


def test_eks_capacity_block_pool_gets_a_launch_template():
    pool = FoundationPool("gpu", machine_type="p5.48xlarge", disk_size_gb=500,
                          capacity_reservation_id="cr-0123456789abcdef0")
    out = eks(SYSTEM, pool)
    assert out.resources["launch-template-gpu"] == mr(EC2, "LaunchTemplate", "launch-template-gpu", {
        "region": "us-east-1", "name": "c1-launch-template-gpu", "instanceType": "p5.48xlarge",
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 500}}],
        "instanceMarketOptions": {"marketType": "capacity-block"},
        "capacityReservationSpecification": {
            "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}})
    assert out.pool_fields["gpu"]["launchTemplate"] == {"name": "c1-launch-template-gpu", "version": "$Latest"}
    assert out.pool_fields["gpu"]["capacityType"] == "CAPACITY_BLOCK"
    assert "launchTemplate" not in out.pool_fields["system"]


EFA_POOL = FoundationPool("efa", zones=("us-east-1b",), machine_type="p5.48xlarge", disk_size_gb=500, fabric="EFA")


def test_eks_efa_pool_waits_for_the_security_group_ids():
    out = eks(SYSTEM, EFA_POOL)
    assert out.held_pools == {"efa": "the cluster's security group ids, which the provider reports once the "
                                     "cluster and the EFA security group exist"}
    assert "efa" not in out.pool_fields and "launch-template-efa" not in out.resources
    # The EFA security group lets its members reach each other on every protocol, both ways.
    assert out.resources["efa-security-group"] == mr(EC2, "SecurityGroup", "efa-security-group", {
        "region": "us-east-1", "vpcIdRef": ref("vpc"), "name": "c1-efa-security-group",
        "description": "EFA: all traffic between the cluster's EFA interfaces"})
    assert out.resources["efa-security-group-ingress"] == mr(EC2, "SecurityGroupIngressRule",
                                                             "efa-security-group-ingress", {
        "region": "us-east-1", "securityGroupIdRef": ref("efa-security-group"), "ipProtocol": "-1",
        "referencedSecurityGroupIdRef": ref("efa-security-group")})
    assert out.resources["efa-security-group-egress"]["kind"] == "SecurityGroupEgressRule"
    # Only the cluster's id known: still waiting for the EFA group's.
    assert "efa" in eks(SYSTEM, EFA_POOL, cluster_security_group_id="sg-c").held_pools


def test_eks_efa_pool_gets_one_interface_per_network_card():
    out = eks(SYSTEM, EFA_POOL, cluster_security_group_id="sg-c", efa_security_group_id="sg-e")
    assert out.held_pools == {}
    template = out.resources["launch-template-efa"]["spec"]["forProvider"]
    interfaces = template["networkInterfaces"]
    assert len(interfaces) == 32  # a p5.48xlarge has 32 network cards
    assert interfaces[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa",
                             "deleteOnTermination": "true", "securityGroups": ["sg-c", "sg-e"]}
    assert interfaces[31] == {"networkCardIndex": 31, "deviceIndex": 1, "interfaceType": "efa-only",
                              "deleteOnTermination": "true", "securityGroups": ["sg-c", "sg-e"]}
    assert "instanceMarketOptions" not in template  # EFA without a Capacity Block
    assert out.pool_fields["efa"]["launchTemplate"] == {"name": "c1-launch-template-efa", "version": "$Latest"}
    assert "capacityType" not in out.pool_fields["efa"]


@pytest.mark.parametrize("instance_type, cards", [("p5en.48xlarge", 16), ("p4d.24xlarge", 4), ("g6.12xlarge", 1)])
def test_eks_efa_interfaces_per_instance_family(instance_type, cards):
    pool = FoundationPool("efa", machine_type=instance_type, fabric="EFA")
    out = eks(SYSTEM, pool, cluster_security_group_id="sg-c", efa_security_group_id="sg-e")
    assert len(out.resources["launch-template-efa"]["spec"]["forProvider"]["networkInterfaces"]) == cards


def test_eks_efa_on_the_users_subnets_uses_the_cluster_security_group_alone():
    out = eks(SYSTEM, EFA_POOL, subnet_ids=["subnet-1", "subnet-2"], cluster_security_group_id="sg-c")
    assert not any(key.startswith("efa-security-group") for key in out.resources)
    interfaces = out.resources["launch-template-efa"]["spec"]["forProvider"]["networkInterfaces"]
    assert {tuple(i["securityGroups"]) for i in interfaces} == {("sg-c",)}


def test_eks_capacity_block_with_efa_shares_one_launch_template():
    pool = FoundationPool("cb", machine_type="p5.48xlarge", capacity_reservation_id="cr-0abc", fabric="EFA")
    out = eks(SYSTEM, pool, cluster_security_group_id="sg-c", efa_security_group_id="sg-e")
    template = out.resources["launch-template-cb"]["spec"]["forProvider"]
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert len(template["networkInterfaces"]) == 32
    assert out.pool_fields["cb"]["capacityType"] == "CAPACITY_BLOCK"


# ---- GKE

COMPUTE = "compute.gcp.m.upbound.io/v1beta1"
CLOUDPLATFORM = "cloudplatform.gcp.m.upbound.io/v1beta1"
NODE_CONFIG = {"nodeConfig": {"serviceAccountRef": ref("service-account"),
                              "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]}}


def test_gke_composes_network_subnetwork_and_node_account_with_its_roles():
    out = gke(project="acme-ml")
    assert out.resources == {
        "network": mr(COMPUTE, "Network", "network", {"project": "acme-ml", "autoCreateSubnetworks": False}),
        "subnetwork": mr(COMPUTE, "Subnetwork", "subnetwork", {
            "project": "acme-ml", "region": "us-central1", "networkRef": ref("network"), "ipCidrRange": "10.0.0.0/24",
            "secondaryIpRange": [{"rangeName": "pods", "ipCidrRange": "10.1.0.0/16"},
                                 {"rangeName": "services", "ipCidrRange": "10.2.0.0/16"}],
            "privateIpGoogleAccess": True}),
        "service-account": mr(CLOUDPLATFORM, "ServiceAccount", "service-account",
                              {"project": "acme-ml", "displayName": "inferplane nodes of cluster c1"},
                              annotations={"crossplane.io/external-name": "c1-service-account"}),
        "iam-member-node": mr(CLOUDPLATFORM, "ProjectIAMMember", "iam-member-node", {
            "project": "acme-ml", "role": "roles/container.defaultNodeServiceAccount",
            "member": "serviceAccount:c1-service-account@acme-ml.iam.gserviceaccount.com"}),
        "iam-member-registry": mr(CLOUDPLATFORM, "ProjectIAMMember", "iam-member-registry", {
            "project": "acme-ml", "role": "roles/artifactregistry.reader",
            "member": "serviceAccount:c1-service-account@acme-ml.iam.gserviceaccount.com"}),
        # Filestore, where ModelCache volumes live, is an API a fresh project has off.
        "projectservice-filestore": mr(CLOUDPLATFORM, "ProjectService", "projectservice-filestore", {
            "project": "acme-ml", "service": "file.googleapis.com", "disableOnDestroy": False}),
    }
    assert out.cluster_fields == {"networkRef": ref("network"), "subnetworkRef": ref("subnetwork"),
                                  "ipAllocationPolicy": {"clusterSecondaryRangeName": "pods",
                                                         "servicesSecondaryRangeName": "services"}}
    assert out.pool_fields == {"system": NODE_CONFIG, "gpu": NODE_CONFIG}


def test_gke_without_a_project_grants_the_roles_once_the_account_reports_its_email():
    assert not any(k.startswith("iam-member") for k in gke().resources)
    out = gke(observed_service_account_email="c1-service-account@from-creds.iam.gserviceaccount.com")
    assert out.resources["iam-member-node"]["spec"]["forProvider"] == {
        "project": "from-creds", "role": "roles/container.defaultNodeServiceAccount",
        "member": "serviceAccount:c1-service-account@from-creds.iam.gserviceaccount.com"}


def test_gke_bring_your_own_network_and_account():
    out = gke(network="shared-vpc", subnetwork="gpu-subnet", service_account="nodes@acme.iam.gserviceaccount.com")
    # Only the project's Filestore API is composed: it is not the user's network or identity.
    assert out.resources == {"projectservice-filestore": mr(CLOUDPLATFORM, "ProjectService", "projectservice-filestore",
                                                            {"service": "file.googleapis.com", "disableOnDestroy": False})}
    assert out.cluster_fields == {"network": "shared-vpc", "subnetwork": "gpu-subnet"}
    assert out.pool_fields["gpu"] == {"nodeConfig": {
        "serviceAccount": "nodes@acme.iam.gserviceaccount.com",
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]}}


@pytest.mark.parametrize("name,expected", [
    ("c1-service-account", "c1-service-account"),
    ("1st-cluster-service-account", None),
    ("a-very-long-cluster-name-for-inference-service-account", None),
])
def test_gke_account_ids_are_legal(name, expected):
    got = account_id(name)
    assert 6 <= len(got) <= 30 and got[0].isalpha() and got[-1].isalnum()
    assert got.replace("-", "").isalnum() and got == got.lower()
    if expected:
        assert got == expected


def test_gke_long_account_ids_stay_distinct():
    a = account_id("a-very-long-cluster-name-for-inference-a-service-account")
    b = account_id("a-very-long-cluster-name-for-inference-b-service-account")
    assert a != b and a[:20] == b[:20] == "a-very-long-cluster-"


# ---- AKS

NETWORK = "network.azure.m.upbound.io/v1beta1"


def test_aks_composes_resource_group_virtual_network_and_subnet():
    out = aks()
    assert out.resources == {
        "resource-group": mr("azure.m.upbound.io/v1beta1", "ResourceGroup", "resource-group", {"location": "eastus"}),
        "virtual-network": mr(NETWORK, "VirtualNetwork", "virtual-network", {
            "location": "eastus", "resourceGroupNameRef": ref("resource-group"), "addressSpace": ["10.0.0.0/16"]}),
        "subnet": mr(NETWORK, "Subnet", "subnet", {
            "resourceGroupNameRef": ref("resource-group"), "virtualNetworkNameRef": ref("virtual-network"),
            "addressPrefixes": ["10.0.0.0/20"]}),
    }
    assert out.cluster_fields == {
        "resourceGroupNameRef": ref("resource-group"),
        "networkProfile": {"networkPlugin": "azure", "networkPluginMode": "overlay", "podCidr": "10.244.0.0/16",
                           "serviceCidr": "10.96.0.0/16", "dnsServiceIp": "10.96.0.10"},
        "defaultNodePool": {"vnetSubnetIdRef": ref("subnet")}, "nodeResourceGroup": "c1-nodes"}
    assert out.pool_fields == {"gpu": {"vnetSubnetIdRef": ref("subnet")}}


def test_aks_bring_your_own_resource_group_keeps_the_network_in_it():
    out = aks(resource_group_name="inference")
    assert list(out.resources) == ["virtual-network", "subnet"]
    assert out.resources["subnet"]["spec"]["forProvider"]["resourceGroupName"] == "inference"
    assert out.cluster_fields["resourceGroupName"] == "inference"


def test_aks_bring_your_own_subnet():
    subnet = "/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes"
    out = aks(resource_group_name="inference", subnet_id=subnet)
    assert out.resources == {}
    assert out.cluster_fields["defaultNodePool"] == {"vnetSubnetId": subnet}
    assert out.pool_fields["gpu"] == {"vnetSubnetId": subnet}


# ---- Nebius

VPC = "vpc.nebius.m.upbound.io/v1beta1"
NEBIUS_COMPUTE = "compute.nebius.m.upbound.io/v1beta1"
FILESYSTEMS = [{"attachMode": "READ_WRITE", "mountTag": "inferplane-cache",
                "existingFilesystem": {"idRef": ref("filesystem")}}]
# Every node mounts the filesystem at first boot, from the user data of this Secret beside the node groups.
CLOUD_INIT = {"name": "c1-cloud-init", "key": "userData"}


def test_nebius_composes_network_subnet_filesystem_and_a_gpu_cluster_per_fabric():
    pools = (FoundationPool("system"), FoundationPool("a", infiniband_fabric="fabric-3"),
             FoundationPool("b", infiniband_fabric="fabric-3"), FoundationPool("c", infiniband_fabric="fabric-5"))
    out = nebius(*pools)
    assert out.resources == {
        "network": mr(VPC, "Network", "network", {"name": "c1-network"}),
        "subnet": mr(VPC, "Subnet", "subnet", {"name": "c1-subnet", "networkIdRef": ref("network"),
                                               "ipv4PrivatePools": {"useNetworkPools": True}}),
        "filesystem": mr(NEBIUS_COMPUTE, "Filesystem", "filesystem",
                         {"name": "c1-filesystem", "type": "NETWORK_SSD", "sizeGibibytes": 1024}),
        "gpu-cluster-fabric-3": mr(NEBIUS_COMPUTE, "GpuCluster", "gpu-cluster-fabric-3",
                                   {"name": "c1-gpu-cluster-fabric-3", "infinibandFabric": "fabric-3"}),
        "gpu-cluster-fabric-5": mr(NEBIUS_COMPUTE, "GpuCluster", "gpu-cluster-fabric-5",
                                   {"name": "c1-gpu-cluster-fabric-5", "infinibandFabric": "fabric-5"}),
        "cloud-init": out.resources["cloud-init"],  # below
    }
    assert out.cluster_fields == {"controlPlane": {"subnetIdRef": ref("subnet")}}
    assert out.pool_fields["system"] == {"template": {"networkInterfaces": [{"subnetIdRef": ref("subnet")}],
                                                      "filesystems": FILESYSTEMS, "cloudInitUserDataSecretRef": CLOUD_INIT}}
    assert out.pool_fields["b"]["template"]["gpuCluster"] == {"idRef": ref("gpu-cluster-fabric-3")}
    assert out.pool_fields["c"]["template"]["gpuCluster"] == {"idRef": ref("gpu-cluster-fabric-5")}


def test_nebius_nodes_mount_the_filesystem_where_the_csi_driver_serves_volumes_from():
    secret = nebius().resources["cloud-init"]
    assert {k: secret[k] for k in ("apiVersion", "kind", "metadata", "type")} == {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c1-cloud-init", "namespace": NS}, "type": "Opaque"}
    user_data = base64.b64decode(secret["data"]["userData"]).decode()
    # The mount tag the node groups attach the filesystem under, at the path below the driver's dataDir.
    assert user_data == ("#cloud-config\nruncmd:\n  - mkdir -p /mnt/data\n"
                         "  - mount -t virtiofs inferplane-cache /mnt/data\n"
                         '  - printf "inferplane-cache /mnt/data virtiofs defaults,nofail 0 2\\n" >> /etc/fstab\n')
    assert NEBIUS_CSI_DATA_DIR.startswith("/mnt/data/")
    assert all(fields["template"]["cloudInitUserDataSecretRef"] == CLOUD_INIT
               for fields in nebius(FoundationPool("system"), FoundationPool("gpu")).pool_fields.values())


def test_nebius_bring_your_own_subnet_and_project():
    out = nebius(parent_id="project-e00abc", subnet_id="vpcsubnet-e00abc")
    assert list(out.resources) == ["filesystem", "cloud-init"]
    assert out.resources["filesystem"]["spec"]["forProvider"]["parentId"] == "project-e00abc"
    assert out.cluster_fields == {"controlPlane": {"subnetId": "vpcsubnet-e00abc"}}
    assert out.pool_fields["gpu"]["template"]["networkInterfaces"] == [{"subnetId": "vpcsubnet-e00abc"}]


# ---- every composed resource, and the fields added to clusters and pools, pass the providers' CRDs

def foundations():
    capacity_block = FoundationPool("cb", machine_type="p5.48xlarge", disk_size_gb=500,
                                    capacity_reservation_id="cr-0abc")
    return {
        "eks": eks(SYSTEM, GPU, capacity_block),
        "eks-efa": eks(SYSTEM, EFA_POOL, FoundationPool("cb-efa", machine_type="p5.48xlarge",
                                                        capacity_reservation_id="cr-0abc", fabric="EFA"),
                       cluster_security_group_id="sg-c", efa_security_group_id="sg-e"),
        "eks-byo": eks(SYSTEM, role_arn="arn:aws:iam::1:role/c", node_role_arn="arn:aws:iam::1:role/n",
                       subnet_ids=["subnet-1"]),
        "gke": gke(project="acme-ml"), "gke-byo": gke(network="n", subnetwork="s", service_account="a@b"),
        "aks": aks(), "aks-byo": aks(resource_group_name="rg", subnet_id="/subscriptions/s/x"),
        "nebius": nebius(FoundationPool("gpu", infiniband_fabric="fabric-3")),
        "nebius-byo": nebius(parent_id="project-1", subnet_id="vpcsubnet-1"),
    }


@pytest.mark.parametrize("case", list(foundations()))
def test_every_foundation_resource_validates_against_its_provider_crd(provider_crds, case):
    for key, resource in foundations()[case].resources.items():
        assert provider_crds.violations(resource) == [], key


def test_the_crd_check_refuses_unknown_fields(provider_crds):
    resource = eks(SYSTEM).resources["vpc"]
    resource["spec"]["forProvider"]["cidr"] = "10.0.0.0/16"
    assert provider_crds.violations(resource) != []


# The cloud modules' cluster and pool resources as composed today, to merge the foundation's fields into.
CLUSTER_SHELLS = {
    "eks": ("eks.aws.m.upbound.io/v1beta1", "Cluster", {"region": "us-east-1", "version": "1.36"},
            "NodeGroup", {"region": "us-east-1", "clusterNameRef": {"name": "c1"}, "scalingConfig": {"minSize": 1}}),
    "gke": ("container.gcp.m.upbound.io/v1beta1", "Cluster", {"location": "us-central1"},
            "NodePool", {"clusterRef": {"name": "c1"}, "nodeConfig": {"machineType": "g2-standard-8"}}),
    "aks": ("containerservice.azure.m.upbound.io/v1beta1", "KubernetesCluster",
            {"location": "eastus", "dnsPrefix": "c1", "defaultNodePool": {"name": "system", "vmSize": "x"}},
            "KubernetesClusterNodePool", {"kubernetesClusterIdRef": {"name": "c1"}, "vmSize": "x"}),
    "nebius": ("mk8s.nebius.m.upbound.io/v1beta1", "Cluster", {"name": "c1", "controlPlane": {"version": "1.36"}},
               "NodeGroup", {"name": "gpu", "parentIdRef": {"name": "c1"}, "fixedNodeCount": 1,
                             "template": {"resources": {"platform": "p", "preset": "q"}}}),
}


@pytest.mark.parametrize("case", list(foundations()))
def test_fields_given_to_clusters_and_pools_validate_against_their_crds(provider_crds, case):
    out = foundations()[case]
    api_version, cluster_kind, cluster_fields, pool_kind, pool_fields = CLUSTER_SHELLS[case.split("-")[0]]

    def shell(kind, fields):
        return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "c1", "namespace": NS},
                "spec": {"forProvider": fields, "providerConfigRef": CREDS}}
    assert provider_crds.violations(shell(cluster_kind, merge(cluster_fields, out.cluster_fields))) == []
    for pool, fields in out.pool_fields.items():
        assert provider_crds.violations(shell(pool_kind, merge(pool_fields, fields))) == [], pool


def test_merge_merges_nested_blocks_and_leaves_its_inputs_alone():
    base = {"nodeConfig": {"machineType": "m"}, "a": 1}
    assert merge(base, {"nodeConfig": {"serviceAccount": "s"}, "b": 2}) == \
        {"nodeConfig": {"machineType": "m", "serviceAccount": "s"}, "a": 1, "b": 2}
    assert base == {"nodeConfig": {"machineType": "m"}, "a": 1}
