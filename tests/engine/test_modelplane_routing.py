"""Modelplane v0.3.1's documented InferenceGateway, ModelEndpoint and ModelService manifests, group
rewritten: every one is admitted and resolves in the embedded engine (a gateway gets its address, an
endpoint its backend, a service its address and a route reaching what it selects); a canary split and
a cluster drain show their shares in `inferplane route`."""

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from inferplane.admission import admit_paths
from inferplane.cli.main import cli
from inferplane.cli.route_report import route_report
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests"
KINDS = {"InferenceGateway", "ModelEndpoint", "ModelService"}
GATEWAY = MANIFESTS / "reference" / "inferencegateways.yaml"


def rewritten(path: Path) -> str:
    return path.read_text().replace("modelplane.ai", "inferplane.dev")


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(rewritten(path)) if isinstance(d, dict)]


# The cache examples (examples/) are whole fleets with their own test: test_modelplane_cache_examples.py.
FILES = [p for p in sorted(MANIFESTS.rglob("*.yaml")) if p.relative_to(MANIFESTS).parts[0] != "examples"
         and any(d.get("kind") in KINDS for d in documents(p))]


def test_the_folder_holds_what_the_issue_counts():
    counts = {kind: sum(d.get("kind") == kind for p in FILES for d in documents(p)) for kind in sorted(KINDS)}
    assert (len(FILES), counts) == (11, {"InferenceGateway": 3, "ModelEndpoint": 2, "ModelService": 6})


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_manifest_is_admitted(tmp_path, path):
    copy = tmp_path / path.name
    copy.write_text(rewritten(path))
    result = admit_paths([copy])
    assert ([str(e) for e in result.errors], len(result.admitted)) == ([], len(documents(path)))


def endpoint(name: str, labels: dict[str, str], namespace: str = "ml-team", url: str | None = None) -> dict:
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelEndpoint",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"url": url or f"http://10.0.1.50/{namespace}/{name}/v1", "rewritePath": f"/{namespace}/{name}/"}}


def write(folder: Path, *docs: dict) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "extra.yaml").write_text(yaml.safe_dump_all(docs))
    return folder


def status(runtime: ControlPlane, kind: str, name: str, namespace: str = "") -> dict:
    return runtime.get(Key("inferplane.dev", kind, namespace, name))["status"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_every_manifest_resolves(tmp_path, path):
    """With the reference gateway and one endpoint per label set a service selects (a replica's, as a
    deployment would compose it), each object reaches Ready and each service routes to its endpoints."""
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / path.name).write_text(rewritten(path))
    docs = documents(path)
    extra = [] if any(d["kind"] == "InferenceGateway" for d in docs) else documents(GATEWAY)
    selected = [entry["selector"]["matchLabels"] for d in docs if d["kind"] == "ModelService"
                for entry in d["spec"]["endpoints"]]
    for index, labels in enumerate(selected):
        if not any(d["kind"] == "ModelEndpoint" and labels.items() <= d["metadata"].get("labels", {}).items()
                   for d in docs):
            extra.append(endpoint(f"replica-{index}", labels))
    if extra:
        write(folder, *extra)
    runtime = ControlPlane(None)
    try:
        result = runtime.apply([folder])
        assert result.admission.errors == [] and result.report.converged
        for doc in docs + extra:
            meta = doc["metadata"]
            obj = runtime.get(Key("inferplane.dev", doc["kind"], meta.get("namespace", ""), meta["name"]))
            ready = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
            assert (ready["status"], ready.get("message")) == ("True", ""), f"{doc['kind']}/{meta['name']}"
            if doc["kind"] == "InferenceGateway":
                assert obj["status"]["address"] == "172.18.255.200"
            if doc["kind"] == "ModelService":
                assert obj["status"]["address"] == f"http://172.18.255.200/ml-team/{meta['name']}"
                report, routed = route_report(runtime.list(), "ml-team", meta["name"], "/v1/completions", "POST")
                wanted = [e["metadata"]["name"] for e in docs + extra if e["kind"] == "ModelEndpoint" and any(
                    entry["selector"]["matchLabels"].items() <= e["metadata"].get("labels", {}).items()
                    for entry in doc["spec"]["endpoints"])]
                assert routed and all(f"ml-team/{name} " in report for name in wanted), report
    finally:
        runtime.close()


STABLE = {"inferplane.dev/deployment": "qwen"}
CANARY = {"inferplane.dev/deployment": "qwen-next"}


def service(*entries: tuple[int, dict]) -> dict:
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelService",
            "metadata": {"name": "qwen", "namespace": "ml-team"},
            "spec": {"endpoints": [{"weight": w, "selector": {"matchLabels": labels}} for w, labels in entries]}}


