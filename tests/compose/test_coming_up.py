"""Whether an InferenceCluster is coming up, as the scheduler reads it (issue 44, part 5): each state the
InferenceCluster function can leave a cluster in, composed by the function and given the Ready condition the
runtime derives, then read as the ModelDeployment function reads the fleet. A cluster on its way with nobody
acting is waited for by replicas that must move; one held for something a person must fix is not."""

import copy

import pytest

from inferplane.compose.base import Request
from inferplane.compose.inference_cluster import compose_inference_cluster
from inferplane.compose.model_deployment import snapshot_cluster
from inferplane.runtime.composite_status import composite_status
from test_inference_cluster import AMD, CPU, NVIDIA, cluster, klass, request

READY = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}}


def existing(version="1.36"):
    composite = cluster("Existing", [("gpus", "amd")])
    if version is None:
        del composite["spec"]["cluster"]["existing"]["kubernetesVersion"]
    return composite


def failed(reason, **status):
    return {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": reason, "message": "no"}],
                       **status}}


def stack_failing(reason):
    return {"status": {"conditions": [{"type": "StackReady", "status": "False", "reason": reason, "message": "no"}]}}


def old_civo():
    composite = cluster("Civo", [("cpus", "cpu")])
    composite["spec"]["cluster"]["civo"]["kubernetesVersion"] = "1.34"
    return composite


def invalid(composite):
    composite = copy.deepcopy(composite)
    composite["spec"]["nodePools"][0]["nodeCount"] = "many"
    return composite


def invalid_class():
    bad = klass("amd", "Existing", [AMD], True)
    bad["spec"]["devices"][0]["count"] = "two"
    return bad


AMD_CLASS = klass("amd", "Existing", [AMD], True)
NV_EKS = klass("nv", "EKS", [NVIDIA], True)
EKS = cluster("EKS", [("gpus", "nv")])

# case: (composite, classes (None: the class does not exist), observed composed resources, conflicts, Ready's
# reason, coming up)
CASES = {
    "cloud cluster being created": (EKS, [NV_EKS], {}, [], "Creating", True),
    "cloud cluster up, stack installing": (EKS, [NV_EKS], {"cluster": READY}, [], "Creating", True),
    "stack installing": (existing(), [AMD_CLASS], {}, [], "Creating", True),
    "stack reports progress": (existing(), [AMD_CLASS], {"serving-stack": stack_failing("Creating")}, [],
                               "Creating", True),
    "version not reported yet": (existing(None), [AMD_CLASS], {}, [], "WaitingForKubernetesVersion", True),
    "invalid spec": (invalid(existing()), [AMD_CLASS], {}, [], "InvalidSpec", False),
    "class does not exist": (existing(), None, {}, [], "WaitingForClasses", False),
    "invalid class": (existing(), [invalid_class()], {}, [], "InvalidClass", False),
    "devices the cloud cannot serve": (cluster("EKS", [("gpus", "amd")]), [klass("amd", "EKS", [AMD], True)], {}, [],
                                       "UnsupportedDevices", False),
    "kubernetes too old": (old_civo(), [klass("cpu", "Civo", [CPU], False)], {}, [], "KubernetesVersionTooOld",
                           False),
    "a class of another cloud": (cluster("EKS", [("gpus", "g")]), [klass("g", "GKE", [NVIDIA], True)], {}, [],
                                 "InvalidPoolClass", False),
    "cloud cluster refused by its provider": (EKS, [NV_EKS], {"cluster": failed("ReconcileError")}, [],
                                              "ReconcileError", False),
    "cloud cluster in conflict": (EKS, [NV_EKS], {"cluster": failed("ComposedResourceConflict")}, [],
                                  "ComposedResourceConflict", False),
    "stack invalid": (existing(), [AMD_CLASS], {"serving-stack": stack_failing("InvalidSpec")}, [], "InvalidSpec",
                      False),
    "a composed resource another composite controls": (existing(), [AMD_CLASS], {}, ["Object x is controlled by y"],
                                                       "ComposedResourceConflict", False),
    "ready": (existing(), [AMD_CLASS], {"serving-stack": READY}, [], "Available", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_cluster_is_coming_up_only_while_nobody_needs_to_act(case):
    composite, classes, observed, conflicts, reason, coming_up = CASES[case]
    if classes is None:
        asked = Request(composite, observed, {f"class-{p['className']}": None for p in composite["spec"]["nodePools"]})
    else:
        asked = request(composite, classes, observed)
    status, _ = composite_status(composite, compose_inference_cluster(asked), observed, conflicts)
    read = snapshot_cluster({**composite, "status": status})
    assert next(c["reason"] for c in status["conditions"] if c["type"] == "Ready") == reason
    assert read.coming_up is coming_up


def test_a_cluster_not_reconciled_yet_is_coming_up():
    read = snapshot_cluster(existing())
    assert (read.ready, read.coming_up) == (False, True)
