"""ModelCache: admission of Modelplane's manifests and mistakes, what is composed on each cluster (checked
against provider-kubernetes' CRD and Kubernetes' schemas), the per-cluster status a user reads, and the
consumers: engine pods mounting the volume, deployments placed only where the cache stages."""

from pathlib import Path

import pytest
import yaml

from inferplane.admission import admit_paths
from inferplane.compose import model_cache
from inferplane.compose.base import Request
from inferplane.compose.model_cache import compose_model_cache
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key
from kubernetes_schemas import schema_errors

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests"
AMD_RECIPE = REPO / "recipes" / "qwen2.5-0.5b-amd"


def load(path):
    return [d for d in yaml.safe_load_all(Path(path).read_text()) if d]


BLOCKS = {"EKS": {"eks": {"region": "us-east-1"}}, "Vultr": {"vultr": {"region": "ewr"}},
          "Civo": {"civo": {"region": "LON1"}}}


def cluster(name, source="Existing", storage_class="nfs-rwx", ready=True, labels=None):
    """A stored InferenceCluster; `storage_class` is what its status.cache reports (an Existing one's
    spec names it too), as the InferenceCluster composer relays it."""
    settings = {"secretRef": {"name": f"{name}-kubeconfig"}}
    if storage_class and source == "Existing":
        settings["cache"] = {"storageClassName": storage_class}
    block = {"existing": settings} if source == "Existing" else BLOCKS[source]
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False",
                              "reason": "Available" if ready else "Creating",
                              "message": "" if ready else "EKS cluster is being provisioned"}],
              "providerConfigRef": {"name": name}}
    if storage_class:
        status["cache"] = {"storageClassName": storage_class}
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"cluster": {"source": source, **block}, "nodePools": [{"name": "gpu", "className": "l4"}]},
            "status": status}


def cache(name="qwen", auth=None, selector=None, revision=None, status=None):
    hf = {"repo": "Qwen/Qwen2.5-0.5B-Instruct", "sizeGiB": 4}
    if revision:
        hf["revision"] = revision
    if auth:
        hf["authSecret"] = auth
    spec = {"source": "HuggingFace", "huggingFace": hf}
    if selector:
        spec["clusterSelector"] = {"matchLabels": selector}
    out = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelCache",
           "metadata": {"name": name, "namespace": "ml-team"}, "spec": spec}
    if status:
        out["status"] = status
    return out


def compose(composite, clusters, secret=None, observed=None):
    required = {"clusters": clusters, "auth-secret": secret}
    return compose_model_cache(Request(composite, observed or {}, required))


