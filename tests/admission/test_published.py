"""Admission holds a class to what its driver can publish: attribute names, types and value forms, the values its
DeviceClass pins, and the DeviceClass its chart installs; every error at once, with its path. What the drivers'
tables of models say (a model's own values and capacities, a model they lack) is advice: a warning, with what the
simulation and placement read (issue 44)."""

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


def warnings(tmp_path, body):
    path = tmp_path / "class.yaml"
    path.write_text(yaml.safe_dump(body))
    result = admit_paths([path])
    assert result.errors == []
    return [(w.path, w.message) for w in result.warnings]


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
                                  "uuid": {"string": "GPU-1"}, "type": {"string": "mig"}},
               {"memory": {"value": "24Gi"}, "cores": {"value": "1"}}),
        device("gpu.nvidia.com", {"productName": {"string": "NVIDIA L4"}}, {"memory": {"value": "24Gi"}}, name="two",
               device_class="gpu.amd.com"))
    assert errors(tmp_path, body) == [
        ("spec.devices[0].attributes.cudaComputeCapability",
         "the gpu.nvidia.com driver publishes gpu.nvidia.com/cudaComputeCapability as version: write {version: ...}"),
        ("spec.devices[0].attributes.type",
         "DeviceClass gpu.nvidia.com selects only devices whose gpu.nvidia.com/type is 'gpu', so a device stating "
         "'mig' is never allocated: write 'gpu' or leave it out"),
        ("spec.devices[0].attributes.uuid",
         "gpu.nvidia.com/uuid differs from device to device on a node, so a class cannot state it: select on it in "
         "a deployment's device selectors instead"),
        ("spec.devices[0].capacity.cores.value",
         "the gpu.nvidia.com driver publishes no capacity gpu.nvidia.com/cores: it publishes gpu.nvidia.com/memory "
         "(kubernetes-sigs/dra-driver-nvidia-gpu v0.4.0 cmd/gpu-kubelet-plugin/deviceinfo.go)"),
        ("spec.devices[1].deviceClassName",
         "the gpu.nvidia.com driver's chart installs DeviceClass gpu.nvidia.com, not 'gpu.amd.com': "
         "use gpu.nvidia.com"),
    ]


def test_a_value_the_table_has_otherwise_is_a_warning_and_the_simulation_publishes_the_drivers(tmp_path):
    body = klass(device("gpu.nvidia.com", {"productName": {"string": "NVIDIA L4"},
                                           "architecture": {"string": "Ampere"}}, {"memory": {"value": "24Gi"}}))
    assert warnings(tmp_path, body) == [
        ("spec.devices[0].attributes.architecture",
         "the gpu.nvidia.com driver publishes gpu.nvidia.com/architecture = 'Ada Lovelace' for NVIDIA L4 (productName "
         "'NVIDIA L4'), not 'Ampere': the simulation publishes 'Ada Lovelace'; write it or leave it out"),
        ("spec.devices[0].capacity.memory.value",
         "the gpu.nvidia.com driver reports gpu.nvidia.com/memory as 23034Mi for NVIDIA L4 (productName 'NVIDIA L4'), "
         "not 24Gi: the simulation publishes and placement reads 23034Mi; write 23034Mi, or leave it out")]
    from inferplane.accelerators.registry import published_view
    from inferplane.api.inference_class import InferenceClass
    view = published_view(InferenceClass.model_validate(body)).spec.devices[0]
    assert view.attributes["architecture"].value() == "Ada Lovelace" and view.capacity["memory"].value == "23034Mi"


