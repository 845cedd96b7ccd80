"""Modelplane v0.3.1's own end-to-end fleet (`modelplane_e2e/`, see SOURCES.md there): a kind cluster
whose owner installed the DRA example driver (`gpu.example.com`), registered as an Existing cluster.

Declared in `spec.cluster.existing.preinstalledDrivers`, the owner's driver is served with no stack of
ours: the cluster is Ready, the mock engine is placed on its pool, claims one of the devices the owner's
driver publishes, and the ModelService routes to it. Undeclared, the gate refuses the cluster naming the
driver and the field, and composes nothing.
"""

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.accelerators.catalog import CLOUDS
from inferplane.cli.main import cli
from inferplane.simulator.provider import SimulatedProvider
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key
from inferplane.simulator.cluster_objects import simulated_objects

FIXTURES = Path(__file__).parent / "modelplane_e2e"
MANIFESTS = sorted(p for p in FIXTURES.glob("[0-9]*.yaml"))
DRIVER = "gpu.example.com"
# The node image Modelplane's run.sh pins the workload cluster to.
KIND_VERSION = "v1.34.0"
CLUSTER = Key("inferplane.dev", "InferenceCluster", "", "local")
DEPLOYMENT = Key("inferplane.dev", "ModelDeployment", "ml-team", "mock-demo")
SERVICE = Key("inferplane.dev", "ModelService", "ml-team", "mock")


def fleet(tmp_path: Path, declared: list[str] | None) -> list[Path]:
    """The e2e manifests, the cluster declaring `declared` as its owner's drivers (None: as Modelplane ships it)."""
    out = []
    for path in MANIFESTS:
        text = path.read_text()
        if path.name == "30-inference-cluster.yaml" and declared is not None:
            cluster = yaml.safe_load(text)
            cluster["spec"]["cluster"]["existing"]["preinstalledDrivers"] = declared
            text = yaml.safe_dump(cluster)
        (tmp_path / path.name).write_text(text)
        out.append(tmp_path / path.name)
    return out


def reconciled(tmp_path: Path, declared: list[str] | None) -> ControlPlane:
    runtime = ControlPlane(None, provider=SimulatedProvider(kubernetes_version=KIND_VERSION))
    result = runtime.apply(fleet(tmp_path, declared))
    assert [str(e) for e in result.admission.errors] == []
    assert result.report.converged
    return runtime


def conditions(obj):
    return {c["type"]: (c["status"], c["reason"]) for c in obj["status"]["conditions"]}


def example_driver_objects() -> list[dict]:
    return [d for d in yaml.safe_load_all((FIXTURES / "dra-example-driver.yaml").read_text()) if d]


def test_the_e2e_fleet_with_the_example_driver_declared_is_ready_and_serves(tmp_path):
    runtime = reconciled(tmp_path, [DRIVER])
    cluster = runtime.get(CLUSTER)
    assert conditions(cluster) == {"ClusterReady": ("True", "Existing"), "StackReady": ("True", "Available"),
                                        "Ready": ("True", "Available"), "Synced": ("True", "ReconcileSuccess")}
    deployment = runtime.get(DEPLOYMENT)
    assert deployment["status"]["replicas"] == {"total": 1, "ready": 1}
    assert deployment["status"]["clusters"] == ["local"]
    service = runtime.get(SERVICE)
    assert (conditions(service)["EndpointsResolved"], conditions(service)["RoutingReady"]) == (
        ("True", "Resolved"), ("True", "RouteConfigured"))
    assert service["status"]["address"] == "http://172.18.255.200/ml-team/mock"
    # The service's one endpoint is the replica on the kind cluster's gateway.
    [endpoint] = runtime.list("ModelEndpoint")
    assert (endpoint["metadata"]["name"], endpoint["metadata"]["labels"]["inferplane.dev/cluster"]) == (
        "mock-demo-local-0", "local")

    objects = simulated_objects(runtime.store, "local")["local"]
    [engine] = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("mock-demo-")]
    assert (engine["spec"]["nodeName"], engine["status"]["phase"]) == ("local-gpu-synthetic-0", "Running")
    [claim] = [o for o in objects if o["kind"] == "ResourceClaim"]
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "local-gpu-synthetic-0", "device": "device-0"}]
    # No placement, toleration or claims finding: the owner's driver needs no agent of ours.
    assert [e for e in runtime.store.event_log.events() if e["reason"].startswith("PlacementAudit")] == []


