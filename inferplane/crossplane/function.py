"""The composition functions served over Crossplane's RunFunction protocol (v1).

The adapter translates: a RunFunctionRequest becomes the core's typed `Request` (observed composite,
observed composed resources by their composition-resource names, required resources by requirement
name) and the core's `Response` becomes a RunFunctionResponse (desired composed resources with
readiness, the composite's status, conditions, events as results, and the resources it requires).
Which function runs is decided by the composite's apiVersion and kind, so one server answers every
Composition of the package. Around that it refuses misshapen requests, learns whether each requirement
asks for one object or a whole kind, keeps answers and decoded resources for requests seen again
(the wire format is wire.py's), runs the Usages step (usages.py) and serves the gRPC endpoint.
"""

from __future__ import annotations

import contextlib
import signal
import time
import traceback
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import grpc
import orjson
from crossplane.function import logging, response as sdk_response, runtime as sdk_runtime
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1beta1 import run_function_pb2 as fnv1beta1
from google.protobuf.message import DecodeError
from grpc_reflection.v1alpha import reflection

from inferplane import API_GROUP
from inferplane.compose.base import Request, Requirement, Response
from inferplane.crossplane.usages import compose_usages
from inferplane.crossplane.wire import MalformedRequest, UnparsedRequest, decode_struct, desired_part, dict_to_struct, \
    from_wire, refuse_misshapen, shape_problem, shown, status_part, struct_to_dict
from inferplane.api.function import PROGRESS_REASONS, READY, SYNCED
from inferplane.compose.registry import composition_functions
from inferplane.kept import MIB, Kept

Resource = dict[str, Any]
Function = Callable[[Request], Response]

# Crossplane v2 writes its own machinery into every composite (composition references, resource
# references); it is not part of the kind's schema, and the core's models refuse unknown fields.
CROSSPLANE_FIELDS = ("spec", "status")

_READY = {True: fnv1.READY_TRUE, False: fnv1.READY_FALSE, None: fnv1.READY_UNSPECIFIED}
_CONDITION_STATUS = {"True": fnv1.STATUS_CONDITION_TRUE, "False": fnv1.STATUS_CONDITION_FALSE,
                     "Unknown": fnv1.STATUS_CONDITION_UNKNOWN}
_SEVERITY = {"Normal": fnv1.SEVERITY_NORMAL, "Warning": fnv1.SEVERITY_WARNING}
# Condition types Crossplane reserves for itself: it derives Ready from the composed resources'
# readiness and Synced from the pipeline. A function saying why its composite is not ready says it
# as a result (an event on the composite) instead.
RESERVED_CONDITIONS = (READY, SYNCED, "Healthy")


# A pipeline step's `input` selects what it runs: none composes the composite's kind; this one adds the
# Usages of what the steps before it desired (see usages.py).
INPUT_API_VERSION = f"fn.{API_GROUP}/v1alpha1"
USAGES_INPUT = {"apiVersion": INPUT_API_VERSION, "kind": "Usages"}


# Crossplane calls a function again and again with mostly the same resources (every reconcile of an
# unchanged composite, the same classes for every cluster): each resource is decoded once, keyed by
# its bytes written deterministically, and the decoded data shared, as the core never modifies its
# request. A resource that changed mostly changed in one part (its metadata's resourceVersion, its
# status): each top-level field is decoded once too, keyed by the kind and its own bytes, and a changed
# resource shares the fields that did not change. The same for what the core desires, keyed by its
# JSON, and for whole answers (FunctionRunner.answer). All of it is kept in the runner's one cache,
# bounded by bytes (inferplane/kept.py), each key tagged with what it keeps. 256 MiB: thousands of a
# fleet's answers of some KiB each, and under a stream of distinct 4 MB requests the server's memory
# stays under 600 MiB (bench/function_memory_bench.py).
CACHE_BYTES = 256 * MIB


# ---- request -> core

@dataclass(frozen=True)
class Resources:
    """The resources a request carries, as the core reads them."""

    composite: Resource  # {} when the request has none
    observed: dict[str, Resource]
    required: dict[str, list[Resource]]  # every match, by requirement name
    # The first resource that is misshapen (the composite first), and how (see request_shape.py).
    misshapen: tuple[str, Resource, str] | None = None


