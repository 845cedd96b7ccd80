"""Admission: a manifest checked the way the API server checks a custom resource.

In order: kind and apiVersion, metadata, structural defaulting, the OpenAPI schema (unknown fields
refused), list-map keys, then the `x-kubernetes-validations` CEL rules with `self` bound to each
node. Every error is reported at once, with its field path, the object and what to do.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

import jsonschema_rs
from pydantic import ValidationError

from inferplane import cel
from inferplane.admission import shares
from inferplane.admission.limits import INT64_MAX, shape_problems, size_problem, stored_size
from inferplane.admission.install_objects import INSTALL_OBJECTS
from inferplane.admission.manifests import Manifest
from inferplane.admission.structural import apply_defaults, first_line, join_path, plan_for, \
    rule_failures
from inferplane.accelerators import cpu as cpu_driver
from inferplane.accelerators.registry import driver_slices
from inferplane.accelerators.class_devices import device_problems
from inferplane.admission.object_meta import object_meta_schema
from inferplane.admission.openapi import openapi_validator, to_jsonschema, violations
from inferplane.admission.schema_messages import PATTERN_MEANINGS, describe_violation
from inferplane.admission.stored_kinds import content_schema, is_secret, stored_problems, \
    without_secret_values
from inferplane.api import KINDS, KINDS_BY_NAME, InferenceClass, InferenceGateway, ModelDeployment, ModelEndpoint, \
    ModelReplica
from inferplane.api.stored import STORED_KINDS, StoredObject
from inferplane import API_GROUP
from inferplane.api.common import DNS_LABEL, DNS_SUBDOMAIN, Resource
from inferplane.api.cloud import block_name
from inferplane.api.json_data import json_copy
from inferplane.api.xrd import openapi_schema
from inferplane.clouds import CLOUD_MODULES
from inferplane.routing.addresses import pool_range, url_target

if TYPE_CHECKING:
    import jsonschema

# Metadata the API server sets itself and ignores in a request (rest.BeforeCreate / BeforeUpdate).
SERVER_SET_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                       "deletionGracePeriodSeconds", "managedFields", "selfLink")


@dataclass(frozen=True)
class AdmissionError:
    source: str
    kind: str
    name: str
    path: str
    message: str  # says what is wrong and what to do

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.source}: {self.kind}/{self.name}: {where}{self.message}"


# Modelplane's API group: its manifests are ours once the group is rewritten.
MODELPLANE_GROUP = "modelplane.ai"
# Cluster-scoped kinds whose names may be DNS subdomains (classes are referenced by such names).
# Every other kind's name is a DNS label: Crossplane copies it into the crossplane.io/composite
# label of everything composed, and a label value is at most 63 characters.
SUBDOMAIN_NAMED_KINDS = {InferenceClass.KIND}
class SchemaCheck:
    """A structural schema compiled for admission. The Rust validator answers whether a value is valid
    (~1 us for a typical manifest), so the common case pays nothing more; only a failure takes the
    slower path that reports every error with its field path."""

    def __init__(self, schema: dict[str, Any]):
        self.schema = schema
        self._fast = jsonschema_rs.validator_for(to_jsonschema(schema))

    @functools.cached_property
    def validator(self) -> jsonschema.protocols.Validator:
        """The validator that reports every error with its field path: built on the first failure."""
        return openapi_validator(self.schema)

    def problems(self, value: Any) -> list[tuple[str, str]]:
        if self._fast.is_valid(value):
            return []
        return [e for v in violations(self.validator, value) for e in describe_violation(v, self.schema)]


class KindAdmission:
    """Everything needed to admit one kind, compiled once."""

    def __init__(self, kind: type[Resource]):
        self.kind = kind
        # Another API's kind (a core kind, a provider config) is checked against its published schema.
        self.schema = content_schema(kind) if issubclass(kind, StoredObject) else openapi_schema(kind)
        self.fields = set(self.schema.get("properties", {})) if issubclass(kind, StoredObject) else {"spec", "status"}
        self.top_level = self.fields | {"apiVersion", "kind", "metadata"}
        self.content = SchemaCheck(self.schema)
        self.plan = plan_for(self.schema)

    def check(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        """Default `body` in place and return every (field path, message) wrong with it."""
        apply_defaults(self.plan, body)
        content = {k: v for k, v in body.items() if k in self.fields}
        errors = self.content.problems(content)
        return errors + rule_failures(self.plan, content, errors)


@functools.cache
def metadata_check() -> SchemaCheck:
    """Any object's metadata as the API server decodes it strictly: ObjectMeta's fields, no others."""
    return SchemaCheck({"type": "object", "properties": {"metadata": object_meta_schema()}})


@functools.cache
def kind_admission(kind: type[Resource]) -> KindAdmission:
    return KindAdmission(kind)


def admitted_kind(api_version: Any, kind: Any) -> type[Resource] | None:
    """The kind admission admits an object of that apiVersion and kind as: one of ours, or one of the
    other APIs' kinds the engine stores (core kinds, provider configs)."""
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    return KINDS.get((api_version, kind)) or STORED_KINDS.get((api_version, kind))


