"""`inferplane fleet --html`: the page, loaded in a real headless Chromium (Debian's, installed by
`scripts/setup test`), shows problems first, then models and services, then every cluster of every
recipe (and of a 1,000-cluster fleet) in a table its filter narrows, with each cluster's card on
demand; it fetches nothing and escapes what users wrote. Each load's screenshot is written next to
its page in the test's folder (the path is printed)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.api.cloud import SOURCES
from inferplane.cli.fleet_page import fleet_page
from inferplane.cli.main import cli
from inferplane.engine.control_plane import ControlPlane
from inferplane.simulator.synthetic_fleet import CLUSTERS_PER_DEPLOYMENT, write_fleet
from inferplane.simulator.cluster_objects import simulated_objects

REPO = Path(__file__).resolve().parents[2]
RECIPES = sorted(p for p in (REPO / "recipes").iterdir() if p.is_dir())
MIXED = REPO / "recipes" / "mixed-fleet"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VOID = {"meta", "br", "link", "img", "input", "hr", "source", "wbr", "col"}


def inferplane(*args, state, code=0):
    result = CliRunner().invoke(cli, [*map(str, args), "--state", str(state)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


class Element:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Element | None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    def text(self) -> str:
        """The element's text as a browser lays it out in a line, runs of white space as one."""
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return " ".join("".join(parts).split())

    def all(self, tag: str | None = None, **attrs: str | bool) -> list[Element]:
        """Every element below (depth first) with that tag and those attributes (True: present); a
        <template>'s content is inert, not part of the page, and not searched."""
        found = []
        for child in self.children:
            if isinstance(child, str) or child.tag == "template":
                continue
            if (tag is None or child.tag == tag) and all(
                    (name.replace("_", "-") in child.attrs) if value is True
                    else child.attrs.get(name.replace("_", "-")) == value for name, value in attrs.items()):
                found.append(child)
            found += child.all(tag, **attrs)
        return found

    def one(self, tag: str | None = None, **attrs: str | bool) -> Element:
        (found,) = self.all(tag, **attrs)
        return found

    def cells(self) -> list[str]:
        return [c.text() for c in self.children if not isinstance(c, str) and c.tag in ("td", "th")]


class Dom(HTMLParser):
    """The rendered DOM as Chromium serialised it, as a tree."""

    def __init__(self, html: str):
        super().__init__()
        self.root = self.at = Element("#document", {}, None)
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs), self.at)
        self.at.children.append(element)
        if tag not in VOID:
            self.at = element

    def handle_endtag(self, tag):
        at = self.at
        while at is not None and at.tag != tag:
            at = at.parent
        if at is not None and at.parent is not None:
            self.at = at.parent

    def handle_data(self, data):
        self.at.children.append(data)


class Page:
    """A page as Chromium renders it: its tables by what they hold."""

    def __init__(self, path: Path, html: str):
        self.path, self.dom = path, Dom(html).root

    def headings(self) -> list[str]:
        return [h.text() for h in self.dom.all("h2")]

    def rows(self, mark: str) -> dict[str, list[str]]:
        """The rows carrying data-<mark>, by its value: their cells' text."""
        return {row.attrs[f"data-{mark}"]: row.cells() for row in self.dom.all("tr") if f"data-{mark}" in row.attrs}

    def cluster_rows(self, shown_only: bool = False) -> dict[str, list[str]]:
        table = self.dom.one("table", id="cluster-table")
        return {row.attrs["id"].removeprefix("c-"): row.cells() for row in table.all("tr", id=True)
                if not (shown_only and "hidden" in row.attrs)}

    @functools.cached_property
    def cards(self) -> dict[str, Element]:
        """The open cards, by cluster."""
        return {card.attrs["data-cluster"]: card for card in self.dom.all("tr", **{"class": "card"})}

    def pools(self, cluster: str) -> dict[str, list[str]]:
        card = self.cards[cluster]
        return {row.cells()[0]: row.cells() for row in card.one("tbody", data_pools=True).all("tr")}

    def field(self, cluster: str, name: str) -> str:
        return self.cards[cluster].one(data_field=name).text()


