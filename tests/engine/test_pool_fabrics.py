"""Capacity blocks and fabrics, from an InferenceCluster's pools to the resources the embedded engine
reconciles to Ready: an EKS pool on a Capacity Block with EFA, a Nebius pool on an InfiniBand fabric."""

import yaml

from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key


def nvidia_class(name, provisioning):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": name},
            "spec": {"provisioning": provisioning,
                     "devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
                                  "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"}},
                                  "capacity": {"memory": {"value": "81559Mi"}}}]}}


def cluster(name, source, settings, pool):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": name},
            "spec": {"cluster": {"source": source, source.lower(): settings}, "nodePools": [pool]}}


def reconciled(tmp_path, *documents):
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    runtime = ControlPlane(None)
    result = runtime.apply([path])
    assert result.admission.ok and result.report.converged
    return runtime


def ready(runtime, name):
    obj = runtime.get(Key("inferplane.dev", "InferenceCluster", "", name))
    return {c["type"]: (c["status"], c["reason"]) for c in obj["status"]["conditions"]}["ClusterReady"]


def managed(runtime, kind, group_prefix):
    return [o for o in runtime.list() if o["kind"] == kind and o["apiVersion"].startswith(group_prefix)]


def test_an_eks_capacity_block_pool_with_efa_reaches_ready(tmp_path):
    runtime = reconciled(
        tmp_path,
        nvidia_class("p5", {"provider": "EKS", "eks": {"instanceType": "p5.48xlarge", "diskSizeGb": 500,
                                                         "accelerator": {"type": "nvidia-h100", "count": 8}}}),
        cluster("eks-p5", "EKS", {"region": "us-east-1"},
                {"name": "h100", "className": "p5", "nodeCount": 2, "zones": ["us-east-1a"],
                 "capacityBlock": {"capacityReservationId": "cr-0123456789abcdef0"}, "fabric": {"type": "EFA"}}))
    assert ready(runtime, "eks-p5") == ("True", "Available")
    [template] = managed(runtime, "LaunchTemplate", "ec2.aws.")
    fields = template["spec"]["forProvider"]
    assert fields["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
    [group] = [o for o in managed(runtime, "SecurityGroup", "ec2.aws.") if "efa" in o["metadata"]["name"]]
    cluster_group = managed(runtime, "Cluster", "eks.aws.")[0]["status"]["atProvider"]["vpcConfig"][
        "clusterSecurityGroupId"]
    # Both groups' ids as the simulated provider reported them.
    assert fields["networkInterfaces"][0]["securityGroups"] == [cluster_group, group["status"]["atProvider"]["id"]]
    assert len(fields["networkInterfaces"]) == 32
    [gpu_group] = [o for o in managed(runtime, "NodeGroup", "eks.aws.")
                   if o["metadata"]["annotations"]["crossplane.io/external-name"] == "h100"]
    assert gpu_group["spec"]["forProvider"]["launchTemplate"] == {"name": template["metadata"]["name"],
                                                                 "version": "$Latest"}
    assert gpu_group["spec"]["forProvider"]["capacityType"] == "CAPACITY_BLOCK"


def test_a_nebius_infiniband_pool_reaches_ready_in_its_gpu_cluster(tmp_path):
    runtime = reconciled(
        tmp_path,
        nvidia_class("h100-8x", {"provider": "Nebius", "nebius": {
            "platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb",
            "accelerator": {"type": "nvidia-h100", "count": 8}}}),
        cluster("nebius-ib", "Nebius", {},
                {"name": "h100", "className": "h100-8x", "nodeCount": 2,
                 "fabric": {"type": "InfiniBand", "infiniband": {"fabric": "fabric-2"}}}))
    assert ready(runtime, "nebius-ib") == ("True", "Available")
    [gpu_cluster] = managed(runtime, "GpuCluster", "compute.nebius.")
    assert gpu_cluster["spec"]["forProvider"]["infinibandFabric"] == "fabric-2"
    [pool] = [o for o in managed(runtime, "NodeGroup", "mk8s.nebius.") if o["spec"]["forProvider"]["name"] == "h100"]
    assert pool["spec"]["forProvider"]["template"]["gpuCluster"] == {"idRef": {"name": gpu_cluster["metadata"]["name"]}}
