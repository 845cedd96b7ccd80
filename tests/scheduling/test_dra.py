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


def claim(*requests, capacity=None):
    return [("devices", {"devices": {"requests": [
        {"name": name, "exactly": {"deviceClassName": klass, "count": count,
                                   "selectors": [{"cel": {"expression": s}} for s in selectors],
                                   **({"capacity": {"requests": capacity}} if capacity else {})}}
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
    for _ in range(4):  # the CPU driver's grouped devices serve many claims, each a share
        allocation, reasons = allocator.try_allocate("n2", claim(("cpu", "dra.cpu", 1, []), capacity={"memory": "4"}))
        assert reasons == []
        allocator.commit("n2", allocation)
    allocation, reasons = allocator.try_allocate("n2", claim(("cpu", "dra.cpu", 1, []), capacity={"memory": "1"}))
    assert allocation is None and reasons[0].endswith("device cpudevnuma000: dra.cpu/memory 0 of 16 free)")


def shared_slice(capacity, policy=None):
    return {"spec": {"nodeName": "n", "driver": "dra.cpu", "pool": {"name": "n"}, "devices": [
        {"name": "cpudevnuma000", "allowMultipleAllocations": True, "attributes": {},
         "capacity": {"dra.cpu/cpu": {"value": capacity, **({"requestPolicy": policy} if policy else {})}}}]}}


def shares_taken(slice_, asked):
    """How many claims asking `asked` (None: no capacity named) the device takes, and what each consumed."""
    allocator, consumed = DeviceAllocator([slice_], CLASSES), []
    while True:
        allocation, _ = allocator.try_allocate("n", claim(("cpu", "dra.cpu", 1, []),
                                                          capacity={"dra.cpu/cpu": asked} if asked else None))
        if allocation is None or len(consumed) > 64:
            return len(consumed), consumed[:1]
        allocator.commit("n", allocation)
        consumed.append(allocation["devices"][0].to_dict().get("consumedCapacity"))


@pytest.mark.parametrize("capacity, policy, asked, shares, each", [
    ("32", None, "4", 8, {"dra.cpu/cpu": "4"}),          # no policy: as asked
    ("30", None, "4", 7, {"dra.cpu/cpu": "4"}),          # reservedCPUs kept two back: 2 left over
    ("32", None, None, 1, {"dra.cpu/cpu": "32"}),        # no capacity named, no policy: the whole device
    ("32", {"default": "2", "validRange": {"min": "2", "step": "2"}}, "3", 8, {"dra.cpu/cpu": "4"}),  # step up
    ("32", {"default": "2", "validRange": {"min": "2", "step": "2"}}, None, 16, {"dra.cpu/cpu": "2"}),  # default
    ("32", {"default": "8", "validValues": ["8", "16"]}, "9", 2, {"dra.cpu/cpu": "16"}),  # the next valid value
    ("32", {"default": "8", "validValues": ["8", "16"]}, "17", 0, []),  # beyond every valid value: refused
    ("32", {"default": "2", "validRange": {"min": "2", "max": "4"}}, "6", 0, []),  # over the maximum
])
def test_a_share_is_rounded_by_the_request_policy_as_kube_scheduler_does(capacity, policy, asked, shares, each):
    count, consumed = shares_taken(shared_slice(capacity, policy), asked)
    assert count == shares
    assert consumed == ([each] if shares else [])


def test_a_share_of_a_device_that_is_not_shared_is_refused_naming_why():
    slice_ = shared_slice("32")
    del slice_["spec"]["devices"][0]["allowMultipleAllocations"]
    allocation, reasons = DeviceAllocator([slice_], CLASSES).try_allocate(
        "n", claim(("cpu", "dra.cpu", 1, []), capacity={"dra.cpu/cpu": "4"}))
    assert allocation is None
    assert reasons == ["claim devices: request cpu: asks a share (capacity dra.cpu/cpu 4) but no dra.cpu device that "
                       "satisfies its selectors allows multiple allocations"]


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
