"""Admission holds a class to what its driver publishes: attribute names, types and value forms, the model's
own values and capacities, and the DeviceClass its chart installs; every error at once, with its path."""

from __future__ import annotations

import pytest
import yaml

from inferplane.admission import admit_paths


def klass(*devices, name="c"):
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": name},
            "spec": {"devices": list(devices)}}


def device(driver, attributes=None, capacity=None, name="gpu", device_class=None):
    return {"name": name, "driver": driver, "deviceClassName": device_class or driver,
            "attributes": attributes or {}, "capacity": capacity or {}}


def errors(tmp_path, body):
    path = tmp_path / "class.yaml"
    path.write_text(yaml.safe_dump(body))
    return [(e.path, e.message) for e in admit_paths([path]).errors]


def test_an_amd_product_name_with_spaces_is_refused_with_the_drivers_form(tmp_path):
    body = klass(device("gpu.amd.com", {"productName": {"string": "AMD Instinct MI325X"}}))
    assert errors(tmp_path, body) == [(
        "spec.devices[0].attributes.productName",
        "the gpu.amd.com driver publishes gpu.amd.com/productName as 'AMD_Instinct_MI325X_OAM', not "
        "'AMD Instinct MI325X': use AMD_Instinct_MI325X_OAM")]


def test_an_attribute_the_driver_does_not_publish_is_refused_naming_the_ones_it_does(tmp_path):
    [(path, message)] = errors(tmp_path, klass(device("gpu.amd.com", {"family": {"string": "AI"}})))
    assert path == "spec.devices[0].attributes.family"
    assert message.startswith("the gpu.amd.com driver publishes no attribute gpu.amd.com/family: it publishes "
                              "gpu.amd.com/deviceID, ")
    assert "gpu.amd.com/productName" in message and "ROCm/k8s-gpu-dra-driver v1.0" in message
    [(path, message)] = errors(tmp_path, klass(device("dra.net", {"kind": {"string": "network"}}, name="efa",
                                                      device_class="efa.networking.k8s.aws")))
    assert path == "spec.devices[0].attributes.kind"
    assert "dra.net/pciDevice" in message


def test_every_problem_of_every_device_is_reported_at_once(tmp_path):
    body = klass(
        device("gpu.nvidia.com", {"productName": {"string": "NVIDIA L4"}, "cudaComputeCapability": {"string": "8.9"},
                                  "uuid": {"string": "GPU-1"}}, {"memory": {"value": "24Gi"}, "cores": {"value": "1"}}),
        device("gpu.nvidia.com", {"productName": {"string": "NVIDIA L4"}}, {"memory": {"value": "24Gi"}}, name="two",
               device_class="gpu.amd.com"))
    assert errors(tmp_path, body) == [
        ("spec.devices[0].attributes.cudaComputeCapability",
         "the gpu.nvidia.com driver publishes gpu.nvidia.com/cudaComputeCapability as version: write {version: ...}"),
        ("spec.devices[0].attributes.uuid",
         "gpu.nvidia.com/uuid differs from device to device on a node, so a class cannot state it: select on it in "
         "a deployment's device selectors instead"),
        ("spec.devices[0].capacity.cores.value",
         "the gpu.nvidia.com driver publishes no capacity gpu.nvidia.com/cores: it publishes gpu.nvidia.com/memory "
         "(kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 cmd/gpu-kubelet-plugin/deviceinfo.go)"),
        ("spec.devices[0].capacity.memory.value",
         "the gpu.nvidia.com driver reports gpu.nvidia.com/memory as 23034Mi for NVIDIA L4, not 24Gi: write 23034Mi, "
         "or leave it out"),
        ("spec.devices[1].deviceClassName",
         "the gpu.nvidia.com driver's chart installs DeviceClass gpu.nvidia.com, not 'gpu.amd.com': "
         "use gpu.nvidia.com"),
        ("spec.devices[1].capacity.memory.value",
         "the gpu.nvidia.com driver reports gpu.nvidia.com/memory as 23034Mi for NVIDIA L4, not 24Gi: write 23034Mi, "
         "or leave it out"),
    ]


def test_a_models_own_values_are_its_drivers(tmp_path):
    body = klass(device("gpu.nvidia.com", {"productName": {"string": "NVIDIA L4"},
                                           "architecture": {"string": "Ampere"}}))
    assert errors(tmp_path, body) == [(
        "spec.devices[0].attributes.architecture",
        "the gpu.nvidia.com driver publishes gpu.nvidia.com/architecture = 'Ada Lovelace' for NVIDIA L4, not 'Ampere': "
        "write 'Ada Lovelace' or leave it out")]
    [(path, message)] = errors(tmp_path, klass(device("gpu.nvidia.com", {"productName": {"string": "NVIDIA T1000"}})))
    assert path == "spec.devices[0].attributes"
    assert message.startswith("no gpu.nvidia.com model inferplane knows has productName 'NVIDIA T1000': ")