def test_the_owners_driver_publishes_what_the_class_declares_under_the_example_drivers_device_class(tmp_path):
    runtime = reconciled(tmp_path, [DRIVER])
    objects = simulated_objects(runtime.store, "local")["local"]
    [slice_] = [o for o in objects if o["kind"] == "ResourceSlice"]
    assert slice_["spec"]["driver"] == DRIVER
    assert slice_["spec"]["devices"] == [{"name": "device-0", "attributes": {},
                                          "capacity": {"memory": {"value": "80Gi"}}}]
    # The DeviceClass the simulation holds is the one the example driver's chart creates.
    [chart_class] = [o for o in example_driver_objects() if o["kind"] == "DeviceClass"]
    [simulated] = [o for o in objects if o["kind"] == "DeviceClass"]
    assert (simulated["metadata"]["name"], simulated["spec"]) == (chart_class["metadata"]["name"],
                                                                   chart_class["spec"])
    # ... and the driver name is the one its kubelet plugin registers.
    [plugin] = [o for o in example_driver_objects() if o["kind"] == "DaemonSet"]
    env = {e["name"]: e.get("value") for e in plugin["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DRIVER_NAME"] == slice_["spec"]["driver"]


def test_the_stack_installs_nothing_for_the_owners_driver(tmp_path):
    runtime = reconciled(tmp_path, [DRIVER])
    stack = runtime.get(Key("infrastructure.inferplane.dev", "ServingStack", "", "local"))
    assert (stack["spec"]["draDrivers"], stack["spec"]["preinstalledDrivers"]) == ([], [DRIVER])
    tagged = {c.key for c in CLOUDS["Existing"].components if c.dra_drivers}
    assert set(stack["status"]["components"]) & tagged == set()


def test_fleet_and_describe_show_the_driver_as_the_owners(tmp_path):
    state = tmp_path / "state"
    runner = CliRunner()
    applied = runner.invoke(cli, ["apply", "-f", str(fleet(tmp_path, [DRIVER])[0].parent), "--state", str(state)])
    assert applied.exit_code == 0, applied.output
    table = runner.invoke(cli, ["fleet", "--state", str(state)]).output
    header, row = table.splitlines()[:2]
    assert dict(zip(header.split(), row.split())) == {
        "CLUSTER": "local", "CLOUD": "Existing", "READY": "True", "REASON": "Existing",
        "DRIVERS": "gpu.example.com(owner)", "POOLS": "gpu-synthetic(CPU:1xgpu.example.com)",
        "DEVICE-STACKS": "owner:gpu.example.com", "WANTED-DRIVERS": "<none>"}
    described = runner.invoke(cli, ["describe", "icluster", "local", "--state", str(state)]).output
    assert "  preinstalledDrivers: gpu.example.com\n" in described
    assert ("  gpu.example.com   the cluster's owner (spec.cluster.existing.preinstalledDrivers): inferplane has no "
            "stack for it\n") in described


@pytest.mark.parametrize("declared", [None, [], ["gpu.other.example"]], ids=["absent", "empty", "another"])
def test_undeclared_the_cluster_is_refused_naming_the_driver_and_the_field(tmp_path, declared):
    runtime = reconciled(tmp_path, declared)
    cluster = runtime.get(CLUSTER)
    ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "ClusterReady")
    assert (ready["status"], ready["reason"]) == ("False", "UnsupportedDevices")
    also = " (it declares gpu.other.example)" if declared else ""
    assert ready["message"] == (
        "class synthetic-gpu claims gpu.example.com; Existing clusters support dra.cpu, gaudi.intel.com, gpu.amd.com, gpu.nvidia.com: "
        "use classes whose drivers inferplane serves, or, if the cluster's owner runs the driver, declare it in "
        f"spec.cluster.existing.preinstalledDrivers{also}")
    # Refused before anything was composed: no stack, nothing simulated, the model placed nowhere.
    assert runtime.list("ServingStack") == []
    assert simulated_objects(runtime.store, "local") == {}
    assert runtime.get(DEPLOYMENT)["status"]["replicas"] == {"total": 0, "ready": 0}


def test_withdrawing_the_declaration_holds_the_cluster_and_keeps_the_engine_running(tmp_path):
    runtime = reconciled(tmp_path, [DRIVER])
    (tmp_path / "again").mkdir()
    result = runtime.apply(fleet(tmp_path / "again", None))
    assert result.report.converged
    cluster = runtime.get(CLUSTER)
    assert conditions(cluster)["ClusterReady"] == ("False", "UnsupportedDevices")
    # Held as it was: the stack still knows the owner runs the driver, so its devices stay published.
    stack = runtime.get(Key("infrastructure.inferplane.dev", "ServingStack", "", "local"))
    assert stack["spec"]["preinstalledDrivers"] == [DRIVER]
    assert runtime.get(DEPLOYMENT)["status"]["replicas"] == {"total": 1, "ready": 1}
    objects = simulated_objects(runtime.store, "local")["local"]
    assert [o["status"]["phase"] for o in objects if o["kind"] == "Pod"
            and o["metadata"]["name"].startswith("mock-demo-")] == ["Running"]


def test_beside_a_cpu_pool_the_cpu_driver_keeps_off_the_owners_pool(tmp_path):
    paths = fleet(tmp_path, [DRIVER])
    cluster_file = tmp_path / "30-inference-cluster.yaml"
    cluster = yaml.safe_load(cluster_file.read_text())
    cluster["spec"]["nodePools"].append({"name": "cpu", "className": "cpu", "nodeCount": 1})
    cluster_file.write_text(yaml.safe_dump(cluster))
    (tmp_path / "cpu-class.yaml").write_text(yaml.safe_dump({
        "apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "cpu"},
        "spec": {"devices": [{"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu",
                              "capacity": {"cpu": {"value": "16"}}}]}}))
    runtime = ControlPlane(None)  # the simulated cluster's v1.36.1: dra.cpu needs 1.36, more than kind's v1.34.0
    assert runtime.apply([*paths, tmp_path / "cpu-class.yaml"]).report.converged
    objects = simulated_objects(runtime.store, "local")["local"]
    nodes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Node"}
    # The owner's pool keeps the taint that holds the stack's workloads off, not the CPU driver's label.
    owners = nodes["local-gpu-synthetic-0"]
    assert "inferplane.dev/cpu" not in owners["metadata"]["labels"]
    assert owners["spec"]["taints"] == [{"key": "inferplane.dev/cpu", "value": "true", "effect": "NoSchedule"}]
    agents = [o["spec"].get("nodeName") for o in objects if o["kind"] == "Pod"
              and o["metadata"]["labels"].get("inferplane.dev/component") == "dra-driver-cpu"]
    assert agents == ["local-cpu-0"]
    assert [e["message"] for e in runtime.store.event_log.events() if e["reason"].startswith("PlacementAudit")] == []
    assert runtime.get(DEPLOYMENT)["status"]["replicas"] == {"total": 1, "ready": 1}
