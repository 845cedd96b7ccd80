"""Google's TPU DRA driver and AWS's Neuron DRA driver, compared with what their sources say: the TPU driver's
manager.go GetDevice and util.go (v0.2.0), the Neuron DRA guide's attribute reference (neuron-dra.rst)."""

from inferplane.accelerators.catalog import components, sample_spec, supported_drivers, unsupported_claims
from inferplane.accelerators.class_devices import device_problems
from inferplane.accelerators.neuron import NEURON_DRA_DRIVER, SLICES as NEURON_SLICES
from inferplane.accelerators.tpu import SLICES as TPU_SLICES, TPU_DRA_DRIVER
from inferplane.accelerators.workloads import workloads
from inferplane.api.drivers import GOOGLE_TPU, NEURON
from inferplane.clouds import CLOUD_MODULES

T, N = GOOGLE_TPU.name, NEURON.name


def test_a_v6e_host_publishes_getdevices_attributes_one_uuid_per_node():
    chips = [TPU_SLICES.device("node-a", i, 4, {f"{T}/accelerator": {"string": "tpu-v6e-slice"}}, {}) for i in range(4)]
    # GetDevice: index, uuid, tpuGen, brand, accelerator, chipCount, and topology where known; no capacity.
    assert all(set(c.attributes) == {f"{T}/{k}" for k in ("index", "uuid", "tpuGen", "brand", "accelerator",
                                                          "chipCount", "topology")} for c in chips)
    assert {c.attributes[f"{T}/tpuGen"]["string"] for c in chips} == {"v6e"}  # AcceleratorGen("tpu-v6e-slice")
    assert {c.attributes[f"{T}/chipCount"]["int"] for c in chips} == {4}
    assert {c.attributes[f"{T}/topology"]["string"] for c in chips} == {"2x2"}  # singleHostTopology(4)
    assert len({c.attributes[f"{T}/uuid"]["string"] for c in chips}) == 1  # generateUUIDs(NODE_NAME)
    assert [c.attributes[f"{T}/index"]["int"] for c in chips] == [0, 1, 2, 3]
    assert all(c.capacity == {} for c in chips)


def test_a_class_cannot_state_the_tpu_uuid_and_generations_are_the_drivers():
    problems = device_problems(TPU_SLICES, "d", {"uuid": {"string": "tpu-x"}, "tpuGen": {"string": "v7"}}, {})
    assert [p for p, _ in problems] == ["d.attributes.uuid", "d.attributes.tpuGen"]


def test_a_trn2_node_publishes_the_documented_attributes():
    devices = [NEURON_SLICES.device("n", i, 16, {f"{N}/instanceType": {"string": "trn2.48xlarge"}}, {})
               for i in range(16)]
    common = {f"{N}/{k}" for k in ("deviceId", "instanceType", "neuronDriverVersion", "draDriverVersion",
                                   "resourceType", "networkNodeLayer1", "networkNodeLayer2", "networkNodeLayer3")}
    grid = {f"{N}/{k}" for k in ("topology_x", "topology_y", "topology4_id", "topology8_id")}
    efa = {f"resource.aws.com/devicegroup{n}_id" for n in (1, 4, 8, 16)}
    assert all(set(d.attributes) == common | grid | efa for d in devices)
    assert [d.name for d in devices[:2]] == ["neurondevice0", "neurondevice1"]  # the guide's allocation results
    assert {d.attributes[f"{N}/resourceType"]["string"] for d in devices} == {"neuron_device"}
    groups = {d.attributes["resource.aws.com/devicegroup4_id"]["string"] for d in devices}
    assert len(groups) == 4 and len({d.attributes["resource.aws.com/devicegroup16_id"]["string"] for d in devices}) == 1
    # A one-device trn1.2xlarge: no grid ("only populated when the number of devices is greater than 1"), no EFA.
    single = NEURON_SLICES.device("n", 0, 1, {f"{N}/instanceType": {"string": "trn1.2xlarge"}}, {})
    assert set(single.attributes) == common


def test_an_ultraserver_node_device_is_a_kind_of_its_own():
    node = NEURON_SLICES.device("n", 0, 1, {f"{N}/instanceType": {"string": "trn2u.48xlarge"},
                                            f"{N}/resourceType": {"string": "neuron_node"}}, {})
    assert node.attributes[f"{N}/resourceType"] == {"string": "neuron_node"}
    assert NEURON_SLICES.kind_of({f"{N}/resourceType": {"string": "neuron_node"}}) == "neuron_node"
    assert NEURON_SLICES.is_primary({})


def test_each_cloud_installs_only_its_own_vendors_driver_and_the_gate_refuses_the_other():
    assert [c.key for c in components("GKE", {T}) if not c.neutral] == [TPU_DRA_DRIVER.key, "tpu-critical-pods-quota"]
    assert [c.key for c in components("EKS", {N}) if not c.neutral] == [NEURON_DRA_DRIVER.key]
    assert T not in supported_drivers("EKS") and N not in supported_drivers("GKE")
    assert unsupported_claims("EKS", {"tpu": [T]}) == {"tpu": [T]}
    assert unsupported_claims("GKE", {"trn": [N]}) == {"trn": [N]}


def test_the_charts_plugins_land_on_their_pools():
    (tpu,) = workloads(TPU_DRA_DRIVER.key, TPU_DRA_DRIVER.values(sample_spec("GKE")))
    assert dict(tpu.node_selector) == {"cloud.google.com/gke-tpu-dra-driver": "true"}
    assert {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"} in tpu.tolerations
    (neuron,) = workloads(NEURON_DRA_DRIVER.key, NEURON_DRA_DRIVER.values(sample_spec("EKS")))
    assert neuron.name == "neuron-dra-driver-kubelet-plugin"
    assert {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"} in neuron.tolerations
    values = NEURON_DRA_DRIVER.values(sample_spec("EKS"))
    assert (values["devicePlugin"], values["draDriver"]["enabled"]) == ({"enabled": False}, True)


def test_gke_labels_a_tpu_node_as_the_driver_reads_it():
    labels = CLOUD_MODULES["GKE"].node_labels({"machineType": "ct6e-standard-4t"})
    assert labels == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                      "cloud.google.com/gke-accelerator-count": "4", "cloud.google.com/gke-tpu-topology": "2x2"}
