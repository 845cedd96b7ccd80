"""Every sign and range check of admission and the API models, pinned at, below and above its boundary:
a bound moved by one (`amount < 0` written `amount < -1`, `ge=1` written `ge=0`, `<=` written `<`)
admits what Kubernetes or the clouds refuse, or refuses what they take, and fails here.

Each case is one field of a recipe's manifest set to one value, with the one error admission gives
(None: admitted)."""

import copy
from pathlib import Path

import pytest
import yaml

from inferplane.admission import admit_manifests
from inferplane.admission.limits import MAX_OBJECT_BYTES, size_problem
from inferplane.admission.manifests import Manifest
from inferplane.cel.quantity import MAX_DIGITS, parse_quantity

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def recipe(path: str, kind: str) -> dict:
    return next(d for d in yaml.safe_load_all((RECIPES / path).read_text()) if d and d["kind"] == kind)


CLASS = recipe("qwen2.5-0.5b-nvidia-eks/class.yaml", "InferenceClass")
# The API's own bounds on quantities and attributes, alone: a Synthetic device (placement only) is not
# held to what its driver publishes for the model, which would refuse any other memory or attribute.
SYNTHETIC_CLASS = copy.deepcopy(CLASS)
SYNTHETIC_CLASS["spec"]["devices"][0]["claim"] = "Synthetic"
del SYNTHETIC_CLASS["spec"]["provisioning"]  # no GPU claimed: an accelerator to provision would be refused
CLUSTER = recipe("qwen2.5-0.5b-nvidia-eks/cluster.yaml", "InferenceCluster")  # nodeCount 2, min 1, max 4
FIXED_POOL = copy.deepcopy(CLUSTER)
FIXED_POOL["spec"]["nodePools"][0] = {"name": "l4", "className": "eks-l4"}
DEPLOYMENT = recipe("qwen2.5-0.5b-nvidia-eks/model.yaml", "ModelDeployment")
GANG = copy.deepcopy(DEPLOYMENT)
_member = GANG["spec"]["template"]["spec"]["engines"][0]["members"][0]
GANG["spec"]["template"]["spec"]["engines"][0]["members"] = [
    {**_member, "role": "Leader"}, {**_member, "role": "Worker", "worker": {"nodes": 1}}]
SERVICE = recipe("qwen2.5-0.5b-amd/service.yaml", "ModelService")
GATEWAY = recipe("qwen2.5-0.5b-amd/service.yaml", "InferenceGateway")
CACHE = recipe("qwen2.5-0.5b-amd/cache.yaml", "ModelCache")
ENDPOINT = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelEndpoint",
            "metadata": {"name": "external", "namespace": "default"}, "spec": {"url": "http://10.0.0.1/v1"}}


def at_least(path: str, bound: int) -> str:
    return f"{path}: must be at least {bound}, got {bound - 1}: set it to {bound} or more"


def at_most(path: str, bound: int) -> str:
    return f"{path}: must be at most {bound}, got {bound + 1}: set it to {bound} or less"


def integer_range(base: str, field: str, path: str, low: int, high: int | None = None) -> list[tuple]:
    """Cases for an integer field bounded [low, high]: one below, at each bound, one above."""
    cases = [(base, field, low - 1, at_least(path, low)), (base, field, low, None), (base, field, low + 1, None)]
    if high is not None:
        cases += [(base, field, high - 1, None), (base, field, high, None), (base, field, high + 1, at_most(path, high))]
    return cases


DEVICE = "spec.devices.0"
ENGINE = "spec.template.spec.engines.0"
MEMORY = f"{DEVICE}.capacity.memory.value"
MEMORY_PATH = "spec.devices[0].capacity.memory.value"
NEGATIVE = "must not be negative, got {!r}: a device's capacity is what it offers"
BEYOND_INT64 = ("{!r} is beyond what Kubernetes can count (int64, at most 9223372036854775807): write the device's "
                "real capacity")
