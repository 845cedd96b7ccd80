"""Modelplane v0.3.1's large-model examples that stage their weights in a ModelCache (its repository's
docs/manifests/examples/, vendored unchanged under inferplane/data/modelplane-v0.3.1/manifests/examples/),
group rewritten as a user rewrites it: each cache reaches Ready on its clusters' shared storage and each
model serves, in the embedded engine. The gated Qwen3-Coder repository gets the Secret it needs.

The two H200 classes (Kimi-K2, Qwen3-Coder) state GPU memory 140Gi, "advertised below the ~141 GiB the
driver reports" (143771Mi for an H200): admitted as written, as a floor, with a warning that says what
placement reads.
"""

from pathlib import Path

import pytest
import yaml

from inferplane.compose import model_deployment
from inferplane.compose.base import ByVersion, ByVersions
from inferplane.engine.runtime import Runtime
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests" / "examples"
H200_AS_WRITTEN = 'memory: { value: "140Gi" }'
TOKEN = "hf_examplesGATEDtoken0123456789"
HF_TOKEN = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": "ml-team"},
            "stringData": {"HF_TOKEN": TOKEN}}

# example -> (its files, in the order a user applies them; {cache: clusters staged}; {deployment: replicas})
CASES = {
    "kimi-k2": (["inference-class.yaml", "inference-cluster.yaml", "model-cache.yaml", "model-deployment.yaml",
                 "model-service.yaml"], {"kimi-k2": ["eks-kimi"]}, {"kimi-k2": 1}),
    "qwen3-coder": (["inference-class.yaml", "inference-cluster.yaml", "model-cache.yaml", "model-deployment.yaml",
                     "model-service.yaml"], {"qwen3-coder": ["eks-coder"]}, {"qwen3-coder": 1}),
    "nemotron-3.5-lightning": (["inference-class-nebius.yaml", "inference-cluster-nebius.yaml", "model-cache.yaml",
                                "model-deployment.yaml", "model-service.yaml"],
                               {"nemotron-lightning": ["nebius-eu-north"]}, {"nemotron-lightning": 1}),
    "laguna": (["inference-class-nebius.yaml", "inference-cluster-nebius.yaml", "model-cache.yaml",
                "model-deployment.yaml", "model-service.yaml"], {"laguna": ["nebius-eu-north"]}, {"laguna": 1}),
    "laguna-sglang": (["inference-class-nebius.yaml", "inference-cluster-nebius.yaml", "model-cache.yaml",
                       "model-deployment-sglang.yaml", "model-service.yaml"], {"laguna": ["nebius-eu-north"]},
                      {"laguna": 1}),
    "qwen2.5-72b": (["inference-class-aks.yaml", "inference-class-nebius.yaml", "inference-cluster-aks.yaml",
                     "inference-cluster-nebius.yaml", "model-cache.yaml", "model-deployment.yaml", "model-service.yaml"],
                    {"qwen-72b-awq": ["aks-a100-single", "nebius-h100-single"]}, {"qwen-72b": 2}),
}


@pytest.fixture(autouse=True)
def fresh_fleet_memos(monkeypatch):
    """The scheduler's snapshots are remembered per process by (uid, resourceVersion), and an in-memory
    state numbers both the same way each time: nebius-eu-north of the Nemotron example and of Laguna's get
    the same uid and version, with different classes. Each example starts from empty memos."""
    monkeypatch.setattr(model_deployment, "snapshot_cluster_of", ByVersion(model_deployment.snapshot_cluster))
    monkeypatch.setattr(model_deployment, "snapshot_replica_of", ByVersion(model_deployment.snapshot_replica))
    monkeypatch.setattr(model_deployment, "fleet_clusters_of", ByVersions(model_deployment.fleet_clusters))


def rewritten(path: Path) -> str:
    return path.read_text().replace("modelplane.ai", "inferplane.dev")


def example_files(tmp_path: Path, case: str) -> list[Path]:
    folder = EXAMPLES / case.removesuffix("-sglang")
    files, _, _ = CASES[case]
    out = []
    if case == "qwen3-coder":  # the gated repository's token, as the example's docs have the user create it
        out.append(tmp_path / "00-hf-token.yaml")
        out[0].write_text(yaml.safe_dump(HF_TOKEN))
    for index, name in enumerate(files, 1):
        out.append(tmp_path / f"{index:02d}-{name}")
        out[-1].write_text(rewritten(folder / name))
    return out


def test_every_example_folder_is_vendored_whole():
    vendored = {p.parent.name for p in EXAMPLES.rglob("*.yaml")}
    assert vendored == {"kimi-k2", "qwen3-coder", "nemotron-3.5-lightning", "laguna", "qwen2.5-72b"}
    assert all(H200_AS_WRITTEN in (EXAMPLES / f / "inference-class.yaml").read_text() for f in ("kimi-k2", "qwen3-coder"))


@pytest.mark.parametrize("case", list(CASES))
def test_each_example_stages_its_cache_and_serves(tmp_path, case):
    _, caches, deployments = CASES[case]
    runtime = Runtime(None)
    result = runtime.apply(example_files(tmp_path, case))
    assert result.admission.errors == []
    understated = [w for w in result.admission.warnings if "admitted as a floor" in str(w)]
    assert [w.path for w in understated] == (["spec.devices[0].capacity.memory.value"]
                                            if case in ("kimi-k2", "qwen3-coder") else [])
    assert result.report.converged, result.report.unconverged
    for name, clusters in caches.items():
        cache = runtime.get(Key("inferplane.dev", "ModelCache", "ml-team", name))
        status = cache["status"]
        assert status["summary"] == {"ready": f"{len(clusters)}/{len(clusters)}"}
        assert [(c["name"], c["phase"]) for c in status["clusters"]] == [(c, "Ready") for c in clusters]
        conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
        assert conditions["ArtifactReady"] == ("True", "Staged") and conditions["ClustersMatched"] == ("True", "Matched")
        # Each cluster went Hydrating, then Ready, as its events say.
        events = [(e["reason"], e["message"].split(":")[0]) for e in runtime.store.events(Key.of(cache))
                  if e["reason"] in ("Hydrating", "Ready")]
        for cluster in clusters:
            assert [r for r, c in events if c == cluster] == ["Hydrating", "Ready"], events
    for name, replicas in deployments.items():
        deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", name))
        assert deployment["status"]["replicas"] == {"total": replicas, "ready": replicas}
    for cluster in runtime.list("InferenceCluster"):
        assert cluster["status"]["providerConfigRef"] == {"name": cluster["metadata"]["name"]}
        assert cluster["status"]["cache"]["storageClassName"].startswith("inferplane-rwx-")
