"""InferenceClass: the devices a node pool has, in DRA's model, and optionally how to provision it."""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Iterable, Literal

import orjson
from pydantic import ConfigDict, Field, ValidationError, create_model

from inferplane import API_GROUP, API_VERSION
from inferplane.kept import MIB, kept, size_of
from inferplane.api.drivers import CPU, GPU_DRIVERS, MACHINE_TYPE_DRIVERS
from inferplane.api.cloud import MACHINE_BLOCKS, PROVIDERS, Provider, block_fields, block_name, required_block_rules
from inferplane.api.common import DNS_SUBDOMAIN, QUALIFIED_NAME, SEMVER, ApiModel, Name, Quantity, Resource, \
    list_map, rule

_GPU_LIST = "[" + ", ".join(f"'{d}'" for d in GPU_DRIVERS) + "]"
CLAIMS_GPU = f"self.devices.exists(d, d.claim == 'DRA' && d.driver in {_GPU_LIST})"
_ATTACHED_LIST = "[" + ", ".join(f"'{d}'" for d in GPU_DRIVERS if d not in MACHINE_TYPE_DRIVERS) + "]"
# A GPU a cloud attaches from an accelerator block (not a TPU or Neuron device, which the machine type carries).
CLAIMS_ATTACHED_GPU = f"self.devices.exists(d, d.claim == 'DRA' && d.driver in {_ATTACHED_LIST})"
CLAIMS_CPU = f"self.devices.exists(d, d.claim == 'DRA' && d.driver == '{CPU.name}')"
HAS_ACCELERATOR = " || ".join(
    f"(has(self.provisioning.{block_name(p)}) && has(self.provisioning.{block_name(p)}.accelerator))"
    for p in PROVIDERS)


# Kubernetes' DRA refuses a ResourceSlice whose string attribute is longer than this, or whose
# version attribute is not semver 2.0; Modelplane lets both through, inferplane says so at admission.
DRA_STRING_MAX = 64


class AttributeValue(ApiModel):
    """A typed device attribute, as in a ResourceSlice: exactly one of the four types."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("[has(self.string), has(self.version), has(self.bool), has(self.int)].filter(x, x).size() == 1",
             "an attribute sets exactly one of string, version, bool or int: keep the one that types the value",
             reason="FieldValueInvalid"),
        rule(f"!has(self.string) || size(self.string) <= {DRA_STRING_MAX}",
             f"a string attribute is at most {DRA_STRING_MAX} characters: Kubernetes' DRA refuses a longer one "
             "in a ResourceSlice; shorten it", field_path=".string", reason="FieldValueTooLong"),
        # In a CEL string literal a backslash escapes, so the regex's own backslashes are doubled.
        rule("!has(self.version) || self.version.matches('" + SEMVER.replace("\\", "\\\\") + "')",
             "a version attribute must be a semantic version such as 9.0.0: Kubernetes' DRA refuses any other "
             "in a ResourceSlice; write major.minor.patch, or use a string attribute",
             field_path=".version", reason="FieldValueInvalid"),
    ]})

    string: str | None = Field(None, max_length=253)
    version: str | None = Field(None, max_length=64, description="A semantic version such as 1.2.3.")
    bool_: bool | None = Field(None, alias="bool")
    int_: int | None = Field(None, alias="int", ge=-(2**63), le=2**63 - 1)  # a ResourceSlice int is an int64

    def value(self) -> str | bool | int:
        for candidate in (self.string, self.version, self.bool_, self.int_):
            if candidate is not None:
                return candidate
        raise ValueError("attribute has no value")


class RequestRange(ApiModel):
    """DRA's CapacityRequestPolicyRange (resource.k8s.io/v1): a share is at least `min`, at most `max`, and
    `min` plus a whole number of `step`s."""

    min: Quantity
    max: Quantity | None = None
    step: Quantity | None = None


class RequestPolicy(ApiModel):
    """DRA's CapacityRequestPolicy (resource.k8s.io/v1, Kubernetes 1.34+, KEP-5075): how a share of a device
    that allows multiple allocations is rounded; the driver publishes it beside the capacity."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("!(has(self.validRange) && has(self.validValues))",
             "set at most one of validRange and validValues, as Kubernetes' DRA requires", reason="FieldValueInvalid"),
        rule("!(has(self.validRange) || has(self.validValues)) || has(self.default)",
             "a policy with validRange or validValues needs a default (what a request naming no capacity takes), "
             "as Kubernetes' DRA requires", field_path=".default", reason="FieldValueRequired"),
    ]})

    default: Quantity | None = Field(None, description="What a request that names no amount of this capacity takes.")
    valid_range: RequestRange | None = None
    valid_values: list[Quantity] | None = Field(None, min_length=1, max_length=10,
                                                description="The amounts a share may take, ascending.")


