"""Intel's Gaudi resource driver: the stack Existing clusters get, where its kubelet plugin lands, what it
publishes, and the clouds that refuse it."""

import re

from inferplane.accelerators.catalog import components, sample_spec, supported_drivers, unsupported_claims
from inferplane.accelerators.gaudi import GAUDI_DRA_DRIVER, SLICES
from inferplane.accelerators.registry import DEVICE_CLASSES
from inferplane.accelerators.workloads import Placement, workloads
from inferplane.api.drivers import GAUDI


def test_existing_clusters_install_nfd_and_the_chart_for_gaudi_alone():
    keys = [c.key for c in components("Existing", {GAUDI.name}) if not c.neutral]
    assert keys == ["node-feature-discovery", "intel-gaudi-resource-driver"]
    assert GAUDI_DRA_DRIVER.chart.repository == "oci://ghcr.io/intel/intel-resource-drivers-for-kubernetes"


def test_no_cloud_of_ours_serves_gaudi_and_the_gate_says_so():
    for cloud in ("EKS", "GKE", "AKS", "Nebius", "Vultr", "Civo"):
        assert GAUDI.name not in supported_drivers(cloud)
        assert unsupported_claims(cloud, {"gaudi2": [GAUDI.name]}) == {"gaudi2": [GAUDI.name]}
    assert unsupported_claims("Existing", {"gaudi2": [GAUDI.name]}) == {}


def test_the_kubelet_plugin_selects_the_node_feature_rules_label_and_tolerates_the_pool_taint():
    (plugin,) = workloads(GAUDI_DRA_DRIVER.key, GAUDI_DRA_DRIVER.values(sample_spec("Existing")))
    assert (plugin.kind, plugin.name, plugin.namespace, plugin.container) == (
        "DaemonSet", "intel-gaudi-resource-driver-kubelet-plugin", "intel-gaudi-resource-driver", "kubelet-plugin")
    assert dict(plugin.node_selector) == {"intel.feature.node.kubernetes.io/gaudi": "true"}
    assert {"key": GAUDI.pool_taint.key, "operator": "Exists", "effect": "NoSchedule"} in plugin.tolerations
    assert plugin.placement is Placement.DRIVERS and plugin.drivers == {GAUDI.name}
    assert plugin.publishes_slices_for == GAUDI.name
    # Without the NodeFeatureRule the chart's DaemonSet has no nodeSelector at all.
    (bare,) = workloads(GAUDI_DRA_DRIVER.key, {})
    assert dict(bare.node_selector) == {}


def test_a_gaudi_device_is_published_as_the_driver_names_it():
    attributes = {f"{GAUDI.name}/model": {"string": "Gaudi3"}}
    device = SLICES.device("node-0", 0, 8, attributes, {})
    # DeviceUIDFromPCIinfo: the PCI address with '-' for ':' and '.', then the PCI device id.
    assert re.fullmatch(r"0000-[0-9a-f]{2}-00-0-0x1030", device.name)
    assert set(device.attributes) == {f"{GAUDI.name}/{k}" for k in ("model", "serial", "healthy", "pciRoot")} | {
        "resource.kubernetes.io/pcieRoot"}
    root = device.attributes["resource.kubernetes.io/pcieRoot"]["string"]
    assert device.attributes[f"{GAUDI.name}/pciRoot"] == {"string": root.removeprefix("pci0000:")}
    assert device.capacity == {}


def test_the_device_class_is_the_charts():
    assert DEVICE_CLASSES[GAUDI.device_class].selectors == ('device.driver == "gaudi.intel.com"',)
