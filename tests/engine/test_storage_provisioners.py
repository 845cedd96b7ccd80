"""The simulated target cluster binds a ModelCache's claim only once its StorageClass's provisioner runs
there: a CSI driver a Helm chart installs (Nebius's csi-mounted-fs-path) must be a Ready Release on the
claim's own cluster; a driver the cloud runs itself (EFS, Filestore, Azure Files) binds at once."""

import pytest

from inferplane.api.managed import helm_release
from inferplane.clouds.nebius import NEBIUS_CSI_CHART
from inferplane.simulator.provider import SimulatedProvider, settled_status

KUBERNETES = "kubernetes.m.crossplane.io/v1alpha1"
HELM = "helm.m.crossplane.io/v1beta1"
READY = {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}


def provider_config(api_version, name, cluster):
    return {"apiVersion": api_version, "kind": "ClusterProviderConfig", "metadata": {"name": name},
            "spec": {"credentials": {"source": "Secret", "secretRef": {
                "name": f"{cluster}-connection", "namespace": "inferplane-system", "key": "kubeconfig"}}}}


def obj(config, manifest):
    return {"apiVersion": KUBERNETES, "kind": "Object", "metadata": {"name": manifest["metadata"]["name"]},
            "spec": {"providerConfigRef": {"kind": "ClusterProviderConfig", "name": config},
                     "forProvider": {"manifest": manifest}}}


CLAIM = obj("nebius-a", {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "modelcache-x"},
                         "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "inferplane-rwx-fs",
                                  "resources": {"requests": {"storage": "100Gi"}}}})


def storage_class(provisioner, config="nebius-a-storage"):
    return obj(config, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                        "metadata": {"name": "inferplane-rwx-fs"}, "provisioner": provisioner})


def csi_release(cluster="a", status=READY):
    chart = NEBIUS_CSI_CHART
    release = helm_release("csi", f"nebius-{cluster}-storage", (chart.name, chart.repository, chart.version),
                           chart.namespace, {})
    return {**release, "status": status}


# Each cluster: its stack's kubernetes config (named after it) and its storage configs (kubernetes, helm).
CONFIGS = [provider_config(api, name, f"nebius-{c}") for c in ("a", "b")
           for api, name in ((KUBERNETES, f"nebius-{c}"), (KUBERNETES, f"nebius-{c}-storage"), (HELM, f"nebius-{c}-storage"))]


def phase(*objects):
    by_kind = {}
    for o in [*CONFIGS, CLAIM, *objects]:
        by_kind.setdefault(o["kind"], []).append(o)
    return settled_status(CLAIM["spec"], lambda kind: by_kind.get(kind, []))["status"]["phase"]


@pytest.mark.parametrize("objects,expected", [
    ([storage_class("mounted-fs-path.csi.nebius.ai"), csi_release()], "Bound"),
    ([storage_class("mounted-fs-path.csi.nebius.ai")], "Pending"),  # no driver
    ([storage_class("mounted-fs-path.csi.nebius.ai"), csi_release(status={})], "Pending"),  # not installed yet
    ([storage_class("mounted-fs-path.csi.nebius.ai"), csi_release("b")], "Pending"),  # another cluster's
    ([storage_class("efs.csi.aws.com"), ], "Bound"),  # the cloud runs its driver
    ([], "Bound"),  # an Existing cluster's own class: its owner says it exists
], ids=["installed", "no-release", "release-not-ready", "other-clusters-release", "cloud-driver", "owners-class"])
def test_a_claim_binds_once_its_provisioner_runs_on_its_cluster(objects, expected):
    assert phase(*objects) == expected


def test_an_unbound_claim_is_observed_again_and_a_plain_secret_gets_no_status():
    provider = SimulatedProvider()
    pending = {**CLAIM, "status": {"atProvider": {"manifest": {"status": {"phase": "Pending"}}}}}
    bound = {**CLAIM, "status": {"atProvider": {"manifest": {"status": {"phase": "Bound"}}}}}
    assert provider.observes_others(pending) and not provider.observes_others(bound)
    status = provider.observe(CLAIM, lambda kind: {"ClusterProviderConfig": CONFIGS, "Object": [
        storage_class("mounted-fs-path.csi.nebius.ai")]}.get(kind, []))
    assert [c["status"] for c in status["conditions"] if c["type"] == "Ready"] == ["False"]
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c1-cloud-init", "namespace": "inferplane-system"},
              "type": "Opaque", "data": {"userData": "I2Nsb3VkLWNvbmZpZwo="}}
    assert provider.observe(secret) == {}
