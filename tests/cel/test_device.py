"""DRA device selectors, against the CELDeviceSelector API documentation (resource.k8s.io/v1)."""

import pytest

from inferplane.cel import CelError, Device, DeviceSelector, parse_semver, selector

# The example device of the CELDeviceSelector documentation: driver dra.example.com, attributes
# "model" and "ext.example.com/family", one capacity "modules".
EXAMPLE = Device(
    driver="dra.example.com",
    name="example-0",
    attributes={"model": "LATEST-GPU-MODEL", "ext.example.com/family": "gpus", "count": 4, "shared": False},
    capacity={"modules": "8"},
)

L4 = Device(
    driver="gpu.nvidia.com",
    name="gpu-0",
    attributes={
        "type": "gpu",
        "productName": "NVIDIA L4",
        "brand": "Nvidia",
        "architecture": "Ada Lovelace",
        "uuid": "GPU-4b2a1a4e-2f9c-4e0b-9a8e-0c1d2e3f4a5b",
        "driverVersion": parse_semver("550.54.15"),
        "cudaComputeCapability": parse_semver("8.9.0"),
        "resource.kubernetes.io/pcieRoot": "pci0000:00",
    },
    capacity={"memory": "23034Mi"},
)

CPU = Device.from_resource_slice("dra.cpu", {
    "name": "cpudevnuma000",
    "attributes": {
        "dra.cpu/numCPUs": {"int": 32},
        "dra.cpu/smtEnabled": {"bool": True},
        "dra.cpu/socketID": {"int": 0},
        "resource.kubernetes.io/numaNode": {"int": 0},
    },
    "capacity": {"dra.cpu/cpu": {"value": "32"}},
    "allowMultipleAllocations": True,
})