def admit(manifest: Manifest) -> tuple[Resource | None, list[AdmissionError]]:
    """The typed, defaulted object, or every error that keeps it out. A Secret's values appear in no
    message: each is hidden as ***."""
    obj, errors = _admit(manifest)
    if is_secret(manifest.body):
        errors = [AdmissionError(e.source, e.kind, e.name, e.path, without_secret_values(manifest.body, e.message))
                  for e in errors]
    return obj, errors


def _admit(manifest: Manifest) -> tuple[Resource | None, list[AdmissionError]]:
    raw = manifest.body
    kind_name = raw.get("kind")
    metadata = raw.get("metadata")
    name = str(metadata.get("name", "<unnamed>"))[:253] if isinstance(metadata, dict) else "<unnamed>"
    label = kind_name if isinstance(kind_name, str) and kind_name else "<no kind>"

    def error(path: str, message: str) -> AdmissionError:
        return AdmissionError(manifest.source, label, name, path, message)

    # What reading the file found (a duplicate key) comes first, beside every other error.
    read = [error(path, message) for path, message in manifest.problems]
    # First what any object must be (JSON, bounded): everything after this walks it recursively.
    shape = [error(path, message) for path, message in shape_problems(raw)]
    if shape:
        return None, read + shape
    too_large = size_problem(stored_size(raw))
    if too_large:
        return None, read + [error("", too_large)]
    body = json_copy(raw)

    api_version = body.get("apiVersion")
    kind = admitted_kind(api_version, kind_name)
    if kind is None:
        return None, read + [error("", _unknown_kind_message(api_version, kind_name))]
    errors = read + [error(path, msg) for path, msg in _check_metadata(kind, body)]
    admission = kind_admission(kind)
    errors += [error(str(name_), _unknown_top_level(name_, kind, admission.top_level))
               for name_ in sorted(map(str, set(body) - admission.top_level))]
    errors += [error(path, message) for path, message in admission.check(body)]
    errors += [error(path, message) for path, message in _semantic_checks(kind, body)] if not errors else []
    # Selectors are checked whatever else is wrong, so that a user sees every broken one at once.
    if kind.KIND in SELECTOR_KINDS:
        errors += [error(path, message) for path, message in _selector_problems(body, {e.path for e in errors})]
    if errors:
        return None, errors
    try:
        return kind.model_validate(body), []
    except ValidationError as invalid:  # the schema and the model disagree: a bug, reported, not raised
        return None, [error(".".join(map(str, e["loc"])), f"{e['msg']} (the schema accepted it: please report)")
                      for e in invalid.errors()]


def _unknown_top_level(name: str, kind: type[Resource], known: set[str]) -> str:
    hint = difflib.get_close_matches(name, sorted(known), n=1)
    fix = f"did you mean {hint[0]}?" if hint else f"a {kind.KIND} has only {', '.join(sorted(known))}: remove it"
    return f"unknown field \"{name}\": {fix}"