@pytest.mark.parametrize("attributes, capacity", [
    ({"productName": {"string": "AMD_Instinct_MI325X_OAM"}}, {}),
    ({"deviceID": {"string": "0x74a5"}}, {}),
    ({"productName": {"string": "AMD_Instinct_MI300X_OAM"}}, {"memory": {"value": "196592Mi"}}),
    # The host's driver version, where its module has one.
    ({"deviceID": {"string": "0x74a1"}, "driverVersion": {"version": "6.12.12"}}, {}),
])
def test_a_class_in_the_drivers_own_terms_is_admitted(tmp_path, attributes, capacity):
    assert errors(tmp_path, klass(device("gpu.amd.com", attributes, capacity))) == []


def test_a_synthetic_device_is_not_held_to_a_driver(tmp_path):
    body = klass({"name": "nic", "claim": "Synthetic", "driver": "gpu.amd.com",
                  "attributes": {"family": {"string": "AI"}}})
    assert errors(tmp_path, body) == []


def cpu_class(capacity, machine=("GKE", "gke", {"machineType": "n2-standard-16"})):
    provider, block, fields = machine
    body = klass({"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", **capacity})
    body["spec"]["provisioning"] = {"provider": provider, block: fields}
    return body


def test_a_cpu_class_on_a_known_machine_states_the_cpus_the_driver_counts(tmp_path):
    # dra-driver-cpu counts a NUMA node's CPUs less reservedCPUs (0-1 in the catalog).
    assert errors(tmp_path, cpu_class({"capacity": {"cpu": {"value": "16"}}})) == [(
        "spec.devices[0].capacity.cpu.value",
        "dra-driver-cpu publishes 14 on n2-standard-16 (16 vCPUs less reservedCPUs 0-1), not 16: write 14")]
    assert errors(tmp_path, cpu_class({})) == [(
        "spec.devices[0].capacity.cpu",
        "required on a provisioned machine: dra-driver-cpu publishes 14 on n2-standard-16 (16 vCPUs less "
        "reservedCPUs 0-1): set cpu: {value: \"14\"}")]
    assert errors(tmp_path, cpu_class({"capacity": {"cpu": {"value": "14"}}})) == []
    # As the real Civo node counted them (Modelplane PR #556's test): 6.
    civo = ("Civo", "civo", {"size": "g4p.kube.medium"})
    assert errors(tmp_path, cpu_class({"capacity": {"cpu": {"value": "6"}}}, civo)) == []
    # Nebius presets carry their vCPUs in the name; an unknown machine is not checked.
    nebius = ("Nebius", "nebius", {"platform": "cpu-d3", "preset": "8vcpu-32gb"})
    assert [p for p, _ in errors(tmp_path, cpu_class({"capacity": {"cpu": {"value": "8"}}}, nebius))] == [
        "spec.devices[0].capacity.cpu.value"]
    other = ("GKE", "gke", {"machineType": "c4-standard-288"})
    assert errors(tmp_path, cpu_class({"capacity": {"cpu": {"value": "286"}}}, other)) == []


def test_a_capacity_stated_below_what_the_driver_reports_is_a_floor_said_in_a_warning(tmp_path):
    """Modelplane's H200 classes state memory 140Gi, "advertised below the ~141 GiB the driver reports":
    admitted, with a warning naming what placement reads; stating more than the driver reports is refused."""
    path = tmp_path / "class.yaml"
    hopper = {"architecture": {"string": "Hopper"}}
    path.write_text(yaml.safe_dump(klass(device("gpu.nvidia.com", hopper, {"memory": {"value": "140Gi"}}))))
    result = admit_paths([path])
    assert result.errors == []
    assert [(w.path, w.message) for w in result.warnings] == [(
        "spec.devices[0].capacity.memory.value",
        "the gpu.nvidia.com driver reports gpu.nvidia.com/memory as 143771Mi for NVIDIA H200, more than the 140Gi "
        "stated: admitted as a floor; placement and allocation read 143771Mi (write it to say so)")]
    # A floor names the model that reports the least above it: 40Gi of a Hopper is an H100, not an H200.
    path.write_text(yaml.safe_dump(klass(device("gpu.nvidia.com", hopper, {"memory": {"value": "40Gi"}}))))
    assert "for NVIDIA H100 80GB HBM3" in str(admit_paths([path]).warnings[0])
    # What the driver reports exactly: nothing to say; more than it reports: no Hopper has it.
    path.write_text(yaml.safe_dump(klass(device("gpu.nvidia.com", hopper, {"memory": {"value": "143771Mi"}}))))
    assert admit_paths([path]).warnings == [] and admit_paths([path]).errors == []
    [(where, message)] = errors(tmp_path, klass(device("gpu.nvidia.com", hopper, {"memory": {"value": "150Gi"}})))
    assert where == "spec.devices[0].attributes" and message.startswith("no gpu.nvidia.com model inferplane knows has")