def fleet_endpoints() -> list[dict]:
    """Three replicas of qwen on two clusters, one of qwen-next."""
    return [endpoint(f"qwen-{cluster}-{i}", {**STABLE, "inferplane.dev/cluster": cluster})
            for cluster, i in (("gke-a", 0), ("gke-a", 1), ("eks-b", 0))] + [
        endpoint("qwen-next-eks-b-0", {**CANARY, "inferplane.dev/cluster": "eks-b"})]


def route_rows(state: Path) -> tuple[int, list[list[str]]]:
    run = CliRunner().invoke(cli, ["route", "ml-team/qwen", "--state", str(state)])
    lines = run.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("ENDPOINT"))
    return run.exit_code, [line.split()[:2] for line in lines[header + 1:]]


def apply(state: Path, folder: Path) -> None:
    run = CliRunner().invoke(cli, ["apply", "-f", str(folder), "--state", str(state)])
    assert run.exit_code == 0, run.output


def test_a_canary_split_95_5_holds_whatever_each_side_scales_to(tmp_path):
    state, folder = tmp_path / "state", tmp_path / "manifests"
    apply(state, write(folder, *documents(GATEWAY), *fleet_endpoints(), service((95, STABLE), (5, CANARY))))
    assert route_rows(state) == (0, [
        ["ml-team/qwen-eks-b-0", "31.67%"], ["ml-team/qwen-gke-a-0", "31.67%"], ["ml-team/qwen-gke-a-1", "31.67%"],
        ["ml-team/qwen-next-eks-b-0", "5.00%"]])
    # A second canary replica: the canary's 5% is spread over both, the stable side keeps 95%.
    apply(state, write(folder, *documents(GATEWAY), *fleet_endpoints(), service((95, STABLE), (5, CANARY)),
                       endpoint("qwen-next-gke-a-0", {**CANARY, "inferplane.dev/cluster": "gke-a"})))
    assert route_rows(state) == (0, [
        ["ml-team/qwen-eks-b-0", "31.67%"], ["ml-team/qwen-gke-a-0", "31.67%"], ["ml-team/qwen-gke-a-1", "31.67%"],
        ["ml-team/qwen-next-eks-b-0", "2.50%"], ["ml-team/qwen-next-gke-a-0", "2.50%"]])


def test_a_cluster_drain_narrows_the_selector_to_the_other_cluster(tmp_path):
    state, folder = tmp_path / "state", tmp_path / "manifests"
    apply(state, write(folder, *documents(GATEWAY), *fleet_endpoints(), service((1, STABLE))))
    assert route_rows(state) == (0, [
        ["ml-team/qwen-eks-b-0", "33.33%"], ["ml-team/qwen-gke-a-0", "33.33%"], ["ml-team/qwen-gke-a-1", "33.33%"]])
    apply(state, write(folder, *documents(GATEWAY), *fleet_endpoints(),
                       service((1, {**STABLE, "inferplane.dev/cluster": "gke-a"}))))
    assert route_rows(state) == (0, [["ml-team/qwen-gke-a-0", "50.00%"], ["ml-team/qwen-gke-a-1", "50.00%"]])
    # The drained cluster's endpoint still exists; only the route left it.
    listed = CliRunner().invoke(cli, ["get", "me", "qwen-eks-b-0", "-n", "ml-team", "--state", str(state)])
    assert listed.exit_code == 0


def test_route_names_the_request_the_rule_and_each_forwarded_url(tmp_path):
    state, folder = tmp_path / "state", tmp_path / "manifests"
    together = endpoint("kimi-k2-together", {"inferplane.dev/external-provider": "together"},
                        url="https://api.together.xyz/")
    together["spec"]["rewritePath"] = "/"
    apply(state, write(folder, *documents(GATEWAY), *fleet_endpoints()[:1], together, service(
        (3, STABLE), (1, {"inferplane.dev/external-provider": "together"}))))
    run = CliRunner().invoke(cli, ["route", "ml-team/qwen", "--path", "/v1/chat/completions", "--state", str(state)])
    assert (run.exit_code, run.output) == (0, (
        "POST http://172.18.255.200/ml-team/qwen/v1/chat/completions\n"
        "HTTPRoute ml-team/qwen rule 0 (PathPrefix /ml-team/qwen/)\n"
        "\n"
        "ENDPOINT                   SHARE    WEIGHT   FORWARDED TO\n"
        "ml-team/qwen-gke-a-0       75.00%   3        http://10.0.1.50/ml-team/qwen-gke-a-0/v1/chat/completions\n"
        "ml-team/kimi-k2-together   25.00%   1        https://api.together.xyz/v1/chat/completions\n"))