MATCHES = [
    (EXAMPLE, 'device.driver == "dra.example.com"', True),
    (EXAMPLE, 'device.attributes["dra.example.com"].model == "LATEST-GPU-MODEL"', True),
    (EXAMPLE, 'device.attributes["ext.example.com"].family == "gpus"', True),
    (EXAMPLE, 'device.capacity["dra.example.com"].modules.compareTo(quantity("8")) == 0', True),
    (EXAMPLE, 'device.attributes["dra.example.com"].count >= 4 && !device.attributes["dra.example.com"].shared', True),
    # an unknown domain is an empty map
    (EXAMPLE, 'device.attributes["example.com"].size() == 0', True),
    (EXAMPLE, 'device.capacity["example.com"].size() == 0', True),
    (EXAMPLE, '!has(device.attributes["example.com"].model)', True),
    (EXAMPLE, 'has(device.attributes["dra.example.com"].model)', True),
    # bare names live in the driver's domain; qualified names in their own
    (EXAMPLE, 'device.attributes["dra.example.com"].size() == 3', True),
    (EXAMPLE, '!has(device.attributes["dra.example.com"].family)', True),
    (L4, 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"', True),
    (L4, 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100"', False),
    (L4, 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0', True),
    (L4, 'device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("40Gi"))', False),
    (L4, 'device.capacity["gpu.nvidia.com"].memory == quantity("23034Mi")', True),
    (L4, 'device.capacity["gpu.nvidia.com"].memory.asInteger() == 23034 * 1024 * 1024', True),
    (L4, 'device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))', True),
    (L4, 'device.attributes["gpu.nvidia.com"].driverVersion.compareTo(semver("560.0.0")) < 0', True),
    (L4, 'device.attributes["gpu.nvidia.com"].cudaComputeCapability.major() >= 8', True),
    (L4, 'device.attributes["gpu.nvidia.com"].driverVersion == semver("550.54.15")', True),
    (L4, 'device.attributes["resource.kubernetes.io"].pcieRoot.startsWith("pci")', True),
    (L4, 'device.attributes["gpu.nvidia.com"].architecture in ["Ada Lovelace", "Hopper"]', True),
    (L4, '["NVIDIA L4", "NVIDIA L40S"].exists(p, device.attributes["gpu.nvidia.com"].productName == p)', True),
    (L4, 'device.driver == "gpu.amd.com" && device.attributes["gpu.amd.com"].productName == "MI300X"', False),
    (CPU, 'device.attributes["dra.cpu"].numCPUs >= 16 && device.attributes["dra.cpu"].smtEnabled', True),
    (CPU, 'device.attributes["resource.kubernetes.io"].numaNode == 0', True),
    (CPU, 'device.capacity["dra.cpu"].cpu.isGreaterThan(quantity("31500m"))', True),
    (CPU, 'device.allowMultipleAllocations', True),
    (L4, '!device.allowMultipleAllocations', True),
    # evaluation errors mean "does not match"
    (L4, 'device.attributes["gpu.nvidia.com"].missing == "x"', False),
    (L4, 'device.attributes["gpu.amd.com"].productName == "MI300X"', False),  # unknown domain, missing field
    (L4, 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20GB")) >= 0', False),
    (L4, 'device.attributes["gpu.nvidia.com"].productName > 1', False),
]


@pytest.mark.parametrize("device, expr, expected", MATCHES)
def test_matches(device, expr, expected):
    assert selector(expr).matches(device) is expected


EXPLAINED = [
    (L4, 'device.attributes["gpu.nvidia.com"].missing == "x"', "failed: no such key: missing"),
    (L4, 'device.attributes["gpu.amd.com"].productName == "MI300X"', "failed: no such key: productName"),
    (L4, 'quantity("20GB").sign() > 0', "failed: '20GB' is not a valid quantity"),
    (L4, 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100"', "is false"),
]


@pytest.mark.parametrize("device, expr, reason", EXPLAINED)
def test_explain(device, expr, reason):
    explanation = selector(expr).explain(device)
    assert reason in explanation and expr in explanation
    with pytest.raises(CelError) if "failed" in reason else _no_raise():
        selector(expr).evaluate(device)


def _no_raise():
    import contextlib
    return contextlib.nullcontext()


def test_explain_is_none_on_a_match():
    assert selector('device.driver == "gpu.nvidia.com"').explain(L4) is None


def test_non_boolean_selector_is_an_error_not_a_mismatch():
    with pytest.raises(CelError, match="must evaluate to a bool"):
        selector("device.driver").matches(L4)


def test_selectors_are_cached_and_share_programs():
    expr = 'device.driver == "gpu.nvidia.com"'
    assert selector(expr) is selector(expr)
    assert DeviceSelector(expr).program is selector(expr).program


def test_syntax_error():
    with pytest.raises(CelError, match="Syntax error"):
        selector("device.driver ==")


def test_device_contexts_are_built_once():
    device = Device(driver="d.example.com", attributes={"a": 1}, capacity={"mem": "1Gi"})
    known = selector('device.attributes["d.example.com"].a == 1')
    unknown = selector('device.attributes["x.example.com"].size() == 0')
    assert known.matches(device) and unknown.matches(device)
    assert device.context(known.domains) is device.context(known.domains) is device.context()
    assert device.context(unknown.domains) is device.context(unknown.domains)
    assert device.context(unknown.domains) is not device.context()


def test_a_domain_present_only_in_capacity_still_has_empty_attributes():
    device = Device(driver="d.example.com", capacity={"mem": "1Gi"})
    assert selector('device.attributes["d.example.com"].size() == 0 && '
                    'device.capacity["d.example.com"].mem == quantity("1Gi")').matches(device)


def test_device_validation():
    with pytest.raises(ValueError, match="given twice"):
        _ = Device(driver="d.com", attributes={"a": 1, "d.com/a": 2}).activation
    with pytest.raises(ValueError, match="capacity 'mem'"):
        _ = Device(driver="d.com", capacity={"mem": "10KB"}).activation
    with pytest.raises(ValueError, match="int64"):
        _ = Device(driver="d.com", attributes={"a": 2**63}).activation
    with pytest.raises(ValueError, match="unsupported value"):
        _ = Device(driver="d.com", attributes={"a": 1.5}).activation


def test_from_resource_slice():
    assert CPU.name == "cpudevnuma000"
    assert CPU.activation["attributes"]["dra.cpu"] == {"numCPUs": 32, "smtEnabled": True, "socketID": 0}
    version = Device.from_resource_slice("gpu.nvidia.com", {"attributes": {"driverVersion": {"version": "550.54.15"}}})
    assert version.attributes["driverVersion"] == parse_semver("550.54.15")


def test_bad_device_data_is_an_error_not_a_mismatch():
    broken = Device(driver="d.com", capacity={"mem": "lots"})
    with pytest.raises(ValueError, match="capacity 'mem'"):
        selector('device.driver == "d.com"').matches(broken)
