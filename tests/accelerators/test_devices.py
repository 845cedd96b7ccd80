"""Each DRA driver's simulated devices against what the driver itself publishes (its source and the slices
seen on hardware), its chart's DeviceClass against them, and every recipe's selectors against them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inferplane.accelerators.devices import Varies
from inferplane.accelerators.registry import DEVICE_CLASSES, SLICES
from inferplane.api.inference_class import DeviceSpec, InferenceClass
from inferplane.cel import selector
from inferplane.cel.device import Device
from inferplane.simulator.simulation_slices import resource_slice

REPO = Path(__file__).resolve().parents[2]


def published(driver: str, attributes=None, capacity=None, count=2) -> list[dict]:
    spec = DeviceSpec.model_validate({"name": "d", "driver": driver, "deviceClassName": driver, "count": count,
                                      "attributes": attributes or {}, "capacity": capacity or {}})
    return resource_slice("node-0", driver, [spec])["spec"]["devices"]


def class_of(model, driver):
    """The class attributes that name a model: its model-naming attributes, as the class would write them."""
    shape = SLICES[driver]
    return {shape.class_key(k): v for k, v in model.attributes.items() if k in shape.model_keys}


MODELS = [(driver, model) for driver, shape in SLICES.items() for model in shape.models]


# ---- as the drivers publish them (their own sources, and slices from hardware)


def test_nvidia_devices_carry_the_attributes_the_drivers_own_test_lists():
    # kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 tests/bats/test_gpu_basic.bats, "inspect device attributes
    # in resource slice (gpu)": addressingMode too, "None" on an x86 host (issue 44: it was left out).
    reference = {"architecture", "brand", "cudaComputeCapability", "cudaDriverVersion", "driverVersion",
                 "productName", "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot", "type", "uuid",
                 "addressingMode"}
    for model in SLICES["gpu.nvidia.com"].models:
        for device in published("gpu.nvidia.com", class_of(model, "gpu.nvidia.com")):
            assert set(device["attributes"]) == reference
            assert device["attributes"]["addressingMode"] == {"string": "None"}
            assert set(device["capacity"]) == {"memory"}


def test_the_h100_reports_the_memory_hardware_reports():
    (device, _) = published("gpu.nvidia.com", {"productName": {"string": "NVIDIA H100 80GB HBM3"}})
    assert device["capacity"]["memory"] == {"value": "81559Mi"}  # issue 23: as the driver reports it


def test_an_mi300x_is_the_slice_in_the_amd_drivers_demo():
    # ROCm/k8s-gpu-dra-driver docs/demo.md: productName AMD_Instinct_MI300X_OAM, memory 196592Mi, 304 CUs,
    # 1216 SIMDs, spx_nps1 (v1.0 no longer publishes the demo's family, cardIndex, renderIndex, pciAddr,
    # driverSrcVersion; its deviceID is the sysfs PCI id).
    (device, _) = published("gpu.amd.com", {"deviceID": {"string": "0x74a1"}})
    attributes = device["attributes"]
    assert attributes["productName"] == {"string": "AMD_Instinct_MI300X_OAM"}
    assert attributes["partitionProfile"] == {"string": "spx_nps1"}
    assert attributes["type"] == {"string": "amdgpu"}
    assert device["capacity"] == {"memory": {"value": "196592Mi"}, "computeUnits": {"value": "304"},
                                  "simdUnits": {"value": "1216"}}
    # v1.0 deviceinfo.go: these, and driverVersion only when the module has a version string (the in-kernel
    # module, the host's driver, has none).
    assert set(attributes) == {"type", "productName", "numaNode", "deviceID", "partitionProfile",
                               "resource.kubernetes.io/pciBusID", "resource.kubernetes.io/pcieRoot"}
    assert "family" not in attributes


def test_a_cpu_device_is_the_slice_a_real_civo_node_published():
    # Modelplane PR #556's test: a Civo node running the dra-driver-cpu 0.3.0 chart published one device cpudevnuma000,
    # allowMultipleAllocations, these six attributes, numCPUs 6 and capacity dra.cpu/cpu "6".
    (device,) = published("dra.cpu", capacity={"cpu": {"value": "6"}}, count=1)
    assert device == {
        "name": "cpudevnuma000", "allowMultipleAllocations": True,
        "attributes": {"dra.cpu/numCPUs": {"int": 6}, "dra.cpu/numaNodeID": {"int": 0},
                       "dra.cpu/smtEnabled": {"bool": True}, "dra.cpu/socketID": {"int": 0},
                       "dra.net/numaNode": {"int": 0}, "resource.kubernetes.io/numaNode": {"int": 0}},
        "capacity": {"dra.cpu/cpu": {"value": "6"}}}


def test_an_efa_device_has_dranets_pci_attributes_and_no_kind():
    devices = published("dra.net", count=4)
    assert [d["name"] for d in devices] == ["pci-0000-30-00-0", "pci-0000-40-00-0", "pci-0000-50-00-0",
                                            "pci-0000-60-00-0"]
    for device in devices:
        assert device["attributes"]["dra.net/pciDevice"] == {"string": "Elastic Fabric Adapter (EFA)"}
        assert device["attributes"]["dra.net/rdma"] == {"bool": True}
        assert "dra.net/kind" not in device["attributes"]
        assert device["capacity"] == {}


@pytest.mark.parametrize("driver, model", MODELS, ids=[f"{d}-{m.name}" for d, m in MODELS])
def test_every_simulated_device_carries_exactly_what_its_driver_publishes(driver, model):
    shape = SLICES[driver]
    capacity = {"cpu": {"value": "6"}} if driver == "dra.cpu" else None
    for device in published(driver, class_of(model, driver), capacity, count=1 if driver == "dra.cpu" else 2):
        keys = {k if "/" in k else f"{driver}/{k}" for k in device["attributes"]}
        required = {a.name for a in shape.attributes if not a.optional}
        if driver in ("tpu.google.com", "neuron.aws.com"):
            # Their optional attributes follow the node (a TPU's topology, a Trainium grid's place, EFA's groups):
            # tests/accelerators/test_tpu.py and test_neuron.py hold each model's exact set.
            assert required <= keys <= {a.name for a in shape.attributes}
        else:
            assert keys == required
        for key, value in device["attributes"].items():
            (kind,) = value
            assert kind == shape.spec(key if "/" in key else f"{driver}/{key}").type
        assert {k if "/" in k else f"{driver}/{k}" for k in device["capacity"]} == set(shape.capacities)
        assert bool(device.get("allowMultipleAllocations")) == shape.allow_multiple_allocations


def test_devices_of_one_node_differ_where_the_driver_says_they_do():
    for driver, shape in SLICES.items():
        if driver == "dra.cpu":
            continue  # one device per NUMA node: a class states one
        first, second = published(driver)
        differs = {a.name for a in shape.attributes if a.varies is Varies.DEVICE and not a.optional}
        for key in differs:
            spelled = shape.spelled_key(key)
            if spelled in first["attributes"] and key.rpartition("/")[2] != "numaNode":
                assert first["attributes"][spelled] != second["attributes"][spelled], (driver, key)
        assert first["name"] != second["name"]


# ---- the DeviceClasses as the charts install them


@pytest.mark.parametrize("driver, model", MODELS, ids=[f"{d}-{m.name}" for d, m in MODELS])
def test_the_charts_device_class_selects_every_simulated_device(driver, model):
    capacity = {"cpu": {"value": "6"}} if driver == "dra.cpu" else None
    devices = published(driver, class_of(model, driver), capacity, count=1)
    for device_class in SLICES[driver].device_classes:
        for expression in device_class.selectors:
            for device in devices:
                assert selector(expression).matches(Device.from_resource_slice(driver, device)), \
                    (device_class.name, expression, device["name"])


def test_no_chart_device_class_selects_another_drivers_devices():
    for name, device_class in DEVICE_CLASSES.items():
        for driver, shape in SLICES.items():
            if device_class in shape.device_classes:
                continue
            capacity = {"cpu": {"value": "6"}} if driver == "dra.cpu" else None
            for device in published(driver, capacity=capacity, count=1):
                assert not all(selector(e).matches(Device.from_resource_slice(driver, device))
                               for e in device_class.selectors), (name, driver)


# ---- recipes select what real devices publish


def recipe_documents():
    for path in sorted((REPO / "recipes").rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                yield path, document


def recipe_requests():
    for path, document in recipe_documents():
        if document.get("kind") != "ModelDeployment":
            continue
        for engine in document["spec"]["template"]["spec"]["engines"]:
            for member in engine["members"]:
                for request in (member.get("nodeSelector") or {}).get("devices") or []:
                    yield path, request["name"], [s["cel"] for s in request.get("selectors") or []]


def recipe_class_devices():
    """Every claimed device of every recipe's classes, as its driver publishes it."""
    out = []
    for _, document in recipe_documents():
        if document.get("kind") != "InferenceClass":
            continue
        for spec in InferenceClass.model_validate(document).spec.devices:
            if spec.claim == "DRA" and spec.driver in SLICES:
                out += [(spec.driver, d) for d in resource_slice("n", spec.driver, [spec])["spec"]["devices"]]
    return out


REQUESTS = list(recipe_requests())


def test_there_are_recipe_requests_to_check():
    assert len(REQUESTS) >= 5


@pytest.mark.parametrize("path, request_, selectors", REQUESTS,
                         ids=[f"{p.parent.name}/{p.name}:{r}" for p, r, _ in REQUESTS])
def test_every_recipe_request_selects_a_device_its_driver_publishes(path, request_, selectors):
    """Against the drivers' tables (every model of every driver) and against the recipes' own classes, as
    published: some device satisfies every selector of the request."""
    every_model = [(driver, device) for driver, model in MODELS
                   for device in published(driver, class_of(model, driver),
                                           {"cpu": {"value": "6"}} if driver == "dra.cpu" else None, count=1)]
    for devices in (every_model, recipe_class_devices()):
        assert any(all(selector(s).matches(Device.from_resource_slice(driver, device)) for s in selectors)
                   for driver, device in devices), (path, request_, selectors)
