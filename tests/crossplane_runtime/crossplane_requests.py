"""RunFunctionRequests as Crossplane builds them, for sending the embedded engine's calls to the
RunFunction server (tests here, and `bench/function_bench.py` and `bench/function_memory_bench.py`,
which put this folder on their path)."""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from inferplane.crossplane.wire import dict_to_struct

Resource = dict[str, Any]


def crossplane_request(composite: Resource, observed: dict[str, Resource] | None = None,
                       required: dict[str, Any] | None = None, tag: str = "") -> fnv1.RunFunctionRequest:
    """A request as Crossplane builds it from the core's view of one call (for replaying the embedded
    engine's calls, tests and benchmarks): a resolved requirement maps to its match (None: no items),
    a whole kind's to the list of every match."""
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=tag))
    req.observed.composite.resource.CopyFrom(dict_to_struct(composite))
    for name, obj in (observed or {}).items():
        req.observed.resources[name].resource.CopyFrom(dict_to_struct(obj))
    for name, obj in (required or {}).items():
        found = req.required_resources[name]
        found.SetInParent()
        for match in obj if isinstance(obj, list) else [obj] if obj is not None else []:
            found.items.append(fnv1.Resource(resource=dict_to_struct(match)))
    return req
