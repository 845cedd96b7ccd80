"""Simulations derived from another cluster's of equal inputs (fleet.Templates): the same objects as a
simulation of the cluster itself, and never where the inputs, engines, findings or names forbid it."""

import copy
import itertools
from pathlib import Path

import orjson
import pytest
import yaml

from inferplane.simulator import fleet
from inferplane.simulator.audits import audit
from inferplane.simulator.fleet import Templates, cluster_simulation, encoded, fingerprint
from inferplane.engine.control_plane import ControlPlane
from inferplane.simulator.simulation import ClusterSimulation
from inferplane.simulator.synthetic_fleet import write_fleet
from stored_inputs import fleet_inputs

REPO = Path(__file__).resolve().parents[2]
FOLDERS = sorted([*(REPO / "recipes").iterdir(), *(REPO / "tests" / "legs").iterdir()])


def reconciled(folder: Path) -> ControlPlane:
    runtime = ControlPlane(None)
    assert runtime.apply([folder]).report.converged
    return runtime


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> ControlPlane:
    """Two clusters of each source: equal inputs in pairs."""
    return reconciled(write_fleet(tmp_path_factory.mktemp("fleet"), 14))


def kept_from(template: str, inputs: dict) -> tuple[Templates, bytes, str, list]:
    """Templates holding a simulation of `inputs` run for cluster `template`; its encoding, print and findings."""
    templates, encoding = Templates(), encoded(inputs)
    simulation = cluster_simulation(template, inputs)
    objects = simulation.simulate()
    findings = [f.to_dict() for f in audit(objects)]
    templates.keep(template, inputs, encoding, fingerprint(inputs, encoding), simulation, objects, findings)
    return templates, encoding, fingerprint(inputs, encoding), findings


def fresh(name: str, inputs: dict) -> bytes:
    return orjson.dumps(cluster_simulation(name, inputs).simulate())


def derived_for_each_cluster(runtime: ControlPlane) -> int:
    """Derive every cluster from simulations run under other names (one its prefix, one extending it); each
    derived result must equal the cluster's own simulation byte for byte. Returns how many were derived."""
    derived = 0
    for cluster, with_engines in fleet_inputs(runtime.store):
        if with_engines is None:
            continue
        name = cluster["metadata"]["name"]
        # The cluster as it is, and as its stack alone would run it (its device pools' slices, no engines).
        for inputs, template in itertools.product([with_engines, {**with_engines, "engines": []}],
                                                  [name[:-1], f"{name}0", "zq"]):
            templates, encoding, print_, findings = kept_from(template, inputs)
            kept = orjson.dumps(templates.kept[print_].objects) if templates.kept else None
            objects = templates.derive(name, encoding, print_)
            if inputs["engines"] or findings or template.encode() in encoding or name.encode() in encoding:
                assert objects is None, f"{name}: derived where engines, findings or names forbid it"
                continue
            assert objects is not None, f"{name} from {template}: not derived"
            assert orjson.dumps(objects) == fresh(name, inputs), f"{name} from {template}: differs"
            assert orjson.dumps(templates.kept[print_].objects) == kept, f"{name}: the template was modified"
            derived += 1
    return derived


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_recipe_and_leg_cluster_derived_from_another_name_equals_its_own_simulation(folder):
    assert derived_for_each_cluster(reconciled(folder)) > 0


def test_each_source_of_a_synthetic_fleet_derives_its_clusters(synthetic):
    assert derived_for_each_cluster(synthetic) == 14 * 3 * 2


