"""Issue 29, item 5, through the CLI: a deployment's replicas on a pool that vanishes are placed afresh by the rules
new replicas follow. cluster-b runs four replicas (three on pool `old`, one on `default`); a fleet where cluster-b
has only `default` and a new cluster-a joins, with the deployment at 3 replicas, ends as Modelplane v0.3.1's
scheduler places it on that fleet (functions/compose-model-deployment/function/scheduling.py: b/3 retained, the two
others filled onto the least-loaded cluster, cluster-a), and a scale to 2 leaves one replica on each cluster."""

from pathlib import Path

import yaml

from test_kubectl_conventions import run

CLASS = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "amd-mi325x"},
         "spec": {"devices": [{"name": "gpu", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com", "count": 1,
                               "attributes": {"productName": {"string": "AMD_Instinct_MI325X_OAM"}}}]}}


def existing_cluster(name: str, pools: dict[str, int], kubernetes_version: str | None = "1.35") -> dict:
    """Without `kubernetes_version`, the cluster is asked for the one it runs (and held until it answers)."""
    version = {"kubernetesVersion": kubernetes_version} if kubernetes_version else {}
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": name},
            "spec": {"cluster": {"source": "Existing", "existing": {
                **version,
                "secretRef": {"name": f"{name}-kubeconfig", "namespace": "inferplane-system", "key": "kubeconfig"}}},
                "nodePools": [{"name": pool, "className": "amd-mi325x", "nodeCount": nodes}
                              for pool, nodes in pools.items()]}}


def deployment(replicas: int) -> dict:
    member = {"role": "Standalone",
              "nodeSelector": {"devices": [{"name": "gpu", "count": 1,
                                            "selectors": [{"cel": 'device.driver == "gpu.amd.com"'}]}]},
              "template": {"spec": {"containers": [{"name": "engine",
                                                    "image": "rocm/vllm:rocm6.4.1_vllm_0.10.1_20250909"}]}}}
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelDeployment",
            "metadata": {"name": "my-model", "namespace": "default"},
            "spec": {"replicas": replicas, "template": {"spec": {"engines": [{"name": "vllm", "members": [member]}]}}}}


def manifest(folder: Path, *objects: dict) -> Path:
    folder.mkdir()
    (folder / "fleet.yaml").write_text(yaml.safe_dump_all(objects))
    return folder


def replicas(state: Path) -> list[str]:
    """Each replica as name=pool."""
    out = run("get", "modelreplica", "--no-headers", "-o",
              "custom-columns=NAME:.metadata.name,POOL:.spec.engines[0].members[0].nodePoolName", state=state).stdout
    return ["=".join(line.split()) for line in out.splitlines()]


def placements(state: Path) -> str:
    row = next(line for line in run("fleet", state=state).stdout.splitlines() if " my-model " in line)
    return " ".join(row.split()[5:])


def test_replicas_whose_pool_vanished_end_as_modelplane_places_them(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", manifest(tmp_path / "one", CLASS, existing_cluster("cluster-b", {"old": 3, "default": 4}),
                                deployment(4)), state=state)
    assert replicas(state) == ["my-model-cluster-b-0=old", "my-model-cluster-b-1=old", "my-model-cluster-b-2=old",
                               "my-model-cluster-b-3=default"]

    run("apply", "-f", manifest(tmp_path / "two", CLASS, existing_cluster("cluster-b", {"default": 4}),
                                existing_cluster("cluster-a", {"default": 4}), deployment(3)), state=state)
    assert replicas(state) == ["my-model-cluster-a-0=default", "my-model-cluster-a-1=default",
                               "my-model-cluster-b-3=default"]
    assert placements(state) == "cluster-a/default cluster-a/default cluster-b/default"
    # The three on the vanished pool were deleted, none re-pinned to cluster-b's `default` in place.
    events = run("get", "events", "--for", "modeldeployment/my-model", state=state).stdout
    for index in (0, 1, 2):
        assert f"deleted ModelReplica/default/my-model-cluster-b-{index}: no longer desired" in events
    why = run("why", "md", "my-model", state=state).stdout
    assert "ModelDeployment my-model: 3 of 3 replicas placed on cluster-a, cluster-b" in why
    assert "kept as it runs" not in why

    run("scale", "md", "my-model", "--replicas", "2", state=state)
    assert replicas(state) == ["my-model-cluster-a-0=default", "my-model-cluster-b-3=default"]
    assert placements(state) == "cluster-a/default cluster-b/default"


def test_without_a_declared_kubernetes_version_the_placement_is_the_same(tmp_path):
    """cluster-a is held until it reports its version: that wait is its coming up too, so the displaced replicas
    wait for it as they would for a cluster being created, and the fleet ends where it does with a declared one."""
    state = tmp_path / "state"
    run("apply", "-f", manifest(tmp_path / "one", CLASS, existing_cluster("cluster-b", {"old": 3, "default": 4}, None),
                                deployment(4)), state=state)
    assert replicas(state) == ["my-model-cluster-b-0=old", "my-model-cluster-b-1=old", "my-model-cluster-b-2=old",
                               "my-model-cluster-b-3=default"]

    run("apply", "-f", manifest(tmp_path / "two", CLASS, existing_cluster("cluster-b", {"default": 4}, None),
                                existing_cluster("cluster-a", {"default": 4}, None), deployment(3)), state=state)
    assert replicas(state) == ["my-model-cluster-a-0=default", "my-model-cluster-a-1=default",
                               "my-model-cluster-b-3=default"]
    assert "kept as it runs" not in run("why", "md", "my-model", state=state).stdout

    run("scale", "md", "my-model", "--replicas", "2", state=state)
    assert replicas(state) == ["my-model-cluster-a-0=default", "my-model-cluster-b-3=default"]
    assert placements(state) == "cluster-a/default cluster-b/default"
