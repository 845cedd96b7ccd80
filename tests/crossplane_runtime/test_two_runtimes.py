"""One engine, two runtimes, one answer: every call the embedded reconciler makes to a composition
function, replayed through the RunFunction server over gRPC, gives the same desired resources,
status, conditions and requirements, after normalising what protobuf cannot carry (every number is a
double; a map has no order).

The calls come from reconciling every recipe, a synthetic fleet with a cluster on every cloud, the
EKS leg (the fleet whose pool claims DRANET, so its stack composes aws-dranet) and Modelplane's kind e2e
fleet with the DRA example driver declared as its owner's (`tests/engine/modelplane_e2e/`), and the test requires
every registered composition function to have been called: a kind registered later is replayed
without editing this test, and one no recipe exercises fails it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from inferplane.api import KINDS
from inferplane.compose.base import Desired, Request, Response
from inferplane.crossplane.function import RESERVED_CONDITIONS, FunctionRunner, serving
from inferplane.crossplane.wire import struct_to_dict
from inferplane.compose.registry import composition_functions
from inferplane.engine.control_plane import ControlPlane
from inferplane.simulator.synthetic_fleet import write_fleet
from crossplane_requests import crossplane_request

REPO = Path(__file__).resolve().parents[2]
RECIPES = sorted(p for p in (REPO / "recipes").iterdir() if p.is_dir())
EKS_LEG = REPO / "tests" / "legs" / "eks"
MODELPLANE_E2E = REPO / "tests" / "engine" / "modelplane_e2e"


def owner_driver_fleet(folder: Path) -> Path:
    """Modelplane's e2e fleet, its Existing cluster declaring the DRA example driver as its owner's."""
    for path in sorted(MODELPLANE_E2E.glob("[0-9]*.yaml")):
        body = yaml.safe_load(path.read_text())
        if body["kind"] == "InferenceCluster":
            body["spec"]["cluster"]["existing"]["preinstalledDrivers"] = ["gpu.example.com"]
        (folder / path.name).write_text(yaml.safe_dump(body))
    return folder


def normal(value: Any) -> str:
    """What the value is once it crossed protobuf's Struct, as canonical JSON."""
    return json.dumps(resource.struct_to_dict(resource.dict_to_struct({"v": value}))["v"], sort_keys=True)