def test_a_grown_pool_is_derived_as_simulated_and_pending_pods_are_simulated(synthetic):
    """EKS's system pool at no nodes, at most one: the autoscaler grows it for the controllers. Then with
    cert-manager selecting a label no node has, it waits: the audit reports it (naming nodes), so such a
    cluster is simulated rather than derived."""
    cluster, inputs = next((c, i) for c, i in fleet_inputs(synthetic.store) if c["spec"]["cluster"]["source"] == "EKS")
    inputs = copy.deepcopy(inputs)
    system = next(p for p in inputs["pools"] if p["entry"]["role"] == "System")
    system["entry"].update(nodeCount=0, maxNodeCount=1)
    name = cluster["metadata"]["name"]
    objects = orjson.loads(fresh(name, inputs))
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Node" and "-system-" in o["metadata"]["name"]] \
        == [f"{name}-system-0"]
    templates, encoding, print_, findings = kept_from("other", inputs)
    assert findings == []
    assert orjson.dumps(templates.derive(name, encoding, print_)) == fresh(name, inputs)

    inputs["installed"]["cert-manager"] = {**inputs["installed"]["cert-manager"], "nodeSelector": {"example.com/none": "x"}}
    objects = orjson.loads(fresh(name, inputs))
    assert any(o["kind"] == "Pod" and o["status"]["phase"] == "Pending" for o in objects)
    templates, encoding, print_, findings = kept_from("other", inputs)
    assert findings and not templates.kept and templates.derive(name, encoding, print_) is None


def mutations(inputs: dict):
    """One change to each kind of input a simulation reads."""
    def pools(i):
        return [p for p in i["pools"] if p["entry"]["role"] != "System"]

    def count(i):
        pools(i)[0]["entry"]["nodeCount"] += 1

    def label(i):
        pools(i)[0]["entry"]["labels"]["example.com/tier"] = "gold"

    def device(i):
        # The host's driver (a node-level value: the model is the one the pool's machine carries).
        attributes = pools(i)[0]["devices"][0].get("attributes") or {}
        pools(i)[0]["devices"][0]["attributes"] = {**attributes, "driverVersion": {"version": "580.65.6"}}

    def machine(i):
        pools(i)[0]["machineGpu"] = {**pools(i)[0]["machineGpu"], "product": "NVIDIA H100 80GB HBM3"}

    def values(i):
        i["installed"]["cert-manager"] = {**i["installed"]["cert-manager"], "replicaCount": 2}

    def taint(i):
        pools(i)[0]["entry"]["taints"] = [*pools(i)[0]["entry"].get("taints", []),
                                          {"key": "example.com/dedicated", "value": "x", "effect": "NoSchedule"}]

    for change in (count, label, device, machine, values, taint):
        changed = copy.deepcopy(inputs)
        change(changed)
        yield change.__name__, changed


def test_a_change_to_any_input_misses_the_template(synthetic):
    """The key is every input: a cluster that differs in one is simulated, never derived from the other."""
    cluster, inputs = next((c, i) for c, i in fleet_inputs(synthetic.store) if c["spec"]["cluster"]["source"] == "GKE")
    name = cluster["metadata"]["name"]
    templates, *_ = kept_from("other", inputs)
    for what, changed in mutations(inputs):
        encoding = encoded(changed)
        assert templates.derive(name, encoding, fingerprint(changed, encoding)) is None, what
        renamed_original = Templates()
        renamed_original.kept = dict(templates.kept)
        original = renamed_original.derive(name, encoded(inputs), fingerprint(inputs))
        assert orjson.dumps(original) != fresh(name, changed), f"{what}: a change the simulation does not see"


def test_inputs_that_name_a_cluster_and_names_cut_to_fit_are_simulated(synthetic):
    cluster, inputs = next((c, i) for c, i in fleet_inputs(synthetic.store) if c["spec"]["cluster"]["source"] == "EKS")
    name = cluster["metadata"]["name"]
    # A label whose value is a node of the cluster: it matches nothing of another cluster.
    naming = copy.deepcopy(inputs)
    naming["pools"][0]["entry"]["labels"]["example.com/peer"] = f"{name}-gpu-a-0"
    templates, encoding, print_, _ = kept_from("other", naming)
    assert templates.kept and templates.derive(name, encoding, print_) is None
    templates, encoding, print_, _ = kept_from(name, naming)
    assert not templates.kept
    # A name so long that its nodes' names are cut (with a digest): neither kept nor derived.
    long = "c" * 58
    templates, encoding, print_, _ = kept_from(long, inputs)
    assert not templates.kept
    templates, encoding, print_, _ = kept_from("other", inputs)
    assert templates.derive(long, encoding, print_) is None
    assert templates.derive(name, encoding, print_) is not None


