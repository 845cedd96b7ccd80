"""The Gateway API Inference Extension: the InferencePool a PrefillDecode replica's route sends to, and
its CRDs, vendored under `inferplane/data/gateway-api-inference-extension/` (v1.0.1, as Modelplane
v0.3.1 installs them; see SOURCE.md there).

An HTTPRoute's backendRef of kind InferencePool resolves only where the cluster's gateway knows the
kind: the CRDs must be installed, and Envoy Gateway must hand such backends to Envoy AI Gateway's
extension server (the catalog installs both, `inferplane/accelerators/catalog.py`).
"""

from __future__ import annotations

import functools
from typing import Any


from inferplane.api.json_data import json_copy
from inferplane import DATA, vendored_yaml

INFERENCE_POOL_GROUP = "inference.networking.k8s.io"
INFERENCE_POOL_VERSION = "v1"
INFERENCE_POOL_API_VERSION = f"{INFERENCE_POOL_GROUP}/{INFERENCE_POOL_VERSION}"
INFERENCE_POOL_KIND = "InferencePool"
INFERENCE_POOL_CRD_NAME = f"inferencepools.{INFERENCE_POOL_GROUP}"
# The experimental group of the release, where InferenceObjective (which the endpoint picker watches) lives.
INFERENCE_EXTENSION_EXPERIMENTAL_GROUP = "inference.networking.x-k8s.io"
# The pod label llm-d's endpoint picker filters prefill and decode pods by (its prefill-filter and
# decode-filter plugins): `prefill` or `decode`.
PHASE_LABEL = "llm-d.ai/role"
DECODE = "decode"

CRDS_FILE = DATA / "gateway-api-inference-extension" / "crds.yaml"


@functools.cache
def _crds() -> tuple[dict[str, Any], ...]:
    documents = vendored_yaml.load_all(CRDS_FILE.read_text())  # the catalog reads these at import
    return tuple(d for d in documents if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition")


def inference_extension_crds() -> list[dict[str, Any]]:
    """The vendored CRDs, in the release's order, each a fresh copy (callers may change theirs)."""
    return [json_copy(crd) for crd in _crds()]


@functools.cache
def served_kinds() -> frozenset[tuple[str, str]]:
    """(apiVersion, kind) of every version the vendored CRDs serve."""
    return frozenset((f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                     for crd in _crds() for version in crd["spec"]["versions"] if version.get("served"))


def is_inference_pool_ref(ref: dict[str, Any]) -> bool:
    """Whether a backendRef names an InferencePool (Gateway API's group and kind, no version)."""
    return ref.get("group") == INFERENCE_POOL_GROUP and ref.get("kind") == INFERENCE_POOL_KIND
