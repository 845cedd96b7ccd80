"""A driver inferplane serves, declared as the owner's on an Existing cluster: inferplane installs no stack
for it there (the other drivers' stacks stay), its devices are still published as its own driver publishes
them, models run on it, and the fleet and describe say it is the owner's."""

import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli
from inferplane.simulator.audits import audit_cluster
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

LEG = Path(__file__).resolve().parents[1] / "legs" / "existing"
NVIDIA_COMPONENTS = {"dra-driver-nvidia-gpu", "nvidia-critical-pods-quota", "dcgm-exporter"}


def leg_declaring(tmp_path: Path, drivers: list[str]) -> Path:
    """The Existing leg (NVIDIA, AMD and CPU pools, a model on each), its cluster declaring `drivers`."""
    folder = tmp_path / "leg"
    shutil.copytree(LEG, folder)
    cluster = yaml.safe_load((folder / "cluster.yaml").read_text())
    cluster["spec"]["cluster"]["existing"]["preinstalledDrivers"] = drivers
    (folder / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    return folder


def test_an_owners_nvidia_driver_gets_no_stack_and_its_models_still_run(tmp_path):
    runtime = ControlPlane(None)
    assert runtime.apply([leg_declaring(tmp_path, ["gpu.nvidia.com"])]).report.converged
    stack = runtime.get(Key("infrastructure.inferplane.dev", "ServingStack", "", "leg-existing"))
    assert (stack["spec"]["draDrivers"], stack["spec"]["preinstalledDrivers"]) == (
        ["dra.cpu", "gpu.amd.com"], ["gpu.nvidia.com"])
    components = set(stack["status"]["components"])
    assert components & NVIDIA_COMPONENTS == set()
    # The AMD stack, which NFD serves too, is installed as before.
    assert {"node-feature-discovery", "amd-gpu-operator", "amd-device-config", "dra-driver-cpu"} <= components

    objects = runtime.store.cluster_objects("leg-existing")["leg-existing"]
    nvidia = [o for o in objects if o["kind"] == "ResourceSlice" and o["spec"]["driver"] == "gpu.nvidia.com"]
    # On both nodes of the NVIDIA pool, as the NVIDIA driver publishes them (its attributes beside the class's).
    assert sorted(s["spec"]["nodeName"] for s in nvidia) == ["leg-existing-nvidia-0", "leg-existing-nvidia-1"]
    assert nvidia[0]["spec"]["devices"][0]["attributes"]["productName"] == {"string": "NVIDIA L40S"}
    assert nvidia[0]["spec"]["devices"][0]["attributes"]["architecture"] == {"string": "Ada Lovelace"}
    # The owner's DeviceClass is the driver's own, which the simulation does not stand in for.
    assert [o for o in objects if o["kind"] == "DeviceClass"] == []
    for name in ("qwen-nvidia", "qwen-amd", "qwen-cpu"):
        deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "default", name))
        assert deployment["status"]["replicas"] == {"total": 1, "ready": 1}, name
    assert [f for result in audit_cluster("leg-existing", objects) for f in result.findings] == []


def test_fleet_and_describe_name_the_owners_driver(tmp_path):
    state = tmp_path / "state"
    runner = CliRunner()
    applied = runner.invoke(cli, ["apply", "-f", str(leg_declaring(tmp_path, ["gpu.nvidia.com"])),
                                  "--state", str(state)])
    assert applied.exit_code == 0, applied.output
    header, row = runner.invoke(cli, ["fleet", "--state", str(state)]).output.splitlines()[:2]
    # Cut at the header's columns: the POOLS column holds spaces.
    starts = [i for i, c in enumerate(header) if c != " " and (i == 0 or header[i - 1] == " ")]
    columns = {header[a:b].strip(): row[a:b].strip() for a, b in zip(starts, [*starts[1:], None])}
    assert (columns["DRIVERS"], columns["DEVICE-STACKS"], columns["WANTED-DRIVERS"]) == (
        "dra.cpu,gpu.amd.com,gpu.nvidia.com(owner)",
        "node-feature-discovery,amd-gpu-operator,amd-device-config,dra-driver-cpu,owner:gpu.nvidia.com", "<none>")
    described = runner.invoke(cli, ["describe", "icluster", "leg-existing", "--state", str(state)]).output
    drivers = described.split("DRA Drivers:\n", 1)[1].split("Conditions:", 1)[0].splitlines()
    assert [line.split(None, 1) for line in drivers] == [
        ["DRIVER", "SERVED BY"],
        ["dra.cpu", "dra-driver-cpu"],
        ["gpu.amd.com", "node-feature-discovery, amd-gpu-operator, amd-device-config"],
        ["gpu.nvidia.com", "the cluster's owner (spec.cluster.existing.preinstalledDrivers): inferplane installs no "
                           "stack for it"]]