def test_templates_are_bounded_least_recently_used_first(synthetic, monkeypatch):
    monkeypatch.setattr(Templates, "LIMIT", 2)
    templates = Templates()
    kept = []
    sources = {c["spec"]["cluster"]["source"]: i for c, i in fleet_inputs(synthetic.store)}
    for inputs in [sources["EKS"], sources["GKE"], sources["AKS"]]:
        encoding = encoded(inputs)
        simulation = cluster_simulation("zq1", inputs)
        templates.keep("zq1", inputs, encoding, fingerprint(inputs, encoding), simulation, simulation.simulate(), [])
        kept.append(fingerprint(inputs, encoding))
        if len(kept) == 2:  # the first becomes the most recently used
            assert templates.derive("zq2", encoded(sources["EKS"]), kept[0]) is not None
    assert list(templates.kept) == [kept[0], kept[2]]


def test_a_fleet_simulates_once_per_distinct_inputs_and_stores_what_simulating_each_stores(tmp_path, monkeypatch):
    folder = write_fleet(tmp_path / "fleet", 14)
    ran = []
    simulate = ClusterSimulation.simulate

    def counted(self):
        ran.append(self.cluster)
        return simulate(self)

    monkeypatch.setattr(ClusterSimulation, "simulate", counted)
    derived = reconciled(folder)
    assert len(ran) == 7  # one of each source
    monkeypatch.setattr(Templates, "derive", lambda *args: None)
    simulated = reconciled(folder)
    assert len(ran) == 7 + 14
    assert orjson.dumps(derived.store.cluster_objects()) == orjson.dumps(simulated.store.cluster_objects())


def test_a_change_reaches_the_clusters_derived_from_the_same_inputs(tmp_path):
    """A class change reaches every cluster of that class; a pool change, only its cluster."""
    folder = write_fleet(tmp_path / "fleet", 14)
    state = tmp_path / "state"
    assert ControlPlane(state).apply([folder]).report.converged

    def slices_and_nodes(name):
        objects = ControlPlane(state).store.cluster_objects(name)[name]
        products = {o["spec"]["devices"][0]["attributes"]["productName"]["string"]
                    for o in objects if o["kind"] == "ResourceSlice" and o["spec"]["driver"] == "gpu.nvidia.com"}
        return products, sum(o["kind"] == "Node" for o in objects)

    assert slices_and_nodes("eks-0000") == slices_and_nodes("eks-0007") == ({"NVIDIA L4"}, 10)
    klass = next(folder.glob("*-eks-nvidia.yaml"))
    body = yaml.safe_load(klass.read_text())
    body["spec"]["provisioning"]["eks"]["instanceType"] = "g6e.xlarge"  # the machine names the model first
    body["spec"]["devices"][0]["attributes"]["productName"]["string"] = "NVIDIA L40S"
    body["spec"]["devices"][0]["capacity"]["memory"]["value"] = "46068Mi"  # what the driver reports for an L40S
    klass.write_text(yaml.safe_dump(body))
    cluster = next(folder.glob("*-eks-0007.yaml"))
    body = yaml.safe_load(cluster.read_text())
    body["spec"]["nodePools"][0]["nodeCount"] = 3
    cluster.write_text(yaml.safe_dump(body))
    assert ControlPlane(state).apply([folder]).report.converged
    assert slices_and_nodes("eks-0000") == ({"NVIDIA L40S"}, 10)
    assert slices_and_nodes("eks-0007") == ({"NVIDIA L40S"}, 11)
    assert slices_and_nodes("gke-0001")[0] == {"NVIDIA L4"}


def test_the_reconciler_hands_its_templates_to_each_simulation(tmp_path, monkeypatch):
    seen = []
    simulate = fleet.simulate

    def spy(store, cluster, inputs, templates=None):
        seen.append(templates)
        return simulate(store, cluster, inputs, templates)

    from inferplane.simulator import controller
    monkeypatch.setattr(controller, "simulate", spy)
    reconciled(write_fleet(tmp_path / "fleet", 7))
    assert len(seen) == 7 and all(t is seen[0] and isinstance(t, Templates) for t in seen)
