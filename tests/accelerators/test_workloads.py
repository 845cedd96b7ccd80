"""Workload descriptions: every catalog component is described, and each chart's placement facts
are read from the values the catalog renders, the way the chart's templates read them."""

import pytest

from inferplane.accelerators.amd import AMD_DEVICE_CONFIG, AMD_GPU_OPERATOR
from inferplane.accelerators.catalog import CLOUDS, NODE_FEATURE_DISCOVERY, sample_spec
from inferplane.accelerators.cpu import CPU_DRA_DRIVER
from inferplane.accelerators.nvidia import NVIDIA_DRA_DRIVER
from inferplane.api.drivers import AMD_GPU, CPU, GAUDI, NVIDIA_GPU
from inferplane.accelerators.workloads import (
    DESCRIPTIONS,
    Placement,
    UnknownComponent,
    helm_merge,
    workloads,
)


def rendered(component, cloud="Existing"):
    spec = sample_spec(cloud)
    return component.manifest(spec) if component.manifest else component.values(spec)


def installed(cloud="Existing"):
    return {c.key: rendered(c, cloud) for c in CLOUDS[cloud].components}


def by_name(items):
    return {w.name: w for w in items}


def test_every_catalog_component_of_every_cloud_is_described():
    # Fail closed: a component added to the catalog without a description fails here.
    missing = sorted({c.key for stack in CLOUDS.values() for c in stack.components} - DESCRIPTIONS.keys())
    assert missing == []
    for cloud, stack in CLOUDS.items():
        for component in stack.components:
            for w in workloads(component.key, rendered(component, cloud), installed(cloud)):
                assert w.kind in {"DaemonSet", "Deployment", "StatefulSet"}
                assert w.component == component.key and w.namespace and w.name
                assert (w.placement is Placement.DRIVERS) == bool(w.drivers)


def test_an_undescribed_component_is_an_error():
    with pytest.raises(UnknownComponent, match="no-such-component"):
        workloads("no-such-component", {})


def test_object_components_that_run_nothing_say_so():
    for key in ("gateway-class", "nvidia-critical-pods-quota", AMD_DEVICE_CONFIG.key):
        assert workloads(key, {}, {}) == ()
        assert DESCRIPTIONS[key].__doc__  # the reason is kept


def test_cpu_driver_uses_values_node_selector_and_tolerations():
    (ds,) = workloads(CPU_DRA_DRIVER.key, rendered(CPU_DRA_DRIVER))
    assert (ds.kind, ds.name, ds.namespace) == ("DaemonSet", "dra-driver-cpu", "kube-system")
    assert dict(ds.node_selector) == CPU.node_labels
    assert list(ds.tolerations) == [CPU.pool_taint.toleration()]
    assert ds.publishes_slices_for == CPU.name and ds.drivers == {CPU.name}


def test_cpu_driver_chart_default_tolerates_every_noschedule_taint():
    (ds,) = workloads(CPU_DRA_DRIVER.key, {})
    assert list(ds.tolerations) == [{"operator": "Exists", "effect": "NoSchedule"}]
    assert dict(ds.node_selector) == {}


def test_nvidia_kubelet_plugin_affinity_and_tolerations():
    items = by_name(workloads(NVIDIA_DRA_DRIVER.key, rendered(NVIDIA_DRA_DRIVER)))
    # ComputeDomains are off, so the chart renders no controller.
    assert set(items) == {"dra-driver-nvidia-gpu-kubelet-plugin"}
    plugin = items["dra-driver-nvidia-gpu-kubelet-plugin"]
    terms = plugin.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    keys = [t["matchExpressions"][0]["key"] for t in terms]
    assert {"feature.node.kubernetes.io/pci-10de.present", "feature.node.kubernetes.io/pci-0302_10de.present",
            "feature.node.kubernetes.io/pci-0300_10de.present", "nvidia.com/gpu.present"} <= set(keys)
    assert list(plugin.tolerations) == [{"key": NVIDIA_GPU.pool_taint.key, "operator": "Exists",
                                         "effect": "NoSchedule"}]
    assert plugin.publishes_slices_for == NVIDIA_GPU.name


def test_nvidia_values_replace_tolerations_and_compute_domains_add_a_controller():
    values = {"kubeletPlugin": {"tolerations": [{"operator": "Exists"}]},
              "resources": {"computeDomains": {"enabled": True}}}
    items = by_name(workloads(NVIDIA_DRA_DRIVER.key, values))
    assert list(items["dra-driver-nvidia-gpu-kubelet-plugin"].tolerations) == [{"operator": "Exists"}]
    assert items["dra-driver-nvidia-gpu-controller"].placement is Placement.SYSTEM


