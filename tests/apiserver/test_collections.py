"""deletecollection (DELETE on a collection's URL, as client libraries send it) and kubectl's `delete
--all` and `-l`: every chosen object deleted as a single DELETE would be, Usage protection and its
replay included."""

from __future__ import annotations

import yaml
from served import rewritten
from test_watch import call

CLASSES = "/apis/inferplane.dev/v1alpha1/inferenceclasses"


def spare_class(name: str, labels: dict) -> str:
    """An InferenceClass no cluster uses, as YAML."""
    return yaml.safe_dump({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass",
                           "metadata": {"name": name, "labels": labels},
                           "spec": {"devices": [{"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu",
                                                       "count": 1}]}})


def test_delete_collection_by_label_and_usage(server, tmp_path):
    folder = rewritten(tmp_path / "flow", ["eks/platform.yaml"])
    server.kubectl("apply", "-f", str(folder))
    server.kubectl("apply", "-f", "-", stdin=spare_class("spare-a", {"tier": "spare"}))
    server.kubectl("apply", "-f", "-", stdin=spare_class("spare-b", {"tier": "spare"}))
    server.kubectl("apply", "-f", "-", stdin=spare_class("kept", {"tier": "kept"}))

    # A label selector chooses what goes; the answer lists what was deleted.
    status, body = call(server, "DELETE", f"{CLASSES}?labelSelector=tier%3Dspare")
    assert status == 200 and body["kind"] == "InferenceClassList"
    assert [item["metadata"]["name"] for item in body["items"]] == ["spare-a", "spare-b"]
    listed = server.kubectl("get", "iclass", "-o", "name").stdout.split()
    assert listed == ["inferenceclass.inferplane.dev/kept", "inferenceclass.inferplane.dev/l4-1x-g6"]

    # Every class: the one a cluster uses is refused (named, with its user), the others go; a dry run
    # deletes nothing.
    status, body = call(server, "DELETE", f"{CLASSES}?dryRun=All")
    assert status == 200 and len(body["items"]) == 2
    assert len(server.kubectl("get", "iclass", "-o", "name").stdout.split()) == 2
    status, body = call(server, "DELETE", CLASSES)
    assert (status, body["reason"]) == (409, "Conflict")
    assert body["message"].startswith("1 of the 2 inferenceclasses chosen were not deleted (1 were):\n"
                                      "inferenceclass.inferplane.dev/l4-1x-g6 is in use by "
                                      "inferencecluster.inferplane.dev/eks-us-east")
    assert server.kubectl("get", "iclass", "-o", "name").stdout == "inferenceclass.inferplane.dev/l4-1x-g6\n"

    # kubectl delete --all lists and deletes one by one; the class's recorded deletion is replayed once
    # its cluster is gone.
    assert server.kubectl("delete", "ic", "--all").stdout == 'inferencecluster.inferplane.dev "eks-us-east" deleted\n'
    server.kubectl("wait", "--for=delete", "iclass/l4-1x-g6", "--timeout=120s")
    assert server.kubectl("get", "iclass,ic").stderr == "No resources found\n"


def test_delete_collection_by_kubectl_label_and_of_events_is_refused(server, tmp_path):
    server.kubectl("apply", "-f", "-", stdin=spare_class("spare-a", {"tier": "spare"}))
    server.kubectl("apply", "-f", "-", stdin=spare_class("kept", {"tier": "kept"}))
    assert server.kubectl("delete", "iclass", "-l", "tier=spare").stdout == \
        'inferenceclass.inferplane.dev "spare-a" deleted\n'
    assert server.kubectl("get", "iclass", "-o", "name").stdout == "inferenceclass.inferplane.dev/kept\n"
    status, body = call(server, "DELETE", "/api/v1/namespaces/default/events")
    assert (status, body["reason"]) == (405, "MethodNotAllowed")


def test_delete_collection_across_namespaces_is_not_served(server):
    # As kube-apiserver: a namespaced resource's collection is deleted within one namespace.
    status, body = call(server, "DELETE", "/apis/inferplane.dev/v1alpha1/modeldeployments")
    assert (status, body["reason"]) == (405, "MethodNotAllowed") and "across namespaces" in body["message"]
    status, body = call(server, "DELETE", "/apis/inferplane.dev/v1alpha1/namespaces/ml-team/modeldeployments")
    assert (status, body["kind"], body["items"]) == (200, "ModelDeploymentList", [])
