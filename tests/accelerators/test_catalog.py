"""The catalog as a whole: tags, shapes and pins of every component on every cloud, and the join."""

from dataclasses import replace

import pytest

from inferplane.accelerators import catalog
from inferplane.accelerators.cpu import CPU_DRA_DRIVER
from inferplane.accelerators.catalog import (
    CLOUDS,
    NEUTRAL,
    catalog_errors,
    components,
    sample_spec,
    serving,
    supported_drivers,
)
from inferplane.accelerators.component import Chart, Component, pin_errors, tag_errors
from inferplane.api.drivers import AMD_GPU, CPU, DRANET, DRIVERS, NVIDIA_GPU

ALL_COMPONENTS = [(cloud, c) for cloud, stack in CLOUDS.items() for c in stack.components]


def test_the_catalog_is_sound():
    assert catalog_errors() == []


def test_every_source_has_a_stack():
    assert list(CLOUDS) == ["EKS", "GKE", "AKS", "Nebius", "Vultr", "Civo", "Existing"]


@pytest.mark.parametrize("cloud,component", ALL_COMPONENTS, ids=lambda x: getattr(x, "key", x))
def test_every_component_is_tagged_or_neutral_never_both(cloud, component):
    assert component.neutral != bool(component.dra_drivers), component.key
    assert component.dra_drivers <= DRIVERS.keys()


@pytest.mark.parametrize("cloud,component", ALL_COMPONENTS, ids=lambda x: getattr(x, "key", x))
def test_every_chart_and_image_is_pinned(cloud, component):
    assert pin_errors(component, sample_spec(cloud)) == []


def test_a_component_with_neither_tag_is_a_catalog_error_and_never_installed(monkeypatch):
    untagged = Component("untagged", "x", chart=Chart("x", "oci://example.com/charts", "1.0.0"))
    both = Component("both", "x", chart=Chart("x", "oci://example.com/charts", "1.0.0"),
                     dra_drivers=frozenset({CPU.name}), neutral=True)
    unknown = Component("unknown", "x", chart=Chart("x", "oci://example.com/charts", "1.0.0"),
                        dra_drivers=frozenset({"tpu.example.com"}))
    stack = CLOUDS["EKS"]
    monkeypatch.setitem(CLOUDS, "EKS", replace(stack, components=stack.components + (untagged, both, unknown)))

    errors = catalog_errors()
    assert any("untagged has no dra_drivers and is not marked neutral" in e for e in errors)
    assert any("both is marked neutral and also tagged" in e for e in errors)
    assert any("unknown is tagged with unknown drivers ['tpu.example.com']" in e for e in errors)
    # Fail closed: none of them is installed, whatever is claimed, and none adds a supported driver.
    installed = {c.key for c in components("EKS", DRIVERS.keys() | {"tpu.example.com"})}
    assert not installed & {"untagged", "both", "unknown"}
    assert "tpu.example.com" not in supported_drivers("EKS")


def test_tag_errors_accept_a_neutral_and_a_tagged_component():
    assert tag_errors(CPU_DRA_DRIVER) == []
    assert tag_errors(catalog.CERT_MANAGER) == []


@pytest.mark.parametrize("version", ["latest", "", None, "v1", "1.x", "1.2", "stable", "main", "~1.2.3", ">=1.0.0"])
def test_a_floating_chart_version_is_refused(version):
    floating = replace(CPU_DRA_DRIVER, chart=Chart("dra-driver-cpu", "oci://registry.k8s.io/dra-driver-cpu/charts",
                                                   version))
    assert pin_errors(floating, sample_spec("EKS")) != []


def test_a_floating_image_in_values_is_refused():
    component = replace(CPU_DRA_DRIVER, values=lambda _: {
        "image": {"repository": "registry.k8s.io/dra-driver-cpu/dra-driver-cpu", "tag": ""},
        "sidecar": {"image": "busybox"},
        "exporter": {"exporterImage": "docker.io/rocm/device-metrics-exporter:latest"},
        "ok": {"image": "registry.example.com:5000/x@sha256:" + "a" * 64},
    })
    errors = pin_errors(component, sample_spec("EKS"))
    assert len(errors) == 3
    assert any("image.repository" not in e and "'registry.k8s.io/dra-driver-cpu/dra-driver-cpu:'" in e for e in errors)
    assert any("sidecar.image image 'busybox'" in e for e in errors)
    assert any("exporter.exporterImage" in e for e in errors)


