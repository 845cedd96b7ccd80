"""`inferplane fleet --html`: the page, loaded in a real headless Chromium (Debian's, installed by
`scripts/setup test`), shows every cluster and pool of every recipe, and escapes what users wrote."""

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.cli.fleet_page import fleet_page
from inferplane.cli.main import cli
from inferplane.engine.runtime import Runtime

REPO = Path(__file__).resolve().parents[2]
RECIPES = sorted(p for p in (REPO / "recipes").iterdir() if p.is_dir())
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def inferplane(*args, state, code=0):
    result = CliRunner().invoke(cli, [*map(str, args), "--state", str(state)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


class Marked(HTMLParser):
    """The text of every element carrying data-cloud, data-cluster or data-pool, by that value; and
    every tag the DOM holds."""

    MARKS = ("data-cloud", "data-cluster", "data-pool")

    def __init__(self):
        super().__init__()
        self.text = {mark: {} for mark in self.MARKS}
        self.tags: list[str] = []
        self.open: list[tuple[str, str | None, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("meta", "br", "link", "img", "input"):
            return
        found = next(((m, v) for m, v in attrs if m in self.MARKS), (None, None))
        self.open.append((tag, *found))
        if found[0]:
            self.text[found[0]][found[1]] = ""

    def handle_endtag(self, tag):
        while self.open:
            if self.open.pop()[0] == tag:
                break

    def handle_data(self, data):
        for _, mark, value in self.open:
            if mark:
                self.text[mark][value] += data + " "


def chromium_dom(page: Path, tmp_path: Path) -> Marked:
    """Load the page in headless Chromium once: save its screenshot next to it, parse the rendered DOM."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `bash scripts/setup test` installs Debian's chromium package"
    shot = page.with_suffix(".png")
    loaded = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1800",
                             f"--screenshot={shot}", "--dump-dom", page.as_uri()],
                            capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert shot.read_bytes()[:8] == PNG_SIGNATURE
    parsed = Marked()
    parsed.feed(loaded.stdout)
    return parsed


def rendered(folder: Path) -> tuple[list[dict], dict[str, list[dict]]]:
    """A recipe reconciled in memory, as `inferplane render` does: every object and every simulated
    cluster's objects."""
    runtime = Runtime(None)
    try:
        result = runtime.apply([folder])
        assert not result.admission.errors and result.report.converged
        return runtime.list(), runtime.store.cluster_objects()
    finally:
        runtime.close()


def declared_pools(folder: Path) -> dict[str, list[str]]:
    """Each InferenceCluster the recipe declares, with its pools' names, read from the manifests."""
    out = {}
    for manifest in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(manifest.read_text()):
            if doc and doc["kind"] == "InferenceCluster":
                out[doc["metadata"]["name"]] = [p["name"] for p in doc["spec"]["nodePools"]]
    return out


@pytest.fixture(scope="module")
def recipe_pages(tmp_path_factory):
    """Each recipe's page, loaded in Chromium once for every test that reads it."""
    folder = tmp_path_factory.mktemp("recipe-pages")
    loaded: dict[str, tuple[Path, Marked]] = {}

    def load(recipe: Path) -> tuple[Path, Marked]:
        if recipe.name not in loaded:
            page = folder / f"{recipe.name}.html"
            page.write_text(fleet_page(*rendered(recipe)))
            loaded[recipe.name] = page, chromium_dom(page, folder)
        return loaded[recipe.name]
    return load


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.name for r in RECIPES])
def test_every_cluster_and_pool_of_every_recipe_is_on_the_page(recipe, recipe_pages):
    page, dom = recipe_pages(recipe)

    declared = declared_pools(recipe)
    assert declared, f"{recipe.name} declares no InferenceCluster"
    assert set(dom.text["data-cluster"]) == set(declared)
    assert set(dom.text["data-pool"]) == {f"{c}/{p}" for c, pools in declared.items() for p in pools}
    # Self-contained: nothing is fetched when the page is viewed.
    assert not {"script", "link", "img", "iframe", "object"} & set(dom.tags)
    assert "url(" not in page.read_text() and "@import" not in page.read_text()


def test_the_mixed_fleet_page_says_what_runs_where_and_what_the_gate_refused(recipe_pages):
    page, dom = recipe_pages(REPO / "recipes" / "mixed-fleet")

    assert list(dom.text["data-cloud"]) == ["Civo", "EKS", "Existing", "GKE", "Nebius"]
    assert "6 clusters on 5 clouds, 5 ready" in page.read_text()
    words = {key: " ".join(text.split()) for key, text in dom.text["data-pool"].items()}
    clusters = {key: " ".join(text.split()) for key, text in dom.text["data-cluster"].items()}

    # GKE: two nodes in each of the pool's two zones.
    assert words["gke-us-central/l4"] == ("l4 GPU class gke-l4 devices 1x gpu.nvidia.com (gpu, DRA) "
                                          "taint nvidia.com/gpu=true:NoSchedule nodes 4 running "
                                          "replicas default/qwen2-5-7b-gke-us-central-0")
    assert words["onprem-lab/epyc"] == ("epyc CPU class lab-epyc devices 1x dra.cpu (cpu, DRA) "
                                        "1x lab.inferplane.dev (numa, Synthetic) taint inferplane.dev/cpu=true:NoSchedule "
                                        "nodes 2 running replicas none")
    assert clusters["eks-us-east"].startswith(
        "eks-us-east Ready True · Available gate Available: EKS cluster eks-us-east is ready "
        "drivers gpu.nvidia.com device stacks dra-driver-nvidia-gpu nvidia-critical-pods-quota dcgm-exporter "
        "wanted drivers none a10g GPU")

    # The refused cluster: the gate's verdict and reason, nothing running, its pool as it would be, not provisioned.
    assert clusters["eks-amd"].startswith(
        "eks-amd Ready False · UnsupportedDevices gate UnsupportedDevices: class eks-amd-mi300x claims gpu.amd.com; "
        "EKS clusters support dra.cpu, dra.net, gpu.nvidia.com:")
    assert "drivers none device stacks none wanted drivers gpu.amd.com" in clusters["eks-amd"]
    assert words["eks-amd/mi300x"] == ("mi300x GPU class eks-amd-mi300x devices 8x gpu.amd.com (gpu, DRA) "
                                       "taint amd.com/gpu=true:NoSchedule nodes 0 running of 1 wanted (not provisioned) "
                                       "replicas none")


def test_a_pool_whose_class_is_missing_says_so(tmp_path):
    folder = tmp_path / "cluster-only"
    folder.mkdir()
    shutil.copy(REPO / "recipes" / "qwen2.5-0.5b-cpu" / "cluster.yaml", folder)
    objects, simulated = rendered(folder)
    page = tmp_path / "cluster-only.html"
    page.write_text(fleet_page(objects, simulated))
    dom = chromium_dom(page, tmp_path)

    (_, text), = dom.text["data-cluster"].items()
    assert "Ready False · WaitingForClasses" in " ".join(text.split())
    (pool, words), = dom.text["data-pool"].items()
    assert pool == "civo-cpu/cpu"
    assert " ".join(words.split()) == ("cpu unknown class civo-cpu-medium (not found) devices none taint none "
                                       "nodes 0 running of 2 wanted (not provisioned) replicas none")


def test_replicas_show_on_their_pool_and_user_text_is_escaped(tmp_path):
    objects, simulated = rendered(REPO / "recipes" / "mixed-fleet")
    hostile = "<script>document.title='owned'</script>"
    objects.append({"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelReplica",
                    "metadata": {"name": "<b>qwen</b>-0", "namespace": "ml"},
                    "spec": {"clusterName": "gke-us-central",
                             "engines": [{"name": "main", "members": [{"nodePoolName": "l4"}]}]}})
    cluster = next(o for o in objects if o["kind"] == "InferenceCluster" and o["metadata"]["name"] == "eks-amd")
    next(c for c in cluster["status"]["conditions"] if c["type"] == "ClusterReady")["message"] = hostile
    page = tmp_path / "hostile.html"
    page.write_text(fleet_page(objects, simulated))
    dom = chromium_dom(page, tmp_path)

    assert "script" not in dom.tags and "b" not in dom.tags
    assert " ".join(dom.text["data-pool"]["gke-us-central/l4"].split()).endswith(
        "replicas default/qwen2-5-7b-gke-us-central-0 ml/<b>qwen</b>-0")
    assert "replicas none" in " ".join(dom.text["data-pool"]["gke-us-central/cpu"].split())
    assert hostile in dom.text["data-cluster"]["eks-amd"]


def test_fleet_html_writes_the_page_from_a_state(tmp_path):
    state = tmp_path / "state"
    inferplane("apply", "-f", REPO / "recipes" / "qwen2.5-0.5b-cpu", state=state)
    out = tmp_path / "fleet.html"
    run = inferplane("fleet", "--html", out, state=state)
    assert run.stdout == f"wrote {out}: open it in a browser (it needs no network)\n"
    text = out.read_text()
    assert "1 cluster on 1 cloud, 1 ready" in text
    assert text.startswith("<!DOCTYPE html>") and 'data-cluster="civo-cpu"' in text and 'data-pool="civo-cpu/cpu"' in text

    refused = inferplane("fleet", "--html", tmp_path / "missing" / "fleet.html", state=state, code=1)
    assert refused.stderr.startswith(f"Error: cannot write the fleet page to {tmp_path / 'missing' / 'fleet.html'}: "
                                     "No such file or directory: pass --html")
    no_state = inferplane("fleet", "--html", out, state=tmp_path / "empty", code=1)
    assert "no inferplane state in" in no_state.stderr