def record(folder: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(kind, the request as JSON data, the embedded answer normalised) for every function call made
    while reconciling `folder` to its fixpoint."""
    calls = []

    def recording(kind: str, function):
        def call(request: Request) -> Response:
            response = function(request)
            calls.append((kind, json.loads(json.dumps({
                "composite": request.composite, "observed": request.observed, "required": request.required})),
                answer_of_core(response)))
            return response
        return call

    runtime = ControlPlane(None)
    runtime.functions = {kind: recording(kind, f) for kind, f in composition_functions().items()}
    result = runtime.apply([folder])
    assert not result.admission.errors and result.report.converged
    return calls


def answer_of_core(response: Response) -> dict[str, Any]:
    return {
        "desired": {k: [normal(d.resource), d.ready] for k, d in response.desired.items()},
        "status": normal(response.status) if response.status else None,
        "conditions": [(c.type, c.status, c.reason, c.message) for c in response.conditions
                       if c.type not in RESERVED_CONDITIONS],
        "requirements": {n: (r.api_version, r.kind, r.name, r.namespace or "",
                             None if r.name is not None else r.match_labels or ())
                         for n, r in response.requirements.items()},
    }


def core_desired(rsp: fnv1.RunFunctionResponse) -> dict[str, Desired]:
    """The desired composed resources of a response, as the core would have returned them."""
    ready = {fnv1.READY_TRUE: True, fnv1.READY_FALSE: False, fnv1.READY_UNSPECIFIED: None}
    return {key: Desired(struct_to_dict(d.resource), ready[d.ready]) for key, d in rsp.desired.resources.items()}


def answer_over_grpc(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    statuses = {fnv1.STATUS_CONDITION_TRUE: "True", fnv1.STATUS_CONDITION_FALSE: "False",
                fnv1.STATUS_CONDITION_UNKNOWN: "Unknown"}
    status = resource.struct_to_dict(rsp.desired.composite.resource).get("status")
    return {
        "desired": {k: [normal(d.resource), d.ready] for k, d in core_desired(rsp).items()},
        "status": normal(status) if status else None,
        "conditions": [(c.type, statuses[c.status], c.reason, c.message) for c in rsp.conditions],
        "requirements": {n: (s.api_version, s.kind, s.match_name if s.WhichOneof("match") == "match_name" else None,
                             s.namespace, tuple(sorted(s.match_labels.labels.items()))
                             if s.WhichOneof("match") == "match_labels" else None)
                         for n, s in rsp.requirements.resources.items()},
    }


@pytest.fixture(scope="module")
def embedded_calls(tmp_path_factory):
    """Every recipe, a fleet of seven clusters (one per source), the EKS leg and an owner's driver."""
    fleet = write_fleet(tmp_path_factory.mktemp("fleet"), 7)
    return {**{folder.name: record(folder) for folder in RECIPES}, "fleet": record(fleet),
            "leg-eks": record(EKS_LEG), "owner-driver": record(owner_driver_fleet(tmp_path_factory.mktemp("e2e")))}


def test_the_eks_leg_composes_aws_dranet(embedded_calls):
    assert any("release-aws-dranet" in embedded["desired"] for kind, _, embedded in embedded_calls["leg-eks"]
               if kind == "ServingStack")


def test_every_registered_composition_function_was_called(embedded_calls):
    called = {kind for calls in embedded_calls.values() for kind, _, _ in calls}
    assert called == set(composition_functions())


def ours(obj: dict[str, Any] | None) -> bool:
    """Whether inferplane defines the object's kind (its XRD schema says where the integers are)."""
    return obj is not None and (obj["apiVersion"], obj["kind"]) in KINDS


def exact(request: dict[str, Any]) -> str:
    """The request's objects of inferplane's kinds, as JSON that tells 2 from 2.0."""
    return json.dumps({"composite": request["composite"],
                       "observed": {k: v for k, v in request["observed"].items() if ours(v)},
                       "required": {k: v for k, v in request["required"].items()
                                    if v is None or isinstance(v, list) or ours(v)}},
                      sort_keys=True)


@pytest.fixture(scope="module")
def capturing_stub():
    """A server whose functions note the request the core received, then compose."""
    received: list[str] = []

    def capture(function):
        def call(request: Request) -> Response:
            received.append(exact({"composite": request.composite, "observed": request.observed,
                                   "required": request.required}))
            return function(request)
        return call

    runner = FunctionRunner({kind: capture(f) for kind, f in composition_functions().items()})
    with serving(runner) as address, grpc.insecure_channel(address) as channel:
        yield grpcv1.FunctionRunnerServiceStub(channel), received


@pytest.mark.parametrize("recipe", [*(p.name for p in RECIPES), "fleet", "leg-eks", "owner-driver"])
def test_the_server_answers_every_embedded_call_as_the_engine_did(capturing_stub, embedded_calls, recipe):
    stub, received = capturing_stub
    calls = embedded_calls[recipe]
    assert calls
    differences = []
    for index, (kind, request, embedded) in enumerate(calls):
        received.clear()
        rsp = stub.RunFunction(crossplane_request(request["composite"], request["observed"], request["required"],
                                                  tag=f"{recipe}-{index}"))
        assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
        served = answer_over_grpc(rsp)
        wrong = [part for part in embedded if served[part] != embedded[part]]
        # The core read what the engine gave it, integers as integers.
        if received != [exact(request)]:
            wrong.append("request")
        if wrong:
            differences.append(f"call {index}: {kind}/{request['composite']['metadata']['name']}: {', '.join(wrong)}")
    assert differences == []


@pytest.mark.parametrize("recipe", [*(p.name for p in RECIPES), "fleet", "leg-eks", "owner-driver"])
def test_every_function_is_pure_so_an_answer_can_be_kept(embedded_calls, recipe):
    """What FunctionRunner.answer relies on to send a kept answer again: for every embedded call, the
    same request gives the same response, byte for byte, from a runner that answered it before
    (sharing its decoded resources and validated classes, which the core must not have modified) and
    from a new runner (nothing decoded) with no class validated yet."""
    from inferplane.api.inference_class import class_from_json
    from inferplane.compose.model_deployment import read_pool_class

    seasoned = FunctionRunner()
    differing = []
    for index, (kind, request, _) in enumerate(embedded_calls[recipe]):
        req = crossplane_request(request["composite"], request["observed"], request["required"], tag=f"{index}")
        first = seasoned.run(req).SerializeToString(deterministic=True)
        again = seasoned.run(req).SerializeToString(deterministic=True)
        class_from_json.cache_clear()
        read_pool_class.cache_clear()
        new = FunctionRunner().run(req).SerializeToString(deterministic=True)
        if not first == again == new:
            differing.append(f"call {index}: {kind}/{request['composite']['metadata']['name']}")
    assert differing == []
