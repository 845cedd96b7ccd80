"""Admission of shares (DRA consumable capacity): a deployment's capacity requests against the classes known,
and a class's sharing and request policies; every error names the field, the object and the fix."""

from __future__ import annotations

import copy

import pytest

from inferplane.admission import admit_manifests
from inferplane.admission.manifests import Manifest

CPU = {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": {"cpu": {"value": "32"}}}
GPU = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
       "capacity": {"memory": {"value": "80Gi"}}}
FPGA = {"name": "fpga", "driver": "fpga.example.com", "deviceClassName": "fpga.example.com",
        "allowMultipleAllocations": True,
        "capacity": {"slots": {"value": "16", "requestPolicy": {"default": "4",
                                                                "validRange": {"min": "4", "max": "8", "step": "4"}}}}}


def klass(name, *devices):
    return Manifest(f"{name}.yaml", {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass",
                                     "metadata": {"name": name}, "spec": {"devices": [copy.deepcopy(d) for d in devices]}})


def deployment(*requests):
    devices = [{"name": name, "selectors": [{"cel": f'device.driver == "{driver}"'}],
                "capacity": {"requests": asked}} for name, driver, asked in requests]
    return Manifest("model.yaml", {
        "apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelDeployment",
        "metadata": {"name": "qwen", "namespace": "default"},
        "spec": {"replicas": 1, "template": {"spec": {"engines": [{"name": "vllm", "members": [{
            "role": "Standalone", "nodeSelector": {"devices": devices},
            "template": {"spec": {"containers": [{"name": "engine", "image": "vllm"}]}}}]}]}}}})


CLASSES = [klass("lab-epyc", CPU), klass("lab-gpu", GPU), klass("lab-fpga", FPGA)]
AT = "spec.template.spec.engines[0].members[0].nodeSelector.devices[0]"
FIX = "ask for an amount such a device offers, or select devices that allow multiple allocations"


def messages(result):
    return [f"{e.kind}/{e.name}: {e.path}: {e.message}" for e in result.errors]


@pytest.mark.parametrize("request_, error", [
    (("cpu", "dra.cpu", {"dra.cpu/cpu": "4"}), None),
    (("cpu", "dra.cpu", {"cpu": "32"}), None),  # a bare name is in the driver's domain
    (("cpu", "dra.cpu", {"dra.cpu/cpu": "33"}),
     "class lab-epyc's device cpu dra.cpu/cpu: 33 asked, more than the device has (32)"),
    (("cpu", "dra.cpu", {"dra.cpu/memory": "1Gi"}),
     "class lab-epyc's device cpu publishes no capacity dra.cpu/memory (it has dra.cpu/cpu)"),
    (("gpu", "gpu.nvidia.com", {"memory": "20Gi"}),
     "class lab-gpu's device gpu does not allow multiple allocations: it is claimed whole, never shared (remove the "
     "request's capacity)"),
    (("fpga", "fpga.example.com", {"slots": "5"}), None),  # rounded up to 8 by the step
    (("fpga", "fpga.example.com", {"slots": "12"}),
     "class lab-fpga's device fpga fpga.example.com/slots: 12 rounds to 12, more than the policy's maximum 8"),
])
def test_a_share_is_checked_against_the_devices_its_selectors_select(request_, error):
    result = admit_manifests([*CLASSES, deployment(request_)])
    expected = [] if error is None else [
        f"ModelDeployment/qwen: {AT}.capacity.requests: no device the request's selectors select can give this share "
        f"({error}): {FIX}"]
    assert messages(result) == expected


def test_a_share_is_checked_against_the_classes_already_applied_and_left_alone_without_one():
    known = {m.body["metadata"]["name"]: c for m, c in admit_manifests(CLASSES).admitted}
    result = admit_manifests([deployment(("cpu", "dra.cpu", {"dra.cpu/cpu": "64"}))], known_classes=known)
    assert len(result.errors) == 1 and "64 asked, more than the device has (32)" in result.errors[0].message
    # No class known yet selects its devices: the scheduler will say, once one is applied.
    assert admit_manifests([deployment(("cpu", "dra.cpu", {"dra.cpu/cpu": "64"}))]).ok


def test_every_amount_must_be_above_zero_all_at_once():
    result = admit_manifests([*CLASSES, deployment(("cpu", "dra.cpu", {"dra.cpu/cpu": "0"}),
                                                   ("fpga", "fpga.example.com", {"slots": "-1"}))])
    assert messages(result) == [
        f"ModelDeployment/qwen: {AT}.capacity.requests[dra.cpu/cpu]: must be more than 0, got '0': ask for the share "
        "each pod needs, e.g. \"4\"",
        "ModelDeployment/qwen: spec.template.spec.engines[0].members[0].nodeSelector.devices[1].capacity."
        "requests[slots]: must be more than 0, got '-1': ask for the share each pod needs, e.g. \"4\""]


@pytest.mark.parametrize("device, path, error", [
    ({**CPU, "allowMultipleAllocations": False}, "spec.devices[0].allowMultipleAllocations",
     "the dra.cpu driver publishes its devices with allowMultipleAllocations true"),
    ({**GPU, "allowMultipleAllocations": True}, "spec.devices[0].allowMultipleAllocations",
     "the gpu.nvidia.com driver publishes its devices with allowMultipleAllocations false"),
    ({**CPU, "allowMultipleAllocations": True, "capacity": {"cpu": {"value": "32", "requestPolicy": {"default": "2"}}}},
     "spec.devices[0].capacity.cpu.requestPolicy", "the dra.cpu driver publishes no request policy"),
    ({**FPGA, "allowMultipleAllocations": None}, "spec.devices[0].capacity",
     "a requestPolicy needs allowMultipleAllocations: true on the device"),
    ({**FPGA, "capacity": {"slots": {"value": "16", "requestPolicy": {"default": "4", "validValues": ["8", "4"]}}}},
     "spec.devices[0].capacity.slots.requestPolicy.validValues", "must be ascending without repeats"),
    ({**FPGA, "capacity": {"slots": {"value": "16", "requestPolicy": {"default": "2", "validRange": {"min": "4"}}}}},
     "spec.devices[0].capacity.slots.requestPolicy.default", "2 is outside validRange: make the default at least 4"),
    ({**FPGA, "capacity": {"slots": {"value": "16", "requestPolicy": {"validValues": ["4"]}}}},
     "spec.devices[0].capacity.slots.requestPolicy.default", "a policy with validRange or validValues needs a default"),
])
def test_a_class_states_sharing_and_policies_as_its_driver_publishes_them(device, path, error):
    device = {k: v for k, v in device.items() if v is not None}
    result = admit_manifests([klass("c", device)])
    assert [(e.name, e.path) for e in result.errors] == [("c", path)]
    assert error in result.errors[0].message
