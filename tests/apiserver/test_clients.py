"""One engine, many clients: the Python `kubernetes` client reads and writes the state `inferplane
serve` serves (list, watch, create, patch); `inferplane apply` and a kubectl apply of the same files
end in the same state; only a request with the kubeconfig's token is answered."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import kubernetes
import pytest
import yaml
from served import INFERPLANE, rewritten

from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.lease import Lease

GROUP, VERSION = "inferplane.dev", "v1alpha1"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# What differs between two states however they were written: identities, versions (generation counts the
# spec writes an object had, which depends on the order the writes came in) and times.
SET_ASIDE = {"uid", "resourceVersion", "generation", "creationTimestamp", "lastTransitionTime", "managedFields"}


def client(server) -> kubernetes.client.ApiClient:
    return kubernetes.config.new_client_from_config(config_file=str(server.kubeconfig))


def test_the_python_client_lists_watches_creates_and_patches(server, tmp_path):
    api = kubernetes.client.CustomObjectsApi(client(server))
    core = kubernetes.client.CoreV1Api(client(server))
    platform = list(yaml.safe_load_all((rewritten(tmp_path / "flow", ["eks/platform.yaml"]) /
                                        "0-eks-platform.yaml").read_text()))
    assert api.list_cluster_custom_object(GROUP, VERSION, "inferenceclusters")["items"] == []
    version = api.list_cluster_custom_object(GROUP, VERSION, "inferenceclasses")["metadata"]["resourceVersion"]
    created = api.create_cluster_custom_object(GROUP, VERSION, "inferenceclasses", platform[0])
    assert created["metadata"]["uid"] and created["spec"]["devices"][0]["driver"] == "gpu.nvidia.com"
    api.create_cluster_custom_object(GROUP, VERSION, "inferenceclusters", platform[1])

    # A watch from the list's version sees the class created, then the cluster reconciled to Ready.
    seen = []
    watch = kubernetes.watch.Watch()
    for event in watch.stream(api.list_cluster_custom_object, GROUP, VERSION, "inferenceclusters",
                              resource_version=version, timeout_seconds=120):
        obj = event["object"]
        conditions = {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions", [])}
        seen.append((event["type"], obj["metadata"]["name"], conditions.get("Ready")))
        if conditions.get("Ready") == "True":
            watch.stop()
    assert seen[0] == ("ADDED", "eks-us-east", None)
    assert seen[-1] == ("MODIFIED", "eks-us-east", "True")

    patched = api.patch_cluster_custom_object(GROUP, VERSION, "inferenceclusters", "eks-us-east",
                                              {"metadata": {"labels": {"tier": "frontier"}}})
    assert patched["metadata"]["labels"]["tier"] == "frontier"
    selected = api.list_cluster_custom_object(GROUP, VERSION, "inferenceclusters", label_selector="tier=frontier")
    assert [o["metadata"]["name"] for o in selected["items"]] == ["eks-us-east"]

    secret = kubernetes.client.V1Secret(metadata=kubernetes.client.V1ObjectMeta(name="hf", namespace="ml-team"),
                                        string_data={"HF_TOKEN": "abc"})
    assert core.create_namespaced_secret("ml-team", secret).data == {"HF_TOKEN": "YWJj"}
    core.patch_namespaced_secret("hf", "ml-team", {"data": {"OTHER": "ZGVm"}})  # a strategic merge patch
    assert core.read_namespaced_secret("hf", "ml-team").data == {"HF_TOKEN": "YWJj", "OTHER": "ZGVm"}
    with pytest.raises(kubernetes.client.ApiException) as refused:
        api.create_cluster_custom_object(GROUP, VERSION, "inferenceclasses", platform[0])
    assert refused.value.status == 409 and json.loads(refused.value.body)["reason"] == "AlreadyExists"


def test_pages_and_field_selectors(server, tmp_path):
    api = kubernetes.client.CustomObjectsApi(client(server))
    for index in range(5):
        api.create_namespaced_custom_object(GROUP, VERSION, "default", "modelendpoints", {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": "ModelEndpoint", "metadata": {"name": f"e{index}"},
            "spec": {"url": f"http://e{index}.example:8000"}})
    first = api.list_namespaced_custom_object(GROUP, VERSION, "default", "modelendpoints", limit=2)
    names = [o["metadata"]["name"] for o in first["items"]]
    token = first["metadata"]["continue"]
    while token:
        page = api.list_namespaced_custom_object(GROUP, VERSION, "default", "modelendpoints", limit=2,
                                                 _continue=token)
        names += [o["metadata"]["name"] for o in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["e0", "e1", "e2", "e3", "e4"]
    one = api.list_namespaced_custom_object(GROUP, VERSION, "default", "modelendpoints",
                                            field_selector="metadata.name=e3")
    assert [o["metadata"]["name"] for o in one["items"]] == ["e3"]


def settled(state) -> list[dict]:
    """The state's objects once no reconcile is queued or running, with what differs set aside."""
    runtime = ControlPlane(state, read_only=True)
    try:
        deadline = time.monotonic() + 120
        while runtime.store.queue.queued() or Lease(runtime.store).current_holder():
            assert time.monotonic() < deadline, "the server's reconciler did not settle"
            time.sleep(0.1)
        return [aside(obj) for obj in runtime.list()]
    finally:
        runtime.close()


def aside(node):
    if isinstance(node, dict):
        out = {k: aside(v) for k, v in node.items() if k not in SET_ASIDE}
        annotations = out.get("metadata", {}).get("annotations") if isinstance(out.get("metadata"), dict) else None
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
        return out
    if isinstance(node, list):
        return [aside(v) for v in node]
    return node


def test_inferplane_apply_and_kubectl_apply_end_in_the_same_state(server, tmp_path):
    folder = rewritten(tmp_path / "flow")
    server.kubectl("apply", "-f", str(folder))
    server.kubectl("wait", "--for=condition=Ready", "md/qwen-demo", "-n", "ml-team", "--timeout=120s")
    by_kubectl = settled(server.state)
    by_apply = tmp_path / "applied"
    subprocess.run([*INFERPLANE, "apply", "-f", str(folder), "--state", str(by_apply)], check=True, capture_output=True)
    assert settled(by_apply) == by_kubectl


def _get(server, token: str | None) -> int:
    context = ssl.create_default_context(cadata=_ca(server))
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{server.url}/api/v1/namespaces/x/secrets",
                                                           headers=headers), context=context, timeout=30) as done:
            return done.status
    except urllib.error.HTTPError as refused:
        assert json.loads(refused.read())["reason"] == "Unauthorized"
        return refused.code


def _ca(server) -> str:
    import base64

    config = yaml.safe_load(server.kubeconfig.read_text())
    return base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()


def test_only_the_kubeconfigs_token_on_loopback_is_answered(server):
    config = yaml.safe_load(server.kubeconfig.read_text())
    assert server.kubeconfig.stat().st_mode & 0o777 == 0o600
    assert server.url.startswith("https://127.0.0.1:")
    token = config["users"][0]["user"]["token"]
    assert (_get(server, token), _get(server, None), _get(server, "wrong"), _get(server, token[:-1])) == (
        200, 401, 401, 401)
    # The certificate is checked against the kubeconfig's authority, which signed it for this address.
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{server.url}/api", context=ssl.create_default_context(), timeout=30)
    assert token not in server.log.read_text()