class CapacityValue(ApiModel):
    """A device capacity as a ResourceSlice writes it: {value: <quantity>}."""

    # For a device that allows multiple allocations, `requestPolicy` too: an addition to Modelplane's class.

    # Modelplane's limit; as a schema keyword it applies to strings only, as a quantity may be an int.
    value: Quantity = Field(json_schema_extra={"maxLength": 32})
    request_policy: RequestPolicy | None = Field(
        None, description="For a driver inferplane has no table for: the policy its ResourceSlice publishes.")


# Structural schemas cannot constrain map keys, so a rule does (as Kubernetes' own CRDs do).
_KEYS_ARE_NAMES = {"x-kubernetes-validations": [rule(
    # In a CEL string literal a backslash escapes, so the regex's own backslashes are doubled.
    "self.all(k, k.matches('" + QUALIFIED_NAME.replace("\\", "\\\\") + "'))",
    "keys must be names (numaNode) or qualified names (resource.kubernetes.io/numaNode)",
    reason="FieldValueInvalid")]}


class DeviceSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule("self.claim != 'DRA' || has(self.deviceClassName)",
             "deviceClassName is required when claim is DRA: set it to the driver's DeviceClass "
             "(e.g. gpu.nvidia.com), or set claim: Synthetic for a device that is never claimed",
             field_path=".deviceClassName", reason="FieldValueRequired"),
        rule(f"self.claim != 'DRA' || self.driver != '{CPU.name}' || self.count == 1",
             f"a {CPU.name} device must have count 1: every device would receive the whole CPU request; "
             "declare one device and size it with capacity.cpu",
             field_path=".count", reason="FieldValueInvalid"),
        rule("(has(self.allowMultipleAllocations) && self.allowMultipleAllocations) || "
             "!has(self.capacity) || self.capacity.all(k, !has(self.capacity[k].requestPolicy))",
             "a requestPolicy needs allowMultipleAllocations: true on the device, as Kubernetes' DRA requires: "
             "set it, or remove the policy", field_path=".capacity", reason="FieldValueForbidden"),
    ]})

    name: Name = Field(description="Becomes a ResourceClaim request name, which Kubernetes requires to be a "
                                   "DNS label.")
    claim: Literal["DRA", "Synthetic"] = Field(
        "DRA", description="DRA: workloads claim it through its driver. Synthetic: described for placement only.")
    driver: str = Field(pattern=DNS_SUBDOMAIN, max_length=63,
                        description="The DRA driver, e.g. gpu.nvidia.com; Kubernetes requires a DNS subdomain of at "
                                    "most 63 characters.")
    device_class_name: str | None = Field(None, pattern=DNS_SUBDOMAIN, max_length=253)
    count: int = Field(1, ge=1, le=64, description="Devices of this kind per node.")
    attributes: dict[str, AttributeValue] = Field(
        default_factory=dict, description="Bare names are in the driver's domain; qualified names carry their own.",
        json_schema_extra={**_KEYS_ARE_NAMES, "maxProperties": 32})
    capacity: dict[str, CapacityValue] = Field(
        default_factory=dict, description="Kubernetes quantities as a ResourceSlice writes them, e.g. "
                                          "memory: {value: 80Gi}.",
        json_schema_extra={**_KEYS_ARE_NAMES, "maxProperties": 32})
    # An addition to Modelplane's class, mirroring a ResourceSlice device's field.
    allow_multiple_allocations: bool | None = Field(
        None, description="Whether several claims may share the device (DRA consumable capacity). A driver "
                          "inferplane knows says so itself (dra.cpu's grouped devices do); for another driver, "
                          "what its ResourceSlices publish.")


def claimed_drivers(devices: Iterable[DeviceSpec]) -> list[str]:
    """Drivers whose stacks a pool with these devices needs: DRA claims only, sorted, unique."""
    return sorted({d.driver for d in devices if d.claim == "DRA"})


