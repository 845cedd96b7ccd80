"""Adding a cloud touches one module plus a registry line (and the kinds' embedding of its API blocks).

The test writes a test-only cloud, Testcloud, into a copy of the package: its module (clouds/testcloud.py,
below), its line in the registry (clouds/__init__.py) and its line in the API's table of blocks (api/cloud.py,
which the kinds are built from; it reuses Civo's blocks). Nothing else is changed, and then the copy's own
command validates and renders a fleet on it, writes its sample fleet and builds the Configuration: each
asks the cloud's module, never its name.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import inferplane

PACKAGE = Path(inferplane.__file__).parent

TESTCLOUD = '''\
"""Testcloud: a test-only cloud: a Cluster holding the System pool, and one NodePool per other pool."""

from __future__ import annotations

from typing import Any

from inferplane.clouds.base import ProvisionedCloud, present, provisioned_sample, taint_objects


class Testcloud(ProvisionedCloud):
    source = "Testcloud"
    api_version = "kubernetes.testcloud.m.example.com/v1alpha1"
    cluster_kind = "Cluster"
    pool_kind = "NodePool"
    cluster_ref = "clusterIdRef"
    inline_pool = "pools"
    system_machine = {"size": "small"}
    endpoint_field = "apiEndpoint"
    autoscales_pools = False
    offers_shared_storage = False
    machine_field, machine_word = "size", "Testcloud size"
    vcpus_field, vcpus = "size", {"cpu-8": 8}
    provider_packages = {"kubernetes.testcloud.m.example.com": ("xpkg.example.com/provider-testcloud", "v0.1.0")}
    sample = provisioned_sample({"region": "lab-1"}, {"size": "gpu-l4", "accelerator": {"type": "l4"}},
                                {"size": "cpu-8"})

    def cluster_fields(self, name: str, spec: Any, version: str) -> dict[str, Any]:
        return {"name": name, "region": spec.region, "kubernetesVersion": version}

    def pool_fields(self, spec: Any, pool: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return present(label=pool.name, size=pool.machine.size, nodeCount=pool.node_count,
                       labels=dict(pool.labels), taint=taint_objects(pool.taints)), {}
'''

FLEET = """\
apiVersion: inferplane.dev/v1alpha1
kind: InferenceClass
metadata: {name: lab-cpu}
spec:
  provisioning: {provider: Testcloud, testcloud: {size: cpu-8}}
  devices:
    - {name: cpu, driver: dra.cpu, deviceClassName: dra.cpu, capacity: {cpu: {value: "6"}}}
---
apiVersion: inferplane.dev/v1alpha1
kind: InferenceClass
metadata: {name: lab-l4}
spec:
  provisioning: {provider: Testcloud, testcloud: {size: gpu-l4, accelerator: {type: l4, count: 1}}}
  devices:
    - name: gpu
      driver: gpu.nvidia.com
      deviceClassName: gpu.nvidia.com
      attributes: {productName: {string: NVIDIA L4}}
      capacity: {memory: {value: 23034Mi}}
---
apiVersion: inferplane.dev/v1alpha1
kind: InferenceCluster
metadata: {name: lab}
spec:
  cluster: {source: Testcloud, testcloud: {region: lab-1}}
  nodePools:
    - {name: cpu, className: lab-cpu, nodeCount: 1}
    - {name: l4, className: lab-l4, nodeCount: 1}
