"""Inputs that look harmless in a file but would break the engine: `validate` and `apply` refuse
each one with the same message, and `apply` stores nothing of it."""

import json
import tracemalloc
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.admission.manifests import load
from inferplane.cli.main import cli

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
CPU_CLASS = (RECIPES / "qwen2.5-0.5b-cpu" / "class.yaml").read_text()
EKS_CLASS = (RECIPES / "qwen2.5-0.5b-nvidia-eks" / "class.yaml").read_text()
EKS_CLUSTER = (RECIPES / "qwen2.5-0.5b-nvidia-eks" / "cluster.yaml").read_text()
MODEL = (RECIPES / "qwen2.5-0.5b-nvidia-eks" / "model.yaml").read_text()
TEMPLATE_LINE = "                      image: vllm/vllm-openai:v0.10.2\n"

BILLION_LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9 if prev else ['lol'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi"))


def in_template(extra: str) -> str:
    return MODEL.replace(TEMPLATE_LINE, TEMPLATE_LINE + extra)


CONTAINER = "spec.template.spec.engines[0].members[0].template.spec.containers[0]"
SELECTOR = "spec.template.spec.engines[0].members[0].nodeSelector.devices[0].selectors[0].cel"
FIRST_SELECTOR = '                      - cel: device.driver == "gpu.nvidia.com"\n'


def with_selector(expression: str) -> str:
    assert FIRST_SELECTOR in MODEL
    return MODEL.replace(FIRST_SELECTOR, f"                      - cel: {json.dumps(expression)}\n")


CASES = {
    "huge-exponent": (CPU_CLASS.replace('cpu: {value: "6"}', 'cpu: {value: "1e1001"}'),
                      "InferenceClass/civo-cpu-medium: spec.devices[0].capacity.cpu.value: '1e1001' is not a "
                      "supported "
                      "quantity: exponent beyond +/-1000: write it with a suffix, e.g. 80Gi or 500m"),
    "capacity-beyond-int64": (CPU_CLASS.replace('cpu: {value: "6"}', 'cpu: {value: "4e999"}'),
                              "InferenceClass/civo-cpu-medium: spec.devices[0].capacity.cpu.value: '4e999' is "
                              "beyond what Kubernetes can count (int64, at most 9223372036854775807): write the "
                              "device's real capacity"),
    "negative-capacity": (EKS_CLASS.replace("memory: {value: 23034Mi}", "memory: {value: -5Gi}"),
                          "InferenceClass/eks-l4: spec.devices[0].capacity.memory.value: must not be negative, got "
                          "'-5Gi': a device's capacity is what it offers"),
    "billion-laughs": (BILLION_LAUGHS,
                       ":1:1: the document, with its aliases expanded, is 2597.9 MiB as stored JSON, over the 1.5 "
                       "MiB Kubernetes stores (etcd's default --max-request-bytes): split it into smaller objects"),
    "recursive-alias": ("a: &a [*a]\n", ":1:4: an alias refers to a node that contains it, which makes the "
                                        "document infinitely large: remove the recursive alias"),
    "ten-thousand-deep": ("a: " + "[" * 10000 + "]" * 10000 + "\n",
                          ":1:103: nested more than 100 levels deep (inferplane's limit; Kubernetes' JSON decoder "
                          "stops at 10,000): flatten the structure"),
    "deep-template": (in_template("                      x: " + "[" * 95 + "]" * 95 + "\n"),
                      ":27:114: nested more than 100 levels deep (inferplane's limit; Kubernetes' JSON decoder "
                      "stops at 10,000): flatten the structure"),
    "too-large": (in_template("                      env: [" + ", ".join(
        ['{name: V%d, value: "%s"}' % (i, "x" * 1000) for i in range(1600)]) + "]\n"),
                  "ModelDeployment/qwen2-5-0-5b-l4: the object is 1.6 MiB as stored JSON, over the 1.5 MiB "
                  "Kubernetes stores (etcd's default --max-request-bytes): split it into smaller objects"),
    "five-thousand-digits": (in_template("                      x: " + "9" * 5000 + "\n"),
                             f"ModelDeployment/qwen2-5-0-5b-l4: {CONTAINER}.x: an integer of 5000 digits does not "
                             "fit an int64 (Kubernetes stores integers as 64-bit, -9223372036854775808 to "
                             "9223372036854775807): use a smaller number, or quote it if it is text"),
    "not-a-number": (in_template("                      x: .nan\n"),
                     f"ModelDeployment/qwen2-5-0-5b-l4: {CONTAINER}.x: nan is not a JSON number: use a finite number"),
    "long-cluster-name": (EKS_CLUSTER.replace("name: eks-l4\n", f"name: {'c' * 64}\n", 1),
                          f"InferenceCluster/{'c' * 64}: metadata.name: must be a lowercase RFC 1123 label (a-z, "
                          "0-9 and '-', starting and ending alphanumeric) of at most 63 characters, "
                          f"got '{'c' * 64}': it is copied into the crossplane.io/composite label of everything "
                          "composed for it"),
    "selector-not-bool": (with_selector("device.driver"),
                          f"ModelDeployment/qwen2-5-0-5b-l4: {SELECTOR}: must evaluate to bool, not string: compare "
                          "the value, e.g. device.driver == \"gpu.nvidia.com\""),
    "selector-string-plus-int": (with_selector("device.driver + 1 == 2"),
                                 f"ModelDeployment/qwen2-5-0-5b-l4: {SELECTOR}: not a valid CEL expression: at 1:15: "
                                 "found no matching overload for '_+_' applied to '(string, int)'"),
    "selector-unknown-variable": (with_selector("node.name == 'a'"),
                                  f"ModelDeployment/qwen2-5-0-5b-l4: {SELECTOR}: not a valid CEL expression: at 1:5: "
                                  "undeclared reference to 'node.name' (in container '')"),
    "selector-parser-crash": (with_selector("device" + ".a" * 20000 + " == 1"),
                              f"ModelDeployment/qwen2-5-0-5b-l4: {SELECTOR}: must be at most 10240 characters long "
                              "(a DRA CEL expression over one `device`, as in a ResourceClaim; at most 10 KiB, "
                              "Kubernetes' CELSelectorExpressionMaxLength: split a longer one into several selectors)"),
    "selector-too-costly": (with_selector("device.attributes.all(d, device.attributes[d].all(k, device.attributes."
                                          "all(e, device.attributes[e].all(j, true))))"),
                            f"ModelDeployment/qwen2-5-0-5b-l4: {SELECTOR}: estimated cost 4,597,126 exceeds the budget "
                            "of 1,000,000 per selector (Kubernetes' CELSelectorExpressionMaxCost, about 1 ms of "
                            "evaluation): nest fewer comprehensions"),
    "owner-references": (EKS_CLASS.replace("  name: eks-l4\n", "  name: eks-l4\n  ownerReferences: [{apiVersion: "
                                           "v1, kind: Secret, name: s, uid: u, controller: true}]\n"),
                         "InferenceClass/eks-l4: metadata.ownerReferences: an applied object has no owner: "
                         "inferplane sets owner references only on what it composes, and Kubernetes' garbage "
                         "collector would delete an object whose owner does not exist: remove them"),
}


def run(*args):
    result = CliRunner().invoke(cli, list(map(str, args)))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_and_apply_refuse_with_the_same_message(tmp_path, name):
    text, expected = CASES[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    validated = run("validate", "-f", path)
    applied = run("apply", "-f", path, "--state", tmp_path / "state")
    errors = [line for line in validated.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {path}{'' if expected.startswith(':') else ': '}{expected}"]
    assert validated.exit_code == 1
    assert [line for line in applied.stderr.splitlines() if line.startswith("error: ")] == errors
    assert applied.exit_code == 1
    assert applied.stdout == ""  # nothing created


def test_the_same_documents_without_the_hostile_part_are_admitted(tmp_path):
    """The cases above fail for the reason they name: their harmless twins pass."""
    for name, text in (("class.yaml", CPU_CLASS),
                       ("model.yaml", in_template(" " * 22 + "env: [{name: STARTED, value: 2024-01-02}]\n"))):
        (tmp_path / name).write_text(text)
    assert run("validate", "-f", tmp_path).exit_code == 0
    (manifest,), _ = load([tmp_path / "model.yaml"])
    # A YAML date is kept as the text it is, as Kubernetes' YAML decoder keeps it.
    engine = manifest.body["spec"]["template"]["spec"]["engines"][0]
    assert engine["members"][0]["template"]["spec"]["containers"][0]["env"][0]["value"] \
        == "2024-01-02"


def test_a_cluster_named_with_63_characters_reconciles_and_its_nodes_names_fit_a_label(tmp_path):
    name = "c" * 63
    cluster = (RECIPES / "qwen2.5-0.5b-cpu" / "cluster.yaml").read_text().replace("name: civo-cpu\n", f"name: {name}\n")
    (tmp_path / "class.yaml").write_text(CPU_CLASS)
    (tmp_path / "cluster.yaml").write_text(cluster)
    state = tmp_path / "state"
    assert run("apply", "-f", tmp_path / "class.yaml", "-f", tmp_path / "cluster.yaml", "--state", state).exit_code == 0
    assert run("get", "ic", name, "--state", state).output.splitlines()[1].split()[:3] == [name, "Civo", "True"]
    nodes = json.loads(run("get", "nodes", "--cluster", name, "-o", "json", "--state", state).output)["items"]
    hostnames = [node["metadata"]["labels"]["kubernetes.io/hostname"] for node in nodes]
    assert len(nodes) == 4 and len(set(hostnames)) == 4  # two system nodes, two CPU nodes
    assert all(len(hostname) <= 63 for hostname in hostnames), hostnames


def test_alias_bomb_is_refused_within_a_small_fixed_memory(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BILLION_LAUGHS)
    assert len(BILLION_LAUGHS) < 500
    tracemalloc.start()
    try:
        manifests, errors = load([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert manifests == [] and len(errors) == 1
    assert peak < 2 * 1024 * 1024  # the expansion (2.6 GiB) is measured, never built


def test_server_set_metadata_is_not_stored_as_written(tmp_path):
    klass = yaml.safe_load(EKS_CLASS)
    klass["metadata"].update(deletionTimestamp="2024-01-01T00:00:00Z", uid="forged", generation=7,
                             resourceVersion="99")
    path = tmp_path / "class.yaml"
    path.write_text(yaml.safe_dump(klass))
    assert run("apply", "-f", path, "--state", tmp_path / "state").exit_code == 0
    stored = yaml.safe_load(run("get", "iclass", "eks-l4", "-o", "yaml", "--state", tmp_path / "state").stdout)
    assert "deletionTimestamp" not in stored["metadata"]
    assert stored["metadata"]["uid"] != "forged"
    assert stored["metadata"]["generation"] == 1


@pytest.mark.parametrize("style, levels", [("flow", n) for n in range(95, 103)] + [("block", n) for n in range(96, 102)])
def test_nesting_is_refused_past_the_limit_whichever_loader_reads_the_file(tmp_path, style, levels):
    """libyaml reads plain files, the bounded loader everything near a limit: the boundary is the same.
    Each document is a root mapping with `levels` collections nested under it (lists in flow style,
    mappings in block style, then a scalar), so it is `levels + 1` deep."""
    path = tmp_path / f"{style}-{levels}.yaml"
    if style == "flow":
        path.write_text("k: " + "[" * levels + "]" * levels + "\n")
        mark = "1:103"
    else:
        path.write_text("".join(f"{'  ' * i}k{i}:\n" for i in range(levels)) + "  " * levels + "x\n")
        mark = "100:199"
    manifests, errors = load([path])
    if levels + 1 <= 100:
        assert errors == [] and len(manifests) == 1
    else:
        assert [str(e) for e in errors] == [
            f"{path}:{mark}: nested more than 100 levels deep (inferplane's limit; Kubernetes' JSON decoder stops "
            "at 10,000): flatten the structure"]


def test_libyaml_never_reads_a_file_with_aliases_or_deep_nesting(tmp_path, monkeypatch):
    from inferplane.admission import yaml_documents as module

    read_by_libyaml = []
    monkeypatch.setattr(module.FastManifestLoader, "construct_document",
                        lambda self, node: read_by_libyaml.append(str(node.start_mark)))
    for name, text in (("bomb", BILLION_LAUGHS), ("recursive", "a: &a [*a]\n"),
                       ("deep", "a: " + "[" * 10000 + "]" * 10000 + "\n")):
        (tmp_path / f"{name}.yaml").write_text(text)
    _, errors = load([tmp_path])
    assert read_by_libyaml == []
    assert [str(e).split(": ", 1)[1][:40] for e in errors] == [
        "the document, with its aliases expanded,", "nested more than 100 levels deep (inferp",
        "an alias refers to a node that contains "]
    # A harmless alias is still expanded, by the bounded loader.
    (tmp_path / "anchors.yaml").write_text("x: &a {b: 1}\ny: *a\n")
    (manifest,), errors = load([tmp_path / "anchors.yaml"])
    assert manifest.body == {"x": {"b": 1}, "y": {"b": 1}} and errors == []


@pytest.mark.parametrize("path", sorted(RECIPES.rglob("*.yaml")), ids=lambda p: str(p.relative_to(RECIPES)))
def test_libyaml_reads_every_recipe_as_the_bounded_loader_does(path):
    from inferplane.admission.yaml_documents import ManifestLoader, parse

    text = path.read_text()
    assert list(parse(text)) == [(document, []) for document in yaml.load_all(text, Loader=ManifestLoader)]


# What PyYAML's constructor does beyond plain mappings, sequences and scalars, each in a file that
# libyaml reads: its fast path must build exactly what the bounded loader builds, or fail alike.
TRICKY_YAML = {
    "scalars": "a: [1, 0x1F, 0o17, 1_000, 1:20, .inf, -.Inf, .nan, ~, null, yes, No, on, 2024-01-01, '3', !!str 4]\n",
    "merge-key": "base: {a: 1}\nderived:\n  <<: {a: 2, b: 3}\n  a: 4\n",
    "value-key": "a: {=: 1, b: 2}\n",
    "duplicate-keys": "a: 1\nb: 2\na: 3\n",
    "complex-key": "? [a, b]\n: 1\n",
    "set-and-omap": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\np: !!pairs [{a: 1}]\n",
    "binary": "b: !!binary aGVsbG8=\n",
    "unknown-tag": "a: !thing {b: 1}\n",
    "documents": "a: 1\n---\n- 1\n- {b: [c, {d: e}]}\n---\n",
    "empty-values": "a:\nb: []\nc: {}\nd: ''\n",
    "quoted-and-long": "a: ['true', \"1\", " + "x" * 70 + ", " + "1" * 70 + "]\n",
}


@pytest.mark.parametrize("name", sorted(TRICKY_YAML))
def test_libyamls_fast_construction_builds_what_pyyamls_constructor_builds(name):
    from inferplane.admission.yaml_documents import FastManifestLoader, ManifestLoader, _documents, parse

    text = TRICKY_YAML[name]

    def read(loader):
        """Each document with the keys it repeats."""
        try:
            return list(_documents(loader(text)))
        except yaml.YAMLError as exc:
            return f"{type(exc).__name__}: {getattr(exc, 'problem', exc)}"

    fast, bounded = read(FastManifestLoader), read(ManifestLoader)
    assert fast == bounded and repr(fast) == repr(bounded)
    if not isinstance(bounded, str):
        assert list(parse(text)) == bounded
    # A merge key's keys may be overridden; a key written twice is refused, whichever loader reads it.
    repeated = [] if isinstance(bounded, str) else [field for _, duplicates in bounded for field, _ in duplicates]
    assert repeated == (["a"] if name == "duplicate-keys" else [])


# ---- each limit at its boundary: at the limit admitted, one past it refused (the limits are written out
# here as docs/manifests.md ("Limits") states them, so that a changed limit or comparison fails)

STORED_LIMIT = 1536 * 1024  # etcd's default --max-request-bytes
TOO_LARGE = ("the object is 1.5 MiB as stored JSON, over the 1.5 MiB Kubernetes stores (etcd's default "
             "--max-request-bytes): split it into smaller objects")


def class_of_stored_size(size: int) -> dict:
    """The EKS class with an annotation that makes its compact JSON (as stored) exactly `size` bytes."""
    body = yaml.safe_load(EKS_CLASS)
    body["metadata"]["annotations"] = {"pad": ""}
    body["metadata"]["annotations"]["pad"] = "x" * (size - len(json.dumps(body, separators=(",", ":"))))
    assert len(json.dumps(body, separators=(",", ":")).encode()) == size
    return body


@pytest.mark.parametrize("size, admitted", [(STORED_LIMIT - 1, True), (STORED_LIMIT, True),
                                            (STORED_LIMIT + 1, False)])
def test_an_object_of_exactly_the_stored_limit_is_admitted_and_one_byte_more_is_refused(tmp_path, size, admitted):
    path = tmp_path / "class.json"
    path.write_text(json.dumps(class_of_stored_size(size)))
    result = run("validate", "-f", path)
    if admitted:
        assert result.exit_code == 0 and result.stdout.endswith("1 valid, 0 errors\n"), result.stderr
    else:
        assert [line for line in result.stderr.splitlines() if line.startswith("error: ")] == [
            f"error: {path}: InferenceClass/eks-l4: {TOO_LARGE}"]


def aliased(key_length: int) -> str:
    """A 1,021-character value anchored under a key of `key_length`, and a list of 1,534 aliases to it:
    expanded, as the loader measures a node graph (a scalar is its length and 3, for quotes and a
    separator; a collection 2 and its children), 2 + (key_length + 3) + 1,024 + 4 + (2 + 1,534 x 1,024)
    bytes, which is the stored limit for a key of 1,013 characters."""
    return f"{'k' * key_length}: &v {'v' * 1021}\nl: [{', '.join(['*v'] * 1534)}]\n"


@pytest.mark.parametrize("key_length, admitted", [(1012, True), (1013, True), (1014, False)])
def test_aliases_may_expand_a_document_to_the_stored_limit_and_not_one_byte_more(tmp_path, key_length, admitted):
    from inferplane.admission.yaml_documents import ManifestLoader, expanded_size

    text = aliased(key_length)
    assert expanded_size(yaml.compose(text, Loader=ManifestLoader))[0] == STORED_LIMIT - 1013 + key_length
    path = tmp_path / "aliased.yaml"
    path.write_text(text)
    manifests, errors = load([path])
    if admitted:
        assert errors == [] and len(manifests) == 1
    else:
        assert [str(e) for e in errors] == [
            f"{path}:1:1: the document, with its aliases expanded, is 1.5 MiB as stored JSON, over the 1.5 MiB "
            "Kubernetes stores (etcd's default --max-request-bytes): split it into smaller objects"]


@pytest.mark.parametrize("levels, admitted", [(47, True), (48, True), (49, False)])
def test_aliases_may_expand_a_document_to_100_levels_and_not_one_more(tmp_path, levels, admitted):
    """An anchored value `levels` lists deep, aliased from under 50 more: 1 (the root) + 50 + levels + 1
    (the scalar) levels once expanded, 100 for 48, while the text itself nests far less."""
    path = tmp_path / "deep.yaml"
    path.write_text(f"a: &a {'[' * levels}x{']' * levels}\nb: {'[' * 50}*a{']' * 50}\n")
    manifests, errors = load([path])
    if admitted:
        assert errors == [] and len(manifests) == 1
    else:
        assert [str(e) for e in errors] == [f"{path}:1:1: aliases expand it to more than 100 levels deep "
                                            "(inferplane's limit): write the nested values out"]


@pytest.mark.parametrize("depth, admitted", [(99, True), (100, True), (101, False)])
def test_an_object_built_in_memory_may_nest_100_levels_and_not_one_more(depth, admitted):
    """What reaches admission without a file (a scale, a function's request) is bounded the same way:
    the root is level 0, so `spec` is 1 and its deepest list `depth`."""
    from inferplane.admission import admit_manifests
    from inferplane.admission.manifests import Manifest

    nested: list = []
    for _ in range(depth - 2):  # spec (1), its field x (2), then lists down to `depth`
        nested = [nested]
    body = yaml.safe_load(EKS_CLASS)
    body["spec"]["x"] = nested
    errors = [str(e) for e in admit_manifests([Manifest("mem", body)]).errors]
    deep = [e for e in errors if "levels deep" in e]
    if admitted:
        assert deep == [] and errors  # refused for the unknown field x alone
    else:
        assert len(deep) == 1 and deep[0].startswith("mem: InferenceClass/eks-l4: spec.x" + "[0]" * (depth - 2))


@pytest.mark.parametrize("value, admitted", [(2**63 - 1, True), (2**63, False), (-(2**63), True),
                                             (-(2**63) - 1, False)])
def test_integers_span_exactly_an_int64(tmp_path, value, admitted):
    path = tmp_path / "class.yaml"
    assert "\nspec:\n" in EKS_CLASS
    path.write_text(EKS_CLASS.replace("\nspec:\n", f"\nspec:\n  bogus: {value}\n"))
    errors = [line for line in run("validate", "-f", path).stderr.splitlines() if line.startswith("error: ")]
    overflow = [e for e in errors if "does not fit an int64" in e]
    assert bool(overflow) != admitted, errors


@pytest.mark.parametrize("kind_file, old, length, admitted", [
    ("cluster.yaml", "name: eks-l4\n", 63, True), ("cluster.yaml", "name: eks-l4\n", 64, False),
    ("class.yaml", "  name: eks-l4\n", 253, True), ("class.yaml", "  name: eks-l4\n", 254, False)])
def test_names_are_as_long_as_kubernetes_allows_and_not_one_character_more(tmp_path, kind_file, old, length,
                                                                          admitted):
    """A DNS label (63) for every kind but InferenceClass, whose name is a DNS subdomain (253)."""
    name = "c" * length if length <= 64 else ".".join(["c" * 63] * 4)[:length]
    assert len(name) == length and not name.endswith(".")
    text = (RECIPES / "qwen2.5-0.5b-nvidia-eks" / kind_file).read_text().replace(old, old.replace("eks-l4", name), 1)
    path = tmp_path / kind_file
    path.write_text(text)
    name_errors = [line for line in run("validate", "-f", path).stderr.splitlines() if "metadata.name" in line]
    assert (name_errors == []) == admitted, name_errors