def _unknown_kind_message(api_version: Any, kind: Any) -> str:
    if not api_version or not kind:
        missing = " and ".join(n for n, v in (("apiVersion", api_version), ("kind", kind)) if not v)
        return f"{missing} missing: every manifest names its apiVersion and kind"
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return "apiVersion and kind must be strings, e.g. apiVersion: inferplane.dev/v1alpha1, kind: InferenceClass"
    known = KINDS_BY_NAME.get(kind)
    served = _served_versions(api_version, kind)
    if api_version.split("/", 1)[0] == MODELPLANE_GROUP:
        return (f"apiVersion {api_version} is Modelplane's API group; inferplane serves the same kinds, field for field, "
                f"as {API_GROUP}: rewrite the group everywhere, label keys included, e.g. "
                f"sed -i 's/{MODELPLANE_GROUP.replace('.', chr(92) + '.')}/{API_GROUP}/g' FILE")
    if known is not None:
        return f"apiVersion {api_version} does not serve {kind}: use apiVersion: {known.api_version_string()}"
    if served:
        return f"apiVersion {api_version} does not serve {kind}: use apiVersion: {' or '.join(served)}"
    hint = _close_kind(kind)
    suggestion = f"did you mean {hint}?" if hint else (
        f"inferplane stores its own kinds ({', '.join(sorted(KINDS_BY_NAME))}), v1 Namespace, Secret and "
        "ConfigMap, and the providers' ProviderConfig and ClusterProviderConfig (`inferplane api-resources` lists "
        "them), and accepts Crossplane's install objects without storing them")
    return f"unknown kind {kind} ({api_version}): {suggestion}"


def _served_versions(api_version: str, kind: str) -> list[str]:
    """The apiVersions serving a kind of that name among the other APIs' kinds: those of the same provider
    (aws.upbound.io -> aws.m.upbound.io) when there are, else all."""
    served = sorted(v for v, k in (*STORED_KINDS, *INSTALL_OBJECTS) if k == kind)
    provider = api_version.split(".", 1)[0]
    return [v for v in served if v.split(".", 1)[0] == provider] or served


# How alike a misspelt kind and a known one must be to be suggested (difflib's ratio, case ignored): a
# transposition or a missing letter, not a kind that merely shares a word (ClusterRole and GKECluster).
_NEAR_KIND = 0.85


def _close_kind(kind: str) -> str | None:
    known = {k.lower(): k for k in (*KINDS_BY_NAME, *(k for _, k in STORED_KINDS), *(k for _, k in INSTALL_OBJECTS))}
    near = difflib.get_close_matches(kind.lower(), list(known), n=1, cutoff=_NEAR_KIND)
    return known[near[0]] if near else None


