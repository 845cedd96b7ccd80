"""The generated XRDs: committed, structural, and accepted by Crossplane's published CRD."""

import subprocess
import sys

import pytest
import yaml

from inferplane.api import ALL_KINDS
from inferplane.api.xrd import structural_problems, xrd, xrd_files
from inferplane.crossplane import XRD_DIR


def test_committed_xrds_match_the_generator():
    files = xrd_files()
    on_disk = {p.name: p.read_text() for p in XRD_DIR.glob("*.yaml")}
    assert on_disk == files, "run `inferplane xrds` and commit the result"


def test_xrds_check_command_reports_drift(tmp_path):
    stale = tmp_path / "xrds"
    stale.mkdir()
    (stale / "inferenceclasses.inferplane.dev.yaml").write_text("stale: true\n")
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "xrds", "--check", "--out", str(stale)],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "out of date" in run.stderr and "inferenceclasses.inferplane.dev.yaml" in run.stderr


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.KIND)
def test_xrd_validates_against_crossplane_crd(kind, crossplane_crds):
    document = xrd(kind)
    assert crossplane_crds.validate(document) == []
    assert document["spec"]["scope"] == kind.SCOPE


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.KIND)
def test_xrd_schema_is_structural(kind):
    schema = xrd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert structural_problems(schema) == []


def test_structural_check_catches_non_structural_schemas():
    bad = {"type": "object", "properties": {"a": {"description": "no type"},
                                            "b": {"type": "object", "properties": {}, "additionalProperties": False}}}
    assert structural_problems(bad) == [
        "a: type is missing",
        "b: properties and additionalProperties are mutually exclusive",
        "b: additionalProperties must not be false",
    ]


def test_class_xrd_carries_the_driver_rules():
    schema = xrd_files()["inferenceclasses.inferplane.dev.yaml"]
    spec = yaml.safe_load(schema)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = [r["rule"] for r in spec["x-kubernetes-validations"]]
    # The GPU driver list in the rules comes from the driver catalog, not a hand-written copy.
    assert any("['gaudi.intel.com', 'gpu.amd.com', 'gpu.nvidia.com', 'neuron.aws.com', 'tpu.google.com']" in r
               and "'dra.cpu'" in r for r in rules)
    devices = spec["properties"]["devices"]
    assert devices["x-kubernetes-list-type"] == "map" and devices["x-kubernetes-list-map-keys"] == ["name"]
    assert (devices["minItems"], devices["maxItems"]) == (1, 16)