def load(page: Path, tmp_path: Path, query: str = "") -> Page:
    """Load the page (with `query`: ?... and #...) in headless Chromium once: save its screenshot next
    to it, parse the DOM its script leaves."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `bash scripts/setup test` installs Debian's chromium package"
    shot = page.with_name(f"{page.stem}-shot{len(list(page.parent.glob(page.stem + '-shot*.png')))}.png")
    loaded = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,1800",
                             f"--screenshot={shot}", "--dump-dom", page.as_uri() + query],
                            capture_output=True, text=True, timeout=240)
    assert loaded.returncode == 0, loaded.stderr
    assert shot.read_bytes()[:8] == PNG_SIGNATURE
    print(f"screenshot of {page.name}{query}: {shot}")
    return Page(page, loaded.stdout)


def rendered(*folders: Path) -> ControlPlane:
    """Folders applied in turn to one state in memory, as `inferplane render` reconciles one."""
    runtime = ControlPlane(None)
    for folder in folders:
        result = runtime.apply([folder])
        assert not result.admission.errors and result.report.converged
    return runtime


def page_of(runtime: ControlPlane, path: Path) -> Path:
    path.write_text(fleet_page(runtime.list(), simulated_objects(runtime.store), runtime.store.event_log.events()))
    return path


def declared_pools(folder: Path) -> dict[str, list[str]]:
    """Each InferenceCluster the recipe declares, with its pools' names, read from the manifests."""
    out = {}
    for manifest in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(manifest.read_text()):
            if doc and doc["kind"] == "InferenceCluster":
                out[doc["metadata"]["name"]] = [p["name"] for p in doc["spec"]["nodePools"]]
    return out


def assert_self_contained(page: Page) -> None:
    """Nothing is fetched when the page is viewed: no element that loads anything, no link off the page,
    and no request made from its script or style."""
    assert not {e.tag for e in page.dom.all()} & {"link", "img", "iframe", "object", "embed", "video", "audio"}
    assert [e for e in page.dom.all() if "src" in e.attrs] == []
    assert {e.attrs["href"][:1] for e in page.dom.all("a")} <= {"#"}
    source = page.path.read_text()
    for request in ("fetch(", "XMLHttpRequest", "import(", "url(", "@import", "http-equiv"):
        assert request not in source


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixed")
    runtime = rendered(MIXED)
    try:
        return page_of(runtime, folder / "mixed-fleet.html")
    finally:
        runtime.close()


@pytest.mark.parametrize("recipe", RECIPES, ids=[r.name for r in RECIPES])
def test_every_cluster_and_pool_of_every_recipe_is_on_the_page(recipe, tmp_path):
    runtime = rendered(recipe)
    try:
        page = load(page_of(runtime, tmp_path / f"{recipe.name}.html"), tmp_path, "?open=all")
    finally:
        runtime.close()

    declared = declared_pools(recipe)
    assert declared, f"{recipe.name} declares no InferenceCluster"
    assert list(page.cluster_rows()) == sorted(declared)
    assert {name: list(page.pools(name)) for name in page.cards} == declared
    assert_self_contained(page)


