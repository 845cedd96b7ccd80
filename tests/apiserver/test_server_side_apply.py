"""Server-side apply on `inferplane serve`, by clients no one here wrote: the pinned kubectl (apply
--server-side, --field-manager, --force-conflicts, diff --server-side), the `kubernetes` client's
dynamic client and lightkube (whose apply is server-side only); the fleet they apply reaches the
state `inferplane apply` of the same files reaches."""

from __future__ import annotations

import json
import subprocess

import kubernetes
import yaml
from served import INFERPLANE, REPO, rewritten
from test_clients import settled

MIXED = REPO / "recipes" / "mixed-fleet"


def test_kubectl_server_side_apply_conflicts_and_force(server, tmp_path):
    applied = server.kubectl("apply", "--server-side", "-f", str(MIXED))
    assert "inferencecluster.inferplane.dev/gke-us-central serverside-applied" in applied.stdout
    shown = yaml.safe_load(server.kubectl("get", "ic", "gke-us-central", "--show-managed-fields", "-o", "yaml").stdout)
    [entry] = shown["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("kubectl", "Apply")
    assert 'k:{"name":"l4"}' in entry["fieldsV1"]["f:spec"]["f:nodePools"]
    assert "managedFields" not in server.kubectl("get", "ic", "gke-us-central", "-o", "yaml").stdout

    # Another manager changing a field kubectl owns: 409 naming the field and kubectl.
    cluster = next(d for d in yaml.safe_load_all((MIXED / "clusters.yaml").read_text())
                   if d and d["metadata"]["name"] == "gke-us-central")
    cluster["spec"]["nodePools"][0]["nodeCount"] = 3
    changed = yaml.safe_dump(cluster)
    refused = server.kubectl("apply", "--server-side", "--field-manager", "gitops", "-f", "-", stdin=changed, code=1)
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.nodePools[name="l4"].nodeCount' in \
        refused.stderr
    # kubectl diff --server-side shows the change (a dry run), and stores nothing.
    diff = server.kubectl("diff", "--server-side", "--force-conflicts", "--field-manager", "gitops", "-f", "-",
                          stdin=changed, code=1).stdout
    assert "-    nodeCount: 2" in diff and "+    nodeCount: 3" in diff
    server.kubectl("apply", "--server-side", "--field-manager", "gitops", "--force-conflicts", "-f", "-", stdin=changed)
    assert server.kubectl("get", "ic", "gke-us-central", "-o", "jsonpath={.spec.nodePools[0].nodeCount}").stdout == "3"
    server.kubectl("wait", "--for=condition=Synced", "ic/gke-us-central", "--timeout=120s")
    owners = {e["manager"]: e for e in json.loads(server.kubectl(
        "get", "ic", "gke-us-central", "--show-managed-fields", "-o", "json").stdout)["metadata"]["managedFields"]}
    assert "f:nodeCount" in owners["gitops"]["fieldsV1"]["f:spec"]["f:nodePools"]['k:{"name":"l4"}']
    assert "f:nodeCount" not in owners["kubectl"]["fieldsV1"]["f:spec"]["f:nodePools"]['k:{"name":"l4"}']

    # Without a field manager, apply is refused (422), as kube-apiserver refuses it.
    body = json.dumps({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster",
                       "metadata": {"name": "gke-us-central"}})
    missing = server.kubectl("patch", "ic", "gke-us-central", "--type", "apply", "-p", body, "--field-manager", "",
                             code=None)
    assert missing.returncode != 0


def test_server_side_apply_reaches_the_state_inferplane_apply_reaches(server, tmp_path):
    folder = rewritten(tmp_path / "flow")
    server.kubectl("apply", "--server-side", "-f", str(folder))
    server.kubectl("wait", "--for=condition=Ready", "md/qwen-demo", "-n", "ml-team", "--timeout=120s")
    by_kubectl = settled(server.state)
    by_apply = tmp_path / "applied"
    subprocess.run([*INFERPLANE, "apply", "-f", str(folder), "--state", str(by_apply)], check=True, capture_output=True)
    assert settled(by_apply) == by_kubectl
    got = subprocess.run([*INFERPLANE, "get", "ic", "eks-us-east", "-o", "json", "--show-managed-fields",
                          "--state", str(by_apply)], check=True, capture_output=True, text=True).stdout
    [entry] = json.loads(got)["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("inferplane", "Apply")


def test_the_python_clients_apply_server_side(server, tmp_path):
    from kubernetes.dynamic import DynamicClient
    from lightkube import Client, KubeConfig
    from lightkube.generic_resource import create_global_resource

    platform = list(yaml.safe_load_all((rewritten(tmp_path / "flow", ["eks/platform.yaml"]) /
                                        "0-eks-platform.yaml").read_text()))
    dynamic = DynamicClient(kubernetes.config.new_client_from_config(config_file=str(server.kubeconfig)))
    classes = dynamic.resources.get(api_version="inferplane.dev/v1alpha1", kind="InferenceClass")
    done = classes.server_side_apply(body=platform[0], name=platform[0]["metadata"]["name"],
                                     field_manager="python-client")
    assert done.metadata.managedFields[0].manager == "python-client"

    Cluster = create_global_resource("inferplane.dev", "v1alpha1", "InferenceCluster", "inferenceclusters")
    lightkube = Client(KubeConfig.from_file(str(server.kubeconfig)), field_manager="lightkube-test")
    obj = Cluster.from_dict(platform[1]) if hasattr(Cluster, "from_dict") else Cluster(**platform[1])
    stored = lightkube.apply(obj, name=platform[1]["metadata"]["name"])
    assert [e.manager for e in stored.metadata.managedFields] == ["lightkube-test"]
    server.kubectl("wait", "--for=condition=Ready", "ic/eks-us-east", "--timeout=120s")