def bound(response, key):
    """The desired Object as the provider reports it once the target cluster settled it (a hydration Job:
    once its whole volume is downloaded)."""
    from inferplane.simulator.provider import hydration_status, settled_status

    obj = dict(response.desired[key].resource)

    def reported(resource):  # an Object as its cluster reports it: a claim Bound (its class needs no driver)
        return {**resource, "status": {"atProvider": {"manifest": settled_status(resource["spec"], lambda kind: [])}}}

    # Its volume's size is read from the claim's Object on the same cluster, composed beside it, once Bound.
    settled = settled_status(obj["spec"], lambda kind: []) or hydration_status(obj, lambda kind: [
        reported(d.resource) for d in response.desired.values()])
    obj["status"] = {"atProvider": {"manifest": settled},
                     "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}
    return obj


# ---- admission


@pytest.mark.parametrize("path", ["concepts/model-cache.yaml", "reference/modelcaches.yaml"])
def test_modelplanes_documented_caches_are_admitted(tmp_path, path):
    copy = tmp_path / "cache.yaml"
    copy.write_text((MANIFESTS / path).read_text().replace("modelplane.ai", "inferplane.dev"))
    result = admit_paths([copy])
    assert [str(e) for e in result.errors] == []
    assert [(o.kind, o.metadata.name) for _, o in result.admitted] in (
        [("ModelCache", "qwen3-coder")], [("ModelCache", "qwen-72b")])


def test_every_mistake_is_named_with_file_kind_field_and_fix(tmp_path):
    path = tmp_path / "caches.yaml"
    path.write_text("""\
apiVersion: inferplane.dev/v1alpha1
kind: ModelCache
metadata: {name: no-source, namespace: ml-team}
spec: {source: HuggingFace}
---
apiVersion: inferplane.dev/v1alpha1
kind: ModelCache
metadata: {name: bad, namespace: ml-team}
spec: {source: S3, huggingFace: {repo: "", sizeGiB: 100001, authSecret: {key: HF_TOKEN}}}
""")
    assert [str(e) for e in admit_paths([path]).errors] == [
        f"{path}#0: ModelCache/no-source: spec.huggingFace: spec.huggingFace is required when spec.source is "
        "HuggingFace: add huggingFace with its repo and sizeGiB",
        f"{path}#1: ModelCache/bad: spec.huggingFace.authSecret.name: required field is missing: add it",
        f"{path}#1: ModelCache/bad: spec.huggingFace.repo: must be at least 1 characters long",
        f"{path}#1: ModelCache/bad: spec.huggingFace.sizeGiB: must be at most 100000, got 100001: set it to 100000 "
        "or less",
        f"{path}#1: ModelCache/bad: spec.source: 'S3' is not allowed: use one of HuggingFace",
    ]


# ---- composition


def test_a_ready_cluster_gets_a_rwx_claim_then_the_hydration_job_and_every_object_is_valid(crossplane_crds):
    clusters = [cluster("lab")]
    first = compose(cache(revision="v1.0"), clusters)
    # The Job comes with the claim: its pod is the claim's first consumer (a WaitForFirstConsumer class).
    assert sorted(first.desired) == ["hydrate-lab", "pvc-lab"]
    assert first.status["clusters"] == [{"name": "lab", "phase": "Pending", "message": (
        "PersistentVolumeClaim default/modelcache-ml-team-qwen (4Gi, storage class nfs-rwx) is not bound yet; "
        "hydration Job default/modelcache-ml-team-qwen-hydrate waits")}]
    pvc = first.desired["pvc-lab"].resource
    assert pvc["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "lab"}
    assert pvc["spec"]["forProvider"]["manifest"]["spec"] == {
        "accessModes": ["ReadWriteMany"], "storageClassName": "nfs-rwx", "resources": {"requests": {"storage": "4Gi"}}}

    second = compose(cache(revision="v1.0"), clusters, observed={"pvc-lab": bound(first, "pvc-lab")})
    assert sorted(second.desired) == ["hydrate-lab", "pvc-lab"]
    assert second.status["clusters"][0]["phase"] == "Hydrating"
    job = second.desired["hydrate-lab"].resource
    assert job["spec"]["managementPolicies"] == ["Observe", "Create", "Update", "LateInitialize"]
    manifest = job["spec"]["forProvider"]["manifest"]
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "python:3.11.11-slim-bookworm"
    # The repo reaches the script through the environment, never spliced into the shell text.
    assert container["env"] == [{"name": "HF_REPO", "value": "Qwen/Qwen2.5-0.5B-Instruct"},
                                {"name": "HF_REVISION", "value": "v1.0"}]
    assert "Qwen" not in container["command"][2] and 'huggingface_hub==2.4.0' in container["command"][2]
    assert manifest["spec"]["template"]["spec"]["volumes"] == [
        {"name": "artifact", "persistentVolumeClaim": {"claimName": "modelcache-ml-team-qwen"}}]
    for desired in second.desired.values():
        assert [f"{v.path}: {v.message}" for v in crossplane_crds.validate(desired.resource)] == []
        assert schema_errors([desired.resource["spec"]["forProvider"]["manifest"]], "1.36") == []

    done = compose(cache(revision="v1.0"), clusters,
                   observed={"pvc-lab": bound(first, "pvc-lab"), "hydrate-lab": bound(second, "hydrate-lab")})
    # Staged: the Job is dropped (orphaned: its TTL removes it), the volume stays.
    assert sorted(done.desired) == ["pvc-lab"]
    assert done.status == {"summary": {"ready": "1/1"}, "clusters": [{"name": "lab", "phase": "Ready", "message": (
        "Qwen/Qwen2.5-0.5B-Instruct is staged on PersistentVolumeClaim default/modelcache-ml-team-qwen, mounted at "
        "/mnt/models by engine pods")}]}
    assert done.condition("ArtifactReady").status == "True"


def test_each_selected_cluster_says_why_it_is_not_staged():
    clusters = [cluster("lab"), cluster("eks-east", source="EKS", storage_class=None),
                cluster("byo", storage_class=None), cluster("coming", ready=False),
                cluster("other", labels={"tier": "small"})]
    response = compose(cache(selector=None), clusters)
    assert response.status["summary"] == {"ready": "0/5"}
    waits = "; hydration Job default/modelcache-ml-team-qwen-hydrate waits"
    assert {c["name"]: (c["phase"], c["message"]) for c in response.status["clusters"]} == {
        "byo": ("Failed", "InferenceCluster byo names no ReadWriteMany StorageClass: set "
                          "spec.cluster.existing.cache.storageClassName to one the cluster has"),
        "coming": ("Pending", "InferenceCluster coming is not ready (Creating: EKS cluster is being provisioned)"),
        "eks-east": ("Pending", "InferenceCluster eks-east has not reported its ReadWriteMany StorageClass yet "
                                "(status.cache): it is composed with the cluster's shared storage; wait"),
        "lab": ("Pending", "PersistentVolumeClaim default/modelcache-ml-team-qwen (4Gi, storage class nfs-rwx) is "
                           "not bound yet" + waits),
        "other": ("Pending", "PersistentVolumeClaim default/modelcache-ml-team-qwen (4Gi, storage class nfs-rwx) "
                             "is not bound yet" + waits),
    }
    assert sorted(response.desired) == ["hydrate-lab", "hydrate-other", "pvc-lab", "pvc-other"]
    assert response.condition("ArtifactReady").reason == "Failed"

    narrowed = compose(cache(selector={"tier": "small"}), clusters)
    assert [c["name"] for c in narrowed.status["clusters"]] == ["other"]
    none = compose(cache(selector={"tier": "huge"}), clusters)
    assert none.status["summary"] == {"ready": "0/0"}
    assert none.condition("ClustersMatched").reason == "NoClusters"


@pytest.mark.parametrize("source", ["Vultr", "Civo"])
def test_a_cloud_without_shared_storage_refuses_saying_what_to_do(source):
    response = compose(cache(), [cluster("lab"), cluster("far", source=source, storage_class=None)])
    far = next(c for c in response.status["clusters"] if c["name"] == "far")
    assert far == {"name": "far", "phase": "Failed", "message": (
        f"InferenceCluster far: {source} clusters have no ReadWriteMany storage inferplane can compose (inferplane "
        f"composes none on {source} yet), so a ModelCache cannot stage there: leave {source} clusters out of the "
        "cache's clusterSelector, or run the model without spec.template.spec.modelCacheRef (each engine pod then "
        "downloads the weights itself)")}
    assert sorted(response.desired) == ["hydrate-lab", "pvc-lab"]
    assert response.condition("ArtifactReady").reason == "Failed"


def test_the_token_is_propagated_and_a_missing_secret_holds_the_job_back():
    first = compose(cache(auth={"name": "hf-token", "key": "HF_TOKEN"}), [cluster("lab")], secret=None)
    assert first.requirements["auth-secret"].name == "hf-token"
    assert first.requirements["auth-secret"].namespace == "ml-team"
    observed = {"pvc-lab": bound(first, "pvc-lab")}
    missing = compose(cache(auth={"name": "hf-token", "key": "HF_TOKEN"}), [cluster("lab")], None, observed)
    assert sorted(missing.desired) == ["pvc-lab"]
    assert missing.status["clusters"][0] == {"name": "lab", "phase": "Pending", "message": (
        "authSecret ml-team/hf-token is missing or has no key HF_TOKEN: create it in namespace ml-team; the "
        "hydration Job waits for it")}
    assert missing.condition("ArtifactReady").reason == "AuthSecretMissing"

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": "ml-team"},
              "data": {"HF_TOKEN": "aGZfeHh4", "OTHER": "eA=="}}
    found = compose(cache(auth={"name": "hf-token", "key": "HF_TOKEN"}), [cluster("lab")], secret, observed)
    assert sorted(found.desired) == ["auth-lab", "hydrate-lab", "pvc-lab"]
    remote = found.desired["auth-lab"].resource["spec"]["forProvider"]["manifest"]
    assert (remote["metadata"]["name"], remote["data"]) == ("modelcache-ml-team-qwen-auth", {"HF_TOKEN": "aGZfeHh4"})
    env = found.desired["hydrate-lab"].resource["spec"]["forProvider"]["manifest"]["spec"]["template"]["spec"][
        "containers"][0]["env"]
    assert env[-1] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
        "name": "modelcache-ml-team-qwen-auth", "key": "HF_TOKEN"}}}


