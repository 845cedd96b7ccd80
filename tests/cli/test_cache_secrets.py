"""A gated ModelCache's token on a cloud, through every output form: it reaches the workload cluster only
as the propagated Secret's data, read by the hydration Job from a secretKeyRef, and no command prints it
(`get` of every kind, `describe`, `trace`, `render`, events, the fleet table and page, dry runs, diffs,
messages), save `get secret -o yaml|json` of the Secret itself, as kubectl does."""

import base64
import json
from pathlib import Path

import yaml

from inferplane.simulator import provider
from test_kubectl_conventions import run

REPO = Path(__file__).resolve().parents[2]
CODER = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests" / "examples" / "qwen3-coder"
TOKEN = "hf_KNOWNtoken9876543210leakcheck"
TOKEN_BASE64 = base64.b64encode(TOKEN.encode()).decode()


def fleet(tmp_path: Path) -> Path:
    folder = tmp_path / "fleet"
    folder.mkdir()
    for name in ("inference-class.yaml", "inference-cluster.yaml", "model-cache.yaml", "model-deployment.yaml",
                 "model-service.yaml"):
        (folder / name).write_text((CODER / name).read_text().replace("modelplane.ai", "inferplane.dev").replace(
            'memory: { value: "140Gi" }', 'memory: { value: "143771Mi" }'))
    (folder / "secret.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": "ml-team"},
        "stringData": {"HF_TOKEN": TOKEN}}))
    return folder


def test_the_token_is_propagated_by_reference_and_never_printed(tmp_path, monkeypatch):
    # The download never ends, so the propagated Secret and the Job are there when everything is read.
    monkeypatch.setattr(provider, "claimed_gib", lambda *args: 0)
    state, folder = tmp_path / "state", fleet(tmp_path)
    outputs: dict[str, str] = {}

    def record(label, *args, code=0, with_state=True):
        result = run(*args, state=state if with_state else None, code=code)
        outputs[label] = result.stdout + result.stderr
        return result

    record("validate", "validate", "-f", folder, with_state=False)
    record("apply --dry-run", "apply", "--dry-run", "-f", folder)
    record("apply", "apply", "-f", folder)
    changed = tmp_path / "changed.yaml"
    changed.write_text((folder / "secret.yaml").read_text().replace(TOKEN, TOKEN[::-1]))
    record("diff", "diff", "-f", changed, code=1)

    # The Job reads the token from the propagated Secret by reference; that Secret holds only that key.
    objects = json.loads(run("get", "objects", "-n", "ml-team", "-o", "json", state=state).stdout)["items"]
    manifests = {o["spec"]["forProvider"]["manifest"]["kind"]: o["spec"]["forProvider"]["manifest"] for o in objects
                 if o["metadata"].get("labels", {}).get("inferplane.dev/modelcache") == "qwen3-coder"}
    (container,) = manifests["Job"]["spec"]["template"]["spec"]["containers"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "modelcache-ml-team-qwen3-coder-auth",
                                                               "key": "HF_TOKEN"}}} in container["env"]
    assert manifests["Secret"]["metadata"]["name"] == "modelcache-ml-team-qwen3-coder-auth"

    for kind in ("mc", "md", "icluster", "eksclusters", "servingstacks", "objects", "releases.helm.m.crossplane.io",
                 "modelreplicas", "events"):
        record(f"get {kind} yaml", "get", kind, "-A", "-o", "yaml")
        record(f"get {kind} wide", "get", kind, "-A", "-o", "wide")
    record("get secrets", "get", "secrets", "-A")
    record("get secret yaml", "get", "secret", "hf-token", "-n", "ml-team", "-o", "yaml")
    record("get secret json", "get", "secret", "hf-token", "-n", "ml-team", "-o", "json")
    record("describe mc", "describe", "mc", "qwen3-coder", "-n", "ml-team")
    record("describe md", "describe", "md", "qwen3-coder", "-n", "ml-team")
    record("describe icluster", "describe", "icluster", "eks-coder")
    record("describe secret", "describe", "secret", "hf-token", "-n", "ml-team")
    record("describe object", "describe", "objects", "qwen3-coder-auth-eks-coder", "-n", "ml-team")
    record("get object jsonpath", "get", "objects", "qwen3-coder-auth-eks-coder", "-n", "ml-team", "-o",
           "jsonpath={.spec.forProvider.manifest.data.HF_TOKEN}")
    record("trace mc", "trace", "mc", "qwen3-coder", "-n", "ml-team", "-o", "json")
    record("pods", "get", "pods", "--cluster", "eks-coder", "-o", "yaml")
    record("why", "why", "md", "qwen3-coder", "-n", "ml-team")
    record("fleet", "fleet")
    page = tmp_path / "fleet.html"
    record("fleet --html", "fleet", "--html", page)
    outputs["fleet page"] = page.read_text()
    outputs["render -o json"] = run("render", folder, "-o", "json").stdout
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token"},
                                      "data": {"HF_TOKEN": TOKEN}}))
    record("apply broken", "apply", "-f", broken, code=1)

    assert [label for label, text in outputs.items() if TOKEN in text] == []
    assert [label for label, text in outputs.items() if TOKEN_BASE64 in text] == ["get secret yaml",
                                                                                  "get secret json"]
