"""The function server's memory under a stream of distinct, maximal requests.  Run: python
bench/function_memory_bench.py [--requests N] [--cache-size MB] [--every N]

Starts the real `inferplane function serve --insecure` on loopback (its default cache bound unless
--cache-size) and sends it 1,000 RunFunction requests over gRPC, each about 3 MB (the server takes at
most 4 MB) and each distinct in every resource it carries, so that nothing the server keeps from one
request serves another: the embedded engine's own requests (an 8-pool InferenceCluster with its two
classes, a 10-replica ModelDeployment with the fleet it reads), taking turns, every resource padded
with its share of the 3 MB, in turn as one long annotation (bytes that decode to as many bytes) and
as a list of empty objects in its status (the most Python objects a byte of a request decodes to),
and a nonce of its own. Prints the server's resident memory (VmRSS in /proc/PID/status) every 100
requests. Target: flat after warm-up (what the server keeps is bounded by bytes, inferplane/kept.py)
and under 600 MiB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "crossplane_runtime"))

import grpc  # noqa: E402
from crossplane.function.proto.v1 import run_function_pb2 as fnv1  # noqa: E402
from google.protobuf import struct_pb2  # noqa: E402

from function_bench import engine_requests, free_port  # noqa: E402
from crossplane_requests import crossplane_request  # noqa: E402

REQUEST_BYTES = 3 * 1000 * 1000
TARGET_MIB = 600
# Each empty object in a list is 4 bytes on the wire (its list entry and value tags and lengths).
EMPTY_OBJECT_BYTES = 4


def resources_of(req: fnv1.RunFunctionRequest) -> list[struct_pb2.Struct]:
    return [req.observed.composite.resource, *(r.resource for r in req.observed.resources.values()),
            *(item.resource for found in req.required_resources.values() for item in found.items)]


def padded(message: fnv1.RunFunctionRequest, as_objects: bool) -> fnv1.RunFunctionRequest:
    """`message` with each resource padded to its share of REQUEST_BYTES."""
    req = fnv1.RunFunctionRequest()
    req.CopyFrom(message)
    resources = resources_of(req)
    share = (REQUEST_BYTES - req.ByteSize()) // len(resources)
    for resource in resources:
        if as_objects:
            pad = resource.get_or_create_struct("status").get_or_create_list("benchPadding")
            for _ in range(share // EMPTY_OBJECT_BYTES):
                pad.add_struct()
        else:
            resource.get_or_create_struct("metadata").get_or_create_struct("annotations")[
                "bench.inferplane.dev/padding"] = "x" * share
    return req


def distinct(template: fnv1.RunFunctionRequest, index: int) -> bytes:
    """`template` with a nonce of its own in every resource (and a uid, read by the fleet scheduler's
    memo by uid and resourceVersion), serialised."""
    req = fnv1.RunFunctionRequest()
    req.CopyFrom(template)
    req.meta.tag = f"memory-{index}"
    for resource in resources_of(req):
        metadata = resource.get_or_create_struct("metadata")
        metadata.get_or_create_struct("annotations")["bench.inferplane.dev/nonce"] = str(index)
        metadata["uid"] = f"memory-{index}-{id(resource)}"
        metadata["resourceVersion"] = str(index)
    return req.SerializeToString()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"/proc/{pid}/status has no VmRSS: the server exited")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100, help="print the server's memory every N requests")
    parser.add_argument("--cache-size", type=int, default=None, metavar="MB",
                        help="the server's --cache-size (default: its own default)")
    parser.add_argument("--malloc-arena-max", type=int, default=None, metavar="N",
                        help="run the server with MALLOC_ARENA_MAX=N (glibc's malloc arenas; with 2, 1,000 "
                             "requests measured 319-475 MiB after warm-up, no flatter than the default's 365-453)")
    args = parser.parse_args()
    requests = engine_requests()
    templates = [padded(crossplane_request(request.composite, request.observed, request.required), as_objects)
                 for as_objects in (False, True)
                 for _, request in (requests["InferenceCluster"], requests["ModelDeployment"])]
    address = f"127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "inferplane.cli.main", "function", "serve", "--insecure", "--address", address,
               *(["--cache-size", str(args.cache_size)] if args.cache_size is not None else [])]
    env = {**os.environ, **({"MALLOC_ARENA_MAX": str(args.malloc_arena_max)} if args.malloc_arena_max else {})}
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        megabytes = 1024 * 1024
        options = [("grpc.max_send_message_length", 4 * megabytes), ("grpc.max_receive_message_length", 64 * megabytes)]
        with grpc.insecure_channel(address, options=options) as channel:
            grpc.channel_ready_future(channel).result(timeout=120)
            arenas = f"MALLOC_ARENA_MAX={args.malloc_arena_max} " if args.malloc_arena_max else ""
            print(f"server: {arenas}{' '.join(command[1:])} (pid {server.pid}); at start {rss_mib(server.pid):.0f} MiB")
            print(f"{'requests':>8} {'MB sent':>9} {'RSS MiB':>8} {'s':>6}")
            sent, started, figures = 0, time.perf_counter(), []
            # Requests written once here and sent as bytes: the client's own parsing is not the point.
            service = fnv1.DESCRIPTOR.services_by_name["FunctionRunnerService"].full_name
            raw = channel.unary_unary(f"/{service}/RunFunction")
            for index in range(args.requests):
                wire = distinct(templates[index % len(templates)], index)
                answer = fnv1.RunFunctionResponse.FromString(raw(wire, timeout=300))
                fatal = [r.message for r in answer.results if r.severity == fnv1.SEVERITY_FATAL]
                if fatal:
                    raise SystemExit(f"request {index}: {fatal[0]}")
                sent += len(wire)
                if (index + 1) % args.every == 0:
                    figures.append(rss_mib(server.pid))
                    print(f"{index + 1:>8} {sent / 1e6:>9,.0f} {figures[-1]:>8.0f} {time.perf_counter() - started:>6.0f}",
                          flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
    if len(figures) >= 3:
        settled = figures[1:]  # after the first checkpoint's warm-up
        print(f"after warm-up: {min(settled):.0f}-{max(settled):.0f} MiB (last {figures[-1]:.0f}); "
              f"target flat and under {TARGET_MIB} MiB: {'met' if max(settled) < TARGET_MIB else 'not met'}")


if __name__ == "__main__":
    main()