NOT_INT64 = ("{} does not fit an int64 (Kubernetes stores integers as 64-bit, -9223372036854775808 to "
             "9223372036854775807): use a smaller number, or quote it if it is text")
MIN_ABOVE_COUNT = ("spec.nodePools[0].minNodeCount: minNodeCount is above nodeCount, which the clouds refuse: lower "
                   "minNodeCount or raise nodeCount")
COUNT_ABOVE_MAX = ("spec.nodePools[0].maxNodeCount: nodeCount is above maxNodeCount, which the clouds refuse: raise "
                   "maxNodeCount or lower nodeCount")
POOL = "172.18.255.200"

CASES = [
    # A device's capacity: not negative (the smallest negative quantity too), and countable in an int64.
    ("SYNTHETIC_CLASS", MEMORY, "-1", f"{MEMORY_PATH}: {NEGATIVE.format('-1')}"),
    ("SYNTHETIC_CLASS", MEMORY, "-1n", f"{MEMORY_PATH}: {NEGATIVE.format('-1n')}"),
    ("SYNTHETIC_CLASS", MEMORY, "0", None),
    ("SYNTHETIC_CLASS", MEMORY, "1n", None),
    ("SYNTHETIC_CLASS", MEMORY, str(INT64_MAX), None),
    ("SYNTHETIC_CLASS", MEMORY, str(INT64_MAX + 1), f"{MEMORY_PATH}: {BEYOND_INT64.format(str(INT64_MAX + 1))}"),
    ("SYNTHETIC_CLASS", MEMORY, "8Ei", None),  # 2**63, which Kubernetes clamps to int64's maximum, as any binary quantity
    # ... written in at most 32 characters, with an exponent within +/-1000.
    ("SYNTHETIC_CLASS", MEMORY, "0." + "0" * 29 + "1", None),
    ("SYNTHETIC_CLASS", MEMORY, "0." + "0" * 30 + "1", f"{MEMORY_PATH}: must be at most 32 characters long"),
    ("SYNTHETIC_CLASS", MEMORY, "1e-1000", None),
    ("SYNTHETIC_CLASS", MEMORY, "1e-1001", f"{MEMORY_PATH}: '1e-1001' is not a supported quantity: exponent beyond +/-1000: "
                                 "write it with a suffix, e.g. 80Gi or 500m"),
    # An int attribute is an int64.
    ("SYNTHETIC_CLASS", f"{DEVICE}.attributes.numa", {"int": INT64_MIN}, None),
    ("SYNTHETIC_CLASS", f"{DEVICE}.attributes.numa", {"int": INT64_MIN - 1},
     f"spec.devices[0].attributes.numa.int: {NOT_INT64.format(INT64_MIN - 1)}"),
    ("SYNTHETIC_CLASS", f"{DEVICE}.attributes.numa", {"int": INT64_MAX}, None),
    ("SYNTHETIC_CLASS", f"{DEVICE}.attributes.numa", {"int": INT64_MAX + 1},
     f"spec.devices[0].attributes.numa.int: {NOT_INT64.format(INT64_MAX + 1)}"),
    *integer_range("CLASS", f"{DEVICE}.count", "spec.devices[0].count", 1, 64),
    *integer_range("CLASS", "spec.provisioning.eks.accelerator.count", "spec.provisioning.eks.accelerator.count", 1, 16),
    *integer_range("CLASS", "spec.provisioning.eks.diskSizeGb", "spec.provisioning.eks.diskSizeGb", 10),
    # A pool's counts: not negative, at least one node at most, and min <= count <= max.
    *integer_range("FIXED_POOL", "spec.nodePools.0.nodeCount", "spec.nodePools[0].nodeCount", 0),
    *integer_range("FIXED_POOL", "spec.nodePools.0.minNodeCount", "spec.nodePools[0].minNodeCount", 0),
    ("FIXED_POOL", "spec.nodePools.0.maxNodeCount", 0, at_least("spec.nodePools[0].maxNodeCount", 1)),
    ("FIXED_POOL", "spec.nodePools.0.maxNodeCount", 1, None),  # nodeCount defaults to 1
    ("CLUSTER", "spec.nodePools.0.minNodeCount", 2, None),
    ("CLUSTER", "spec.nodePools.0.minNodeCount", 3, MIN_ABOVE_COUNT),
    ("CLUSTER", "spec.nodePools.0.maxNodeCount", 2, None),
    ("CLUSTER", "spec.nodePools.0.maxNodeCount", 1, COUNT_ABOVE_MAX),
    # A deployment's replicas, copies, devices per request and workers per gang.
    *integer_range("DEPLOYMENT", "spec.replicas", "spec.replicas", 1, 10),
    *integer_range("DEPLOYMENT", f"{ENGINE}.copies", "spec.template.spec.engines[0].copies", 1, 64),
    *integer_range("DEPLOYMENT", f"{ENGINE}.members.0.nodeSelector.devices.0.count",
                   "spec.template.spec.engines[0].members[0].nodeSelector.devices[0].count", 1, 64),
    *integer_range("GANG", f"{ENGINE}.members.1.worker.nodes", "spec.template.spec.engines[0].members[1].worker.nodes",
                   1, 63),
    # A service entry's weight (Gateway API's cap), a cache's size.
    *integer_range("SERVICE", "spec.endpoints.0.weight", "spec.endpoints[0].weight", 1, 1_000_000),
    *integer_range("CACHE", "spec.huggingFace.sizeGiB", "spec.huggingFace.sizeGiB", 1, 100_000),
    # An endpoint's port.
    ("ENDPOINT", "spec.url", "http://10.0.0.1:0/v1", "spec.url: 'http://10.0.0.1:0/v1' has port 0: use a port from 1 "
                                                     "to 65535, or none for the scheme's default"),
    ("ENDPOINT", "spec.url", "http://10.0.0.1:1/v1", None),
    ("ENDPOINT", "spec.url", "http://10.0.0.1:65535/v1", None),
    ("ENDPOINT", "spec.url", "http://10.0.0.1:65536/v1",
     "spec.url: 'http://10.0.0.1:65536/v1' has a port that is not a number from 1 to 65535"),
    # Sizes: a DRA string attribute, a name (a DNS label: the crossplane.io/composite label), a pool's name,
    # a template's labels (values, key prefixes, how many), a request's selectors.
    ("SYNTHETIC_CLASS", f"{DEVICE}.attributes.productName", {"string": "x" * 64}, None),
    ("SYNTHETIC_CLASS", f"{DEVICE}.attributes.productName", {"string": "x" * 65},
     "spec.devices[0].attributes.productName.string: a string attribute is at most 64 characters: Kubernetes' DRA "
     "refuses a longer one in a ResourceSlice; shorten it"),
    ("DEPLOYMENT", "metadata.name", "a" * 63, None),
    ("DEPLOYMENT", "metadata.name", "a" * 64,
     "metadata.name: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending alphanumeric) of at "
     f"most 63 characters, got '{'a' * 64}': it is copied into the crossplane.io/composite label of everything "
     "composed for it"),
    ("CLUSTER", "spec.nodePools.0.name", "a" * 40, None),
    ("CLUSTER", "spec.nodePools.0.name", "a" * 41,
     "spec.nodePools[0].name: must be at most 40 characters long (A DNS label: it becomes the inferplane.dev/pool node "
     "label value and part of composed resource names.)"),
    ("DEPLOYMENT", "spec.template.metadata.labels", {"k": "v" * 63}, None),
    ("DEPLOYMENT", "spec.template.metadata.labels", {"k": "v" * 64},
     "spec.template.metadata.labels.k: must be at most 63 characters long"),
    ("DEPLOYMENT", "spec.template.metadata.labels", {"a" * 253 + "/k": "v"}, None),
    ("DEPLOYMENT", "spec.template.metadata.labels", {"a" * 254 + "/k": "v"},
     "spec.template.metadata: template.metadata.labels key prefixes must be DNS subdomains of at most 253 characters"),
    ("DEPLOYMENT", "spec.template.metadata.labels", {f"k{i}": "v" for i in range(32)}, None),
    ("DEPLOYMENT", "spec.template.metadata.labels", {f"k{i}": "v" for i in range(33)},
     "spec.template.metadata.labels: must have at most 32 entries"),
    ("DEPLOYMENT", f"{ENGINE}.members.0.nodeSelector.devices.0.selectors", [{"cel": "true"}] * 8, None),
    ("DEPLOYMENT", f"{ENGINE}.members.0.nodeSelector.devices.0.selectors", [{"cel": "true"}] * 9,
     "spec.template.spec.engines[0].members[0].nodeSelector.devices[0].selectors: must have at most 8 items"),
    # A MetalLB range of one address, one that ends before it starts; a CIDR's prefix length.
    ("GATEWAY", "spec.traefik.metallb.addressPool", f"{POOL}-{POOL}", None),
    ("GATEWAY", "spec.traefik.metallb.addressPool", f"{POOL}-172.18.255.199",
     f"spec.traefik.metallb.addressPool: '{POOL}-172.18.255.199' ends before it starts: put the lower address first"),
    ("GATEWAY", "spec.traefik.metallb.addressPool", f"{POOL}/32", None),
    ("GATEWAY", "spec.traefik.metallb.addressPool", f"{POOL}/33",
     f"spec.traefik.metallb.addressPool: '{POOL}/33' is not an address range or CIDR: write a range such as "
     "172.18.255.200-172.18.255.250 or a CIDR such as 172.18.255.0/24"),
]


