"""A model's one address, end to end in the embedded engine: the recipes' ModelServices reach their
replicas through the control plane gateway and the replicas' cluster gateways; a canary split and a
cluster drain over real replicas show their shares in `inferplane route`."""

from pathlib import Path

import yaml
from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
RECIPES = REPO / "recipes"


def apply(state: Path, *paths: Path) -> None:
    args = ["apply", "--state", str(state)] + [a for p in paths for a in ("-f", str(p))]
    run = CliRunner().invoke(cli, args)
    assert run.exit_code == 0, run.output


def route(state: Path, service: str) -> tuple[int, str]:
    run = CliRunner().invoke(cli, ["route", service, "--state", str(state)])
    return run.exit_code, run.output


def test_the_cpu_recipe_is_one_address_that_reaches_every_replica(tmp_path):
    state = tmp_path / "state"
    apply(state, RECIPES / "qwen2.5-0.5b-cpu")
    replicas = [f"ml-team/qwen2-5-0-5b-cpu-civo-cpu-{i}" for i in range(4)]
    assert route(state, "ml-team/qwen-cpu") == (0, (
        "POST http://172.18.255.200/ml-team/qwen-cpu/v1/completions\n"
        "HTTPRoute ml-team/qwen-cpu rule 0 (PathPrefix /ml-team/qwen-cpu/)\n"
        "\n"
        "ENDPOINT                              SHARE    WEIGHT   FORWARDED TO\n"
        + "".join(f"{r}   25.00%   1        http://198.19.216.41/{r}/v1/completions\n" for r in replicas) +
        "\n"
        "inside the clusters:\n"
        + "".join(f"  {r}: cluster civo-cpu's gateway, HTTPRoute default/{r.split('/')[1]} -> Service "
                  f"default/{r.split('/')[1]}:80 /v1/completions\n" for r in replicas)))
    listed = CliRunner().invoke(cli, ["get", "modelservice", "-n", "ml-team", "--state", str(state)])
    assert listed.output.splitlines()[1].split()[:2] == ["qwen-cpu", "http://172.18.255.200/ml-team/qwen-cpu"]


def test_the_amd_recipe_reaches_its_replica(tmp_path):
    state = tmp_path / "state"
    apply(state, RECIPES / "qwen2.5-0.5b-amd")
    code, output = route(state, "ml-team/qwen-amd")
    assert code == 0
    assert "ml-team/qwen2-5-0-5b-amd-amd-lab-0   100.00%" in output
    assert ("cluster amd-lab's gateway, HTTPRoute default/qwen2-5-0-5b-amd-amd-lab-0 -> "
            "Service default/qwen2-5-0-5b-amd-amd-lab-0:80 /v1/completions") in output


def fleet(folder: Path, service_entries: list[dict]) -> Path:
    """Two Civo clusters of three CPU nodes, qwen at four replicas (two per cluster), qwen-next at one,
    the gateway and a ModelService over them."""
    folder.mkdir(exist_ok=True)
    cpu = RECIPES / "qwen2.5-0.5b-cpu"
    (folder / "class.yaml").write_text((cpu / "class.yaml").read_text())
    clusters = [{"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": name},
                 "spec": {"cluster": {"source": "Civo", "civo": {"region": region, "kubernetesVersion": "1.36"}},
                          "nodePools": [{"name": "cpu", "className": "civo-cpu-medium", "nodeCount": 3}]}}
                for name, region in (("lon", "LON1"), ("fra", "FRA1"))]
    model = yaml.safe_load((cpu / "model.yaml").read_text())
    models = []
    for name, replicas in (("qwen", 4), ("qwen-next", 1)):
        copy = yaml.safe_load(yaml.safe_dump(model))
        copy["metadata"]["name"], copy["spec"]["replicas"] = name, replicas
        models.append(copy)
    gateway = next(yaml.safe_load_all((cpu / "service.yaml").read_text()))
    service = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelService",
               "metadata": {"name": "qwen", "namespace": "ml-team"}, "spec": {"endpoints": service_entries}}
    (folder / "fleet.yaml").write_text(yaml.safe_dump_all([*clusters, *models, gateway, service]))
    return folder


def entry(weight: int, **labels: str) -> dict:
    return {"weight": weight, "selector": {"matchLabels": {f"inferplane.dev/{k}": v for k, v in labels.items()}}}


def shares(output: str) -> list[tuple[str, str]]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ENDPOINT")) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i]), len(lines))
    return [tuple(line.split()[:2]) for line in lines[start:end]]


def test_a_canary_split_95_5_over_real_replicas(tmp_path):
    state = tmp_path / "state"
    apply(state, fleet(tmp_path / "fleet", [entry(95, deployment="qwen"), entry(5, deployment="qwen-next")]))
    code, output = route(state, "ml-team/qwen")
    assert code == 0
    assert shares(output) == [
        ("ml-team/qwen-fra-0", "23.75%"), ("ml-team/qwen-fra-1", "23.75%"), ("ml-team/qwen-lon-0", "23.75%"),
        ("ml-team/qwen-lon-1", "23.75%"), ("ml-team/qwen-next-fra-0", "5.00%")]


def test_a_cluster_drain_narrows_the_service_to_the_other_cluster(tmp_path):
    state = tmp_path / "state"
    apply(state, fleet(tmp_path / "fleet", [entry(1, deployment="qwen")]))
    assert [e for e, _ in shares(route(state, "ml-team/qwen")[1])] == [
        "ml-team/qwen-fra-0", "ml-team/qwen-fra-1", "ml-team/qwen-lon-0", "ml-team/qwen-lon-1"]
    apply(state, fleet(tmp_path / "fleet", [entry(1, deployment="qwen", cluster="fra")]))
    code, output = route(state, "ml-team/qwen")
    assert (code, shares(output)) == (0, [("ml-team/qwen-fra-0", "50.00%"), ("ml-team/qwen-fra-1", "50.00%")])
    assert "cluster lon" not in output
