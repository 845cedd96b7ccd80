"""The vendored tables of what each cloud offers (inferplane/clouds/offerings/): each names its sources and
the date they were read, holds everything the repository's recipes, Modelplane's documented manifests
and inferplane's own System pools use, and the simulated provider refuses what a table lacks."""

from pathlib import Path

import pytest
import yaml

from inferplane.admission import admit_paths
from inferplane.api.cloud import PROVIDERS
from inferplane.clouds import CLOUD_MODULES, refusal
from inferplane.clouds.eks_foundation import cluster_zones
from inferplane.clouds.offerings import HERE, TABLE_DIR, offerings
from inferplane.simulator.provider import SimulatedProvider

REPO = Path(__file__).resolve().parents[2]
MODELPLANE = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests"


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_every_provisioned_cloud_has_a_table_naming_its_sources_and_date(cloud):
    table = offerings(cloud)
    assert table is not None and table.machines and table.read == "2026-12-02"
    assert table.file == f"{TABLE_DIR}/{cloud.lower()}.yaml" and (REPO / table.file).exists()
    header = [line for line in (HERE / f"{cloud.lower()}.yaml").read_text().splitlines() if line.startswith("#")]
    assert any("read 2026-12-02" in line for line in header) and any("Sources" in line or "Source:" in line
                                                                    for line in header)
    assert bool(table.regions) == (cloud != "Nebius")  # a Nebius cluster names no region
    assert bool(table.accelerators) == (cloud == "GKE")  # only GKE sends the accelerator to the cloud


def test_existing_clusters_have_no_table():
    assert offerings("Existing") is None


def test_zoned_clouds_list_each_regions_zones():
    assert offerings("EKS").regions["us-east-1"] == tuple(f"us-east-1{z}" for z in "abcdef")
    assert offerings("EKS").regions["ca-central-1"] == ("ca-central-1a", "ca-central-1b", "ca-central-1d")
    assert offerings("GKE").regions["us-central1"] == tuple(f"us-central1-{z}" for z in "abcf")
    assert offerings("AKS").regions["westeurope"] == ("1", "2", "3")
    assert offerings("AKS").regions["westus"] == ()  # no availability zones there


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_inferplanes_own_system_pool_is_offered(cloud):
    machine = CLOUD_MODULES[cloud].system_machine
    table = offerings(cloud)
    name = next(iter(machine.values()))
    assert name in table.machines
    if cloud == "Nebius":
        assert machine["preset"] in table.presets[machine["platform"]]


def offering_warnings(result) -> list[str]:
    # Not the advice on a class's devices, which may cite the table for the GPU its machine carries.
    return [str(w) for w in result.warnings if TABLE_DIR in str(w) and ".devices" not in w.path + "."]


@pytest.mark.parametrize("recipe", sorted(p for p in (REPO / "recipes").iterdir() if p.is_dir()),
                         ids=lambda p: p.name)
def test_no_recipe_names_what_its_cloud_lacks(recipe):
    result = admit_paths([recipe])
    assert result.errors == [] and offering_warnings(result) == []


def test_no_modelplane_manifest_names_what_its_cloud_lacks(tmp_path):
    checked = 0
    for path in sorted(MODELPLANE.rglob("*.yaml")):
        copy = tmp_path / "-".join(path.relative_to(MODELPLANE).parts)
        copy.write_text(path.read_text().replace("modelplane.ai", "inferplane.dev"))
        documents = [d for d in yaml.safe_load_all(copy.read_text()) if isinstance(d, dict)]
        if not any(d.get("kind", "").startswith("Inference") and d.get("kind") != "InferenceGateway"
                   or d.get("kind", "").endswith("Cluster") for d in documents):
            continue
        result = admit_paths([copy])
        assert offering_warnings(result) == [], path
        checked += 1
    assert checked >= 23


def test_the_provider_refuses_to_create_what_the_table_lacks():
    cluster = {"apiVersion": "container.gcp.m.upbound.io/v1beta1", "kind": "Cluster",
               "metadata": {"name": "c", "namespace": "inferplane-system"},
               "spec": {"forProvider": {"location": "us-central9"}}}
    assert refusal(cluster) == "InvalidParameterException: unknown region us-central9: GKE offers no such region"
    status = SimulatedProvider().observe(cluster)
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Ready", "False", "Creating"), ("Synced", "False", "ReconcileError")]
    assert status["conditions"][1]["message"].startswith("create failed: InvalidParameterException: unknown region")
    cluster["spec"]["forProvider"]["location"] = "us-central1"
    assert refusal(cluster) is None
    assert SimulatedProvider().observe(cluster)["conditions"][0]["status"] == "True"


def test_each_cloud_refuses_a_pool_of_a_machine_it_lacks():
    pools = {
        "EKS": {"instanceTypes": ["g5.xlargee"]},
        "GKE": {"location": "us-central1", "nodeConfig": {"machineType": "g2-standard-7"}},
        "AKS": {"vmSize": "Standard_NC24ads_A100_v9"},
        "Nebius": {"template": {"resources": {"platform": "gpu-h100-sxm", "preset": "2gpu-32vcpu-400gb"}}},
        "Vultr": {"plan": "vcg-l40s-16c-180g-49vram"},
        "Civo": {"size": "g4p.kube.medum"},
    }
    for cloud, for_provider in pools.items():
        module = CLOUD_MODULES[cloud]
        pool = {"apiVersion": module.api_version, "kind": module.pool_kind, "spec": {"forProvider": for_provider}}
        assert (refusal(pool) or "").startswith("InvalidParameterException: "), cloud
    # A kind the cloud modules do not name is never refused (a Helm release, the VPC...).
    assert refusal({"apiVersion": "ec2.aws.m.upbound.io/v1beta1", "kind": "VPC",
                    "spec": {"forProvider": {"region": "us-east-9"}}}) is None


def test_a_cloud_cluster_kind_written_by_hand_is_checked_too(tmp_path):
    (tmp_path / "eks.yaml").write_text(yaml.safe_dump({
        "apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "EKSCluster", "metadata": {"name": "direct"},
        "spec": {"region": "us-west-2", "nodePools": [{"name": "gpu", "role": "GPU", "nodeCount": 1,
                                                       "zones": ["us-west-2a", "us-west-2z"],
                                                       "machine": {"instanceType": "g6.xlarg"}}]}}))
    result = admit_paths([tmp_path / "eks.yaml"])
    assert result.errors == []
    assert [str(w).split(": ")[2] for w in result.warnings] == [
        "spec.nodePools[0].zones[1]", "spec.nodePools[0].machine.instanceType"]
    assert "did you mean g6.xlarge, g6f.xlarge or g6e.xlarge?" in str(result.warnings[1])


def test_an_eks_network_without_named_zones_takes_the_regions_first_zones_from_the_table():
    assert cluster_zones("us-east-2", []) == ["us-east-2a", "us-east-2b", "us-east-2c"]
    assert cluster_zones("ca-central-1", []) == ["ca-central-1a", "ca-central-1b", "ca-central-1d"]
    assert cluster_zones("us-west-1", []) == ["us-west-1a", "us-west-1b"]
    assert cluster_zones("ap-northeast-1", []) == ["ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"]
    assert cluster_zones("us-east-9", []) == ["us-east-9a", "us-east-9b", "us-east-9c"]  # a region the table lacks
