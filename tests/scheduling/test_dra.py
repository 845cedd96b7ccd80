"""DRA allocation over ResourceSlices: selectors, counts, devices taken once, shared devices, and a
reason for every refusal."""

import pytest

from inferplane.scheduling.dra import DeviceAllocator


def slice_(node, driver, devices, shared=False):
    return {"spec": {"nodeName": node, "driver": driver, "pool": {"name": node},
                     "devices": [{"name": name, "attributes": attrs, "capacity": {"memory": {"value": memory}},
                                  **({"allowMultipleAllocations": True} if shared else {})}
                                 for name, attrs, memory in devices]}}


H100 = ("gpu-0", {"productName": {"string": "NVIDIA H100"}, "driverVersion": {"version": "570.1.0"}}, "80Gi")
L4 = ("gpu-1", {"productName": {"string": "NVIDIA L4"}, "driverVersion": {"version": "550.0.0"}}, "24Gi")
SLICES = [slice_("n1", "gpu.nvidia.com", [H100, L4]),
          slice_("n2", "dra.cpu", [("cpudevnuma000", {"numCPUs": {"int": 16}}, "16")], shared=True)]


# DeviceClasses that select by driver alone, as the AMD and CPU charts' do.
CLASSES = {"gpu.nvidia.com": ('device.driver == "gpu.nvidia.com"',), "gpu.amd.com": ('device.driver == "gpu.amd.com"',),
           "dra.cpu": ('device.driver == "dra.cpu"',)}


def claim(*requests):
    return [("devices", {"devices": {"requests": [
        {"name": name, "exactly": {"deviceClassName": klass, "count": count,
                                   "selectors": [{"cel": {"expression": s}} for s in selectors]}}
        for name, klass, count, selectors in requests]}})]


@pytest.mark.parametrize("selectors, count, devices", [
    (['device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'], 1, ["gpu-0"]),
    (['device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("560.0.0"))'], 1, ["gpu-0"]),
    (['device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'], 1, ["gpu-1"]),
    ([], 2, ["gpu-0", "gpu-1"]),
])
def test_a_request_takes_count_devices_that_satisfy_every_selector(selectors, count, devices):
    allocation, reasons = DeviceAllocator(SLICES, CLASSES).try_allocate("n1", claim(("gpu", "gpu.nvidia.com", count, selectors)))
    assert reasons == []
    assert [(a.driver, a.device) for a in allocation["devices"]] == [("gpu.nvidia.com", d) for d in devices]


@pytest.mark.parametrize("request_, reason", [
    (("gpu", "gpu.nvidia.com", 1, ['device.attributes["gpu.nvidia.com"].productName == "NVIDIA B200"']),
     "claim devices: request gpu: no gpu.nvidia.com device satisfies its selectors (selector "
     "'device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA B200\"' is false for device gpu-0)"),
    # A selector that errors at evaluation (a missing attribute) selects nothing, and says why.
    (("gpu", "gpu.nvidia.com", 1, ['device.attributes["gpu.nvidia.com"].missing == "x"']),
     "claim devices: request gpu: no gpu.nvidia.com device satisfies its selectors (selector "
     "'device.attributes[\"gpu.nvidia.com\"].missing == \"x\"' failed: "),
    (("gpu", "gpu.nvidia.com", 3, []), "claim devices: request gpu: needs 3 gpu.nvidia.com devices, 2 of the 2 "
                                       "that satisfy its selectors free"),
    (("gpu", "gpu.amd.com", 1, []), "claim devices: request gpu: the node publishes no gpu.amd.com devices"),
    (("gpu", "tpu.example.com", 1, []), "claim devices: request gpu: no DeviceClass tpu.example.com is installed"),
])
def test_a_node_that_cannot_satisfy_a_request_says_which_and_why(request_, reason):
    allocation, reasons = DeviceAllocator(SLICES, CLASSES).try_allocate("n1", claim(request_))
    assert allocation is None
    assert len(reasons) == 1 and reasons[0].startswith(reason)


def test_a_device_is_allocated_once_unless_its_driver_shares_it():
    allocator = DeviceAllocator(SLICES, CLASSES)
    for _ in range(2):
        allocation, _ = allocator.try_allocate("n1", claim(("gpu", "gpu.nvidia.com", 1, [])))
        allocator.commit("n1", allocation)
    assert allocator.try_allocate("n1", claim(("gpu", "gpu.nvidia.com", 1, [])))[0] is None
    for _ in range(3):  # the CPU driver's grouped devices serve many claims
        allocation, reasons = allocator.try_allocate("n2", claim(("cpu", "dra.cpu", 1, [])))
        assert reasons == []
        allocator.commit("n2", allocation)


def test_two_requests_of_one_pod_never_take_the_same_device():
    allocation, _ = DeviceAllocator(SLICES, CLASSES).try_allocate(
        "n1", claim(("a", "gpu.nvidia.com", 1, []), ("b", "gpu.nvidia.com", 1, [])))
    assert sorted(a.device for a in allocation["devices"]) == ["gpu-0", "gpu-1"]


def test_a_device_its_device_class_does_not_select_is_never_allocated():
    # NVIDIA's chart installs gpu.nvidia.com selecting type == 'gpu' too (deviceclass-gpu.yaml, v0.4.0): a
    # device without it is not allocated, whatever the request's own selectors say.
    classes = {"gpu.nvidia.com": ("device.driver == 'gpu.nvidia.com' && "
                                  "device.attributes['gpu.nvidia.com'].type == 'gpu'",)}
    typed = ("gpu-2", {"type": {"string": "gpu"}}, "24Gi")
    allocator = DeviceAllocator([slice_("n1", "gpu.nvidia.com", [H100, typed])], classes)
    allocation, _ = allocator.try_allocate("n1", claim(("gpu", "gpu.nvidia.com", 1, [])))
    assert [a.device for a in allocation["devices"]] == ["gpu-2"]
    allocation, reasons = DeviceAllocator([slice_("n1", "gpu.nvidia.com", [H100])], classes).try_allocate(
        "n1", claim(("gpu", "gpu.nvidia.com", 1, [])))
    assert allocation is None
    assert reasons[0].startswith("claim devices: request gpu: no device on the node satisfies DeviceClass "
                                 "gpu.nvidia.com's selectors (selector ")


def test_a_device_class_the_cluster_has_selects_its_drivers_devices():
    """An owner's driver (the DRA example driver) is allocated only where its DeviceClass is installed."""
    slices = [slice_("n1", "gpu.example.com", [("device-0", {}, "80Gi")])]
    request_ = ("gpu", "gpu.example.com", 1,
                ['device.capacity["gpu.example.com"].memory.compareTo(quantity("20Gi")) >= 0'])
    _, reasons = DeviceAllocator(slices, CLASSES).try_allocate("n1", claim(request_))
    assert reasons == ["claim devices: request gpu: no DeviceClass gpu.example.com is installed"]
    owners = {**CLASSES, "gpu.example.com": ("device.driver == 'gpu.example.com'",)}
    allocation, reasons = DeviceAllocator(slices, owners).try_allocate(
        "n1", claim(request_))
    assert reasons == [] and [a.to_dict() for a in allocation["devices"]] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "device-0"}]
