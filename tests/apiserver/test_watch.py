"""Watch semantics, delete options and the status subresource, over HTTPS as any client sends them:
a watch resumed from a version older than the server's history gets 410 Expired; bookmarks while
nothing changes; a deletion as DELETED with the object's last state; Orphan refused; status written
alone."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import subprocess
from urllib.parse import urlsplit

import pytest
import yaml
from served import INFERPLANE, rewritten, start


def connect(server) -> http.client.HTTPSConnection:
    config = yaml.safe_load(server.kubeconfig.read_text())
    context = ssl.create_default_context(cadata=base64.b64decode(
        config["clusters"][0]["cluster"]["certificate-authority-data"]).decode())
    where = urlsplit(server.url)
    connection = http.client.HTTPSConnection(where.hostname, where.port, context=context, timeout=60)
    connection.token = config["users"][0]["user"]["token"]
    return connection


def call(server, method: str, path: str, body: dict | None = None,
         content_type: str = "application/json") -> tuple[int, dict]:
    connection = connect(server)
    connection.request(method, path, body=json.dumps(body) if body is not None else None,
                       headers={"Authorization": f"Bearer {connection.token}", "Content-Type": content_type})
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())


def watch_lines(server, path: str, count: int) -> list[dict]:
    connection = connect(server)
    connection.request("GET", path, headers={"Authorization": f"Bearer {connection.token}"})
    answer = connection.getresponse()
    assert answer.status == 200, answer.read()
    return [json.loads(answer.readline()) for _ in range(count)]


@pytest.fixture
def applied_first(tmp_path):
    """A server started on a state `inferplane apply` wrote before it (its history starts after them)."""
    folder = rewritten(tmp_path / "flow", ["eks/platform.yaml"])
    subprocess.run([*INFERPLANE, "apply", "-f", str(folder), "--state", str(tmp_path / "state")], check=True,
                   capture_output=True)
    running = start(tmp_path / "state", tmp_path / "home")
    yield running
    running.stop()


CLUSTERS = "/apis/inferplane.dev/v1alpha1/inferenceclusters"


def test_a_watch_from_before_the_servers_history_is_gone(applied_first):
    status, body = call(applied_first, "GET", f"{CLUSTERS}?watch=true&resourceVersion=1")
    assert (status, body["reason"]) == (410, "Expired")
    assert "list again and watch from the list's resourceVersion" in body["message"]


def test_bookmarks_and_a_deletion(applied_first):
    listed = call(applied_first, "GET", CLUSTERS)[1]
    version = listed["metadata"]["resourceVersion"]
    [bookmark] = watch_lines(applied_first, f"{CLUSTERS}?watch=true&resourceVersion={version}"
                                            "&allowWatchBookmarks=true&timeoutSeconds=10", 1)
    assert bookmark["type"] == "BOOKMARK" and int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(version)

    connection = connect(applied_first)
    connection.request("GET", f"{CLUSTERS}?watch=true&resourceVersion={version}&timeoutSeconds=60",
                       headers={"Authorization": f"Bearer {connection.token}"})
    stream = connection.getresponse()
    status, gone = call(applied_first, "DELETE", f"{CLUSTERS}/eks-us-east")
    assert status == 200 and gone["metadata"]["name"] == "eks-us-east"
    event = json.loads(stream.readline())
    assert (event["type"], event["object"]["metadata"]["name"]) == ("DELETED", "eks-us-east")
    assert event["object"]["spec"]["cluster"]["source"] == "EKS"  # the last state, as Kubernetes sends it


def test_orphan_is_refused_and_status_is_written_alone(applied_first):
    status, body = call(applied_first, "DELETE", f"{CLUSTERS}/eks-us-east?propagationPolicy=Orphan")
    assert (status, body["reason"]) == (400, "BadRequest") and "Orphan is not supported" in body["message"]
    status, current = call(applied_first, "GET", f"{CLUSTERS}/eks-us-east/status")
    assert status == 200 and current["status"]["conditions"]
    patch = {"status": {"note": "written through the status subresource"}, "spec": {"taints": [
        {"key": "ignored", "effect": "NoSchedule"}]}}
    status, written = call(applied_first, "PATCH", f"{CLUSTERS}/eks-us-east/status", patch,
                           "application/merge-patch+json")
    assert status == 200 and written["status"]["note"] == "written through the status subresource"
    assert written["spec"] == current["spec"]  # the spec of a status write is not written
    status, stale = call(applied_first, "PUT", f"{CLUSTERS}/eks-us-east/status", current)
    assert (status, stale["reason"]) == (409, "Conflict")


def test_a_watch_of_events_from_a_list(applied_first):
    # As kubectl get events -w: list, then watch from the list's version; the events of a deleted
    # object go with it (DELETED), each with its last state.
    listed = call(applied_first, "GET", "/api/v1/events")[1]
    mine = [e for e in listed["items"] if e["involvedObject"]["name"] == "eks-us-east"]
    assert mine and all(int(e["metadata"]["resourceVersion"]) <= int(listed["metadata"]["resourceVersion"])
                        for e in mine)
    connection = connect(applied_first)
    connection.request("GET", f"/api/v1/events?watch=true&resourceVersion={listed['metadata']['resourceVersion']}"
                              "&timeoutSeconds=60", headers={"Authorization": f"Bearer {connection.token}"})
    stream = connection.getresponse()
    assert stream.status == 200
    assert call(applied_first, "DELETE", f"{CLUSTERS}/eks-us-east")[0] == 200
    wanted, deleted = {e["metadata"]["name"] for e in mine}, set()
    for _ in range(500):  # the events of what the cluster composed go too, in any order
        event = json.loads(stream.readline())
        assert event["type"] == "DELETED"
        deleted.add(event["object"]["metadata"]["name"])
        if wanted <= deleted:
            break
    assert wanted <= deleted
    # A version from before this server's feed of events is gone: the client lists again.
    status, body = call(applied_first, "GET", "/api/v1/events?watch=true&resourceVersion=5")
    assert (status, body["reason"]) == (410, "Expired")


def test_the_server_stops_on_sigterm(applied_first):
    import signal

    applied_first.process.send_signal(signal.SIGTERM)
    assert applied_first.process.wait(timeout=60) == 0
    assert "Traceback" not in applied_first.log.read_text()
