"""Modelplane v0.3.1's large-model examples that stage their weights in a ModelCache (its repository's
docs/manifests/examples/, vendored unchanged under inferplane/data/modelplane-v0.3.1/manifests/examples/),
group rewritten as a user rewrites it: each cache reaches Ready on its clusters' shared storage and each
model serves, in the embedded engine. The gated Qwen3-Coder repository gets the Secret it needs.

The two H200 classes (Kimi-K2, Qwen3-Coder) state GPU memory 140Gi, "advertised below the ~141 GiB the
driver reports" (143771Mi for an H200): admitted as written, as a floor, with a warning that says what
placement reads.
"""

import base64
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS
from inferplane.clouds.nebius import NEBIUS_CSI_CHART
from inferplane.compose import model_deployment
from inferplane.compose.base import ByVersion, ByVersions
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key
from inferplane.runtime.work_queue import RECONCILE
from inferplane.simulator.cluster_objects import simulated_objects

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
    runtime = ControlPlane(None)
    result = runtime.apply(example_files(tmp_path, case))
    assert result.admission.errors == []
    # The H200 classes' 140Gi is below the 143771Mi inferplane's table has, which is unconfirmed: the class is
    # believed, with nothing to warn of (issue 44; it was a floor with a warning before).
    assert [w for w in result.admission.warnings if "capacity.memory" in w.path] == []
    assert result.report.converged, result.report.unconverged
    for name, clusters in caches.items():
        cache = runtime.get(Key("inferplane.dev", "ModelCache", "ml-team", name))
        status = cache["status"]
        assert status["summary"] == {"ready": f"{len(clusters)}/{len(clusters)}"}
        assert [(c["name"], c["phase"]) for c in status["clusters"]] == [(c, "Ready") for c in clusters]
        conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
        assert conditions["ArtifactReady"] == ("True", "Staged") and conditions["ClustersMatched"] == ("True", "Matched")
        # Each cluster went Hydrating, then Ready, as its events say.
        events = [(e["reason"], e["message"].split(":")[0]) for e in runtime.store.event_log.events(Key.of(cache))
                  if e["reason"] in ("Hydrating", "Ready")]
        for cluster in clusters:
            assert [r for r, c in events if c == cluster] == ["Hydrating", "Ready"], events
    for name, replicas in deployments.items():
        deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", name))
        assert deployment["status"]["replicas"] == {"total": replicas, "ready": replicas}
    for cluster in runtime.list("InferenceCluster"):
        assert cluster["status"]["providerConfigRef"] == {"name": cluster["metadata"]["name"]}
        assert cluster["status"]["cache"]["storageClassName"].startswith("inferplane-rwx-")


NEBIUS_CASES = [case for case, (_, caches, _) in CASES.items() if any(
    c.startswith("nebius") for clusters in caches.values() for c in clusters)]


@pytest.mark.parametrize("case", NEBIUS_CASES)
def test_on_nebius_the_csi_driver_serving_the_cache_class_is_installed(tmp_path, case, crossplane_crds, provider_crds):
    runtime = ControlPlane(None)
    assert runtime.apply(example_files(tmp_path, case)).report.converged
    nebius = [c["metadata"]["name"] for c in runtime.list("NebiusCluster")]
    assert nebius
    secrets = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in runtime.list("Secret")}
    for name in nebius:
        owned = [o for kind in ("Release", "ClusterProviderConfig", "NodeGroup", "Secret") for o in runtime.list(kind)
                 if any(r["kind"] == "NebiusCluster" and r["name"] == name
                        for r in o["metadata"].get("ownerReferences", []))]
        (release,) = [o for o in owned if o["kind"] == "Release"]
        assert release["spec"]["forProvider"]["chart"] == {
            "name": "csi-mounted-fs-path", "repository": "oci://cr.eu-north1.nebius.cloud/mk8s/helm", "version": "0.1.6"}
        assert {c["type"]: c["status"] for c in release["status"]["conditions"]}["Ready"] == "True"
        (config,) = [o for o in owned if o["kind"] == "ClusterProviderConfig" and o["apiVersion"].startswith("helm.")]
        assert config["metadata"]["name"] == release["spec"]["providerConfigRef"]["name"]
        assert config["spec"]["credentials"]["secretRef"]["name"] == f"{name}-connection"
        # Every node group mounts the filesystem, by cloud-init, below the driver's dataDir.
        groups = [o for o in owned if o["kind"] == "NodeGroup"]
        assert groups and all(g["spec"]["forProvider"]["template"]["filesystems"][0]["mountTag"] == "inferplane-cache"
                              for g in groups)
        refs = {(g["metadata"]["namespace"], g["spec"]["forProvider"]["template"]["cloudInitUserDataSecretRef"]["name"])
                for g in groups}
        (ref,) = refs
        assert "mount -t virtiofs inferplane-cache /mnt/data" in base64.b64decode(
            secrets[ref]["data"]["userData"]).decode()
        assert release["spec"]["forProvider"]["values"]["dataDir"].startswith("/mnt/data/")
        for obj in owned:
            stored = {k: v for k, v in obj.items() if k not in ("status",)}
            stored["metadata"] = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace")}
            crossplane = obj["apiVersion"].split("/")[0].endswith(".crossplane.io")
            found = crossplane_crds.validate(stored) if crossplane else provider_crds.violations(stored)
            assert [str(v) for v in found] == [], obj["kind"]