def test_the_mixed_fleet_page_puts_problems_first_then_models_services_and_clusters(mixed, tmp_path):
    page = load(mixed, tmp_path)

    assert page.headings() == ["Problems (1)", "Models (3)", "Services (2)", "Clusters (6)"]
    # A device shares hold counts once, used: gke-us-central's CPU device holds two replicas' shares.
    assert page.dom.one("p", **{"class": "summary"}).text() == (
        "6 clusters on 5 clouds, 5 ready; 16 devices, 8 used, 8 free; 3 models, 2 services")
    # Rendered in memory: no timestamp in the state, and the page does not invent one.
    assert page.dom.one(id="state-time").text() == (
        "The state carries no timestamps (it was reconciled in memory), so the page says nothing of when it was.")
    assert page.rows("problem") == {"InferenceCluster/eks-amd": [
        "InferenceCluster/eks-amd", "UnsupportedDevices",
        "class eks-amd-mi300x claims gpu.amd.com; EKS clusters support dra.cpu, dra.net, gpu.nvidia.com, neuron.aws.com: "
        "use "
        "classes whose drivers the cloud serves, or run these devices on an Existing cluster"]}
    assert page.rows("model") == {
        "default/llama-3-1-8b": ["default/llama-3-1-8b", "1", "1", "1", "onprem-lab/mi325x", "Ready"],
        "default/qwen2-5-0-5b-cpu": ["default/qwen2-5-0-5b-cpu", "6", "6", "6", "civo-lon/cpu, civo-lon/cpu, "
                                     "gke-us-central/cpu, gke-us-central/cpu, onprem-lab/epyc, onprem-lab/epyc",
                                     "Ready"],
        "default/qwen2-5-7b": ["default/qwen2-5-7b", "2", "2", "2", "eks-us-east/a10g, gke-us-central/l4", "Ready"]}
    assert page.rows("service") == {
        "default/llama": ["default/llama", "http://172.18.255.200/default/llama", "1", "onprem-lab", "True",
                          "Available"],
        "default/qwen": ["default/qwen", "http://172.18.255.200/default/qwen", "2", "eks-us-east, gke-us-central",
                         "True", "Available"]}
    # One compact row per cluster: cloud, ready, reason, pools, devices used/free, replicas.
    assert page.cluster_rows() == {
        "civo-lon": ["civo-lon", "Civo", "True", "Available", "1", "2/1", "2"],
        "eks-amd": ["eks-amd", "EKS", "False", "UnsupportedDevices", "1", "0/0", "0"],
        "eks-us-east": ["eks-us-east", "EKS", "True", "Available", "1", "1/1", "1"],
        "gke-us-central": ["gke-us-central", "GKE", "True", "Available", "2", "2/3", "3"],
        "nebius-eu": ["nebius-eu", "Nebius", "True", "Available", "1", "0/2", "0"],
        "onprem-lab": ["onprem-lab", "Existing", "True", "Existing", "2", "3/1", "3"]}
    # Cards only on demand: none is open on a page just loaded.
    assert page.cards == {}
    assert page.dom.one(id="shown").text() == "6 of 6 clusters shown"
    assert_self_contained(page)


def test_a_cluster_s_card_opens_by_its_name_with_its_pools_devices_and_models(mixed, tmp_path):
    page = load(mixed, tmp_path, "#c-gke-us-central")
    assert list(page.cards) == ["gke-us-central"]
    assert page.field("gke-us-central", "gate-message") == "GKE cluster gke-us-central is ready"
    assert page.field("gke-us-central", "drivers") == "dra.cpu, gpu.nvidia.com"
    assert page.field("gke-us-central", "stacks") == ("nvidia-driver-installer, dra-driver-nvidia-gpu, "
                                                       "nvidia-critical-pods-quota, dcgm-exporter, dra-driver-cpu")
    # Two nodes in each of the L4 pool's two zones; one L4 holds Qwen's replica.
    assert page.pools("gke-us-central") == {
        "l4": ["l4", "GPU", "gke-l4", "1x gpu.nvidia.com (gpu, DRA)", "nvidia.com/gpu=true:NoSchedule", "4 running",
               "1/3", "default/qwen2-5-7b"],
        "cpu": ["cpu", "CPU", "gke-cpu", "1x dra.cpu (cpu, DRA)", "inferplane.dev/cpu=true:NoSchedule", "1 running",
                "1/0", "default/qwen2-5-0-5b-cpu"]}

    refused = load(mixed, tmp_path, "#c-eks-amd")
    assert refused.cards["eks-amd"].one("span", data_field="gate-reason").attrs["class"] == "False"
    assert refused.field("eks-amd", "wanted") == "gpu.amd.com" and refused.field("eks-amd", "stacks") == "none"
    # The pool the gate kept from being provisioned: what it would get, and that it runs nothing.
    assert refused.pools("eks-amd") == {"mi300x": [
        "mi300x", "GPU", "eks-amd-mi300x", "8x gpu.amd.com (gpu, DRA)", "amd.com/gpu=true:NoSchedule",
        "0 running of 1 wanted (not provisioned)", "0/0", "none"]}