def read_resources(canonical: bytes, kept: Kept) -> Resources:
    """The resources of a request written deterministically, decoded with what `kept` holds. The
    composite, which is what changes from call to call, is decoded field by field, not kept whole."""
    req = UnparsedRequest.FromString(canonical)
    observed, required = req.observed, req.required_resources
    composite, misshapen = {}, None
    if observed.HasField("composite"):
        composite, _, problem = decode_struct(observed.composite.resource, kept)
        if problem is not None:
            misshapen = ("the observed composite", composite, problem)
    observed_resources: dict[str, Resource] = {}
    for name in sorted(observed.resources):
        resource, problem = from_wire(observed.resources[name].resource, kept)
        observed_resources[name] = resource
        if problem is not None and misshapen is None:
            misshapen = (f"observed resource {name!r}", resource, problem)
    required_resources: dict[str, list[Resource]] = {}
    for name in sorted(required):
        matches = required_resources[name] = []
        for index, item in enumerate(required[name].items):
            resource, problem = from_wire(item.resource, kept)
            matches.append(resource)
            if problem is not None and misshapen is None:
                misshapen = (f"required resource {name!r} (match {index + 1})", resource, problem)
    return Resources(composite, observed_resources, required_resources, misshapen)


def core_request(resources: Resources) -> tuple[str, Request]:
    """The composite's kind and the core's request without its required resources (see
    FunctionRunner.compose); MalformedRequest when there is nothing to compose."""
    composite = resources.composite
    if not composite:
        raise MalformedRequest("the request has no observed composite resource: Crossplane always sends the "
                               "composite it reconciles; call this function from a Composition's pipeline")
    if resources.misshapen is not None:
        refuse_misshapen(*resources.misshapen)
    for field in CROSSPLANE_FIELDS:
        section = composite.get(field)
        if isinstance(section, dict) and "crossplane" in section:
            composite = {**composite, field: {k: v for k, v in section.items() if k != "crossplane"}}
    return composite["kind"], Request(composite, resources.observed)


def required_resources(resources: Resources, whole_kind: Callable[[str], bool]) -> dict[str, Any]:
    """The required resources as the core reads them: a requirement for one object maps to it (None
    when Crossplane found nothing), one for a whole kind (`whole_kind(name)`) to every match. A
    requirement Crossplane has not resolved yet is absent, so the function asks for it again."""
    return {name: matches if whole_kind(name) else (matches[0] if matches else None)
            for name, matches in resources.required.items()}


# ---- core -> response

def fill_response(rsp: fnv1.RunFunctionResponse, out: Response, kept: Kept) -> list[bytes]:
    """Fill `rsp` with the core's conditions, events and requirements; the serialised parts to write
    after it: the desired resources and the composite's status (as `kept` holds them)."""
    parts = [desired_part(kept, key, _READY[desired.ready], orjson.dumps(desired.resource))
             for key, desired in out.desired.items()]
    if out.status:
        parts.append(status_part(kept, orjson.dumps(out.status)))
    for condition in out.conditions:
        if condition.type in RESERVED_CONDITIONS:
            if condition.status == "False":
                severity = "Normal" if condition.reason in PROGRESS_REASONS else "Warning"
                rsp.results.append(fnv1.Result(severity=_SEVERITY[severity], reason=condition.reason,
                                               message=condition.message, target=fnv1.TARGET_COMPOSITE))
            continue
        rsp.conditions.append(fnv1.Condition(
            type=condition.type, status=_CONDITION_STATUS[condition.status], reason=condition.reason,
            message=condition.message or None, target=fnv1.TARGET_COMPOSITE))
    for event in out.events:
        rsp.results.append(fnv1.Result(severity=_SEVERITY[event.type], reason=event.reason,
                                       message=event.message, target=fnv1.TARGET_COMPOSITE))
    for name, requirement in out.requirements.items():
        rsp.requirements.resources[name].CopyFrom(resource_selector(requirement))
    return parts


def resource_selector(requirement: Requirement) -> fnv1.ResourceSelector:
    """A requirement without a name asks for every object of its kind carrying its labels (none: every
    object of the kind)."""
    selector = fnv1.ResourceSelector(api_version=requirement.api_version, kind=requirement.kind)
    if requirement.name is None:
        selector.match_labels.SetInParent()
        selector.match_labels.labels.update(requirement.match_labels or ())
    else:
        selector.match_name = requirement.name
    if requirement.namespace:
        selector.namespace = requirement.namespace
    return selector


