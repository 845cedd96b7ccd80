"""RunFunction round trip over gRPC next to the same call in-process.  Run: python bench/function_bench.py
[--against DIR] (DIR: another checkout whose `function serve` answers the same gRPC calls in turns).

The requests are the embedded engine's own: an 8-pool InferenceCluster and a 10-replica
ModelDeployment are reconciled to their fixpoint and the last call of each kind's function is kept,
with its observed and required resources. Then, for each:

- core: the composition function called directly with the engine's request (the classes it reads
  validated once per content, as at every call after a server's first);
- in-process, new: the adapter's whole call on the wire (FunctionRunner.answer: bytes -> request ->
  the core -> response -> bytes) for a request it has not answered before, as Crossplane sends one
  after the composite changed: each call's composite has a resourceVersion (and tag) of its own, the
  other resources are as before (decoded once already); the requests are written before timing
  (writing one is the client's work);
- in-process, cold: the same request with every cache dropped before each call (decoded resources,
  serialised response parts, validated classes, kept answers: a server's first call);
- in-process, again: the same request again: the kept answer (FunctionRunner.answer keeps the
  answer to each request, by content; the functions are pure, tested in
  tests/crossplane_runtime/test_two_runtimes.py);
- gRPC, new / gRPC, again: the same two over loopback to `inferplane function serve --insecure`,
  the production server (grpc's thread-pool server, JSON logs to /dev/null), from a blocking
  client whose own serialising of the request and parsing of the answer are in the figure;
- gRPC, protocol alone: the same new requests, from the same client, to grpc's thread-pool server
  answering an empty response whatever it is sent (PROTOCOL_ONLY_SERVER): what gRPC and the Python
  client cost with nothing of ours in the server;
- floor: the Usages step over an empty desired state, a new request each call: what the protocol
  costs with nothing to compose.

Figures are p50 and p99 of 1,000 calls per path, taken in rounds of 100 (after 10 untimed) with
every path of a request taking its turn each round, so that load that comes and goes on a shared
machine weighs on all of them alike (the garbage collector off while timing), and the CPU time per
call: this process's, plus for gRPC the server process's (read from /proc), which other processes'
load does not inflate the way it does wall-clock time on a shared machine. Target: p50 under 1.5 ms for the 8-pool InferenceCluster over gRPC, judged on "gRPC, new"
(a request the server has not answered: "again" is what Crossplane's repeated calls for an unchanged
composite cost, not the function's own cost). "new" computes everything the rows "in-process" and
"gRPC" of earlier versions did (a repeated request, no answer kept) and decodes the composite too:
no cost shown before is hidden. Measured on this 2-core machine, shared (load 1.2-5.6), the protocol
alone takes 0.83-1.15 ms p50 for the 11.6 KB request (0.63-0.91 ms for an empty one), about 0.5 ms
CPU of the client and 0.5-0.8 ms of the server per call; grpc's asyncio server is no faster (0.88-1.33
ms), and channel or server options (SO_REUSEPORT, max concurrent streams, BDP probing, retries,
compression off) change nothing beyond noise. With the core alone at 0.3-0.6 ms, a new request cannot
be answered over gRPC in 1.5 ms here by any adapter.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "crossplane_runtime"))

import grpc  # noqa: E402
import yaml  # noqa: E402
from crossplane.function import logging  # noqa: E402
from crossplane.function.proto.v1 import run_function_pb2 as fnv1  # noqa: E402
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1  # noqa: E402

from inferplane.api.inference_class import class_from_json  # noqa: E402
from inferplane.compose.base import Request  # noqa: E402
from inferplane.compose.model_deployment import read_pool_class  # noqa: E402
from crossplane_requests import crossplane_request  # noqa: E402
from inferplane.crossplane.function import USAGES_INPUT, FunctionRunner  # noqa: E402
from inferplane.compose.registry import composition_functions  # noqa: E402
from inferplane.engine.control_plane import ControlPlane  # noqa: E402

# Rounds of a block of calls per path, each block after a few untimed calls: 1,000 timed calls a path.
ROUNDS, BLOCK, BLOCK_WARMUP = 10, 100, 10
POOLS = 8
REPLICAS = 10
EKS_GPU = {"instanceType": "g6.xlarge", "accelerator": {"type": "nvidia-l4", "count": 1}}
EKS_CPU = {"instanceType": "m7i.2xlarge"}


def manifests() -> list[dict[str, Any]]:
    """Two classes and an EKS InferenceCluster with 8 pools over them (and a 10-replica deployment)."""
    gpu = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
           "attributes": {"productName": {"string": "NVIDIA L4"}}, "capacity": {"memory": {"value": "23034Mi"}}}
    # What dra-driver-cpu publishes on an m7i.2xlarge: 8 vCPUs less reservedCPUs 0-1.
    cpu = {"name": "cpu", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "capacity": {"cpu": {"value": "6"}}}
    classes = [
        {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "bench-l4"},
         "spec": {"devices": [gpu], "provisioning": {"provider": "EKS", "eks": EKS_GPU}}},
        {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "bench-cpu"},
         "spec": {"devices": [cpu], "provisioning": {"provider": "EKS", "eks": EKS_CPU}}}]
    # Four GPU pools of three nodes: room for every replica (one GPU each).
    pools = [{"name": f"pool-{i}", "className": "bench-l4" if i % 2 == 0 else "bench-cpu", "nodeCount": 3}
             for i in range(POOLS)]
    cluster = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "bench"},
               "spec": {"cluster": {"source": "EKS", "eks": {"region": "us-east-1"}}, "nodePools": pools}}
    deployment = yaml.safe_load((REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks" / "model.yaml").read_text())
    deployment["spec"]["replicas"] = REPLICAS
    return [*classes, cluster, deployment]


def engine_requests() -> dict[str, tuple[Callable, Request]]:
    """Kind -> (its function, the last request the embedded engine made of it)."""
    last: dict[str, tuple[Callable, Request]] = {}

    def keep(kind, function):
        def call(request):
            last[kind] = (function, request)
            return function(request)
        return call

    with tempfile.TemporaryDirectory() as folder:
        for index, manifest in enumerate(manifests()):
            (Path(folder) / f"{index}.yaml").write_text(yaml.safe_dump(manifest))
        runtime = ControlPlane(None)
        runtime.functions = {kind: keep(kind, f) for kind, f in composition_functions().items()}
        result = runtime.apply([Path(folder)])
        if result.admission.errors:
            raise SystemExit("\n".join(str(e) for e in result.admission.errors))
    return last


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user + system) process `pid` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Timed = tuple[Callable[[], Any], "int | None"]  # a call, and the server process whose CPU it uses


def measure(paths: dict[str, Timed]) -> dict[str, tuple[float, float, float]]:
    """Per path, p50 and p99 wall-clock milliseconds and CPU milliseconds per call (this process's,
    plus its server's). The paths take turns, a block of calls each, round after round: a shared
    machine's load, which comes and goes, weighs on every path alike."""
    samples: dict[str, list[float]] = {name: [] for name in paths}
    cpu = dict.fromkeys(paths, 0.0)
    for _ in range(ROUNDS):
        for name, (call, server) in paths.items():
            for _ in range(BLOCK_WARMUP):
                call()
            gc.disable()
            used = time.process_time() + (process_cpu(server) if server else 0.0)
            try:
                for _ in range(BLOCK):
                    start = time.perf_counter()
                    call()
                    samples[name].append((time.perf_counter() - start) * 1000)
            finally:
                cpu[name] += time.process_time() + (process_cpu(server) if server else 0.0) - used
                gc.enable()
    out = {}
    for name, taken in samples.items():
        taken.sort()
        out[name] = (statistics.median(taken), taken[int(len(taken) * 0.99) - 1], cpu[name] / len(taken) * 1000)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def changed(message: fnv1.RunFunctionRequest, count: int) -> Callable[[], fnv1.RunFunctionRequest]:
    """A call's request, a new one each time, as Crossplane sends after the composite changed: `message`
    with the composite's resourceVersion and the tag (Crossplane's hash of the request) of its own.
    The server has not answered it before: it decodes the composite and composes; the other resources
    are as before, decoded once already."""
    messages = []
    for index in range(count):
        copy = fnv1.RunFunctionRequest()
        copy.CopyFrom(message)
        copy.meta.tag = f"bench-{index}"
        if copy.observed.HasField("composite"):
            copy.observed.composite.resource["metadata"]["resourceVersion"] = f"bench-{index}"
        messages.append(copy)
    return iter(messages).__next__


# The protocol alone: grpc's thread-pool server, as `function serve` runs it, answering RunFunction
# with an empty response whatever it is sent.
PROTOCOL_ONLY_SERVER = """
import sys
from concurrent import futures
import grpc
server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(sys.argv[2], {
    "RunFunction": grpc.unary_unary_rpc_method_handler(lambda wire, context: b"")})])
server.add_insecure_port(sys.argv[1])
server.start()
server.wait_for_termination()
"""


@contextlib.contextmanager
def function_server(checkout: Path | None) -> Iterator[tuple[grpcv1.FunctionRunnerServiceStub, int]]:
    """`inferplane function serve --insecure` run from `checkout` (None: PROTOCOL_ONLY_SERVER) on a
    free port: a client and the server's process id."""
    address = f"127.0.0.1:{free_port()}"
    service = fnv1.DESCRIPTOR.services_by_name["FunctionRunnerService"].full_name
    command = (["-c", PROTOCOL_ONLY_SERVER, address, service] if checkout is None else
               ["-m", "inferplane.cli.main", "function", "serve", "--insecure", "--address", address])
    server = subprocess.Popen([sys.executable, *command], cwd=checkout or REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        with grpc.insecure_channel(address) as channel:
            grpc.channel_ready_future(channel).result(timeout=120)
            yield grpcv1.FunctionRunnerServiceStub(channel), server.pid
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="another checkout (e.g. `git worktree add /tmp/base main`): its `function serve` "
                             "answers the same gRPC calls, taking turns with this one's")
    args = parser.parse_args()
    logging.configure(logging.Level.DISABLED)
    requests = engine_requests()
    runner = FunctionRunner()
    calls = ROUNDS * (BLOCK + BLOCK_WARMUP)
    with contextlib.ExitStack() as servers:
        stub, pid = servers.enter_context(function_server(REPO))
        bare_stub, bare_pid = servers.enter_context(function_server(None))
        other = servers.enter_context(function_server(args.against.resolve())) if args.against else None
        if other:
            print(f"'(other)': `function serve` of {args.against.resolve()}")
        print(f"{'request':<58} {'path':<25} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms':>7}")
        empty = fnv1.RunFunctionRequest()
        empty.input.update(USAGES_INPUT)
        new_empty = changed(empty, calls)
        floor = measure({"gRPC": (lambda: stub.RunFunction(new_empty()), pid)})["gRPC"]
        print(f"{'floor: Usages step, nothing desired':<58} {'gRPC':<25} {floor[0]:7.3f} {floor[1]:7.3f} "
              f"{floor[2]:7.3f}")
        cases = [("InferenceCluster", f"InferenceCluster, {POOLS} pools"),
                 ("ModelDeployment", f"ModelDeployment, {REPLICAS} replicas")]
        for kind, label in cases:
            if kind not in requests:
                print(f"{label:<58} not measured: {kind} has no composition function on this branch")
                continue
            function, request = requests[kind]
            message = crossplane_request(request.composite, request.observed, request.required)
            rsp = runner.run(message)
            fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
            if fatal:
                raise SystemExit(f"{label}: {fatal[0]}")
            label = f"{label} ({len(rsp.desired.resources)} desired, {message.ByteSize():,} B)"
            wire = message.SerializeToString()
            # Written before timing: serialising the request is the client's work (in the gRPC figures).
            next_message = changed(message, calls)
            new_wire = iter([next_message().SerializeToString() for _ in range(calls)]).__next__
            new_message = changed(message, calls)
            bare_message = changed(message, calls)

            def cold():
                runner.kept.clear()
                class_from_json.cache_clear()
                read_pool_class.cache_clear()
                runner.answer(wire)
            paths = {
                "core": (lambda: function(request), None),
                "in-process, new": (lambda: runner.answer(new_wire()), None),
                "in-process, cold": (cold, None),
                "in-process, again": (lambda: runner.answer(wire), None),
                "gRPC, new": (lambda: stub.RunFunction(new_message()), pid),
                "gRPC, again": (lambda: stub.RunFunction(message), pid),
                "gRPC, protocol alone": (lambda: bare_stub.RunFunction(bare_message()), bare_pid)}
            if other:
                other_stub, other_pid = other
                other_new = changed(message, calls)
                paths["gRPC, new (other)"] = (lambda: other_stub.RunFunction(other_new()), other_pid)
                paths["gRPC, again (other)"] = (lambda: other_stub.RunFunction(message), other_pid)
            figures = measure(paths)
            for path, (p50, p99, cpu) in figures.items():
                print(f"{label:<58} {path:<25} {p50:7.3f} {p99:7.3f} {cpu:7.3f}")
            remote, local = figures["gRPC, new"][0], figures["in-process, new"][0]
            protocol = figures["gRPC, protocol alone"][0]
            verdict = (f"; target (InferenceCluster, gRPC, new) p50 under 1.5 ms: "
                       f"{'met' if remote < 1.5 else 'not met'}" if kind == "InferenceCluster" else "")
            print(f"{'':<58} gRPC, new is {remote - local:.3f} ms more than in-process and "
                  f"{remote - protocol:.3f} ms more than the protocol alone{verdict}")


if __name__ == "__main__":
    main()