def test_the_filter_keeps_the_clusters_whose_row_or_card_has_every_word(mixed, tmp_path):
    # onprem-lab by its card (its drivers, its model), eks-amd by its row's reason and its wanted driver.
    amd = load(mixed, tmp_path, "?filter=AMD")
    assert list(amd.cluster_rows(shown_only=True)) == ["eks-amd", "onprem-lab"]
    assert amd.dom.one(id="shown").text() == "2 of 6 clusters shown"

    both = load(mixed, tmp_path, "?filter=qwen2-5-7b%20l4&open=all")
    assert list(both.cluster_rows(shown_only=True)) == ["gke-us-central"]
    # Every card shown is opened, and only those.
    assert list(both.cards) == ["gke-us-central"]

    nothing = load(mixed, tmp_path, "?filter=no-such-cluster")
    assert nothing.cluster_rows(shown_only=True) == {}
    assert nothing.dom.one(id="shown").text() == "0 of 6 clusters shown"


def test_problems_name_held_stacks_unschedulable_deployments_and_services_not_ready(tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    # eks-us-east's class now claims AMD GPUs, which EKS does not serve: the gate holds its running stack.
    classes = list(yaml.safe_load_all((MIXED / "classes.yaml").read_text()))
    a10g = next(c for c in classes if c["metadata"]["name"] == "eks-a10g")
    a10g["spec"]["devices"][0].update(driver="gpu.amd.com", deviceClassName="gpu.amd.com",
                                      attributes={"productName": {"string": "AMD_Instinct_MI300X_OAM"}})
    a10g["spec"]["devices"][0].pop("capacity", None)  # the driver's own, for the model
    models = list(yaml.safe_load_all((MIXED / "models.yaml").read_text()))
    nowhere = models[1]
    nowhere["metadata"]["name"] = "nowhere"
    nowhere["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0]["selectors"] = [
        {"cel": 'device.attributes["gpu.amd.com"].productName == "AMD Instinct MI999"'}]
    orphan = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelService",
              "metadata": {"name": "orphan", "namespace": "default"},
              "spec": {"endpoints": [{"selector": {"matchLabels": {"inferplane.dev/deployment": "nowhere"}}}]}}
    (extra / "changes.yaml").write_text(yaml.safe_dump_all([a10g, nowhere, orphan]))
    runtime = rendered(MIXED, extra)
    try:
        page = load(page_of(runtime, tmp_path / "problems.html"), tmp_path, "#c-eks-us-east")
    finally:
        runtime.close()

    problems = page.rows("problem")
    assert list(problems) == ["InferenceCluster/eks-amd", "InferenceCluster/eks-us-east", "ServingStack/eks-us-east",
                              "ModelDeployment/default/nowhere", "ModelService/default/orphan"]
    assert problems["InferenceCluster/eks-us-east"][1] == "UnsupportedDevices"
    assert problems["ServingStack/eks-us-east"][1:] == [
        "Held", "UnsupportedDevices: kept as it was, not updated to the classes' drivers"]
    assert problems["ModelDeployment/default/nowhere"][1] == "Unschedulable"
    assert "0 of 1" in problems["ModelDeployment/default/nowhere"][2]
    assert problems["ModelService/default/orphan"][1] not in ("", "Available")
    assert page.rows("model")["default/nowhere"][1:5] == ["1", "0", "0", "none"]
    assert page.rows("service")["default/orphan"][2:5] == ["0", "none", "False"]
    # The held cluster still runs what it ran: its card says so, and what holds it.
    assert page.cluster_rows()["eks-us-east"][2:4] == ["False", "UnsupportedDevices"]
    assert page.field("eks-us-east", "drivers") == "gpu.nvidia.com"
    assert page.pools("eks-us-east")["a10g"][5:] == ["2 running", "1/1", "default/qwen2-5-7b"]