def test_amd_operands_follow_the_device_config():
    items = by_name(workloads(AMD_GPU_OPERATOR.key, rendered(AMD_GPU_OPERATOR), installed()))
    dra = items["inferplane-dra-driver"]
    metrics = items["inferplane-metrics-exporter"]
    for operand in (dra, metrics):
        assert operand.kind == "DaemonSet" and operand.namespace == "kube-amd-gpu"
        assert dict(operand.node_selector) == {"feature.node.kubernetes.io/amd-gpu": "true"}
        assert list(operand.tolerations) == [{"key": AMD_GPU.pool_taint.key, "operator": "Exists",
                                              "effect": "NoSchedule"}]
    assert dra.publishes_slices_for == AMD_GPU.name and metrics.publishes_slices_for is None
    # The device plugin and node labeller are off in DRA mode.
    assert not {n for n in items if "device-plugin" in n or "node-labeller" in n}
    assert items["amd-gpu-operator-gpu-operator-charts-controller-manager"].placement is Placement.SYSTEM


def test_amd_operands_default_to_the_operators_selector_and_no_tolerations():
    config = {"apiVersion": "amd.com/v1alpha1", "kind": "DeviceConfig",
              "metadata": {"name": "dc", "namespace": "ns"}, "spec": {"draDriver": {"enable": True}}}
    items = by_name(workloads(AMD_GPU_OPERATOR.key, {}, {"x": config}))
    dra = items["dc-dra-driver"]
    assert dict(dra.node_selector) == {"feature.node.kubernetes.io/amd-gpu": "true"} and dra.tolerations == ()
    # The CRD's defaults turn the device plugin and node labeller on.
    assert {"dc-device-plugin", "dc-node-labeller"} <= set(items)


def test_without_a_device_config_the_operator_runs_no_operand():
    assert all(w.kind == "Deployment" for w in workloads(AMD_GPU_OPERATOR.key, rendered(AMD_GPU_OPERATOR), {}))


def test_nfd_worker_runs_wherever_its_tolerations_allow():
    items = by_name(workloads(NODE_FEATURE_DISCOVERY.key, rendered(NODE_FEATURE_DISCOVERY)))
    worker = items["node-feature-discovery-worker"]
    assert worker.kind == "DaemonSet" and worker.placement is Placement.EVERY_NODE
    assert dict(worker.node_selector) == {} and not worker.affinity
    assert {t["key"] for t in worker.tolerations} == {NVIDIA_GPU.pool_taint.key, AMD_GPU.pool_taint.key,
                                                      GAUDI.pool_taint.key}
    assert items["node-feature-discovery-master"].placement is Placement.SYSTEM


@pytest.mark.parametrize("key", ["cert-manager", "envoy-gateway", "kube-prometheus-stack", "lws"])
def test_neutral_controllers_tolerate_no_device_taint(key):
    component = next(c for c in CLOUDS["EKS"].components if c.key == key)
    controllers = [w for w in workloads(key, rendered(component, "EKS")) if w.kind != "DaemonSet"]
    assert controllers
    for w in controllers:
        assert w.placement is Placement.SYSTEM
        assert w.tolerations == ()


def test_node_exporter_is_a_node_agent_on_every_node():
    items = by_name(workloads("kube-prometheus-stack", {}))
    exporter = items["kube-prometheus-stack-prometheus-node-exporter"]
    assert exporter.placement is Placement.EVERY_NODE
    assert list(exporter.tolerations) == [{"effect": "NoSchedule", "operator": "Exists"}]


@pytest.mark.parametrize("defaults,values,merged", [
    ({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}, {"a": {"b": 3, "c": 2}}),  # maps merge
    ({"t": [1, 2]}, {"t": [3]}, {"t": [3]}),  # lists replace
    ({"a": {"b": 1}}, {"a": None}, {}),  # null deletes
    ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
])
def test_helm_merge(defaults, values, merged):
    assert helm_merge(defaults, values) == merged


def test_amd_operator_runs_its_manager_and_nothing_else_with_the_catalogs_values():
    items = by_name(workloads(AMD_GPU_OPERATOR.key, rendered(AMD_GPU_OPERATOR), {}))
    assert list(items) == ["amd-gpu-operator-gpu-operator-charts-controller-manager"]
    assert items["amd-gpu-operator-gpu-operator-charts-controller-manager"].crash is None


def test_amd_manager_crashes_when_kmm_is_skipped_but_still_watched():
    # The chart's defaults keep the remediation workflow controller and kmm.watch on.
    items = by_name(workloads(AMD_GPU_OPERATOR.key, {"kmm": {"enabled": False}}, {}))
    assert set(items) == {"amd-gpu-operator-gpu-operator-charts-controller-manager",
                          "amd-gpu-operator-workflow-controller"}
    assert items["amd-gpu-operator-gpu-operator-charts-controller-manager"].crash == (
        "kmm.watch is on but kmm.enabled is off: the KMM Module CRDs are not installed, so the manager's watch fails")