class _Provisioning(ApiModel):
    model_config = ConfigDict(json_schema_extra={
        "x-kubernetes-validations": required_block_rules("provider", PROVIDERS, "provisioning")})

    def machine(self) -> Any:
        """The machine block of the provider."""
        return getattr(self, block_name(self.provider))


# `provider` and one machine block per provider (eks, gke, ...).
Provisioning = create_model("Provisioning", __base__=_Provisioning, provider=(Provider, ...),
                            **block_fields(MACHINE_BLOCKS))


class InferenceClassSpec(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [
        rule(f"!has(self.provisioning) || !({CLAIMS_CPU} && {CLAIMS_GPU})",
             f"a provisioned class cannot claim {CPU.name} alongside a GPU driver: a CPU claim could never "
             "allocate on a GPU pool; split the CPU devices into a class of their own",
             field_path=".devices", reason="FieldValueForbidden"),
        rule(f"!has(self.provisioning) || !({HAS_ACCELERATOR}) || {CLAIMS_ATTACHED_GPU}",
             "the provisioning block has an accelerator but no device claims a GPU driver: add a DRA device "
             f"with driver one of {', '.join(d for d in GPU_DRIVERS if d not in MACHINE_TYPE_DRIVERS)}, or remove "
             "the accelerator",
             field_path=".devices", reason="FieldValueInvalid"),
        rule(f"!has(self.provisioning) || self.provisioning.provider != 'GKE' || !({CLAIMS_ATTACHED_GPU}) || "
             "(has(self.provisioning.gke) && has(self.provisioning.gke.accelerator))",
             "a GKE class that claims a GPU driver needs provisioning.gke.accelerator: GKE attaches the GPU "
             "from it (e.g. type: nvidia-l4, count: 1)",
             field_path=".provisioning.gke", reason="FieldValueRequired"),
    ]})

    description: str = ""
    provisioning: Provisioning | None = Field(
        None, description="How to provision a pool of this class; absent for classes used on existing clusters.")
    devices: list[DeviceSpec] = Field(min_length=1, max_length=16, json_schema_extra=list_map("name"))

    def claimed_drivers(self) -> list[str]:
        return list(self.claimed_driver_names)

    @functools.cached_property
    def devices_published(self) -> list[dict[str, Any]]:
        """The devices as an InferenceCluster's status publishes them for each pool of this class,
        worked out once (shared by every pool and call: the runtimes copy a status, never modify it)."""
        return [d.model_dump(by_alias=True, exclude_none=True, mode="json") for d in self.devices]

    @functools.cached_property
    def claimed_driver_names(self) -> tuple[str, ...]:
        """claimed_drivers, worked out once: composing a cluster asks it for every pool several times.
        (Nothing modifies a class once read; pydantic leaves a cached property out of dumps and equality.)"""
        return tuple(claimed_drivers(self.devices))


class InferenceClass(Resource):
    GROUP: ClassVar[str] = API_GROUP
    VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "InferenceClass"
    PLURAL: ClassVar[str] = "inferenceclasses"
    SCOPE: ClassVar[str] = "Cluster"
    DESCRIPTION: ClassVar[str] = "The devices a node pool has, in DRA's model, and how to provision it."
    SHORT_NAMES: ClassVar = ("iclass", "icl")
    COLUMNS: ClassVar = (("PROVIDER", ".spec.provisioning.provider", "string"),)

    spec: InferenceClassSpec
    status: dict | None = None


def _validated_bytes(content: bytes, result: Any) -> int:
    # A model (or its validation error, which holds the input) takes about 1.3 times the bytes of the
    # data it was validated from (measured with tracemalloc): twice, to be safe.
    return 2 * size_of(orjson.loads(content))


# Every class of a fleet, many times over: a class's JSON is some KiB, at most 1.5 MiB as stored.
@kept(32 * MIB, _validated_bytes)
def class_from_json(content: bytes) -> InferenceClass | ValidationError:
    try:
        return InferenceClass.model_validate(orjson.loads(content))
    except ValidationError as error:
        return error


def read_class(obj: Any) -> InferenceClass | ValidationError:
    """The class in `obj` (an InferenceClass as stored), or why it does not validate. Every cluster,
    deployment and replica reads the same few classes at every call: each is validated once per
    content and the model shared, so never modify it."""
    try:
        content = orjson.dumps(obj)
    except TypeError:  # not JSON data (admission refuses it): validate it as it is
        try:
            return InferenceClass.model_validate(obj)
        except ValidationError as error:
            return error
    return class_from_json(content)