def add_usages(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """The Usages step: label each consumer and add its Usage to the desired state it was given."""
    desired = {name: struct_to_dict(d.resource) for name, d in req.desired.resources.items()}
    for name, resource in sorted(desired.items()):
        refuse_misshapen(f"desired resource {name!r}", resource, shape_problem(resource))
    labelled, usages = compose_usages(desired)
    for name, obj in labelled.items():
        rsp.desired.resources[name].resource.CopyFrom(dict_to_struct(obj))
    for name, usage in usages.items():
        rsp.desired.resources[name].resource.CopyFrom(dict_to_struct(usage))
        rsp.desired.resources[name].ready = fnv1.READY_TRUE  # a Usage has no readiness of its own


# ---- the servicer

class FunctionRunner:
    """Answers RunFunction for every kind inferplane composes."""

    def __init__(self, functions: dict[str, Function] | None = None, cache_bytes: int = CACHE_BYTES):
        self.functions = functions if functions is not None else composition_functions()
        self.log = logging.get_logger()
        # (kind, requirement name) -> whether the function asks for a whole kind by that name.
        self.whole_kinds: dict[tuple[str, str], bool] = {}
        # Answers, decoded resources and serialised parts (see CACHE_BYTES), keys and values in bytes.
        self.kept = Kept(cache_bytes)

    def compose(self, kind: str, function: Function, request: Request, resources: Resources) -> Response:
        """Call the function with the required resources in the shape it asked for. The protocol does
        not say whether a requirement was for one object or a whole kind; the function's own
        requirements do, and a function names a requirement the same way every time. So what it
        answered is remembered per kind and requirement name, and a requirement not seen yet (the
        first call after a restart) is learnt by calling the function once without required
        resources, as Crossplane's first call is."""
        if any((kind, name) not in self.whole_kinds for name in resources.required):
            self.learn(kind, function(Request(request.composite, request.observed)))
        required = required_resources(resources, lambda name: self.whole_kinds.get((kind, name), False))
        response = function(Request(request.composite, request.observed, required))
        self.learn(kind, response)
        return response

    def learn(self, kind: str, response: Response) -> None:
        for name, requirement in response.requirements.items():
            self.whole_kinds[(kind, name)] = requirement.name is None

    def answer(self, wire: bytes) -> bytes:
        """One call on the wire: the serialised RunFunctionResponse to a serialised request.

        Crossplane calls a function with the same request again at every reconcile of an unchanged
        composite, and the functions are pure (compose/base.py: the same request gives the same
        output), so an answer is kept and sent again for a request equal to one already answered.
        Equal by content: Crossplane (Go) writes a Struct's fields in random order, so the key is the
        request written again deterministically (each resource is decoded by its bytes in it too). A
        fatal result is never kept: a failure is logged, and computed again, every time. The least
        recently used go first beyond the runner's `cache_bytes`, with everything else it keeps."""
        try:
            req = fnv1.RunFunctionRequest.FromString(wire)
        except DecodeError as error:
            rsp = fnv1.RunFunctionResponse()
            sdk_response.fatal(rsp, f"malformed RunFunctionRequest: not a RunFunctionRequest ({error}): call this "
                                    "function with Crossplane's RunFunction protocol v1")
            self.log.info("refused a malformed request", error=str(error))
            return rsp.SerializeToString()
        canonical = req.SerializeToString(deterministic=True)
        key = ("answer", canonical)
        kept = self.kept.get(key)
        if kept is not None:
            self.log.debug("answered again", tag=req.meta.tag)
            return kept
        out, fatal = self.respond(req, read_resources(canonical, self.kept))
        if not fatal:
            self.kept.put(key, out)
        return out

    def run(self, req: fnv1.RunFunctionRequest) -> fnv1.RunFunctionResponse:
        """One call, as a message (no answer kept)."""
        return fnv1.RunFunctionResponse.FromString(
            self.respond(req, read_resources(req.SerializeToString(deterministic=True), self.kept))[0])

    def respond(self, req: fnv1.RunFunctionRequest, resources: Resources) -> tuple[bytes, bool]:
        """One call, `req`'s resources read: the serialised response, and whether it is fatal. Never
        raises, a failure is a fatal result (Crossplane then keeps every composed resource as it is and
        reports the message on the composite). A refused or failed call is logged at info; every call
        at debug (`--debug`): a log line costs about as much as composing a cluster."""
        started = time.perf_counter()
        rsp = sdk_response.to(req)
        kind = name = None
        try:
            step = struct_to_dict(req.input) if req.HasField("input") else {}
            if step.get("kind") == USAGES_INPUT["kind"]:
                add_usages(req, rsp)
                return rsp.SerializeToString(), False
            if step:
                named = shown(f"{step.get('apiVersion')}/{step.get('kind')}")
                raise MalformedRequest(f"unknown input {named}: a step of this function takes no input, or "
                                       f"{INPUT_API_VERSION} Usages")
            kind, request = core_request(resources)
            name = (request.composite.get("metadata") or {}).get("name")
            function = self.functions.get(kind)
            if function is None:
                raise MalformedRequest(f"no composition function for kind {shown(kind)}: this function composes "
                                       f"{', '.join(sorted(self.functions))}; point the Composition for {shown(kind)} "
                                       "at another function")
            out = self.compose(kind, function, request, resources)
            parts = fill_response(rsp, out, self.kept)
        except MalformedRequest as error:
            sdk_response.fatal(rsp, f"malformed RunFunctionRequest: {error}")
            self.log.info("refused a malformed request", tag=req.meta.tag, kind=kind, name=name, error=str(error))
            return rsp.SerializeToString(), True
        except Exception as error:  # noqa: BLE001 - a bug in one call must not stop the server
            # What failed is ours, not the request's (its shape was checked): the caller gets what to do,
            # the log gets the error and its traceback.
            sdk_response.fatal(rsp, failure_message(kind, name, req.meta.tag))
            self.log.info("composition function failed", tag=req.meta.tag, kind=kind, name=name,
                          error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc())
            return rsp.SerializeToString(), True
        self.log.debug("composed", tag=req.meta.tag, kind=kind, name=name, desired=len(out.desired),
                       requirements=len(out.requirements),
                       milliseconds=round((time.perf_counter() - started) * 1000, 3))
        return b"".join([rsp.SerializeToString(), *parts]), False


def failure_message(kind: str | None, name: str | None, tag: str) -> str:
    """What a caller reads when a function failed on a well-shaped request: no Python internals."""
    subject = f"{kind}/{name}" if kind and name else kind or "the request"
    logged = f"logged at info with tag {tag!r}" if tag else "logged at info"
    return (f"composition function failed for {subject}: an error inferplane does not expect on a request "
            f"shaped as this one is; its details and traceback are {logged}: report them as an inferplane bug")


def _service(runner: FunctionRunner, service: str) -> grpc.GenericRpcHandler:
    """RunFunction with the messages left serialised: FunctionRunner.answer reads and writes them."""
    return grpc.method_handlers_generic_handler(service, {
        "RunFunction": grpc.unary_unary_rpc_method_handler(lambda wire, context: runner.answer(wire))})


def server(runner: FunctionRunner, options: Sequence[tuple[str, Any]] = ()) -> grpc.Server:
    """A gRPC server answering RunFunction v1 and v1beta1 (the same messages on the wire) with
    reflection, from a thread pool: grpc's asyncio server, which the SDK's runtime uses, adds about
    0.25 ms to every call (bench/function_bench.py), and the calls hold the GIL either way. The caller
    adds its ports and starts it."""
    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=list(options))
    grpc_server.add_generic_rpc_handlers([
        _service(runner, module.DESCRIPTOR.services_by_name["FunctionRunnerService"].full_name)
        for module in (fnv1, fnv1beta1)])
    reflection.enable_server_reflection(sdk_runtime.SERVICE_NAMES, grpc_server)
    return grpc_server