def _check_metadata(kind: type[Resource], body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        yield "metadata", "required: add metadata with a name"
        return
    # Strictly decoded first, as the API server does before it drops the fields it sets itself; the
    # checks below say more about the fields they cover, so the schema's word on those is left out.
    strict = metadata_check().problems({"metadata": metadata})
    reported = set()
    for path, message in _metadata_problems(kind, metadata):
        reported.add(path)
        yield path, message
    yield from ((path, message) for path, message in strict
                if not any(path == r or path.startswith((f"{r}.", f"{r}[")) for r in reported))


def _metadata_problems(kind: type[Resource], metadata: dict[str, Any]) -> Iterable[tuple[str, str]]:
    name = metadata.get("name")
    if name is None or name == "":
        yield "metadata.name", "required: every object has a name"
    elif not isinstance(name, str):
        yield "metadata.name", f"must be a string, got {name!r}: quote it, e.g. name: \"{name}\""
    elif kind.KIND in SUBDOMAIN_NAMED_KINDS or getattr(kind, "NAME_IS_SUBDOMAIN", False):
        if len(name) > 253 or not re.match(DNS_SUBDOMAIN, name):
            yield "metadata.name", (f"must be {PATTERN_MEANINGS[DNS_SUBDOMAIN]} of at most 253 characters, got {name!r}")
    elif len(name) > 63 or not re.match(DNS_LABEL, name):
        why = ("the API server names a Namespace by a DNS label" if issubclass(kind, StoredObject) else
               "it is copied into the crossplane.io/composite label of everything composed for it")
        yield "metadata.name", (f"must be {PATTERN_MEANINGS[DNS_LABEL]} of at most 63 characters, got {name!r}: {why}")
    for field_ in SERVER_SET_METADATA:
        metadata.pop(field_, None)  # as the API server does: it sets these, whatever a manifest says
    if metadata.get("ownerReferences") is not None:
        yield "metadata.ownerReferences", (
            "an applied object has no owner: inferplane sets owner references only on what it composes, and "
            "Kubernetes' garbage collector would delete an object whose owner does not exist: remove them")
    namespace = metadata.get("namespace")
    if kind.SCOPE == "Cluster" and namespace:
        yield "metadata.namespace", f"{kind.KIND} is cluster-scoped: remove the namespace"
    elif kind.SCOPE == "Namespaced":
        if namespace is None:
            metadata["namespace"] = "default"
        elif not isinstance(namespace, str) or len(namespace) > 63 or not re.match(DNS_LABEL, namespace):
            yield "metadata.namespace", f"must be {PATTERN_MEANINGS[DNS_LABEL]} of at most 63 characters, got {namespace!r}"
    for field_ in ("labels", "annotations"):
        value = metadata.get(field_)
        if value is not None and not (isinstance(value, dict) and
                                      all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
            yield f"metadata.{field_}", "must map strings to strings: quote values such as \"true\" or \"1\""
        elif value:
            yield from _key_problems(f"metadata.{field_}", value, check_values=field_ == "labels")


# apimachinery's validation.IsQualifiedName and IsValidLabelValue (k8s.io/apimachinery/pkg/util/validation):
# a key is [prefix/]name, the prefix a DNS subdomain of at most 253 characters, the name (and a label's
# value) at most 63 characters of alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _key_problems(path: str, entries: dict[str, str], check_values: bool) -> Iterable[tuple[str, str]]:
    for key, value in entries.items():
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not re.match(DNS_SUBDOMAIN, prefix)):
            yield f"{path}[{key}]", (f"the key's prefix {prefix!r} must be {PATTERN_MEANINGS[DNS_SUBDOMAIN]} of at most 253 "
                                     "characters, e.g. inferplane.dev/team")
        if len(name) > 63 or not _LABEL_NAME.match(name):
            yield f"{path}[{key}]", ("the key's name must be at most 63 characters of alphanumerics, '-', '_' or '.', "
                                     "starting and ending alphanumeric, e.g. team or app.kubernetes.io/name")
        if check_values and value and (len(value) > 63 or not _LABEL_NAME.match(value)):
            yield f"{path}[{key}]", (f"the value {value!r} must be empty or at most 63 characters of alphanumerics, "
                                     "'-', '_' or '.', starting and ending alphanumeric")


def _semantic_checks(kind: type[Resource], body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """Checks the API server leaves to a webhook: quantities the engine can compute with; and for the
    other APIs' kinds, what their API server checks beyond the schema."""
    if issubclass(kind, StoredObject):
        yield from stored_problems(kind, body)
    if kind.KIND == InferenceClass.KIND:
        yield from _capacity_problems(body)
        yield from _published_problems(body)
        yield from shares.class_problems(body)
    if kind.KIND in SELECTOR_KINDS:
        yield from shares.requested_problems(body)
    if kind.KIND in (InferenceGateway.KIND, ModelEndpoint.KIND):
        yield from _address_problems(body)


def _selector_problems(body: dict[str, Any], reported: set[str]) -> Iterable[tuple[str, str]]:
    """Device selectors that do not compile, type-check or fit the cost budget, as the API server
    checks a ResourceClaim's; paths already reported (e.g. too long for the schema) are left out."""
    selectors = [(path, cel_) for path, cel_ in _device_selectors(body.get("spec"), "spec") if path not in reported]
    if not selectors:
        return
    from inferplane.cel.check import selector_problems  # loads cel-cpp: only what has selectors pays for it

    for path, expression in selectors:
        problems = selector_problems(expression)
        yield from ((path, problem) for problem in problems)
        if problems:
            continue  # the evaluator's parser is never handed what the checker refused
        try:
            cel.selector(expression)
        except cel.CelError as exc:
            yield path, f"not a valid CEL expression: {first_line(exc)}"


# The kinds whose device requests carry CEL selectors.
SELECTOR_KINDS = {ModelDeployment.KIND, ModelReplica.KIND}
_SELECTOR_ITEM = re.compile(r"\.selectors\[\d+\]$")


def _device_selectors(value: Any, path: str) -> Iterable[tuple[str, str]]:
    """(field path, expression) of every `selectors[].cel` under `value` (a deployment's member
    requests, a replica's resolved ones), whatever shape the rest of it has."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "cel" and isinstance(item, str) and _SELECTOR_ITEM.search(path):
                yield f"{path}.cel", item
            else:
                yield from _device_selectors(item, join_path(path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _device_selectors(item, f"{path}[{index}]")


def _address_problems(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """A gateway's address pool and an endpoint's URL must be what MetalLB and the gateway can use."""
    spec = body["spec"]
    pool = ((spec.get("traefik") or {}).get("metallb") or {}).get("addressPool")
    checks = (("spec.traefik.metallb.addressPool", pool, pool_range), ("spec.url", spec.get("url"), url_target))
    for path, value, parse in checks:
        if value is None:
            continue
        try:
            parse(value)
        except ValueError as exc:
            yield path, str(exc)


def _published_problems(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """A class describes a device model: the DeviceClass, attributes and capacities of each claimed device
    must be ones its driver publishes, in the driver's value forms (`inferplane.accelerators`, per driver)."""
    for d, device in enumerate(body["spec"]["devices"]):
        shape = driver_slices(device.get("driver", ""))
        if shape is None or device.get("claim", "DRA") != "DRA":
            continue
        path = f"spec.devices[{d}]"
        names = shape.device_class_names()
        if device.get("deviceClassName") not in names:
            yield f"{path}.deviceClassName", (f"the {shape.driver} driver's chart installs DeviceClass "
                                              f"{' or '.join(names)}, not {device.get('deviceClassName')!r}: "
                                              f"use {names[0]}")
        capacity = {key: str(value["value"]) for key, value in (device.get("capacity") or {}).items()}
        yield from device_problems(shape, path, device.get("attributes") or {}, capacity)
        if shape.driver == cpu_driver.D:
            yield from _cpu_problems(path, body["spec"].get("provisioning"), capacity.get("cpu"))


def _cpu_problems(path: str, provisioning: dict[str, Any] | None, declared: str | None) -> Iterable[tuple[str, str]]:
    """On a machine whose CPUs we know, the `cpu` capacity is what the CPU driver counts there."""
    if not provisioning:
        return
    provider = provisioning.get("provider", "")
    cloud = CLOUD_MODULES.get(provider)
    known = cloud.machine_vcpus(provisioning.get(block_name(provider)) or {}) if cloud else None
    if known is None:
        return
    machine, vcpus = known
    want = cpu_driver.claimable_cpus(vcpus)
    why = (f"dra-driver-cpu publishes {want} on {machine} ({vcpus} vCPUs less "
           f"reservedCPUs {cpu_driver.RESERVED_CPUS})")
    if declared is None:
        yield f"{path}.capacity.cpu", f"required on a provisioned machine: {why}: set cpu: {{value: \"{want}\"}}"
    else:
        try:
            got = cel.parse_quantity(declared)
        except ValueError:
            return  # the capacity checks say so
        if 0 <= got <= INT64_MAX and got != want:
            yield f"{path}.capacity.cpu.value", f"{why}, not {declared}: write {want}"


def _capacity_problems(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    for d, device in enumerate(body["spec"]["devices"]):
        for key, capacity in device.get("capacity", {}).items():
            path, value = f"spec.devices[{d}].capacity.{key}.value", capacity["value"]
            try:
                amount = cel.parse_quantity(str(value))
            except ValueError as exc:
                yield path, f"{exc}: write it with a suffix, e.g. 80Gi or 500m"
                continue
            if amount < 0:
                yield path, f"must not be negative, got {value!r}: a device's capacity is what it offers"
            elif amount > INT64_MAX:
                # Consumers (the scheduler's ledger, a CPU slice's core count) count capacity in int64.
                yield path, (f"{value!r} is beyond what Kubernetes can count (int64, at most "
                             f"{INT64_MAX}): write the device's real capacity")
