"""What a composite composes is its own, as Crossplane keeps it: deleted by hand, it is composed again
and brought back to what its inputs imply; a user's manifest that names it is refused, and nothing is
deleted or composed again."""

from pathlib import Path

import pytest
import yaml

from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

MIXED = Path(__file__).resolve().parents[2] / "recipes" / "mixed-fleet"
REPLICA = Key("inferplane.dev", "ModelReplica", "default", "qwen2-5-7b-eks-us-east-0")
STACK = Key("infrastructure.inferplane.dev", "ServingStack", "", "eks-us-east")


def condition(obj, type_):
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


@pytest.fixture
def fleet():
    runtime = ControlPlane(None)
    assert runtime.apply([MIXED]).report.converged
    yield runtime
    runtime.close()


def engine_pods(runtime, cluster, replica):
    return [o for o in runtime.store.cluster_objects(cluster)[cluster]
            if o["kind"] == "Pod" and o["metadata"]["name"].startswith(f"{replica}-")]


def test_a_composed_replica_deleted_by_hand_is_composed_again_and_serves_again(fleet):
    before = fleet.get(REPLICA)
    deleted, report = fleet.delete(REPLICA)
    assert deleted and report.converged

    again = fleet.get(REPLICA)
    assert again["metadata"]["uid"] != before["metadata"]["uid"], "a new object, not the deleted one"
    assert again["spec"] == before["spec"]
    assert condition(again, "EnginesRunning")["status"] == "True", condition(again, "EnginesRunning")
    assert condition(again, "Ready")["status"] == "True"
    pods = engine_pods(fleet, "eks-us-east", REPLICA.name)
    assert pods and all(p["status"]["phase"] == "Running" for p in pods)
    deployment = fleet.get(Key("inferplane.dev", "ModelDeployment", "default", "qwen2-5-7b"))
    assert deployment["status"]["replicas"] == {"total": 2, "ready": 2}


def manifest_over(obj, path: Path) -> Path:
    """A user's manifest of an object: its kind, name and spec, as `get -o yaml` edited by hand."""
    meta = {k: v for k, v in obj["metadata"].items() if k in ("name", "namespace")}
    path.write_text(yaml.safe_dump({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta,
                                    "spec": obj["spec"]}))
    return path


def test_a_manifest_naming_a_composed_object_is_refused_and_nothing_is_composed_again(fleet, tmp_path):
    stack = fleet.get(STACK)
    releases = {o["metadata"]["uid"] for o in fleet.list("Release")}
    everything = fleet.list()
    edited = {**stack, "spec": {**stack["spec"], "draDrivers": []}}

    result = fleet.apply([manifest_over(edited, tmp_path / "stack.yaml")])
    assert [str(e) for e in result.admission.errors] == [
        f"{tmp_path / 'stack.yaml'}: ServingStack/eks-us-east: composed and controlled by "
        "InferenceCluster/eks-us-east, whose next reconcile would undo any change made here: change "
        "InferenceCluster/eks-us-east instead (nothing was written)"]
    assert result.applied == [] and result.report.reconciles == 0
    assert fleet.get(STACK)["metadata"]["uid"] == stack["metadata"]["uid"]
    assert {o["metadata"]["uid"] for o in fleet.list("Release")} == releases
    assert fleet.list() == everything


def test_ownership_is_decided_per_object_a_users_endpoint_is_accepted(fleet, tmp_path):
    """ModelEndpoints are both composed (one per replica) and written by users (an address outside
    the fleet): the composed one is refused, one of the user's own name is stored."""
    composed = fleet.get(Key("inferplane.dev", "ModelEndpoint", "default", "qwen2-5-7b-eks-us-east-0"))
    refused = fleet.apply([manifest_over(composed, tmp_path / "composed.yaml")])
    assert [e.kind for e in refused.admission.errors] == ["ModelEndpoint"]
    assert "controlled by ModelDeployment/qwen2-5-7b" in str(refused.admission.errors[0])

    own = {**composed, "metadata": {"name": "external", "namespace": "default"}}
    accepted = fleet.apply([manifest_over(own, tmp_path / "own.yaml")])
    assert accepted.admission.errors == [] and accepted.applied == [
        (Key("inferplane.dev", "ModelEndpoint", "default", "external"), "created")]
