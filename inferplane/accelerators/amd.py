"""AMD's GPU DRA driver (`gpu.amd.com`): the devices it publishes and the DeviceClass installed with it.

Source: ROCm/k8s-gpu-dra-driver v1.0 (the operator deploys image v1.0.1, see the catalog):
`cmd/gpu-kubeletplugin/deviceinfo.go` (`AmdGpuInfo.GetDevice`), `pkg/amdgpu/amdgpu.go` (where the
values come from), `docs/driver-attributes.md`; read at commit 08bc729 (deviceinfo.go) / 086e278
(amdgpu.go) of the stored history, after chart v1.0.0 (2026-05-09): the repository has no tags to
read. Earlier (alpha) releases published `family`, `cardIndex`, `renderIndex`, `pciAddr` and
`driverSrcVersion`; v1.0 publishes none of them.
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
    numa_of,
    pci_address,
    pcie_root,
)
from inferplane.api.drivers import AMD_GPU

D = AMD_GPU.name
SOURCE = "ROCm/k8s-gpu-dra-driver v1.0 cmd/gpu-kubeletplugin/deviceinfo.go"

ATTRIBUTES = (
    AttributeSpec(f"{D}/type", "string", Varies.MODEL),  # consts.AmdGpuDeviceType, "amdgpu" (a whole GPU)
    # sysfs product_name with " " -> "_" and "(" ")" dropped (amdgpu.go's replacer).
    AttributeSpec(f"{D}/productName", "string", Varies.MODEL),
    # sysfs device/device, the PCI device id as "0x74a1"; omitted when unreadable.
    AttributeSpec(f"{D}/deviceID", "string", Varies.MODEL),
    # "<compute>_<memory>" partition modes, on parts that partition (MI300 series: spx_nps1 whole).
    AttributeSpec(f"{D}/partitionProfile", "string", Varies.MODEL),
    AttributeSpec(f"{D}/numaNode", "int", Varies.DEVICE),  # sysfs numa_node
    # The module's version string: the in-kernel amdgpu module (the host's driver, which inferplane
    # runs: driver management is off) has none, and then both are omitted. Published only when a class
    # states the host's module has one.
    AttributeSpec(f"{D}/driverVersion", "version", Varies.NODE, optional=True),
    AttributeSpec(f"{D}/driverVersionFull", "string", Varies.NODE, optional=True),
    AttributeSpec(PCI_BUS_ID, "string", Varies.DEVICE),
    AttributeSpec(PCIE_ROOT, "string", Varies.DEVICE),
)
# memory (KFD VRAM bytes, BinarySI), computeUnits and simdUnits (KFD topology).
CAPACITIES = (f"{D}/memory", f"{D}/computeUnits", f"{D}/simdUnits")


def _model(name: str, product: str, device_id: str, memory: str, cus: int) -> DeviceModel:
    return DeviceModel(name, {
        f"{D}/type": {"string": "amdgpu"},
        f"{D}/productName": {"string": product},
        f"{D}/deviceID": {"string": device_id},
        f"{D}/partitionProfile": {"string": "spx_nps1"},
    }, {f"{D}/memory": memory, f"{D}/computeUnits": str(cus), f"{D}/simdUnits": str(cus * 4)})


# MI300X: productName AMD_Instinct_MI300X_OAM, memory 196592Mi, 304 CUs / 1216 SIMDs, spx_nps1: the
# slice in the driver's docs/demo.md (an MI300X node). Device ids: NFD's gpu-nfd-default-rule.yaml
# (MI300X 74a1, MI325X 74a5), written as sysfs writes them.
# MI325X: *unconfirmed*: its product name is taken to follow MI300X's (AMD_Instinct_MI325X_OAM); its
# 304 CUs are AMD's specification; its memory is 256 GiB less the 16Mi the MI300X's report keeps
# back (262128Mi), never seen in a slice: select at or below 256Gi less a margin (e.g. >= 240Gi).
MODELS = (
    _model("MI300X", "AMD_Instinct_MI300X_OAM", "0x74a1", "196592Mi", 304),
    _model("MI325X", "AMD_Instinct_MI325X_OAM", "0x74a5", "262128Mi", 304),
)


def _spelled(key: str, value: str) -> str | None:
    """productName as the driver writes it, for one written as marketing spells it ("AMD Instinct MI325X",
    "AMD Instinct MI300X (OAM)")."""
    if key != f"{D}/productName":
        return None
    normal = value.strip().replace(" ", "_").replace("(", "").replace(")", "")
    for model in MODELS:
        product = model.attributes[f"{D}/productName"]["string"]
        if normal in (product, product.removesuffix("_OAM")):
            return product
    return None


def _identity(node: str, index: int, count: int, model: DeviceModel) -> tuple[str, dict]:
    # CanonicalName gpu-<card>-<render>; each OAM GPU on its own PCIe root, half per socket.
    bus = 0x05 + 0x10 * index
    return f"gpu-{index + 1}-{128 + index}", {
        f"{D}/numaNode": {"int": numa_of(index, count)},
        PCI_BUS_ID: {"string": pci_address(bus)}, PCIE_ROOT: {"string": pcie_root(bus)}}


# The AMD GPU operator (v1.5.1, which the catalog installs) creates DeviceClass gpu.amd.com
# (`draDriver.deviceClass.create`, default true): ROCm/gpu-operator docs/dra/dra-driver.md; the driver's
# own chart writes the same selector (ROCm/k8s-gpu-dra-driver helm-charts-k8s/templates/deviceclass.yaml).
DEVICE_CLASS = DeviceClassSpec(AMD_GPU.device_class, ("device.driver == 'gpu.amd.com'",),
                               "ROCm/gpu-operator v1.5.1 docs/dra/dra-driver.md (DeviceClass)")

SLICES = DriverSlices(
    driver=D, source=SOURCE, attributes=ATTRIBUTES, capacities=CAPACITIES, models=MODELS, identity=_identity,
    device_classes=(DEVICE_CLASS,), model_keys=(f"{D}/productName", f"{D}/deviceID"), spelled=_spelled)
