"""The real kubectl (1.37.1, pinned) against `inferplane serve`: Modelplane's getting-started flow as
its docs write it, group rewritten, and kubectl's other verbs, each command's output and exit code
checked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from served import rewritten


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_getting_started_with_kubectl(server, tmp_path):
    folder = rewritten(tmp_path / "flow")
    applied = server.kubectl("apply", "-f", str(folder))
    assert applied.stdout.splitlines() == [
        "clusterproviderconfig.aws.m.upbound.io/default created",
        "inferencegateway.inferplane.dev/default created",
        "inferenceclass.inferplane.dev/l4-1x-g6 created",
        "inferencecluster.inferplane.dev/eks-us-east created",
        "modeldeployment.inferplane.dev/qwen-demo created",
        "modelservice.inferplane.dev/qwen created"]
    waited = server.kubectl("wait", "--for=condition=Ready", "inferencecluster/eks-us-east", "--timeout=120s")
    assert waited.stdout == "inferencecluster.inferplane.dev/eks-us-east condition met\n"
    server.kubectl("wait", "--for=condition=Ready", "modeldeployment/qwen-demo", "-n", "ml-team", "--timeout=120s")

    table = rows(server.kubectl("get", "inferenceclusters").stdout)
    assert table[0] == ["NAME", "SOURCE", "READY", "REASON", "AGE"]
    assert table[1][:4] == ["eks-us-east", "EKS", "True", "Available"]
    wide = rows(server.kubectl("get", "ic", "-o", "wide").stdout)
    assert wide[0] == ["NAME", "SOURCE", "READY", "REASON", "AGE", "DRIVERS", "POOLS"]
    assert wide[1][5:] == ["gpu.nvidia.com", "gpu-l4"]
    deployments = rows(server.kubectl("get", "md", "-A").stdout)
    assert deployments[1][:5] == ["ml-team", "qwen-demo", "1", "1", "eks-us-east"]
    address = server.kubectl("get", "ms", "qwen", "-n", "ml-team", "-o", "jsonpath={.status.address}").stdout
    assert address == "http://172.18.255.200/ml-team/qwen"

    described = server.kubectl("describe", "inferencecluster", "eks-us-east").stdout
    assert "Name:         eks-us-east" in described and "Kind:         InferenceCluster" in described
    assert "Type:     ClusterReady" in described

    # What a composite composed is readable, and protected by it: a write names the composite to change.
    assert rows(server.kubectl("get", "httproutes", "-n", "ml-team").stdout)[1][0] == "qwen"
    refused = server.kubectl("label", "httproute", "qwen", "-n", "ml-team", "tier=gold", code=1)
    assert refused.stderr == ('Error from server (Forbidden): HTTPRoute "qwen": composed and controlled by '
                              "ModelService/qwen, whose next reconcile would undo any change made here: change "
                              "ModelService/qwen instead (nothing was written)\n")

    # Applied again unchanged: kubectl sends no patch for what did not change.
    again = server.kubectl("apply", "-f", str(folder / "2-eks-platform.yaml")).stdout
    assert again.splitlines() == ["inferenceclass.inferplane.dev/l4-1x-g6 unchanged",
                                  "inferencecluster.inferplane.dev/eks-us-east unchanged"]

    # kubectl deletes in file order: what something still uses is refused (Crossplane's Usage, 409) naming
    # the user, and its deletion recorded; each goes by itself once its users are gone (replayDeletion).
    first = server.kubectl("delete", "-f", str(folder), code=1)
    assert "Error from server (Conflict)" in first.stderr
    assert ("inferenceclass.inferplane.dev/l4-1x-g6 is in use by inferencecluster.inferplane.dev/eks-us-east: delete "
            "those or change them to stop using it first; nothing was deleted; the deletion is recorded "
            "(usage.crossplane.io/deletion-attempt-with-policy) and done by itself once its users are gone"
            ) in first.stderr
    assert "modelservice.inferplane.dev \"qwen\" deleted from ml-team namespace" in first.stdout
    for name in ("inferenceclass/l4-1x-g6", "inferencecluster/eks-us-east", "inferencegateway/default"):
        server.kubectl("wait", "--for=delete", name, "--timeout=120s")
    assert server.kubectl("get", "ic,iclass,md,ms,inferencegateways", "-A").stderr == "No resources found\n"
    assert "replayed the deletion of inferenceclass.inferplane.dev/l4-1x-g6: its users are gone" in server.stop()


def test_label_annotate_patch_edit_diff_and_dry_run(server, tmp_path):
    folder = rewritten(tmp_path / "flow", ["eks/platform.yaml"])
    server.kubectl("apply", "-f", str(folder))
    assert server.kubectl("label", "ic", "eks-us-east", "tier=frontier").stdout == \
        "inferencecluster.inferplane.dev/eks-us-east labeled\n"
    assert server.kubectl("annotate", "ic", "eks-us-east", "team=ml").stdout == \
        "inferencecluster.inferplane.dev/eks-us-east annotated\n"
    patched = server.kubectl("patch", "ic", "eks-us-east", "--type", "merge", "-p",
                             json.dumps({"spec": {"taints": [{"key": "maint", "effect": "NoSchedule"}]}}))
    assert patched.stdout == "inferencecluster.inferplane.dev/eks-us-east patched\n"
    stored = json.loads(server.kubectl("get", "ic", "eks-us-east", "-o", "json").stdout)
    assert stored["metadata"]["labels"]["tier"] == "frontier"
    assert stored["metadata"]["annotations"]["team"] == "ml"
    assert stored["spec"]["taints"] == [{"key": "maint", "effect": "NoSchedule"}]

    # A scripted editor changes a label; kubectl sends what changed.
    editor = tmp_path / "editor.py"
    editor.write_text("import sys\npath = sys.argv[1]\ntext = open(path).read()\n"
                      "open(path, 'w').write(text.replace('tier: frontier', 'tier: edited'))\n")
    edited = server.kubectl("edit", "ic", "eks-us-east", env={"EDITOR": f"{sys.executable} {editor}"})
    assert edited.stdout == "inferencecluster.inferplane.dev/eks-us-east edited\n"
    labels = server.kubectl("get", "ic", "eks-us-east", "-o", "jsonpath={.metadata.labels.tier}").stdout
    assert labels == "edited"

    # diff of the file changed: what apply would change, exit 1 as kubectl diff's (the taint the patch
    # added stays: the file never set taints, so a client-side apply leaves them).
    changed = (folder / "0-eks-platform.yaml").read_text().replace("maxNodeCount: 1", "maxNodeCount: 3")
    (folder / "0-eks-platform.yaml").write_text(changed)
    diff = server.kubectl("diff", "-f", str(folder), code=1).stdout
    assert "-    maxNodeCount: 1\n+    maxNodeCount: 3" in diff and "taints" not in diff.split("@@")[-1]
    # A server-side dry run is admitted and answered, and stores nothing.
    dry = server.kubectl("apply", "-f", str(folder), "--dry-run=server")
    assert "inferencecluster.inferplane.dev/eks-us-east configured (server dry run)" in dry.stdout
    count = server.kubectl("get", "ic", "eks-us-east", "-o", "jsonpath={.spec.nodePools[0].maxNodeCount}")
    assert count.stdout == "1"

    # A write based on a stale resourceVersion is refused with 409.
    stale = server.kubectl("patch", "ic", "eks-us-east", "--type", "merge", "-p",
                           json.dumps({"metadata": {"resourceVersion": "1"}, "spec": {"taints": []}}), code=1)
    assert "Error from server (Conflict)" in stale.stderr and "modified" in stale.stderr


def test_admission_errors_read_as_inferplane_apply_says_them(server, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((Path(__file__).parents[1] / "admission" / "bad" / "zero-count.yaml").read_text())
    refused = server.kubectl("apply", "-f", str(bad), code=1)
    assert refused.stderr == ('The InferenceClass "zero-count" is invalid: spec.devices[0].count: must be at least 1, '
                              'got 0: set it to 1 or more\n')
    assert server.kubectl("get", "iclass").stderr == "No resources found\n"


def test_watch_sees_the_reconcilers_changes(server, tmp_path):
    import subprocess

    from served import KUBECTL

    folder = rewritten(tmp_path / "flow", ["eks/platform.yaml"])
    watch = subprocess.Popen([str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "get", "ic", "-w",
                              "--output-watch-events"], stdout=subprocess.PIPE, text=True,
                             env={"HOME": str(server.home), "PATH": "/usr/bin:/bin"})
    try:
        server.kubectl("apply", "-f", str(folder))
        server.kubectl("wait", "--for=condition=Ready", "ic/eks-us-east", "--timeout=120s")
        lines = []
        while not any("True" in line for line in lines):
            lines.append(watch.stdout.readline())
    finally:
        watch.terminate()
        watch.wait()
    assert lines[0].split() == ["EVENT", "NAME", "SOURCE", "READY", "REASON", "AGE"]
    assert lines[1].split()[:2] == ["ADDED", "eks-us-east"]
    # The reconciler's status writes come as MODIFIED events, the last one Ready.
    assert lines[-1].split()[:5] == ["MODIFIED", "eks-us-east", "EKS", "True", "Available"]


def test_watch_of_events(server, tmp_path):
    import subprocess

    from served import KUBECTL

    watch = subprocess.Popen([str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "get", "events", "-A", "-w"],
                             stdout=subprocess.PIPE, text=True, env={"HOME": str(server.home), "PATH": "/usr/bin:/bin"})
    try:
        server.kubectl("apply", "-f", str(rewritten(tmp_path / "flow", ["eks/platform.yaml"])))
        lines = []
        while not any("inferencecluster/eks-us-east" in line and "Available" in line for line in lines):
            lines.append(watch.stdout.readline())
    finally:
        watch.terminate()
        watch.wait()
    assert lines[0].split() == ["NAMESPACE", "NAME", "LAST", "SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE"]
    ready = next(line for line in lines if "inferencecluster/eks-us-east" in line and "Available" in line).split()
    assert ready[0] == "default" and ready[1].startswith("eks-us-east.")
    assert ready[3:6] == ["Normal", "Available", "inferencecluster/eks-us-east"]
    assert " ".join(ready[7:]) == "EKS cluster eks-us-east is ready"


def test_explain_reads_the_served_openapi(server):
    from click.testing import CliRunner

    from inferplane.cli.main import cli

    # Our kinds, the core kinds and the provider configs: kubectl prints what inferplane explain prints.
    for typed in ("inferencecluster.spec.nodePools", "secret", "configmap.data", "namespace.status",
                  "event.involvedObject", "secret.metadata.labels", "clusterproviderconfigs.aws.m.upbound.io.spec",
                  "providerconfigs.helm.m.crossplane.io.spec.credentials"):
        ours = CliRunner().invoke(cli, ["explain", typed])
        assert ours.exit_code == 0, ours.output
        assert server.kubectl("explain", typed).stdout == ours.stdout, typed
    recursive = server.kubectl("explain", "event", "--recursive").stdout
    assert recursive == CliRunner().invoke(cli, ["explain", "event", "--recursive"]).stdout
    assert "  involvedObject\t<ObjectReference> -required-\n    apiVersion\t<string>\n" in recursive


def test_secrets_and_namespaces_by_strategic_merge(server, tmp_path):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": "ml-team"},
              "stringData": {"HF_TOKEN": "hf_sekrit_value"}}
    server.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(secret))
    secret["stringData"] = {"HF_TOKEN": "hf_other_value"}
    secret["metadata"]["labels"] = {"team": "ml"}
    assert server.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(secret)).stdout == "secret/hf-token configured\n"
    stored = json.loads(server.kubectl("get", "secret", "hf-token", "-n", "ml-team", "-o", "json").stdout)
    assert stored["data"] == {"HF_TOKEN": "aGZfb3RoZXJfdmFsdWU="} and stored["metadata"]["labels"] == {"team": "ml"}
    assert rows(server.kubectl("get", "secrets", "-n", "ml-team").stdout)[1][:3] == ["hf-token", "Opaque", "1"]
    server.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": "ml-team"}}))
    assert rows(server.kubectl("get", "ns").stdout)[1][:2] == ["ml-team", "Active"]
    # Secret data is in the answer to an authenticated read of it, never in events or the server's log.
    events = server.kubectl("get", "events", "-A", "-o", "json").stdout
    assert "hf_" not in events and "aGZf" not in events
    assert "hf_sekrit_value" not in server.stop() and "aGZf" not in server.log.read_text()


def test_patch_types_server_side_apply_and_events(server, tmp_path):
    folder = rewritten(tmp_path / "flow", ["eks/platform.yaml"])
    server.kubectl("apply", "-f", str(folder))
    server.kubectl("wait", "--for=condition=Ready", "ic/eks-us-east", "--timeout=120s")
    server.kubectl("patch", "ic", "eks-us-east", "--type", "json", "-p",
                   json.dumps([{"op": "add", "path": "/metadata/labels/via", "value": "json-patch"}]))
    assert server.kubectl("get", "ic", "eks-us-east", "-o", "jsonpath={.metadata.labels.via}").stdout == "json-patch"
    # A custom resource takes no strategic merge patch (415, as kube-apiserver answers for a CRD).
    strategic = server.kubectl("patch", "ic", "eks-us-east", "--type", "strategic", "-p", "{}", code=1)
    assert "application/strategic-merge-patch+json is not supported" in strategic.stderr
    # Server-side apply over what client-side apply wrote: the same values, so no conflict (both own them).
    applied = server.kubectl("apply", "--server-side", "-f", str(folder))
    assert applied.stdout == ("inferenceclass.inferplane.dev/l4-1x-g6 serverside-applied\n"
                              "inferencecluster.inferplane.dev/eks-us-east serverside-applied\n")
    # describe reads the object's events, as the engine recorded them.
    described = server.kubectl("describe", "ic", "eks-us-east").stdout
    assert "Normal  Available" in described and "EKS cluster eks-us-east is ready" in described
    events = rows(server.kubectl("get", "events", "-A").stdout)
    assert events[0] == ["NAMESPACE", "NAME", "LAST", "SEEN", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE"]
    assert "inferencecluster/eks-us-east" in {row[5] for row in events[1:]}


def test_kubectl_create_of_core_kinds_sent_as_protobuf(server, tmp_path):
    # kubectl sends the objects it makes itself as Kubernetes protobuf; what is stored is what the same
    # object applied as YAML stores.
    assert server.kubectl("create", "namespace", "ml-team").stdout == "namespace/ml-team created\n"
    assert server.kubectl("create", "secret", "generic", "hf-token", "-n", "ml-team",
                          "--from-literal=HF_TOKEN=hf_value").stdout == "secret/hf-token created\n"
    server.kubectl("create", "configmap", "settings", "-n", "ml-team", "--from-literal=mode=fast")
    secret = json.loads(server.kubectl("get", "secret", "hf-token", "-n", "ml-team", "-o", "json").stdout)
    assert (secret["type"], secret["data"]) == ("Opaque", {"HF_TOKEN": "aGZfdmFsdWU="})
    config = json.loads(server.kubectl("get", "cm", "settings", "-n", "ml-team", "-o", "json").stdout)
    assert config["data"] == {"mode": "fast"}
    made = server.kubectl("create", "secret", "generic", "other", "-n", "ml-team", "--from-literal=HF_TOKEN=hf_value",
                          "--dry-run=client", "-o", "yaml").stdout
    server.kubectl("apply", "-f", "-", stdin=made)
    other = json.loads(server.kubectl("get", "secret", "other", "-n", "ml-team", "-o", "json").stdout)
    assert (other["type"], other["data"]) == (secret["type"], secret["data"])
    assert rows(server.kubectl("get", "ns").stdout)[1][:2] == ["ml-team", "Active"]


def test_scale_subresource(server, tmp_path):
    folder = rewritten(tmp_path / "flow", ["eks/platform.yaml", "eks/model-deployment.yaml"])
    server.kubectl("apply", "-f", str(folder))
    scaled = server.kubectl("scale", "modeldeployment", "qwen-demo", "-n", "ml-team", "--replicas", "2")
    assert scaled.stdout == "modeldeployment.inferplane.dev/qwen-demo scaled\n"
    replicas = server.kubectl("get", "md", "qwen-demo", "-n", "ml-team", "-o", "jsonpath={.spec.replicas}").stdout
    assert replicas == "2"
    # The new count goes through admission as any write does.
    refused = server.kubectl("scale", "md", "qwen-demo", "-n", "ml-team", "--replicas", "20", code=1)
    assert refused.stderr == ('The ModelDeployment "qwen-demo" is invalid: spec.replicas: must be at most 10, got 20: '
                              'set it to 10 or less\n')


def test_discovery_is_aggregated_for_kubectl(server):
    listed = rows(server.kubectl("api-resources").stdout)
    assert ["inferenceclusters", "icluster,ic", "inferplane.dev/v1alpha1", "false", "InferenceCluster"] in listed
    assert ["secrets", "v1", "true", "Secret"] in listed
    assert ["modeldeployments", "md", "inferplane.dev/v1alpha1", "true", "ModelDeployment"] in listed
    # One answer to /api and one to /apis held every group's resources: kubectl asked for no group version.
    log = server.stop()
    assert "GET /apis 200" in log and "GET /apis/inferplane.dev/v1alpha1 " not in log