def laguna_without_csi_driver(tmp_path, monkeypatch):
    """Modelplane's laguna example applied with Nebius' shared storage composing no csi-mounted-fs-path
    Release: the runtime and the example's files."""
    from inferplane.clouds import CLOUD_MODULES

    module = CLOUD_MODULES["Nebius"]
    real = type(module).shared_storage
    monkeypatch.setattr(type(module), "shared_storage",
                        lambda self, cluster, observed=None: replace(real(self, cluster, observed), releases={}))
    runtime = ControlPlane(None)
    files = example_files(tmp_path, "laguna")
    assert runtime.apply(files).report.converged
    return runtime, files


def test_without_the_csi_driver_a_nebius_cache_never_binds_its_volume(tmp_path, monkeypatch):
    # The StorageClass alone binds nothing on Nebius: its provisioner is the driver the chart installs.
    runtime, files = laguna_without_csi_driver(tmp_path, monkeypatch)
    cache = runtime.get(Key("inferplane.dev", "ModelCache", "ml-team", "laguna"))
    (entry,) = cache["status"]["clusters"]
    assert entry["phase"] == "Pending" and "is not bound yet" in entry["message"], entry
    claims = [o for o in runtime.list("Object") if o["spec"]["forProvider"]["manifest"]["kind"] == "PersistentVolumeClaim"]
    assert [c["status"]["atProvider"]["manifest"]["status"] for c in claims] == [{"phase": "Pending"}]
    assert not [o for o in runtime.list("Object") if o["spec"]["forProvider"]["manifest"]["kind"] == "Job"
                and o["status"]["atProvider"]["manifest"]["status"].get("succeeded")]  # its pod waits for the volume


def resync(runtime, key):
    """A composite reconciled again, as Crossplane's poll interval does, and the fleet after it."""
    with runtime.store.transaction():
        runtime.store.queue.enqueue(RECONCILE, [key])
    assert runtime.reconcile().converged


def engines_running(runtime, name):
    (replica,) = [r for r in runtime.list("ModelReplica") if r["metadata"]["name"].startswith(name)]
    return next(c for c in replica["status"]["conditions"] if c["type"] == "EnginesRunning")


def test_engine_pods_wait_for_the_cache_claim_and_serve_once_the_csi_driver_binds_it(tmp_path, monkeypatch):
    # Without the csi-mounted-fs-path Release the cache's claim stays Pending, and so does every engine pod
    # mounting it (kube-scheduler's VolumeBinding); once the Release is composed and Ready the claim binds,
    # the simulation reads the claim again, and the model serves.
    runtime, files = laguna_without_csi_driver(tmp_path, monkeypatch)
    claim = "default/modelcache-ml-team-laguna"
    running = engines_running(runtime, "laguna")
    assert running["status"] == "False" and f"PersistentVolumeClaim {claim} is Pending" in running["message"], running
    deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", "laguna"))
    assert deployment["status"]["replicas"]["ready"] == 0
    pods = [p for objects in simulated_objects(runtime.store, "nebius-eu-north").values() for p in objects
            if p["kind"] == "Pod" and "laguna" in p["metadata"]["name"]]
    assert pods and all(p["status"]["phase"] == "Pending" and "nodeName" not in p["spec"] for p in pods)
    assert {c["reason"] for p in pods for c in p["status"]["conditions"]} == {"SchedulerError"}  # WaitForFirstConsumer
    assert all('running PreBind plugin "VolumeBinding": binding volumes' in p["status"]["conditions"][0]["message"]
               for p in pods)

    # The driver's chart composed again; the cloud cluster's next reconcile (Crossplane resyncs each
    # composite on its poll interval) installs it, Ready at once in the simulation; the cache's next
    # resync observes its claim Bound.
    monkeypatch.undo()
    (nebius,) = runtime.list(CLOUD_CLUSTER_KINDS["Nebius"].KIND)
    resync(runtime, Key.of(nebius))
    (release,) = [r for r in runtime.list("Release") if r["spec"]["forProvider"]["chart"]["name"] == NEBIUS_CSI_CHART.name]
    assert [c["status"] for c in release["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
    cache_key = Key("inferplane.dev", "ModelCache", "ml-team", "laguna")
    resync(runtime, cache_key)
    cache = runtime.get(cache_key)
    assert [c["phase"] for c in cache["status"]["clusters"]] == ["Ready"]
    assert engines_running(runtime, "laguna")["status"] == "True"
    deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", "laguna"))
    assert deployment["status"]["replicas"] == {"total": 1, "ready": 1}
