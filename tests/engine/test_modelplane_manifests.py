"""Modelplane v0.3.1's documented InferenceClass and InferenceCluster manifests, group rewritten, as a
new user would try them: every one passes admission, and every cluster reconciles to Ready in the
embedded engine. None is skipped; ModelDeployment and the other kinds follow in their own issues.

The folder repeats names with different content (class l40s-1x on Nebius and on Vultr, cluster
eks-us-west in two folders), so each file is reconciled in a state of its own, with the classes it
references taken from the nearest file that defines them: its own, then its folder's, then any.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from inferplane.admission import admit_paths
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests"
KINDS = {"InferenceClass", "InferenceCluster"}


def rewritten(path: Path) -> str:
    """The file as a Modelplane user rewrites it: `sed 's/modelplane\\.ai/inferplane.dev/g'`."""
    return path.read_text().replace("modelplane.ai", "inferplane.dev")


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(rewritten(path)) if isinstance(d, dict)]


def files_with(kinds: set[str]) -> list[Path]:
    # The cache examples (examples/) are whole fleets with their own test: test_modelplane_cache_examples.py.
    return [p for p in sorted(MANIFESTS.rglob("*.yaml")) if p.relative_to(MANIFESTS).parts[0] != "examples"
            and any(d.get("kind") in kinds for d in documents(p))]


FILES = files_with(KINDS)
CLUSTER_FILES = files_with({"InferenceCluster"})


def test_the_folder_holds_what_the_issue_counts():
    counts = {kind: sum(d.get("kind") == kind for p in FILES for d in documents(p)) for kind in KINDS}
    assert (len(FILES), counts) == (23, {"InferenceClass": 16, "InferenceCluster": 19})
    # Every one of these files holds only these two kinds.
    assert {d["kind"] for p in FILES for d in documents(p)} == KINDS


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_class_and_cluster_passes_admission(tmp_path, path):
    copy = tmp_path / path.name
    copy.write_text(rewritten(path))
    result = admit_paths([copy])
    assert [str(e) for e in result.errors] == []
    assert len(result.admitted) == len(documents(path))


def test_inferplane_validate_accepts_the_whole_set(tmp_path):
    for index, path in enumerate(FILES):
        (tmp_path / f"{index:02d}-{path.name}").write_text(rewritten(path))
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", str(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip().splitlines()[-1].startswith("35 valid, 0 errors"), run.stdout
    # What it warns of is advice about device models (issue 44): none of it holds anything.
    warned = [line for line in run.stderr.splitlines() if line.startswith("Warning:")]
    assert all("InferenceClass/" in line and ": spec.devices" in line for line in warned), warned


def referenced_classes(path: Path) -> list[dict]:
    """The class documents the file's clusters reference, from the nearest file defining each."""
    wanted = {pool["className"] for d in documents(path) if d["kind"] == "InferenceCluster"
              for pool in d["spec"].get("nodePools", [])}
    order = [path] + sorted(path.parent.glob("*.yaml")) + sorted(MANIFESTS.rglob("*.yaml"))
    found: dict[str, dict] = {}
    for candidate in order:
        for doc in documents(candidate):
            name = doc["metadata"]["name"]
            if doc.get("kind") == "InferenceClass" and name in wanted and name not in found:
                found[name] = doc
    assert set(found) == wanted, f"{path}: no file defines {sorted(wanted - set(found))}"
    return [found[name] for name in sorted(found)]


# (ClusterReady, its reason, StackReady) per cluster.
READY = ("True", "Available", "True")
EXPECTED = {
    "concepts/inference-cluster-aks.yaml": {"aks-westeurope": READY},
    "concepts/inference-cluster-eks.yaml": {"eks-us-west": READY},
    "concepts/inference-cluster-existing.yaml": {"byo-us-east": ("True", "Existing", "True")},
    "concepts/inference-cluster-gke.yaml": {"gke-us-central": READY},
    "concepts/inference-cluster-nebius.yaml": {"nebius-eu-north": READY},
    "concepts/inference-cluster-vultr.yaml": {"vultr-ewr": READY},
    "getting-started/aks/platform-scale.yaml": {"aks-eastus": READY, "aks-southcentralus": READY},
    "getting-started/aks/platform.yaml": {"aks-westeurope": READY},
    "getting-started/eks/platform-scale.yaml": {"eks-us-west": READY, "eks-eu-central": READY},
    "getting-started/eks/platform.yaml": {"eks-us-east": READY},
    "getting-started/gke/platform-scale.yaml": {"gpu-us-west": READY, "gpu-us-east": READY},
    "getting-started/gke/platform.yaml": {"starter": READY},
    "getting-started/nebius/platform-scale.yaml": {"nebius-eu-north-h100": READY},
    "getting-started/nebius/platform.yaml": {"nebius-eu-north": READY},
    "getting-started/vultr/platform.yaml": {"vultr-ewr": READY},
    # west-gke puts a GKE pool on class h100-8x-byo, which has no provisioning block: Modelplane
    # itself refuses it (ClusterReady=False, InvalidNodePool, "InferenceClass h100-8x-byo has no GKE
    # provisioning block"), so it is expected to be refused here the same way, not skipped.
    "reference/inferenceclusters.yaml": {"west-gke": ("False", "InvalidPoolClass", "False")},
}


def test_every_cluster_file_has_an_expectation():
    assert sorted(str(p.relative_to(MANIFESTS)) for p in CLUSTER_FILES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_cluster_reconciles_to_ready(tmp_path, path):
    (tmp_path / "cluster.yaml").write_text(rewritten(path))
    (tmp_path / "classes.yaml").write_text(yaml.safe_dump_all(referenced_classes(path)))
    runtime = ControlPlane(None)
    result = runtime.apply([tmp_path / "classes.yaml", tmp_path / "cluster.yaml"])
    assert result.admission.errors == []
    assert result.report.converged
    got = {}
    for name in EXPECTED[str(path.relative_to(MANIFESTS))]:
        cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", name))
        conditions = {c["type"]: c for c in cluster["status"]["conditions"]}
        got[name] = (conditions["ClusterReady"]["status"], conditions["ClusterReady"]["reason"],
                     conditions["StackReady"]["status"])
    assert got == EXPECTED[str(path.relative_to(MANIFESTS))]


def test_west_gke_is_refused_for_the_reason_modelplane_refuses_it(tmp_path):
    path = MANIFESTS / "reference" / "inferenceclusters.yaml"
    (tmp_path / "cluster.yaml").write_text(rewritten(path))
    (tmp_path / "classes.yaml").write_text(yaml.safe_dump_all(referenced_classes(path)))
    runtime = ControlPlane(None)
    runtime.apply([tmp_path / "classes.yaml", tmp_path / "cluster.yaml"])
    cluster = runtime.get(Key("inferplane.dev", "InferenceCluster", "", "west-gke"))
    ready = next(c for c in cluster["status"]["conditions"] if c["type"] == "ClusterReady")
    assert ready["message"] == ("pool h100-pool uses class h100-8x-byo, which has no provisioning: add "
                                "provisioning with provider GKE to it")
    assert runtime.list("GKECluster") == []
