"""The fleet scheduler, reading classes, and DRA allocation, reading slices, agree: a class is read with what its
driver publishes for its model, so a selector on a value the class does not state places where DRA then allocates,
and one no device meets places nowhere instead of leaving a pod Pending."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inferplane.engine.control_plane import ControlPlane

AMD = Path(__file__).resolve().parents[2] / "recipes" / "qwen2.5-0.5b-amd"


def apply(tmp_path, selector):
    klass = yaml.safe_load((AMD / "class.yaml").read_text())
    # The class names its model by productName alone: its deviceID and memory are the driver's.
    klass["spec"]["devices"][0]["attributes"] = {"productName": {"string": "AMD_Instinct_MI325X_OAM"}}
    model = yaml.safe_load((AMD / "model.yaml").read_text())
    model["spec"]["template"]["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0]["selectors"][1] = \
        {"cel": selector}
    (tmp_path / "class.yaml").write_text(yaml.safe_dump(klass))
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    runtime = ControlPlane(None)
    result = runtime.apply([tmp_path / "class.yaml", tmp_path / "model.yaml",
                            *(AMD / f for f in ("cache.yaml", "cluster.yaml", "service.yaml"))])
    assert result.admission.ok and result.report.converged
    (deployment,) = runtime.list("ModelDeployment")
    return runtime, deployment


@pytest.mark.parametrize("selector", [
    'device.attributes["gpu.amd.com"].deviceID == "0x74a5"',
    'device.capacity["gpu.amd.com"].memory.compareTo(quantity("240Gi")) >= 0',
    'device.attributes["gpu.amd.com"].partitionProfile == "spx_nps1"',
])
def test_a_value_only_the_driver_states_places_and_allocates(tmp_path, selector):
    runtime, deployment = apply(tmp_path, selector)
    assert deployment["status"]["replicas"] == {"total": 1, "ready": 1}
    claims = [o for o in runtime.store.cluster_objects("amd-lab")["amd-lab"] if o["kind"] == "ResourceClaim"]
    assert [r["device"] for c in claims for r in c["status"]["allocation"]["devices"]["results"]] == ["gpu-1-128"]


def test_a_value_no_device_publishes_places_nowhere(tmp_path):
    # 256Gi is the MI325X's nominal memory; the driver reports less (KFD's VRAM), so nothing is placed and no
    # pod waits on a cluster for a device that will never come.
    runtime, deployment = apply(tmp_path, 'device.capacity["gpu.amd.com"].memory.compareTo(quantity("256Gi")) >= 0')
    assert deployment["status"]["replicas"]["total"] == 0
    assert runtime.list("ModelReplica") == []
    assert not [o for o in runtime.store.cluster_objects("amd-lab")["amd-lab"]
                if o["kind"] == "Pod" and "inferplane.dev/replica" in o["metadata"].get("labels", {})]
    scheduled = next(c for c in deployment["status"]["conditions"] if c["type"] == "Scheduled")
    assert "memory = 262128Mi" in scheduled["message"]