def with_value(body: dict, path: str, value) -> dict:
    body = copy.deepcopy(body)
    *parents, leaf = path.split(".")
    node = body
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[int(leaf) if leaf.isdigit() else leaf] = value
    return body


KNOWN_CLASSES = {o.metadata.name: o for _, o in admit_manifests([Manifest("class", CLASS)]).admitted}


@pytest.mark.parametrize("base, path, value, error", CASES,
                         ids=[f"{base}:{path}={str(value)[:24]}#{i}" for i, (base, path, value, _) in enumerate(CASES)])
def test_each_bound_holds_at_below_and_above_its_boundary(base, path, value, error):
    result = admit_manifests([Manifest("inline", with_value(globals()[base], path, value))], known_classes=KNOWN_CLASSES)
    assert [f"{e.path}: {e.message}" for e in result.errors] == ([error] if error else [])
    assert len(result.admitted) == (0 if error else 1)


def test_the_bases_are_admitted_as_they_are():
    """So that every refusal above is the value's, not the manifest's."""
    bases = [CLASS, CLUSTER, FIXED_POOL, DEPLOYMENT, GANG, SERVICE, GATEWAY, CACHE, ENDPOINT]
    result = admit_manifests([Manifest(b["kind"], b) for b in bases], known_classes=KNOWN_CLASSES)
    assert result.errors == []


def test_a_quantity_has_at_most_1000_digits():
    """The digit limit of every quantity the CEL library parses (a selector's quantity("...")), which
    a capacity's 32 characters never reach."""
    assert parse_quantity("0." + "0" * (MAX_DIGITS - 1) + "1") > 0
    with pytest.raises(ValueError, match="more than 1000 digits"):
        parse_quantity("0." + "0" * MAX_DIGITS + "1")
    # Leading zeros are not digits that count, however many (past Python's 4300-digit conversion limit).
    assert parse_quantity("0" * 5000 + "1") == 1
    assert parse_quantity("0" * 5000 + "." + "0" * (MAX_DIGITS - 1) + "1") > 0


def test_an_object_of_exactly_the_stored_limit_is_kept_one_byte_more_is_refused():
    assert size_problem(MAX_OBJECT_BYTES) is None
    assert size_problem(MAX_OBJECT_BYTES + 1) == (
        "the object is 1.5 MiB as stored JSON, over the 1.5 MiB Kubernetes stores (etcd's default "
        "--max-request-bytes): split it into smaller objects")