"""


def add_line(path: Path, after: str, line: str) -> None:
    text = path.read_text()
    assert text.count(after) == 1, f"{path}: {after!r} is where the line goes"
    path.write_text(text.replace(after, after + line))


@pytest.fixture(scope="module")
def copy_with_testcloud(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("with-testcloud")
    package = root / "inferplane"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "clouds" / "testcloud.py").write_text(TESTCLOUD)
    # The registry line (its import and its entry), and the kinds' embedding of its blocks.
    add_line(package / "clouds" / "__init__.py", "from inferplane.clouds.vultr import Vultr\n",
             "from inferplane.clouds.testcloud import Testcloud\n")
    add_line(package / "clouds" / "__init__.py", "Existing()", ", Testcloud()")
    add_line(package / "api" / "cloud.py", '    EXISTING: Blocks(ExistingSettings, None),\n',
             '    "Testcloud": Blocks(CivoSettings, CivoMachine),\n')
    return root


def run(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "INFERPLANE_STATE": str(root / "state")}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, input=stdin, capture_output=True, text=True,
                          timeout=600)


def test_the_copy_runs_its_own_package(copy_with_testcloud):
    found = run(copy_with_testcloud, "-c", "import inferplane; print(inferplane.__file__)")
    assert found.stdout.strip() == str(copy_with_testcloud / "inferplane" / "__init__.py"), found.stderr


def test_a_fleet_on_the_new_cloud_is_admitted_provisioned_and_served(copy_with_testcloud):
    folder = copy_with_testcloud / "fleet"
    folder.mkdir()
    (folder / "lab.yaml").write_text(FLEET)
    validated = run(copy_with_testcloud, "-m", "inferplane", "validate", "--strict", "-f", str(folder))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    rendered = run(copy_with_testcloud, "-m", "inferplane", "render", str(folder), "-o", "json")
    assert rendered.returncode == 0, rendered.stderr
    objects = json.loads(rendered.stdout)
    # The module's resources: the cluster with its System pool inline, one NodePool per other pool.
    composed = sorted((o["kind"], o["spec"]["forProvider"].get("label")) for o in objects
                      if o["apiVersion"] == "kubernetes.testcloud.m.example.com/v1alpha1")
    assert composed == [("Cluster", None), ("NodePool", "cpu"), ("NodePool", "l4")]
    # The fleet table: ready, with both drivers running on its simulated nodes.
    table = run(copy_with_testcloud, "-m", "inferplane", "render", str(folder)).stdout.splitlines()
    assert table[1].split()[:5] == ["lab", "Testcloud", "True", "Available", "dra.cpu,gpu.nvidia.com"]
    cluster = next(o for o in objects if o["kind"] == "InferenceCluster")
    ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", ready
    assert cluster["status"]["draDrivers"] == ["dra.cpu", "gpu.nvidia.com"]


def test_a_class_on_a_machine_the_cloud_knows_gets_its_cpu_count_checked(copy_with_testcloud):
    wrong = FLEET.split("---")[0].replace('value: "6"', 'value: "8"')
    validated = run(copy_with_testcloud, "-m", "inferplane", "validate", "-f", "-", stdin=wrong)
    assert validated.returncode == 1
    assert ("spec.devices[0].capacity.cpu.value: dra-driver-cpu publishes 6 on cpu-8 (8 vCPUs less reservedCPUs "
            "0-1), not 8: write 6") in validated.stdout + validated.stderr


def test_the_sample_fleet_and_the_configuration_have_the_new_cloud(copy_with_testcloud):
    script = textwrap.dedent("""\
        import json
        from inferplane.crossplane.package import package_files
        from inferplane.simulator.synthetic_fleet import fleet_manifests
        print(json.dumps({"fleet": fleet_manifests(8), "configuration": package_files()["configuration/crossplane.yaml"]}))
        """)
    found = run(copy_with_testcloud, "-c", script)
    assert found.returncode == 0, found.stderr
    out = json.loads(found.stdout)
    clusters = [m for m in out["fleet"] if m["kind"] == "InferenceCluster"]
    assert [c["spec"]["cluster"]["source"] for c in clusters][-1] == "Testcloud"
    assert clusters[-1]["spec"]["cluster"]["testcloud"] == {"region": "lab-1"}
    assert {"testcloud-nvidia", "testcloud-cpu"} <= {m["metadata"]["name"] for m in out["fleet"]}
    meta = yaml.safe_load(out["configuration"])
    assert {"provider": "xpkg.example.com/provider-testcloud", "version": "v0.1.0"} in meta["spec"]["dependsOn"]