def test_a_shared_component_is_defined_once():
    """Every cloud that installs a component key installs the same chart, pin, namespace and tags."""
    by_key: dict[str, set] = {}
    for _, c in ALL_COMPONENTS:
        by_key.setdefault(c.key, set()).add((c.chart, c.namespace, c.dra_drivers, c.neutral))
    assert {key: shapes for key, shapes in by_key.items() if len(shapes) > 1} == {}


def test_the_cpu_driver_is_on_every_cloud():
    assert all(CPU_DRA_DRIVER in stack.components for stack in CLOUDS.values())


def test_neutral_components_are_on_every_cloud():
    for stack in CLOUDS.values():
        assert tuple(c for c in stack.components if c.neutral) == NEUTRAL


def test_supported_drivers_are_the_tags():
    assert {cloud: supported_drivers(cloud) for cloud in CLOUDS} == {
        "EKS": ("dra.cpu", "dra.net", "gpu.nvidia.com", "neuron.aws.com"),  # dra.net: aws-dranet
        "GKE": ("dra.cpu", "gpu.nvidia.com", "tpu.google.com"),
        "AKS": ("dra.cpu", "gpu.nvidia.com"),
        "Nebius": ("dra.cpu", "gpu.nvidia.com"),
        "Vultr": ("dra.cpu", "gpu.nvidia.com"),
        "Civo": ("dra.cpu", "gpu.nvidia.com"),
        "Existing": ("dra.cpu", "gaudi.intel.com", "gpu.amd.com", "gpu.nvidia.com"),
    }


def test_amd_only_on_existing_and_dranet_only_on_eks_by_aws_dranet():
    assert [c for c in CLOUDS if AMD_GPU.name in supported_drivers(c)] == ["Existing"]
    assert [c for c in CLOUDS if DRANET.name in supported_drivers(c)] == ["EKS"]
    assert [c.key for c in serving("EKS", DRANET.name)] == ["aws-dranet"]


NEUTRAL_KEYS = ["cert-manager", "envoy-gateway", "gateway-class", "gateway",
                "crd-inferenceobjectives-inference-networking-x-k8s-io",
                "crd-inferencepools-inference-networking-k8s-io", "crd-inferencepools-inference-networking-x-k8s-io",
                "ai-gateway-crds", "ai-gateway", "kube-prometheus-stack", "lws"]


@pytest.mark.parametrize("cloud,claimed,installed", [
    ("EKS", [NVIDIA_GPU.name, CPU.name, AMD_GPU.name],
     [*NEUTRAL_KEYS, "dra-driver-nvidia-gpu", "nvidia-critical-pods-quota", "dcgm-exporter", "dra-driver-cpu"]),
    ("EKS", [DRANET.name, NVIDIA_GPU.name],
     [*NEUTRAL_KEYS, "dra-driver-nvidia-gpu", "nvidia-critical-pods-quota", "dcgm-exporter", "aws-dranet"]),
    ("GKE", [CPU.name], [*NEUTRAL_KEYS, "dra-driver-cpu"]),
    ("GKE", [DRANET.name], NEUTRAL_KEYS),  # not served on GKE: the gate refuses such a cluster first
    ("Civo", [], NEUTRAL_KEYS),
    ("Existing", [NVIDIA_GPU.name, CPU.name, AMD_GPU.name],
     [*NEUTRAL_KEYS, "node-feature-discovery", "dra-driver-nvidia-gpu", "nvidia-critical-pods-quota",
      "dcgm-exporter", "amd-gpu-operator", "amd-device-config", "dra-driver-cpu"]),
    ("Existing", [AMD_GPU.name], [*NEUTRAL_KEYS, "node-feature-discovery", "amd-gpu-operator", "amd-device-config"]),
])
def test_the_join_installs_in_catalog_order_whatever_the_claim_order(cloud, claimed, installed):
    assert [c.key for c in components(cloud, claimed)] == installed
    assert [c.key for c in components(cloud, reversed(claimed))] == installed


def test_an_unknown_cloud_names_the_known_ones():
    with pytest.raises(KeyError, match="known: EKS, GKE"):
        supported_drivers("OpenStack")


@pytest.mark.parametrize("cloud,component", [(cl, c) for cl, c in ALL_COMPONENTS if c.manifest],
                         ids=lambda x: getattr(x, "key", x))
def test_an_objects_namespace_is_the_components(cloud, component):
    assert component.manifest(sample_spec(cloud))["metadata"].get("namespace") == component.namespace
