"""What a file, a folder or standard input of manifests may be: bounded in bytes and documents, decoded
one way, never empty, and read as strictly as the API server decodes (no repeated key, no unknown
metadata field). Each limit is pinned at its boundary: at the limit accepted, one past it refused."""

import codecs
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.admission import admit_paths
from inferplane.admission.limits import StreamLimits
from inferplane.admission.manifests import load, read_input
from inferplane.admission.yaml_documents import FastManifestLoader, ManifestLoader
from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
CLASS = (REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks" / "class.yaml").read_text()
DOCUMENTS_HINT = ("(inferplane's limit on a file or standard input; each item of a List counts as one): split it "
                  "into several files, or raise the limit with --max-documents or INFERPLANE_MAX_DOCUMENTS")
BYTES_HINT = ("(inferplane's limit on a file or standard input of manifests): split it into several files, or "
              "raise the limit with --max-file-bytes or INFERPLANE_MAX_FILE_BYTES")


def run(*args, input=None, env=None):
    result = CliRunner().invoke(cli, list(map(str, args)), input=input, env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def errors_of(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith(("error: ", "Error: "))]


def small_class(name: str) -> str:
    return (f"apiVersion: inferplane.dev/v1alpha1\nkind: InferenceClass\nmetadata:\n  name: {name}\nspec:\n"
            "  devices:\n  - name: gpu\n    driver: gpu.nvidia.com\n    deviceClassName: gpu.nvidia.com\n"
            "    attributes:\n      productName: {string: NVIDIA L4}\n")


# ---- bytes


def padded(size: int) -> str:
    """The recipe's class followed by a comment, `size` bytes in all."""
    assert len(CLASS.encode()) + 2 <= size
    return CLASS + "#" + "x" * (size - len(CLASS.encode()) - 2) + "\n"


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_a_file_or_standard_input_at_the_byte_limit_is_read_and_one_byte_more_is_refused(tmp_path, via):
    limit = 4096
    for size, ok in ((limit - 1, True), (limit, True), (limit + 1, False)):
        text = padded(size)
        path = tmp_path / "class.yaml"
        path.write_text(text)
        source = ["-f", "-"] if via == "stdin" else ["-f", path]
        result = run("validate", *source, "--max-file-bytes", limit, input=text if via == "stdin" else None)
        named = "<stdin>" if via == "stdin" else str(path)
        if ok:
            assert result.exit_code == 0 and result.stdout.endswith("1 valid, 0 errors\n"), (size, result.stderr)
        else:
            assert result.exit_code == 1
            assert errors_of(result) == [f"error: {named}: is larger than 4 KiB {BYTES_HINT}"]


def test_the_default_byte_limit_is_64_mib_and_a_larger_file_is_refused_without_being_read(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as sparse:  # 64 MiB + 1 of nothing on disk
        sparse.truncate(64 * 1024 * 1024 + 1)
    assert errors_of(run("validate", "-f", path)) == [f"error: {path}: is larger than 64 MiB {BYTES_HINT}"]
    tracemalloc.start()
    try:
        _, errors = load([path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(errors) == 1 and peak < 1024 * 1024  # refused by its size, not read
    path.write_text(padded(64 * 1024 * 1024))
    assert run("validate", "-f", path).stdout.endswith("1 valid, 0 errors\n")


def test_an_endless_standard_input_is_refused_after_one_byte_past_the_limit(monkeypatch):
    class Endless:
        served = 0

        def read(self, size):
            self.served += size
            return b"#" * size

    endless = Endless()
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": endless})())
    error = read_input(Path("-"), StreamLimits(max_bytes=10 * 1024 * 1024))
    assert str(error) == f"<stdin>: is larger than 10 MiB {BYTES_HINT}"
    assert endless.served == 10 * 1024 * 1024 + 1


def test_the_limits_come_from_the_environment_and_the_flag_wins(tmp_path):
    path = tmp_path / "class.yaml"
    path.write_text(padded(3000))
    env = {"INFERPLANE_MAX_FILE_BYTES": "2Ki"}
    assert errors_of(run("validate", "-f", path, env=env)) == [f"error: {path}: is larger than 2 KiB {BYTES_HINT}"]
    assert run("validate", "-f", path, "--max-file-bytes", "3000", env=env).exit_code == 0
    refused = run("validate", "-f", path, "--max-file-bytes", "lots")
    assert refused.exit_code == 2 and "'lots' is not a size: write a number of bytes, or one with Ki, Mi or Gi" \
        in refused.stderr
    for command in ("validate", "apply", "diff", "render"):
        shown = run(command, "--help").stdout
        assert "INFERPLANE_MAX_FILE_BYTES" in shown and "INFERPLANE_MAX_DOCUMENTS" in shown, command


# ---- documents


def stream(count: int) -> str:
    return "---\n".join(small_class(f"c{i}") for i in range(count))


def as_list(count: int, flow: bool = False) -> str:
    items = [yaml.safe_load(small_class(f"c{i}")) for i in range(count)]
    if flow:  # a short text: too few indicators for the event stream to be read
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": [{} for _ in range(count)]})
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})


SHAPES = {
    "documents": stream,
    "documents, each marked": lambda n: "---\n" + stream(n),  # as many `---` as documents
    "list": as_list,
    "flow list": lambda n: as_list(n, flow=True),
}


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_document_limit_counts_documents_and_list_items_alike(tmp_path, shape, long):
    """Short texts are counted as they are loaded, long ones on the event stream before anything is
    built, `---` markers before the text is even decoded: each count has the same boundary."""
    limit = 5
    for count, ok in ((limit - 1, True), (limit, True), (limit + 1, False)):
        path = tmp_path / f"{count}.yaml"
        path.write_text(("# " + "-" * 100 + "\n" if long else "") + SHAPES[shape](count))
        manifests, errors = load([path], StreamLimits(max_documents=limit))
        if ok:
            assert len(manifests) == count and errors == [], (count, errors)
        else:
            assert manifests == [] and [str(e) for e in errors] == [
                f"{path}: holds more than 5 documents {DOCUMENTS_HINT}"]


def test_a_list_is_refused_at_the_first_item_past_the_limit_before_the_rest_is_read(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("# " + "-" * 100 + "\nkind: List\nitems:\n" + "- {a: 1}\n" * 6 + "]never read\n")
    assert [e.message for e in load([path], StreamLimits(max_documents=5))[1]] == [
        f"holds more than 5 documents {DOCUMENTS_HINT}"]
    assert "malformed YAML" in load([path], StreamLimits(max_documents=6))[1][0].message


def test_documents_are_counted_before_the_text_is_decoded(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_bytes(b"---\na: 1\n" * 6 + b"\xff")
    assert [e.message for e in load([path], StreamLimits(max_documents=5))[1]] == [
        f"holds more than 5 documents {DOCUMENTS_HINT}"]
    assert "not UTF-8" in load([path], StreamLimits(max_documents=6))[1][0].message


def test_empty_documents_count_and_a_list_of_no_items_counts_one(tmp_path):
    path = tmp_path / "padded.yaml"
    path.write_text(small_class("a") + "---\n---\n")  # three documents, two of them empty
    assert len(load([path], StreamLimits(max_documents=3))[0]) == 1
    assert load([path], StreamLimits(max_documents=2))[0] == []
    path.write_text("kind: List\nitems: []\n---\n" + small_class("a"))
    assert len(load([path], StreamLimits(max_documents=2))[0]) == 1
    assert load([path], StreamLimits(max_documents=1))[0] == []


def test_list_items_behind_an_alias_are_counted_too(tmp_path):
    path = tmp_path / "aliased.yaml"
    path.write_text("apiVersion: v1\nkind: List\nhidden: &i [{}, {}, {}]\nitems: *i\n")
    manifests, errors = load([path], StreamLimits(max_documents=3))
    assert len(manifests) == 3 and errors == []
    assert [e.message for e in load([path], StreamLimits(max_documents=2))[1]] == [
        f"holds more than 2 documents {DOCUMENTS_HINT}"]


def test_the_default_document_limit_is_50000(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text("---\n" * 50_000 + small_class("last"))  # 49,999 empty documents, then a class
    assert run("validate", "-f", path).stdout.endswith("1 valid, 0 errors\n")
    path.write_text("---\n" * 50_001 + small_class("last"))
    assert errors_of(run("validate", "-f", path)) == [f"error: {path}: holds more than 50,000 documents "
                                                       f"{DOCUMENTS_HINT}"]


@pytest.mark.parametrize("shape", ["documents", "list"])
def test_a_file_over_the_document_limit_is_refused_before_any_document_is_built(tmp_path, monkeypatch, shape):
    """The issue's 177k small classes in one file, scaled down: refused by counting, not by building
    every document first."""
    built = []
    for loader in (FastManifestLoader, ManifestLoader):
        monkeypatch.setattr(loader, "construct_document", lambda self, node: built.append(node))
    path = tmp_path / "many.yaml"
    path.write_text(stream(301) if shape == "documents" else as_list(301))
    manifests, errors = load([path], StreamLimits(max_documents=300))
    assert built == [] and manifests == []
    assert [e.message for e in errors] == [f"holds more than 300 documents {DOCUMENTS_HINT}"]


def test_a_kept_file_is_checked_again_under_a_lower_limit(tmp_path):
    from inferplane.engine.control_plane import ControlPlane

    path = tmp_path / "three.yaml"
    path.write_text(stream(3))
    runtime = ControlPlane(tmp_path / "state")
    try:
        assert runtime.apply([path]).admission.ok
        again = runtime.apply([path], limits=StreamLimits(max_documents=2))
    finally:
        runtime.close()
    assert [str(e) for e in again.admission.errors] == [f"{path}: holds more than 2 documents {DOCUMENTS_HINT}"]


# ---- decoding, and inputs with no objects

BINARY = bytes(range(256)) * 12  # not UTF-8 from its 129th byte (0x80)


@pytest.mark.parametrize("command", ["validate", "apply", "diff"])
def test_binary_input_is_refused_with_its_offset_from_a_file_and_from_standard_input_alike(tmp_path, command):
    path = tmp_path / "binary.yaml"
    path.write_bytes(BINARY)
    message = ("byte 128 (0x80) is not UTF-8 text: a manifest is YAML or JSON text, in UTF-8: save it as UTF-8 (a "
               "binary or compressed file is not a manifest)")
    state = ["--state", tmp_path / "state"] if command != "validate" else []
    from_file = run(command, "-f", path, *state)
    assert errors_of(from_file) == [f"error: {path}: {message}"]
    piped = subprocess.run([sys.executable, "-m", "inferplane", command, "-f", "-", *map(str, state)], input=BINARY,
                           capture_output=True, cwd=REPO)
    assert piped.stderr.decode().splitlines()[0] == f"error: <stdin>: {message}"
    assert "Traceback" not in piped.stderr.decode()
    assert piped.returncode == from_file.exit_code == (2 if command == "diff" else 1)


def test_utf16_and_a_utf8_byte_order_mark_are_read_as_yaml_defines(tmp_path):
    for name, data in (("utf16.yaml", codecs.BOM_UTF16_LE + CLASS.encode("utf-16-le")),
                       ("utf8-bom.yaml", codecs.BOM_UTF8 + CLASS.encode())):
        (tmp_path / name).write_bytes(data)
    manifests, errors = load([tmp_path])
    assert errors == [] and [m.body["metadata"]["name"] for m in manifests] == ["eks-l4", "eks-l4"]


def test_a_character_yaml_forbids_is_placed_by_line_and_column(tmp_path):
    path = tmp_path / "nul.yaml"
    path.write_text("a: 1\nb: x\x00\n")
    assert [str(e) for e in load([path])[1]] == [
        f"{path}:2:5: malformed YAML: unacceptable character #x0000: special characters are not allowed: fix the "
        "syntax at this line"]


@pytest.mark.parametrize("command, code", [("validate", 1), ("apply", 1), ("diff", 2)])
def test_an_input_with_no_objects_is_an_error_for_every_command(tmp_path, command, code):
    (tmp_path / "empty.yaml").write_text("# nothing yet\n---\n")
    state = ["--state", tmp_path / "state"] if command != "validate" else []
    for source, named in ((tmp_path / "empty.yaml", tmp_path / "empty.yaml"), ("-", "-")):
        result = run(command, "-f", source, *state, input="")
        assert result.exit_code == code
        assert errors_of(result) == [f"Error: no objects found in {named}: a manifest needs apiVersion, kind and "
                                     "metadata"]


# ---- strict field validation


def test_a_repeated_key_is_refused_anywhere_in_a_document_with_its_path(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("apiVersion: inferplane.dev/v1alpha1\nkind: InferenceClass\nmetadata: {name: a, name: b}\n"
                    "spec:\n  devices:\n  - {name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com,\n"
                    "     count: 1, count: 2}\n")
    for result in (run("validate", "-f", path), run("apply", "-f", path, "--state", tmp_path / "state")):
        assert result.exit_code == 1 and not result.stdout.strip().startswith("inferenceclass")
        assert errors_of(result) == [
            f'error: {path}: InferenceClass/b: {field}: duplicate field "{key}": a key appears once in a mapping (the '
            "API server refuses a repeated one): remove one of them"
            for field, key in (("metadata.name", "name"), ("spec.devices[0].count", "count"))]


def test_a_repeated_key_in_a_list_item_names_the_item(tmp_path):
    path = tmp_path / "list.yaml"
    items = [yaml.safe_load(small_class("a")), yaml.safe_load(small_class("b"))]
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
    path.write_text(text.replace("    name: b\n", "    name: b\n    name: c\n") + "kind: List\n")
    assert [str(e) for e in admit_paths([path]).errors] == [
        f'{path}: kind: duplicate field "kind": a key appears once in a mapping (the API server refuses a repeated '
        "one): remove one of them",
        f'{path} items[1]: InferenceClass/c: metadata.name: duplicate field "name": a key appears once in a mapping '
        "(the API server refuses a repeated one): remove one of them"]


def test_unknown_metadata_fields_are_refused_with_every_other_error(tmp_path):
    path = tmp_path / "meta.yaml"
    path.write_text("apiVersion: inferplane.dev/v1alpha1\nkind: InferenceClass\n"
                    "metadata:\n  name: a\n  bogusField: 1\n  lables: {x: y}\n"
                    "  managedFields: [{manager: m, extra: 1}]\n"
                    "spec:\n  devices: [{name: gpu, driver: gpu.nvidia.com, deviceClassName: gpu.nvidia.com, "
                    "count: 0}]\n")
    result = run("validate", "-f", path)
    assert result.exit_code == 1
    assert errors_of(result) == [
        f'error: {path}: InferenceClass/a: metadata.bogusField: unknown field "bogusField": remove it (known fields: '
        "annotations, creationTimestamp, deletionGracePeriodSeconds, deletionTimestamp, finalizers, generateName, "
        "generation, labels, managedFields, name, namespace, ownerReferences, resourceVersion, selfLink, uid)",
        f'error: {path}: InferenceClass/a: metadata.lables: unknown field "lables": did you mean labels?',
        f'error: {path}: InferenceClass/a: metadata.managedFields[0].extra: unknown field "extra": remove it (known '
        "fields: apiVersion, fieldsType, fieldsV1, manager, operation, subresource, time)",
        f"error: {path}: InferenceClass/a: spec.devices[0].count: must be at least 1, got 0: set it to 1 or more"]


def test_what_get_prints_is_admitted_again(tmp_path):
    """Every ObjectMeta field, null included (Go's decoder takes null anywhere), as `get -o yaml` and
    kubectl print them."""
    state = tmp_path / "state"
    assert run("apply", "-f", REPO / "recipes" / "qwen2.5-0.5b-cpu", "--state", state).exit_code == 0
    printed = run("get", "iclass,icluster", "-o", "yaml", "--state", state).stdout
    again = run("apply", "-f", "-", "--state", state, input=printed)
    assert again.exit_code == 0, again.stderr
    assert again.stdout.splitlines() == ["inferenceclass.inferplane.dev/civo-cpu-medium unchanged",
                                         "inferencecluster.inferplane.dev/civo-cpu unchanged"]
    document = yaml.safe_load(printed)
    document["items"][0]["metadata"].update(creationTimestamp=None, finalizers=["x"], generateName="g-",
                                            managedFields=[{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}])
    assert run("validate", "-f", "-", input=yaml.safe_dump(document)).exit_code == 0
