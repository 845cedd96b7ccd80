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


@pytest.fixture
def eks_stack() -> dict:
    """The ServingStack an EKS cluster with an NVIDIA pool composes, as Crossplane sends it."""
    return {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack",
            "metadata": {"name": "eks-l4"},
            "spec": {"clusterName": "eks-l4", "source": "EKS", "draDrivers": ["gpu.nvidia.com"],
                     "versions": {"kubernetes": "1.34"},
                     "kubeconfigSecretRef": {"name": "eks-l4-connection", "namespace": "inferplane-system",
                                             "key": "kubeconfig"}}}