def test_an_unpinned_hydration_image_composes_no_job(monkeypatch):
    monkeypatch.setattr(model_cache, "HYDRATION_IMAGE", "python:latest")
    first = compose(cache(), [cluster("lab")])
    response = compose(cache(), [cluster("lab")], observed={"pvc-lab": bound(first, "pvc-lab")})
    assert sorted(response.desired) == ["pvc-lab"]
    assert response.status["clusters"][0] == {"name": "lab", "phase": "Failed", "message": (
        "the hydration image 'python:latest' is not pinned to an exact release: no Job is composed until it is")}


def test_a_staged_cluster_that_stops_being_ready_keeps_its_volume():
    first = compose(cache(), [cluster("lab")])
    staged = cache(status={"clusters": [{"name": "lab", "phase": "Ready"}]})
    response = compose(staged, [cluster("lab", ready=False)], observed={"pvc-lab": bound(first, "pvc-lab")})
    assert sorted(response.desired) == ["pvc-lab"]
    assert response.status["clusters"][0]["phase"] == "Pending"


# ---- end to end: the recipe, and the consumers


@pytest.fixture(scope="module")
def amd_recipe():
    runtime = ControlPlane(None)
    result = runtime.apply([AMD_RECIPE])
    assert not result.admission.errors and result.report.converged
    return runtime