def test_route_says_why_nothing_is_reached(tmp_path):
    state, folder = tmp_path / "state", tmp_path / "manifests"
    apply(state, write(folder, service((1, STABLE))))
    run = CliRunner().invoke(cli, ["route", "ml-team/qwen", "--state", str(state)])
    assert (run.exit_code, run.stderr) == (1, (
        "POST http://<no address>/ml-team/qwen/v1/completions\n"
        "InferenceGateway default has no address: nothing reaches the gateway yet\n"
        "HTTPRoute ml-team/qwen rule 0 (PathPrefix /ml-team/qwen/)\n"
        "the rule has no backend: the gateway answers 500 (see the service's EndpointsResolved)\n"))
    missing = CliRunner().invoke(cli, ["route", "ml-team/nope", "--state", str(state)])
    assert (missing.exit_code, missing.stderr) == (1, "Error from server (NotFound): modelservice ml-team/nope not found\n")


def test_the_gateway_cannot_be_deleted_while_a_service_routes_through_it(tmp_path):
    state, folder = tmp_path / "state", tmp_path / "manifests"
    apply(state, write(folder, *documents(GATEWAY), *fleet_endpoints(), service((1, STABLE))))
    refused = CliRunner().invoke(cli, ["delete", "ig", "default", "--state", str(state)])
    assert (refused.exit_code, refused.stderr) == (1, (
        "Error: inferencegateway.inferplane.dev/default is in use by httproute.gateway.networking.k8s.io/qwen: "
        "they are composed for modelservice.inferplane.dev/qwen: delete or change that first; nothing was deleted\n"))
    assert route_rows(state)[0] == 0  # still routing
    assert CliRunner().invoke(cli, ["delete", "ms", "qwen", "-n", "ml-team", "--state", str(state)]).exit_code == 0
    assert CliRunner().invoke(cli, ["delete", "ig", "default", "--state", str(state)]).exit_code == 0
    left = CliRunner().invoke(cli, ["get", "releases,gateways,httproutes", "-A", "--state", str(state)])
    assert left.stderr.strip() == "No resources found."


def test_each_cluster_gateway_gets_its_own_address(gateway_api_crds):
    runtime = ControlPlane(None)
    try:
        runtime.apply([REPO / "recipes" / "mixed-fleet"])
        addresses = {o["metadata"]["name"]: (o["status"].get("gateway") or {}).get("address")
                     for o in runtime.list("InferenceCluster")}
        gateways = [o["spec"]["forProvider"]["manifest"] for o in runtime.list("Object")
                    if o["spec"]["forProvider"]["manifest"]["kind"] == "Gateway"]
    finally:
        runtime.close()
    # Deterministic per name, in 198.18.0.0/15; a cluster the gate holds has no stack yet, so no address.
    assert addresses == {"civo-lon": "198.19.51.185", "eks-amd": None, "eks-us-east": "198.19.100.147",
                         "gke-us-central": "198.18.140.244", "nebius-eu": "198.19.1.45", "onprem-lab": "198.19.135.126"}
    assert len(gateways) == 5
    for gateway in gateways:
        assert [v.message for v in gateway_api_crds.validate(gateway)] == []


def routing_ready(runtime: ControlPlane) -> tuple[str, str]:
    condition = next(c for c in status(runtime, "ModelService", "qwen", "ml-team")["conditions"]
                     if c["type"] == "RoutingReady")
    return condition["status"], condition["reason"]


def test_a_service_applied_before_its_gateway_is_ready_once_the_gateway_accepts_its_route(tmp_path):
    """The route is composed at once but accepted only once the Gateway is: Traefik's answer (the
    route's status.parents) is observed again when the gateway comes, not only when the route changes."""
    runtime = ControlPlane(None)
    try:
        runtime.apply([write(tmp_path / "service", endpoint("qwen-0", STABLE), service((1, STABLE)))])
        route = runtime.get(Key("gateway.networking.k8s.io", "HTTPRoute", "ml-team", "qwen"))
        assert route is not None, "the route is composed before the gateway exists"
        assert routing_ready(runtime) == ("False", "WaitingForGateway")
        runtime.apply([write(tmp_path / "gateway", *documents(GATEWAY))])
        route = runtime.get(Key("gateway.networking.k8s.io", "HTTPRoute", "ml-team", "qwen"))
        assert [(p["controllerName"], [(c["type"], c["status"]) for c in p["conditions"]])
                for p in route["status"]["parents"]] == [("traefik.io/gateway-controller", [("Accepted", "True")])]
        assert routing_ready(runtime) == ("True", "RouteConfigured")
    finally:
        runtime.close()
