"""An engine pod mounting a ModelCache claim that is not bound stays Pending on no node, as kube-scheduler's
VolumeBinding plugin keeps it (inferplane/simulator/cache_claims.py), and the autoscaler grows no pool for
it: a new node binds no claim."""

import pytest

from inferplane.simulator.cache_claims import UNBOUND_IMMEDIATE
from inferplane.simulator.simulation import ClusterSimulation
from inferplane.simulator.simulation_inputs import EngineObject, Pool

CLAIM = "modelcache-ml-team-qwen"


def engine(claim: str = CLAIM) -> EngineObject:
    manifest = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "qwen", "namespace": "default"},
                "spec": {"replicas": 1, "template": {"spec": {
                    "nodeSelector": {"inferplane.dev/pool": "cpu"},
                    "containers": [{"name": "engine", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                    "volumes": [{"name": "model-cache", "persistentVolumeClaim": {"claimName": claim}}]}}}}
    return EngineObject("default", "qwen", manifest)


# An autoscaled pool: a Pending pod that a new node would take grows it.
POOL = Pool.from_wire({"name": "cpu", "role": "CPU", "nodeCount": 1, "maxNodeCount": 3,
                       "labels": {"inferplane.dev/pool": "cpu"}})


def simulate(unbound, claim=CLAIM):
    simulation = ClusterSimulation("c1", [POOL], {}, engines=[engine(claim)], unbound_claims=unbound)
    objects = simulation.simulate()
    return simulation, [o for o in objects if o["kind"] == "Pod"], [o for o in objects if o["kind"] == "Node"]


def unbound(mode):
    return {f"default/{CLAIM}": {"phase": "Pending", "storageClassName": "rwx", "bindingMode": mode}}


@pytest.mark.parametrize("mode,reason,message", [
    ("Immediate", "Unschedulable", f"0/1 nodes are available: {UNBOUND_IMMEDIATE}."),
    ("WaitForFirstConsumer", "SchedulerError", 'running PreBind plugin "VolumeBinding": binding volumes: waiting for '
     f"PersistentVolumeClaim default/{CLAIM} (WaitForFirstConsumer) to be bound by its provisioner"),
])
def test_a_pod_mounting_an_unbound_claim_stays_pending_and_grows_no_pool(mode, reason, message):
    simulation, (pod,), nodes = simulate(unbound(mode))
    assert pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]
    assert pod["status"]["conditions"] == [{"type": "PodScheduled", "status": "False", "reason": reason,
                                            "message": message}]
    assert [n["metadata"]["name"] for n in nodes] == ["c1-cpu-0"]  # no scale-up for it
    readiness = simulation.readiness["default/qwen"]
    assert not readiness.ready
    assert f"PersistentVolumeClaim default/{CLAIM} is Pending (storage class rwx, {mode})" in readiness.message


def test_a_bound_claim_or_another_claim_holds_nothing():
    for claims, claim in (({}, CLAIM), (unbound("Immediate"), "someone-elses-claim")):
        simulation, (pod,), _ = simulate(claims, claim)
        assert pod["status"]["phase"] == "Running" and simulation.readiness["default/qwen"].ready
