"""A class as the fleet scheduler reads it, for the composers that place replicas."""

from __future__ import annotations

from inferplane.accelerators.registry import published_view
from inferplane.api.inference_class import InferenceClass
from inferplane.clouds import class_gpu
from inferplane.scheduling.snapshot import PoolClass, pool_class


def pool_view(klass: InferenceClass) -> PoolClass:
    """The class's devices as their drivers publish them on the machine it provisions (issue 44: the machine's
    GPU names the model first), read as the scheduler reads a pool."""
    return pool_class(published_view(klass, class_gpu(klass)))