def test_a_pool_whose_class_is_missing_says_so(tmp_path):
    folder = tmp_path / "cluster-only"
    folder.mkdir()
    shutil.copy(REPO / "recipes" / "qwen2.5-0.5b-cpu" / "cluster.yaml", folder)
    runtime = rendered(folder)
    try:
        page = load(page_of(runtime, tmp_path / "cluster-only.html"), tmp_path, "#c-civo-cpu")
    finally:
        runtime.close()

    assert page.cluster_rows()["civo-cpu"][2:4] == ["False", "WaitingForClasses"]
    assert page.pools("civo-cpu") == {"cpu": ["cpu", "unknown", "civo-cpu-medium (not found)", "none", "none",
                                              "0 running of 2 wanted (not provisioned)", "0/0", "none"]}
    assert page.headings()[0] == "Problems (1)"


def test_user_text_is_text_wherever_it_is_shown(tmp_path):
    runtime = rendered(MIXED)
    try:
        objects, simulated = runtime.list(), simulated_objects(runtime.store)
    finally:
        runtime.close()
    hostile = "</script><script>document.title='owned'</script><b>bold</b>"
    cluster = next(o for o in objects if o["kind"] == "InferenceCluster" and o["metadata"]["name"] == "eks-amd")
    next(c for c in cluster["status"]["conditions"] if c["type"] == "ClusterReady")["message"] = hostile
    deployment = next(o for o in objects if o["kind"] == "ModelDeployment" and o["metadata"]["name"] == "qwen2-5-7b")
    deployment["metadata"]["name"] = "<i>qwen</i>"
    path = tmp_path / "hostile.html"
    path.write_text(fleet_page(objects, simulated))
    page = load(path, tmp_path, "?open=all")

    assert page.dom.one("title").text() == "inferplane fleet"
    assert page.dom.all("b") == [] and "qwen" not in {i.text() for i in page.dom.all("i")}
    assert page.rows("problem")["InferenceCluster/eks-amd"][2] == hostile
    assert page.field("eks-amd", "gate-message") == hostile
    assert "default/<i>qwen</i>" in page.rows("model")
    assert page.pools("gke-us-central")["l4"][-1] == "default/<i>qwen</i>"
    # Only the page's own two scripts: its cards' data and its filter.
    assert [s.attrs.get("type") for s in page.dom.all("script")] == ["application/json", None]


def test_a_cluster_not_reconciled_yet_is_a_problem_and_its_card_says_so(tmp_path):
    runtime = rendered(MIXED)
    try:
        objects, simulated = runtime.list(), simulated_objects(runtime.store)
    finally:
        runtime.close()
    cluster = next(o for o in objects if o["kind"] == "InferenceCluster" and o["metadata"]["name"] == "civo-lon")
    del cluster["status"]
    path = tmp_path / "unreconciled.html"
    path.write_text(fleet_page(objects, simulated))
    page = load(path, tmp_path, "#c-civo-lon")

    assert page.rows("problem")["InferenceCluster/civo-lon"][1:] == ["NotReconciled", ""]
    assert page.cluster_rows()["civo-lon"][2:4] == ["Unknown", ""]
    gate = page.cards["civo-lon"].all("dd")[0]
    assert gate.text() == "not reconciled" and gate.one("span").attrs["class"] == "Unknown"
    # Its pools as they would be provisioned, its nodes as the simulation still holds them.
    assert page.pools("civo-lon")["cpu"][:3] == ["cpu", "CPU", "civo-cpu"]


