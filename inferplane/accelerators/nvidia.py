"""NVIDIA's DRA driver (`gpu.nvidia.com`): the devices it publishes and the DeviceClass its chart installs.

Source: kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 (the chart the catalog pins),
`cmd/gpu-kubelet-plugin/deviceinfo.go` (`GpuInfo.Attributes`, `GetDevice`), `nvlib.go` (where each
value comes from), `partitions.go` (`fullGpuCapacity`), and the attribute list its own test asserts
(`tests/bats/test_gpu_basic.bats`, "inspect device attributes in resource slice (gpu)").
"""

from __future__ import annotations

from inferplane.accelerators.devices import (
    PCI_BUS_ID,
    PCIE_ROOT,
    AttributeSpec,
    DeviceClassSpec,
    DeviceModel,
    DriverSlices,
    Varies,
    pci_address,
    pcie_root,
    stable_uuid,
)
from inferplane.api.drivers import NVIDIA_GPU

D = NVIDIA_GPU.name
SOURCE = "kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 cmd/gpu-kubelet-plugin/deviceinfo.go"

ATTRIBUTES = (
    AttributeSpec(f"{D}/type", "string", Varies.MODEL),  # GpuDeviceType, "gpu" (types.go)
    AttributeSpec(f"{D}/uuid", "string", Varies.DEVICE),  # NVML's UUID, GPU-...
    AttributeSpec(f"{D}/productName", "string", Varies.MODEL),  # NVML device.GetName(), as NVML spells it
    AttributeSpec(f"{D}/brand", "string", Varies.MODEL),  # go-nvlib GetBrandAsString
    AttributeSpec(f"{D}/architecture", "string", Varies.MODEL),  # go-nvlib GetArchitectureAsString
    AttributeSpec(f"{D}/cudaComputeCapability", "version", Varies.MODEL),  # "9.0" as semver 9.0.0
    AttributeSpec(f"{D}/driverVersion", "version", Varies.NODE),  # the host's NVIDIA driver
    AttributeSpec(f"{D}/cudaDriverVersion", "version", Varies.NODE),  # "major.minor" as semver
    # deviceattribute.GetPCIBusIDAttribute / GetPCIeRootAttributeByPCIBusID (standard attributes).
    AttributeSpec(PCI_BUS_ID, "string", Varies.DEVICE),
    AttributeSpec(PCIE_ROOT, "string", Varies.DEVICE),
    # `addressingMode` (HMM/ATS) is published only on coherent-memory platforms (Grace: GH200,
    # GB200); none of the x86 parts below has one, so it is not simulated.
)
# fullGpuCapacity: NVML's total memory in bytes, as a BinarySI quantity (so 85520809984 -> 81559Mi).
CAPACITIES = (f"{D}/memory",)


def _model(product: str, architecture: str, compute: str, memory: str) -> DeviceModel:
    return DeviceModel(product, {
        f"{D}/type": {"string": "gpu"},
        f"{D}/productName": {"string": product},
        # NVML_BRAND_NVIDIA -> "Nvidia" (go-nvlib device.go); the brand NVML reports for these data-centre
        # parts is *unconfirmed* per model (older Tesla-branded boards report "Tesla").
        f"{D}/brand": {"string": "Nvidia"},
        f"{D}/architecture": {"string": architecture},
        f"{D}/cudaComputeCapability": {"version": compute},
    }, {f"{D}/memory": memory})


# The models our clouds' instance types carry, by NVML's product name. Architecture names are
# go-nvlib's (device.go); compute capabilities are NVIDIA's published ones. Memory is NVML's
# total as the driver reports it: 81559Mi for the H100 80GB HBM3 (issue 23, from hardware);
# the others are the totals nvidia-smi shows for those parts, *unconfirmed* against a slice from
# each (a selector should ask for less than these, e.g. memory >= 20Gi on a 24 GB part).
MODELS = (
    _model("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", "81559Mi"),  # Nebius gpu-h100-sxm, EKS p5
    _model("NVIDIA H200", "Hopper", "9.0.0", "143771Mi"),  # *unconfirmed* memory
    _model("NVIDIA B200", "Blackwell", "10.0.0", "183359Mi"),  # *unconfirmed* memory
    _model("NVIDIA A100-SXM4-80GB", "Ampere", "8.0.0", "81920Mi"),
    _model("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", "40960Mi"),
    _model("NVIDIA A100 80GB PCIe", "Ampere", "8.0.0", "81920Mi"),  # AKS NC A100 v4, Vultr
    _model("NVIDIA L40S", "Ada Lovelace", "8.9.0", "46068Mi"),
    _model("NVIDIA L4", "Ada Lovelace", "8.9.0", "23034Mi"),  # GKE g2, EKS g6
    _model("NVIDIA A10G", "Ampere", "8.6.0", "23028Mi"),  # EKS g5
    # Azure NV A10 v5; memory as Modelplane's AKS example states it (marked "verify" there): *unconfirmed*.
    _model("NVIDIA A10", "Ampere", "8.6.0", "24564Mi"),
)

# The host's driver when a class does not state it: R570 with its CUDA 12.8 (SystemGetCudaDriverVersion
# 12080 -> "12.8" -> 12.8.0).
NODE_DEFAULTS = {f"{D}/driverVersion": {"version": "570.133.20"}, f"{D}/cudaDriverVersion": {"version": "12.8.0"}}


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # CanonicalName: gpu-<minor>; one PCIe root per GPU, as on the multi-GPU servers these run on.
    bus = 0x18 + 0x10 * index
    return f"gpu-{index}", {f"{D}/uuid": {"string": f"GPU-{stable_uuid(node, index)}"},
                            PCI_BUS_ID: {"string": pci_address(bus)}, PCIE_ROOT: {"string": pcie_root(bus)}}


# deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml at v0.4.0 (GPUs enabled; the
# MIG, VFIO and ComputeDomain classes are off with the values the catalog sets).
DEVICE_CLASS = DeviceClassSpec(
    NVIDIA_GPU.device_class,
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",),
    "kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 "
    "deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-gpu.yaml")

SLICES = DriverSlices(
    driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=MODELS, identity=_identity,
    device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/productName",), node_defaults=NODE_DEFAULTS)
