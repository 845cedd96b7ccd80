"""Admission of shares of devices (DRA consumable capacity): what a deployment asks and what a class offers.

A deployment's `capacity.requests` (per device request) must be positive quantities; with the classes
known (those applied and those admitted with it), a request whose selectors select some class's devices
must be one at least one of them can give: a device that allows multiple allocations, publishes the
capacity, and whose request policy and value allow the amount (`scheduling.shares`, DRA's rules).

A class's device says whether it is shared (`allowMultipleAllocations`) and each capacity's
`requestPolicy` only for a driver inferplane has no table for; for one it knows, the driver's table
says (dra-driver-cpu's grouped devices are shared, with no policy). A policy is checked as
Kubernetes' API server checks a ResourceSlice's (resource.k8s.io/v1 CapacityRequestPolicy's field
comments in `staging/src/k8s.io/api/resource/v1/types.go`): validValues ascending, the default within
validRange or among validValues, a range's min at most its max and a positive step.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Iterable, Mapping

from inferplane import cel
from inferplane.accelerators.registry import driver_slices, published_view
from inferplane.clouds import class_gpu
from inferplane.api.inference_class import InferenceClass
from inferplane.api.model_deployment import ModelDeployment
from inferplane.cel.quantity import format_quantity
from inferplane.scheduling.matching import share_miss
from inferplane.scheduling.snapshot import DRA, pool_class


def requested_problems(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """Each `capacity.requests` amount of a deployment (or replica) must be a quantity above zero."""
    engines = ((body.get("spec") or {}).get("template") or {}).get("spec", {}).get("engines") or \
        (body.get("spec") or {}).get("engines") or []
    prefix = "spec.template.spec.engines" if "template" in (body.get("spec") or {}) else "spec.engines"
    for e, engine in enumerate(engines):
        for m, member in enumerate(engine.get("members") or []):
            requests, at = ((member.get("nodeSelector") or {}).get("devices"), "nodeSelector.devices") \
                if "nodeSelector" in member else (member.get("deviceRequests"), "deviceRequests")
            for d, request in enumerate(requests or []):
                for name, value in ((request.get("capacity") or {}).get("requests") or {}).items():
                    path = f"{prefix}[{e}].members[{m}].{at}[{d}].capacity.requests[{name}]"
                    try:
                        amount = cel.parse_quantity(value)
                    except ValueError as exc:
                        yield path, f"{exc}: write a quantity such as \"4\" or 500m"
                        continue
                    if amount <= 0:
                        yield path, f"must be more than 0, got {value!r}: ask for the share each pod needs, e.g. \"4\""


def class_problems(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    """A class's sharing and request policies: a known driver's say, and policies DRA would accept."""
    for d, device in enumerate(body["spec"]["devices"]):
        path = f"spec.devices[{d}]"
        shape = driver_slices(device.get("driver", "")) if device.get("claim", "DRA") == DRA else None
        stated = device.get("allowMultipleAllocations")
        if shape is not None and stated is not None and stated != shape.allow_multiple_allocations:
            yield f"{path}.allowMultipleAllocations", (
                f"the {shape.driver} driver publishes its devices with allowMultipleAllocations "
                f"{str(shape.allow_multiple_allocations).lower()} ({shape.source}): remove the field")
        for name, capacity in (device.get("capacity") or {}).items():
            policy = capacity.get("requestPolicy")
            if policy is None:
                continue
            at = f"{path}.capacity.{name}.requestPolicy"
            if shape is not None:
                yield at, (f"the {shape.driver} driver publishes no request policy ({shape.source}): remove it; "
                           "placement and allocation read what the driver publishes")
                continue
            yield from _policy_problems(at, policy, capacity.get("value"))


def _policy_problems(path: str, policy: Mapping[str, Any], value: Any) -> Iterable[tuple[str, str]]:
    try:
        amounts = {key: cel.parse_quantity(v) for key, v in _policy_amounts(policy)}
        total = cel.parse_quantity(value)
    except ValueError:
        return  # the schema's quantity pattern says which
    default = amounts.get("default")
    values = [amounts[f"validValues[{i}]"] for i in range(len(policy.get("validValues") or []))]
    low, high, step = (amounts.get(f"validRange.{k}") for k in ("min", "max", "step"))
    if values and any(a >= b for a, b in zip(values, values[1:])):
        yield f"{path}.validValues", "must be ascending without repeats, as Kubernetes requires: sort them"
    if values and default is not None and default not in values:
        yield f"{path}.default", f"{_q(default)} is not one of validValues: make the default one of them"
    if step is not None and step <= 0:
        yield f"{path}.validRange.step", f"must be more than 0, got {_q(step)}"
    if low is not None and high is not None and low > high:
        yield f"{path}.validRange.max", f"{_q(high)} is below min {_q(low)}: write a max of at least {_q(low)}"
    if low is not None and default is not None and (default < low or (high is not None and default > high)):
        yield f"{path}.default", f"{_q(default)} is outside validRange: make the default at least {_q(low)}" + (
            f" and at most {_q(high)}" if high is not None else "")
    if default is not None and default > total:
        yield f"{path}.default", f"{_q(default)} is more than the capacity's value {_q(total)}: lower it"


def _policy_amounts(policy: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    if policy.get("default") is not None:
        yield "default", policy["default"]
    for key, amount in (policy.get("validRange") or {}).items():
        yield f"validRange.{key}", amount
    for i, amount in enumerate(policy.get("validValues") or []):
        yield f"validValues[{i}]", amount


def _q(amount: Fraction) -> str:
    return format_quantity(amount)


def share_problems(deployment: ModelDeployment, classes: Mapping[str, InferenceClass]) -> list[tuple[str, str]]:
    """(field path, message) for each share no known class's device that the request's selectors select can
    give; a request no known class's device is selected for is left to the scheduler (its class may come)."""
    asked = [(path, request) for path, request in _requests(deployment) if request.capacity]
    if not asked or not classes:
        return []
    views = [pool_class(published_view(klass, class_gpu(klass))) for _, klass in sorted(classes.items())]
    out = []
    for path, request in asked:
        wanted = tuple((k, str(v)) for k, v in request.capacity.requests.items())
        misses = [share_miss(view.name, device, wanted) for view in views for device in view.devices
                  if device.claim == DRA and _selected(request, device)]
        if misses and all(misses):
            out.append((f"{path}.capacity.requests", (
                f"no device the request's selectors select can give this share ({'; '.join(misses)}): ask for an "
                "amount such a device offers, or select devices that allow multiple allocations")))
    return out


def _requests(deployment: ModelDeployment) -> Iterable[tuple[str, Any]]:
    for e, engine in enumerate(deployment.spec.template.spec.engines):
        for m, member in enumerate(engine.members):
            for d, request in enumerate(member.node_selector.devices if member.node_selector else ()):
                yield f"spec.template.spec.engines[{e}].members[{m}].nodeSelector.devices[{d}]", request


def _selected(request: Any, device: Any) -> bool:
    try:
        return all(cel.selector(s.cel).matches(device.device) for s in request.selectors if s.cel)
    except (cel.CelError, ValueError):
        return False
