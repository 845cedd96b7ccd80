"""What a serving-stack component is, and the checks that keep the catalog honest.

A component is data: a Helm chart (or a Kubernetes object) with its pinned version, namespace and
values, and a tag saying which DRA drivers it serves, or that it is neutral (every stack has it).
Each driver module states its driver's `DriverStack` (its components per cloud and the workloads they
run); the catalog (`catalog.py`) lists them per cloud after the neutral ones, and everything else is
derived from those lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from inferplane.accelerators.workload import Describe
from inferplane.api.drivers import DRIVERS, Driver, Taint
from inferplane.api.serving_stack import ServingStackSpec
from inferplane.metrics.scrape import MetricsEndpoint

# Values and manifests may depend on the stack (e.g. the GatewayClass is named by the spec).
Render = Callable[[ServingStackSpec], dict[str, Any]]


def _no_values(_: ServingStackSpec) -> dict[str, Any]:
    return {}


def _always(_: ServingStackSpec) -> bool:
    return True


@dataclass(frozen=True)
class Chart:
    name: str
    repository: str
    version: str


@dataclass(frozen=True)
class Component:
    """One piece of a serving stack: a Helm release (`chart`) or a Kubernetes object (`manifest`).

    Exactly one of `dra_drivers` (the drivers it serves) and `neutral` must be set: a component
    with neither or both is a catalog error, and the join never installs it (fail closed).
    """

    key: str
    # Helm releases: the namespace the chart installs into. Objects: their namespace (None when
    # cluster-scoped); the manifest carries it too.
    namespace: str | None
    chart: Chart | None = None
    values: Render = _no_values
    manifest: Render | None = None
    dra_drivers: frozenset[str] = frozenset()
    neutral: bool = False
    # Whether this stack wants the component at all (e.g. the gateway can be switched off).
    when: Callable[[ServingStackSpec], bool] = _always
    # The GPU metrics this component exports (its driver's), and where Prometheus finds them.
    metrics: MetricsEndpoint | None = None

    @property
    def kind(self) -> str:
        """`release` or `object`: the prefix of the composed resource's key."""
        return "release" if self.chart is not None else "object"


@dataclass(frozen=True)
class DriverStack:
    """What one DRA driver brings to the serving stacks, stated by its module and listed in `registry`."""

    driver: Driver
    # Per cloud, the components that serve the driver there, in install order; a cloud not listed
    # cannot serve it, and the supported-drivers gate refuses classes claiming it there.
    clouds: Mapping[str, tuple[Component, ...]]
    # Per component key, what it runs on its cluster (the simulator places these workloads).
    workloads: Mapping[str, Describe]
    # The clouds whose nodes nobody labels for the driver, where Node Feature Discovery must (its
    # worker then tolerates the driver's pool taint, and the driver's components select NFD's labels).
    nfd: frozenset[str] = frozenset()


def gpu_toleration(driver: Driver) -> dict[str, str]:
    """Tolerate a GPU pool's taint whatever its value: clouds pick their own (GKE taints its GPU
    nodes `nvidia.com/gpu=present`, inferplane's pools use `true`), and a stack must run on both."""
    taint: Taint = driver.pool_taint  # type: ignore[assignment]
    return {"key": taint.key, "operator": "Exists", "effect": taint.effect}


# ---- catalog checks


def tag_errors(component: Component) -> list[str]:
    """Why a component's tags are unusable (empty when fine)."""
    key = component.key
    if component.neutral and component.dra_drivers:
        return [f"component {key} is marked neutral and also tagged {sorted(component.dra_drivers)}: choose one"]
    if not component.neutral and not component.dra_drivers:
        return [f"component {key} has no dra_drivers and is not marked neutral: tag it or mark it neutral"]
    unknown = sorted(component.dra_drivers - DRIVERS.keys())
    if unknown:
        return [f"component {key} is tagged with unknown drivers {unknown}"]
    if component.metrics is not None and component.metrics.driver not in component.dra_drivers:
        return [f"component {key} exports {component.metrics.driver} metrics but does not serve that driver: "
                f"tag it with {component.metrics.driver} or fix its metrics endpoint"]
    return []


def shape_errors(component: Component) -> list[str]:
    """A component is exactly one of a release and an object, and a release has a namespace."""
    key = component.key
    if (component.chart is None) == (component.manifest is None):
        return [f"component {key} must have exactly one of a chart and a manifest"]
    if component.chart is not None and not component.namespace:
        return [f"component {key} is a Helm release without a namespace"]
    return []


# A pin names one exact release: semver with an optional `v`, pre-release or build suffix.
# Everything else (`latest`, `stable`, `main`, `v1`, `1.x`, `~1.2`, empty) moves under our feet.
PINNED_VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def is_pinned_version(version: str | None) -> bool:
    return bool(version) and PINNED_VERSION.match(version) is not None  # type: ignore[arg-type]


def is_pinned_image(image: str) -> bool:
    """`repo/name:v1.2.3` or `repo/name@sha256:...`; a missing tag means `latest`."""
    if DIGEST.search(image):
        return True
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:  # no colon, or the colon was a registry port
        return False
    return is_pinned_version(tag)


def images(tree: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every container image named in values or a manifest: (field path, image reference).

    Fields called `image` or ending in `Image` hold a reference; an `image` map with `repository`
    and `tag` (the usual chart shape) is read as `repository:tag`. A container that never pulls
    (`imagePullPolicy: Never`) runs the image its node was built with, e.g. the driver installer GKE
    preloads for the node's COS version: there is nothing to pin, so it is not listed.
    """
    if isinstance(tree, dict):
        for name, value in tree.items():
            if name == "image" and tree.get("imagePullPolicy") == "Never":
                continue
            here = f"{path}.{name}" if path else str(name)
            if name == "image" and isinstance(value, dict) and "repository" in value:
                yield here, f"{value['repository']}:{value.get('tag') or ''}"
            elif (name == "image" or str(name).endswith("Image")) and isinstance(value, str):
                yield here, value
            else:
                yield from images(value, here)
    elif isinstance(tree, list):
        for index, item in enumerate(tree):
            yield from images(item, f"{path}[{index}]")


def pin_errors(component: Component, spec: ServingStackSpec) -> list[str]:
    """Charts and images that are not pinned to one exact release, for one stack's rendering."""
    errors = []
    if component.chart is not None and not is_pinned_version(component.chart.version):
        errors.append(f"component {component.key}: chart {component.chart.name} version "
                      f"{component.chart.version!r} is not an exact pin")
    rendered = component.manifest(spec) if component.manifest else component.values(spec)
    for field, image in images(rendered):
        if not is_pinned_image(image):
            errors.append(f"component {component.key}: {field} image {image!r} is not pinned")
    return errors