def test_the_recipe_stages_its_cache_and_every_engine_pod_mounts_it(amd_recipe):
    staged = amd_recipe.get(Key("inferplane.dev", "ModelCache", "ml-team", "qwen2-5-0-5b"))
    assert staged["status"]["summary"] == {"ready": "1/1"}
    assert [c["phase"] for c in staged["status"]["clusters"]] == ["Ready"]
    pods = [o for o in amd_recipe.store.cluster_objects("amd-lab")["amd-lab"]
            if o["kind"] == "Pod" and o["metadata"].get("labels", {}).get("inferplane.dev/replica")]
    assert len(pods) == 1 and pods[0]["status"]["phase"] == "Running"
    assert pods[0]["spec"]["volumes"] == [
        {"name": "model-cache", "persistentVolumeClaim": {"claimName": "modelcache-ml-team-qwen2-5-0-5b"}}]
    assert pods[0]["spec"]["containers"][0]["volumeMounts"] == [{"name": "model-cache", "mountPath": "/mnt/models"}]


def write(folder, documents):
    folder.mkdir(exist_ok=True)
    (folder / "all.yaml").write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return folder


def recipe_documents(cache_doc, deployment_patch):
    docs = [d for name in ("class.yaml", "cluster.yaml", "model.yaml") for d in load(AMD_RECIPE / name)]
    deployment = next(d for d in docs if d["kind"] == "ModelDeployment")
    deployment_patch(deployment)
    return docs + ([cache_doc] if cache_doc else [])


