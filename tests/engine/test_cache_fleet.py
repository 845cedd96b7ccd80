"""ModelCache across a fleet in the embedded engine: a cache on two of three clusters and the deployment
placed only there; a gated cache waiting for its Secret on a cloud, without a retry storm; a multi-node
engine without a cache warned; shared storage added to a running cluster without touching its pools."""

from pathlib import Path

import pytest
import yaml

from inferplane.clouds import eks_foundation
from inferplane.clouds.base import ProvisionedCloud
from inferplane.clouds.eks import EKS
from inferplane.compose import model_deployment
from inferplane.compose.base import ByVersion, ByVersions
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
AMD = REPO / "recipes" / "qwen2.5-0.5b-amd"
EXAMPLES = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests" / "examples"


@pytest.fixture(autouse=True)
def fresh_fleet_memos(monkeypatch):
    """In-memory states number uids and versions alike: each test starts from empty scheduler memos."""
    monkeypatch.setattr(model_deployment, "snapshot_cluster_of", ByVersion(model_deployment.snapshot_cluster))
    monkeypatch.setattr(model_deployment, "snapshot_replica_of", ByVersion(model_deployment.snapshot_replica))
    monkeypatch.setattr(model_deployment, "fleet_clusters_of", ByVersions(model_deployment.fleet_clusters))


def docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def write(tmp_path: Path, name: str, objects: list[dict]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return path


def cache_of(runtime: ControlPlane, namespace: str, name: str) -> dict:
    return runtime.get(Key("inferplane.dev", "ModelCache", namespace, name))


def test_a_cache_on_two_of_three_clusters_places_the_model_only_there(tmp_path):
    (cluster,) = docs(AMD / "cluster.yaml")
    clusters = []
    for name, tier in (("lab-a", "big"), ("lab-b", "big"), ("lab-c", "small")):
        copy = yaml.safe_load(yaml.safe_dump(cluster))
        copy["metadata"] = {"name": name, "labels": {"tier": tier}}
        copy["spec"]["cluster"]["existing"]["secretRef"]["name"] = f"{name}-kubeconfig"
        clusters.append(copy)
    (cache,) = docs(AMD / "cache.yaml")
    cache["spec"]["clusterSelector"] = {"matchLabels": {"tier": "big"}}
    (model,) = docs(AMD / "model.yaml")
    model["spec"]["replicas"] = 3
    runtime = ControlPlane(None)
    result = runtime.apply([AMD / "class.yaml", write(tmp_path, "clusters.yaml", clusters),
                            write(tmp_path, "cache.yaml", [cache]), write(tmp_path, "model.yaml", [model])])
    assert result.report.converged
    status = cache_of(runtime, cache["metadata"]["namespace"], cache["metadata"]["name"])["status"]
    assert status["summary"] == {"ready": "2/2"}
    assert [(c["name"], c["phase"]) for c in status["clusters"]] == [("lab-a", "Ready"), ("lab-b", "Ready")]
    replicas = runtime.list("ModelReplica")
    assert sorted({r["spec"]["clusterName"] for r in replicas}) == ["lab-a", "lab-b"]
    # No volume, no Job on the cluster the cache leaves out.
    objects = [o for o in runtime.list("Object") if o["metadata"].get("labels", {}).get("inferplane.dev/modelcache")]
    assert {o["spec"]["providerConfigRef"]["name"] for o in objects} == {"lab-a", "lab-b"}


def coder_files(tmp_path: Path, with_cache: bool = True) -> list[Path]:
    folder = EXAMPLES / "qwen3-coder"
    out = []
    for name in ("inference-class.yaml", "inference-cluster.yaml", "model-cache.yaml", "model-deployment.yaml"):
        text = (folder / name).read_text().replace("modelplane.ai", "inferplane.dev").replace(
            'memory: { value: "140Gi" }', 'memory: { value: "143771Mi" }')
        if name == "model-deployment.yaml" and not with_cache:
            deployment = yaml.safe_load(text)
            del deployment["spec"]["template"]["spec"]["modelCacheRef"]
            text = yaml.safe_dump(deployment)
        if name == "model-cache.yaml" and not with_cache:
            continue
        out.append(tmp_path / name)
        out[-1].write_text(text)
    return out


def test_a_gated_cache_on_a_cloud_waits_for_its_secret_naming_it_then_stages(tmp_path):
    runtime = ControlPlane(None)
    waiting = runtime.apply(coder_files(tmp_path))
    assert waiting.report.converged
    cache = cache_of(runtime, "ml-team", "qwen3-coder")
    ready = next(c for c in cache["status"]["conditions"] if c["type"] == "ArtifactReady")
    assert (ready["status"], ready["reason"]) == ("False", "AuthSecretMissing")
    assert "authSecret ml-team/hf-token is missing or has no key HF_TOKEN: create it in namespace ml-team" \
        in ready["message"]
    # The volume is there; the Job waits, and nothing retries: one Warning, counted once.
    assert [(c["name"], c["phase"]) for c in cache["status"]["clusters"]] == [("eks-coder", "Pending")]
    warnings = [e for e in runtime.store.event_log.events(Key.of(cache)) if e["reason"] == "AuthSecretMissing"]
    assert warnings[-1]["message"].endswith("eks-coder: authSecret ml-team/hf-token is missing or has no key HF_TOKEN: "
                                             "create it in namespace ml-team; the hydration Job waits for it")
    assert sum(e["count"] for e in warnings) <= 3
    assert waiting.report.reconciled["ModelCache/ml-team/qwen3-coder"] <= 6
    deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", "qwen3-coder"))
    assert deployment["status"]["replicas"] == {"total": 1, "ready": 1}  # placed where the cache will be Ready

    secret = write(tmp_path, "secret.yaml", [{"apiVersion": "v1", "kind": "Secret",
                                              "metadata": {"name": "hf-token", "namespace": "ml-team"},
                                              "stringData": {"HF_TOKEN": "hf_gated0123"}}])
    staged = runtime.apply([secret])
    assert staged.report.converged
    assert cache_of(runtime, "ml-team", "qwen3-coder")["status"]["summary"] == {"ready": "1/1"}
    # 1100 GiB downloads in 8 steps (the most a download takes), each a reconcile of the cache.
    assert 8 <= staged.report.reconciled["ModelCache/ml-team/qwen3-coder"] <= 12


def test_a_multi_node_engine_without_a_cache_is_warned(tmp_path):
    runtime = ControlPlane(None)
    runtime.apply(coder_files(tmp_path, with_cache=False))
    deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", "qwen3-coder"))
    (warning,) = [e for e in runtime.store.event_log.events(Key.of(deployment)) if e["reason"] == "NoModelCache"]
    assert warning["type"] == "Warning"
    assert warning["message"] == (
        "ModelDeployment qwen3-coder: engine qwen3-coder spans several nodes and mounts no ModelCache, so every "
        "node downloads the weights itself: stage them once per cluster with a ModelCache and set "
        "spec.template.spec.modelCacheRef")


def test_shared_storage_added_to_a_running_cluster_keeps_its_cluster_and_pools(tmp_path, monkeypatch):
    """A cluster composed before its cloud had shared storage (an older inferplane) gains it in place."""
    files = coder_files(tmp_path)[:2]
    state = tmp_path / "state"
    with monkeypatch.context() as before:
        before.setattr(eks_foundation, "compose_efs", lambda *args, **kwargs: None)
        before.setattr(EKS, "shared_storage", ProvisionedCloud.shared_storage)
        old = ControlPlane(state)
        assert old.apply(files).report.converged
        kept = {Key.of(o): o["metadata"]["uid"] for o in old.list("Cluster") + old.list("NodeGroup")}
        assert not old.list("FileSystem")
        old.close()
    new = ControlPlane(state)
    new.store.queue.enqueue("reconcile", sorted(Key.of(o) for o in new.list() if o["kind"] in new.functions))
    assert new.reconcile().converged
    assert {Key.of(o): o["metadata"]["uid"] for o in new.list("Cluster") + new.list("NodeGroup")} == kept
    assert len(new.list("FileSystem")) == 1 and len(new.list("MountTarget")) == 2  # a mount target per zone
    cluster = new.get(Key("inferplane.dev", "InferenceCluster", "", "eks-coder"))
    assert cluster["status"]["cache"] == {"storageClassName": "inferplane-rwx-efs"}
    deleted = [e for e in new.store.event_log.events() if e["reason"] == "DeletedComposed"]
    assert deleted == []