def test_fleet_html_writes_the_page_from_a_state_with_its_newest_timestamp(tmp_path):
    state = tmp_path / "state"
    before = datetime.now(timezone.utc).replace(microsecond=0)
    inferplane("apply", "-f", REPO / "recipes" / "qwen2.5-0.5b-cpu", state=state)
    after = datetime.now(timezone.utc)
    out = tmp_path / "fleet.html"
    run = inferplane("fleet", "--html", out, state=state)
    assert run.stdout == f"wrote {out}: open it in a browser (it needs no network)\n"
    page = load(out, tmp_path, "#c-civo-cpu")
    assert page.dom.one("p", **{"class": "summary"}).text().startswith("1 cluster on 1 cloud, 1 ready; 2 devices")
    # Both nodes' CPU devices hold the recipe's model.
    assert page.pools("civo-cpu")["cpu"][5:7] == ["2 running", "2/0"]
    # The page's time is the state's: stamped while it was applied, the same however often it is written.
    stamp = page.dom.one("time").attrs["datetime"]
    assert before <= datetime.fromisoformat(stamp.replace("Z", "+00:00")) <= after
    assert page.dom.one(id="state-time").text().startswith(f"State as of {stamp}: the newest timestamp")
    written = out.read_text()
    inferplane("fleet", "--html", out, state=state)
    assert out.read_text() == written

    refused = inferplane("fleet", "--html", tmp_path / "missing" / "fleet.html", state=state, code=1)
    assert refused.stderr.startswith(f"Error: cannot write the fleet page to {tmp_path / 'missing' / 'fleet.html'}: "
                                     "No such file or directory: pass --html")
    no_state = inferplane("fleet", "--html", out, state=tmp_path / "empty", code=1)
    assert "no inferplane state in" in no_state.stderr


LARGE = 1000


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """A synthetic fleet of 1,000 clusters on every source, four pools each, one ModelDeployment of two
    replicas per ten clusters, reconciled in memory; its page."""
    folder = tmp_path_factory.mktemp("large")
    runtime = rendered(write_fleet(folder / "fleet", LARGE, models=True))
    try:
        return page_of(runtime, folder / "fleet-1000.html")
    finally:
        runtime.close()


def test_a_fleet_of_a_thousand_clusters_is_one_small_page_with_every_card(large, tmp_path):
    assert large.stat().st_size < 500 * 1024
    page = load(large, tmp_path, "?open=all")

    rows = page.cluster_rows()
    assert len(rows) == LARGE and len(page.cards) == LARGE
    assert all(len(page.pools(name)) == 4 for name in rows)
    assert page.headings() == ["Problems (0)", "Models (100)", "Services (0)", f"Clusters ({LARGE})"]
    models = page.rows("model")
    assert len(models) == LARGE // CLUSTERS_PER_DEPLOYMENT
    assert all(cells[1:4] == ["2", "2", "2"] for cells in models.values())
    # Every replica is on a pool of a cluster row, and that pool's card names its model.
    for name, cells in models.items():
        for where in cells[4].split(", "):
            cluster, pool = where.split("/")
            assert name in page.pools(cluster)[pool][-1]
    assert sum(int(cells[6]) for cells in rows.values()) == 2 * len(models)
    assert_self_contained(page)


def test_the_filter_finds_one_cluster_in_a_thousand(large, tmp_path):
    name = f"{SOURCES[3].lower()}-0003"  # the synthetic fleet's fourth cluster
    page = load(large, tmp_path, f"?filter={name}")
    assert list(page.cluster_rows(shown_only=True)) == [name]
    assert page.dom.one(id="shown").text() == f"1 of {LARGE} clusters shown"