def test_a_gang_mounts_the_cache_in_leader_and_workers(tmp_path, crossplane_crds):
    def gang(deployment):
        member = deployment["spec"]["template"]["spec"]["engines"][0]["members"][0]
        deployment["spec"]["template"]["spec"]["engines"][0]["members"] = [
            {**member, "role": "Leader"},
            {"role": "Worker", "worker": {"nodes": 1}, "template": member["template"]}]
    docs = recipe_documents(load(AMD_RECIPE / "cache.yaml")[0], gang)
    for doc in docs:
        if doc["kind"] == "InferenceCluster":
            doc["spec"]["nodePools"][0]["nodeCount"] = 2
    runtime = ControlPlane(None)
    assert not runtime.apply([write(tmp_path / "gang", docs)]).admission.errors
    lws = next(o for o in runtime.list("Object")
               if o["spec"]["forProvider"]["manifest"]["kind"] == "LeaderWorkerSet")
    template = lws["spec"]["forProvider"]["manifest"]["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        spec = template[role]["spec"]
        assert spec["volumes"] == [{"name": "model-cache", "persistentVolumeClaim": {
            "claimName": "modelcache-ml-team-qwen2-5-0-5b"}}], role
        assert spec["containers"][0]["volumeMounts"] == [{"name": "model-cache", "mountPath": "/mnt/models"}], role
    desired = {k: v for k, v in lws.items() if k != "status"}  # the simulated provider's status is not checked
    assert [f"{v.path}: {v.message}" for v in crossplane_crds.validate(desired)] == []


def test_a_deployment_is_placed_only_where_its_cache_stages_and_a_missing_cache_holds_placement(tmp_path):
    def reference(deployment):
        deployment["spec"]["template"]["spec"]["modelCacheRef"] = {"name": "qwen2-5-0-5b"}
    elsewhere = load(AMD_RECIPE / "cache.yaml")[0]
    elsewhere["spec"]["clusterSelector"] = {"matchLabels": {"tier": "frontier"}}
    runtime = ControlPlane(None)
    assert not runtime.apply([write(tmp_path / "narrow", recipe_documents(elsewhere, reference))]).admission.errors
    deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", "qwen2-5-0-5b-amd"))
    scheduled = next(c for c in deployment["status"]["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["message"]) == ("False", (
        "ModelDeployment qwen2-5-0-5b-amd: 0 of 1 replicas placed; 1 fit nowhere (amd-lab: ModelCache qwen2-5-0-5b "
        "does not stage here: clusterSelector wants tier=frontier, the cluster has no label tier)"))

    # The recipe as shipped runs; deleting its cache keeps the running replica and says why.
    runtime = ControlPlane(None)
    assert not runtime.apply([AMD_RECIPE]).admission.errors
    runtime.delete(Key("inferplane.dev", "ModelCache", "ml-team", "qwen2-5-0-5b"))
    deployment = runtime.get(Key("inferplane.dev", "ModelDeployment", "ml-team", "qwen2-5-0-5b-amd"))
    resolved = next(c for c in deployment["status"]["conditions"] if c["type"] == "ModelCacheResolved")
    assert (resolved["status"], resolved["reason"], resolved["message"]) == ("False", "ModelCacheNotFound", (
        "ModelCache ml-team/qwen2-5-0-5b does not exist or is invalid: create it, or remove "
        "spec.template.spec.modelCacheRef; no new replica is placed, running ones are kept"))
    assert [r["spec"]["clusterName"] for r in runtime.list("ModelReplica")] == ["amd-lab"]