def serve(runner: FunctionRunner, *, debug: bool, address: str, tls_certs_dir: str | None, insecure: bool,
          max_recv_message_size: int, max_send_message_size: int | None) -> None:
    """`inferplane function serve`: the SDK's flags and logs (its `cli.run`), this module's server.
    Serves until SIGTERM or SIGINT, then lets calls under way finish (the SDK's grace period)."""
    logging.configure(level=logging.Level.DEBUG if debug else logging.Level.INFO)
    megabytes = 1024 * 1024
    grpc_server = server(runner, [
        ("grpc.max_receive_message_length", max_recv_message_size * megabytes),
        ("grpc.max_send_message_length", (max_send_message_size or max_recv_message_size) * megabytes)])
    if tls_certs_dir is not None:
        grpc_server.add_secure_port(address, sdk_runtime.load_credentials(tls_certs_dir))
    if insecure:
        grpc_server.add_insecure_port(address)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: grpc_server.stop(grace=sdk_runtime.SHUTDOWN_GRACE_PERIOD_SECONDS))
    grpc_server.start()
    grpc_server.wait_for_termination()


@contextlib.contextmanager
def serving(runner: FunctionRunner, address: str = "127.0.0.1:0") -> Iterator[str]:
    """Serve `runner` insecurely on `address` while the block runs; yields the address it listens on
    (port 0: a free one). For tests on loopback."""
    grpc_server = server(runner)
    port = grpc_server.add_insecure_port(address)
    grpc_server.start()
    try:
        yield f"{address.rsplit(':', 1)[0]}:{port}"
    finally:
        grpc_server.stop(grace=None).wait(timeout=60)
