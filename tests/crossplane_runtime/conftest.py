"""A real RunFunction server on loopback, shared by a test module."""

from __future__ import annotations

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from inferplane.crossplane.function import FunctionRunner, serving


@pytest.fixture(scope="module")
def function_stub():
    with serving(FunctionRunner()) as address, grpc.insecure_channel(address) as channel:
        yield grpcv1.FunctionRunnerServiceStub(channel)