def test_a_model_the_table_lacks_is_admitted_as_stated_with_one_warning(tmp_path):
    body = klass(device("gpu.nvidia.com", {"productName": {"string": "NVIDIA B300 SXM6 AC"},
                                           "architecture": {"string": "Blackwell"}}, {"memory": {"value": "275Gi"}}))
    [(path, message)] = warnings(tmp_path, body)
    assert path == "spec.devices[0].attributes"
    assert message.startswith(
        "inferplane's table has no gpu.nvidia.com model with productName 'NVIDIA B300 SXM6 AC': admitted as the class "
        "states it (architecture 'Blackwell', productName 'NVIDIA B300 SXM6 AC', memory 275Gi), which the "
        "simulation publishes and placement reads. If the device is one the table has, name it: NVIDIA H100 80GB HBM3, ")
    # By memory alone, as Modelplane's scheduler tests write them: no model is guessed from the memory.
    [(_, message)] = warnings(tmp_path, klass(device("gpu.nvidia.com", capacity={"memory": {"value": "141Gi"}})))
    assert message.startswith("the class names no gpu.nvidia.com model (productName) and provisions no machine whose "
                              "GPU inferplane knows: admitted as the class states it (memory 141Gi)")
    [(_, message)] = warnings(tmp_path, klass(device("gpu.amd.com", {"productName": {"string": "AMD_Instinct_MI355X_OAM"}})))
    assert "it states no memory, computeUnits, simdUnits, so a selector on them matches nothing here" in message


def test_an_unconfirmed_value_never_refuses_and_the_class_is_believed(tmp_path):
    # MI325X's memory (262128Mi) is unconfirmed: a class stating 256Gi is neither refused nor warned, and published.
    body = klass(device("gpu.amd.com", {"productName": {"string": "AMD_Instinct_MI325X_OAM"}},
                        {"memory": {"value": "256Gi"}}))
    assert warnings(tmp_path, body) == []
    from inferplane.accelerators.registry import published_view
    from inferplane.api.inference_class import InferenceClass
    assert published_view(InferenceClass.model_validate(body)).spec.devices[0].capacity["memory"].value == "256Gi"


def test_value_forms_the_drivers_never_write_are_refused(tmp_path):
    amd = errors(tmp_path, klass(device("gpu.amd.com", {"productName": {"string": "AMD Instinct MI355X (OAM)"},
                                                        "deviceID": {"string": "75A3"}})))
    assert amd == [
        ("spec.devices[0].attributes.deviceID",
         "the gpu.amd.com driver publishes gpu.amd.com/deviceID as sysfs writes a PCI device id (0x and four lower-case "
         "hex digits), never '75A3': use 0x75a3"),
        ("spec.devices[0].attributes.productName",
         "the gpu.amd.com driver publishes gpu.amd.com/productName as 'AMD_Instinct_MI355X_OAM', not "
         "'AMD Instinct MI355X (OAM)': use AMD_Instinct_MI355X_OAM")]
    [(path, message)] = errors(tmp_path, klass(device("gaudi.intel.com", {"model": {"string": "Gaudi 2"}})))
    assert path == "spec.devices[0].attributes.model"
    assert message.startswith("the gaudi.intel.com driver publishes gaudi.intel.com/model as one of Gaudi, Gaudi2, "
                              "Gaudi3, Unknown")


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
    """A class may advertise a confirmed capacity below what the driver reports (a floor), as Modelplane's H200
    classes state memory 140Gi "below the ~141 GiB the driver reports": admitted, with a warning naming what
    placement reads. (The H200's own total is unconfirmed, so there the class is believed instead.)"""
    l4 = {"productName": {"string": "NVIDIA L4"}}
    assert warnings(tmp_path, klass(device("gpu.nvidia.com", l4, {"memory": {"value": "20Gi"}}))) == [(
        "spec.devices[0].capacity.memory.value",
        "the gpu.nvidia.com driver reports gpu.nvidia.com/memory as 23034Mi for NVIDIA L4 (productName 'NVIDIA L4'), "
        "more than the 20Gi stated: admitted as a floor; placement and allocation read 23034Mi (write it to say so)")]
    assert warnings(tmp_path, klass(device("gpu.nvidia.com", l4, {"memory": {"value": "23034Mi"}}))) == []
    h200 = {"productName": {"string": "NVIDIA H200"}}
    assert warnings(tmp_path, klass(device("gpu.nvidia.com", h200, {"memory": {"value": "140Gi"}}))) == []
