"""The GPU each cloud machine carries, from the vendored tables (inferplane/clouds/offerings/): what
machine_gpu answers for a class's machine block, and that each table names the GPU of every GPU machine it
lists (or says why it leaves one out), so a table update adding a GPU machine without its GPU fails here."""

import pytest

from inferplane.api.cloud import PROVIDERS
from inferplane.api.drivers import AMD_GPU, GPU_DRIVERS, NVIDIA_GPU
from inferplane.clouds import MachineGpu, machine_gpu
from inferplane.clouds.offerings import offerings

NVIDIA, AMD = NVIDIA_GPU.name, AMD_GPU.name


@pytest.mark.parametrize("provider, block, expected", [
    ("EKS", {"instanceType": "g6.xlarge"}, (NVIDIA, "NVIDIA L4", 1)),
    ("EKS", {"instanceType": "p5.48xlarge"}, (NVIDIA, "NVIDIA H100 80GB HBM3", 8)),
    ("EKS", {"instanceType": "p5e.48xlarge"}, (NVIDIA, "NVIDIA H200", 8)),  # the eks-amd-mi300x recipe's
    ("GKE", {"machineType": "n1-standard-8", "accelerator": {"type": "nvidia-tesla-t4", "count": 2}},
     (NVIDIA, "Tesla T4", 2)),
    ("GKE", {"machineType": "a3-highgpu-8g"}, (NVIDIA, "NVIDIA H100 80GB HBM3", 8)),
    # A machine type's built-in GPUs win over an accelerator block.
    ("GKE", {"machineType": "g2-standard-24", "accelerator": {"type": "nvidia-tesla-t4", "count": 1}},
     (NVIDIA, "NVIDIA L4", 2)),
    ("AKS", {"vmSize": "Standard_ND96isr_MI300X_v5"}, (AMD, "AMD_Instinct_MI300X_OAM", 8)),
    ("Nebius", {"platform": "gpu-h200-sxm", "preset": "8gpu-128vcpu-1600gb"}, (NVIDIA, "NVIDIA H200", 8)),
    ("Nebius", {"platform": "gpu-l40s-d", "preset": "2gpu-64vcpu-384gb"}, (NVIDIA, "NVIDIA L40S", 2)),
    ("Vultr", {"plan": "vbm-256c-2048gb-8-mi300x-gpu"}, (AMD, "AMD_Instinct_MI300X_OAM", 8)),
    ("Civo", {"size": "an.g1.l40s.kube.x1"}, (NVIDIA, "NVIDIA L40S", 1)),
])
def test_a_machine_names_its_gpu(provider, block, expected):
    gpu = machine_gpu(provider, block)
    assert isinstance(gpu, MachineGpu) and (gpu.driver, gpu.product, gpu.count) == expected
    assert gpu.machine == next(iter(block.values())) and gpu.table == offerings(provider).named()
    assert not gpu.unconfirmed


@pytest.mark.parametrize("provider, block", [
    ("EKS", {"instanceType": "m7i.2xlarge"}),  # a CPU machine
    ("EKS", {"instanceType": "g6f.large"}),  # an eighth of an L4: no whole GPU
    ("GKE", {"machineType": "n2-standard-8"}),  # no accelerator block
    ("Nebius", {"platform": "cpu-d3", "preset": "16vcpu-64gb"}),
    ("Existing", {}),  # no table
])
def test_a_machine_without_a_gpu_the_table_knows_has_none(provider, block):
    assert machine_gpu(provider, block) is None


def test_an_unconfirmed_product_says_so():
    gpu = machine_gpu("EKS", {"instanceType": "g5g.xlarge"})
    assert gpu is not None and gpu.unconfirmed and gpu.product == "NVIDIA T4G"


@pytest.mark.parametrize("cloud", PROVIDERS)
def test_every_gpu_machine_has_its_gpu_or_is_left_out_with_why(cloud):
    table = offerings(cloud)
    assert table.gpu_machines is not None and table.gpus
    # Every entry is of a machine the table lists, by a GPU driver inferplane knows.
    assert set(table.gpus) <= table.machines and set(table.gpus_left_out) <= table.machines
    assert not set(table.gpus) & set(table.gpus_left_out)
    assert all(reason.strip() for reason in table.gpus_left_out.values())
    for gpu in (*table.gpus.values(), *table.accelerator_gpus.values()):
        assert gpu.driver in GPU_DRIVERS and gpu.product.strip()
        assert gpu.count is None or gpu.count >= 1
    # Every GPU machine the table lists (by its name pattern, justified in the table) is accounted for.
    gpu_machines = {m for m in table.machines if table.gpu_machines.search(m)}
    assert gpu_machines - set(table.gpus) - set(table.gpus_left_out) == set()
    assert set(table.gpus) | set(table.gpus_left_out) <= gpu_machines
    # Counts: fixed by the machine, except Nebius's (the preset's) and GKE's accelerator types (the block's).
    assert all((gpu.count is None) == (cloud == "Nebius") for gpu in table.gpus.values())
    assert all(gpu.count is None for gpu in table.accelerator_gpus.values())


def test_every_gke_accelerator_type_names_its_gpu():
    table = offerings("GKE")
    assert set(table.accelerator_gpus) == table.accelerators
    for provider in PROVIDERS:
        assert bool(offerings(provider).accelerator_gpus) == (provider == "GKE")


def test_every_nebius_gpu_preset_names_its_gpu_count():
    table = offerings("Nebius")
    for platform in table.gpus:
        for preset in table.presets[platform]:
            gpu = machine_gpu("Nebius", {"platform": platform, "preset": preset})
            assert gpu is not None and gpu.count == int(preset.split("gpu-")[0])
