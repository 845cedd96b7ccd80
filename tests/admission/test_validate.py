"""Admission: the bundled recipes pass, and every bad manifest gets its exact, actionable message."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from inferplane.admission import admit_manifests, admit_paths
from inferplane.admission.manifests import Manifest

HERE = Path(__file__).parent
BAD = HERE / "bad"
REPO = HERE.parents[1]

SELECTORS = "spec.template.spec.engines[0].members[0].nodeSelector.devices"
EXPECTED = {
    "accelerator-without-gpu.yaml": [
        "InferenceClass/accelerator-without-gpu: spec.devices: the provisioning block has an accelerator but no "
        "device claims a GPU driver: add a DRA device with driver one of gaudi.intel.com, gpu.amd.com, gpu.nvidia.com, "
        "or remove the accelerator"],
    "attribute-two-types.yaml": [
        "InferenceClass/two-types: spec.devices[0].attributes.productName: an attribute sets exactly one of "
        "string, version, bool or int: keep the one that types the value"],
    "bad-quantity.yaml": [
        "InferenceClass/bad-quantity: spec.devices[0].capacity.memory.value: must be a Kubernetes quantity such as "
        "80Gi, 500m or 4, got '80GB'"],
    "bare-capacity.yaml": [
        "InferenceClass/bare-capacity: spec.devices[0].capacity.memory: must be a mapping, got '80Gi': A device "
        "capacity as a ResourceSlice writes it: {value: <quantity>}."],
    "bad-selector.yaml": [
        "ModelDeployment/bad-selector: spec.template.spec.engines[0].members[0].nodeSelector.devices[0].selectors[0]"
        ".cel: not a valid CEL expression: at 1:37: Syntax error: no viable alternative at input '.'"],
    "cluster-two-blocks.yaml": [
        "InferenceCluster/two-blocks: spec.nodePools: a pool named system would collide with the System pool "
        "inferplane adds for the stack's own components: rename it",
        # Another source's block (vultr) and zones on Civo are ignored, as Modelplane ignores them.
        "InferenceCluster/two-blocks: spec.nodePools[0].maxNodeCount: nodeCount is above maxNodeCount, which the "
        "clouds refuse: raise maxNodeCount or lower nodeCount"],
    "cpu-beside-gpu.yaml": [
        "InferenceClass/cpu-beside-gpu: spec.devices: a provisioned class cannot claim dra.cpu alongside a GPU "
        "driver: a CPU claim could never allocate on a GPU pool; split the CPU devices into a class of their own"],
    "cpu-cluster-old-kubernetes.yaml#1": [
        "InferenceCluster/eks-cpu-old: spec.cluster.eks.kubernetesVersion: pool cpu uses class eks-cpu, which "
        "claims dra.cpu; that needs Kubernetes >= 1.36, and this cluster has 1.35 (declared): set "
        "spec.cluster.eks.kubernetesVersion to \"1.36\" or later"],
    "cpu-count-two.yaml": [
        "InferenceClass/cpu-count-two: spec.devices[0].count: a dra.cpu device must have count 1: every device "
        "would receive the whole CPU request; declare one device and size it with capacity.cpu"],
    "dra-limits.yaml": [
        "InferenceClass/dra-limits: spec.devices[0].attributes.productName.string: a string attribute is at most 64 "
        "characters: Kubernetes' DRA refuses a longer one in a ResourceSlice; shorten it",
        "InferenceClass/dra-limits: spec.devices[0].attributes.driverVersion.version: a version attribute must be a "
        "semantic version such as 9.0.0: Kubernetes' DRA refuses any other in a ResourceSlice; write "
        "major.minor.patch, or use a string attribute"],
    "dra-without-device-class.yaml": [
        "InferenceClass/no-device-class: spec.devices[0].deviceClassName: deviceClassName is required when claim "
        "is DRA: set it to the driver's DeviceClass (e.g. gpu.nvidia.com), or set claim: Synthetic for a device "
        "that is never claimed"],
    "deployment-rules.yaml": [f"ModelDeployment/bad-rules: {path}: {message}" for path, message in (
        ("spec.replicas", "must be at most 10, got 11: set it to 10 or less"),
        ("spec.template.metadata", "template.metadata.labels keys must not use the reserved inferplane.dev/ prefix"),
        ("spec.template.metadata", "template.metadata.labels keys must be valid Kubernetes label keys"),
        ("spec.template.spec", "PrefillDecode serving requires exactly one engine with phase Decode"),
        ("spec.template.spec.tolerations[0]", "an Equal toleration must set a key"),
        ("spec.template.spec.tolerations[1]", "an Exists toleration must not set a value"),
        ("spec.template.spec.engines[0]",
         "an engine must be either a single Standalone member or one Leader and one or more Workers"),
        ("spec.template.spec.engines[0].members[0].template.spec.containers",
         "the single container must be named 'engine'"),
        ("spec.template.spec.engines[1]",
         "at least one member of an engine must carry a nodeSelector requesting devices"),
        ("spec.template.spec.engines[1].members[0]", "worker may only be set on a Worker member"))],
    "deployment-selectors.yaml": [f"ModelDeployment/bad-selectors: {SELECTORS}{path}: {message}" for path, message in (
        ("[1].selectors[2]", "must set at least one of: cel"),
        ("[0].selectors[1].cel",
         "must evaluate to bool, not string: compare the value, e.g. device.driver == \"gpu.nvidia.com\""),
        ("[0].selectors[2].cel", "not a valid CEL expression: at 1:5: undeclared reference to 'node.labels' (in "
                                 "container '')"),
        ("[1].selectors[0].cel", "estimated cost 4,597,126 exceeds the budget of 1,000,000 per selector (Kubernetes' "
                                 "CELSelectorExpressionMaxCost, about 1 ms of evaluation): nest fewer comprehensions"),
        ("[1].selectors[1].cel", "not a valid CEL expression: at 1:72: Syntax error: mismatched input '<EOF>' "
                                 "expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
                                 "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"))],
    "duplicate-device.yaml": [
        "InferenceClass/duplicate-device: spec.devices[1]: duplicate entry name=gpu (also at [0]): name must be "
        "unique"],
    "gke-gpu-without-accelerator.yaml": [
        "InferenceClass/gke-gpu-without-accelerator: spec.provisioning.gke: a GKE class that claims a GPU driver "
        "needs provisioning.gke.accelerator: GKE attaches the GPU from it (e.g. type: nvidia-l4, count: 1)"],
    "malformed.yaml:8:6": [
        "malformed YAML: expected <block end>, but found '<block mapping start>': fix the syntax at this line"],
    "many-errors.yaml": [
        "InferenceClass/many-errors: spec.devices[0].capacity.memory.value: must be a Kubernetes quantity such as "
        "80Gi, 500m or 4, got 'lots'",
        "InferenceClass/many-errors: spec.devices[0].claim: 'dra' is not allowed: use one of DRA, Synthetic",
        "InferenceClass/many-errors: spec.devices[0].count: must be at least 1, got -1: set it to 1 or more"],
    "provider-without-block.yaml": [
        "InferenceClass/gke-without-block: spec.provisioning: provisioning.provider is GKE, so provisioning.gke "
        "is required: add it"],
    "modelplane-group.yaml": [
        "InferenceClass/l4-1x: apiVersion modelplane.ai/v1alpha1 is Modelplane's API group; inferplane serves the "
        "same kinds, field for field, as inferplane.dev: rewrite the group everywhere, label keys included, e.g. "
        "sed -i 's/modelplane\\.ai/inferplane.dev/g' FILE"],
    "unknown-field.yaml": [
        "InferenceClass/unknown-field: spec.colour: unknown field \"colour\": remove it (known fields: "
        "description, devices, provisioning)",
        "InferenceClass/unknown-field: spec.devices[0].deviceClassname: unknown field \"deviceClassname\": did "
        "you mean deviceClassName?"],
    "unknown-kind.yaml": [
        "InferenceClas/unknown-kind: unknown kind InferenceClas (inferplane.dev/v1alpha1): did you mean "
        "InferenceClass?"],
    "vultr-minor-version.yaml": [
        "InferenceCluster/vultr-minor: spec.cluster.vultr.kubernetesVersion: must be a VKE version such as "
        "\"v1.36.1+3\" (VKE takes the exact build: `vultr-cli kubernetes versions` lists them), got '1.36' "
        "(Defaults to v1.36.1+3: dra.cpu, served on every cloud, needs Kubernetes 1.36)"],
    "wrong-api-version.yaml": [
        "InferenceClass/wrong-api-version: apiVersion inferplane.dev/v1 does not serve InferenceClass: use "
        "apiVersion: inferplane.dev/v1alpha1"],
    "zero-count.yaml": [
        "InferenceClass/zero-count: spec.devices[0].count: must be at least 1, got 0: set it to 1 or more"],
}


def _errors_by_source(result):
    found: dict[str, list[str]] = {}
    for error in result.errors:
        text = str(error)
        source, message = text.split(": ", 1)
        found.setdefault(source.removeprefix(f"{BAD}/"), []).append(message)
    return found


def test_every_bad_manifest_gets_its_exact_errors_all_at_once():
    result = admit_paths([BAD])
    assert _errors_by_source(result) == EXPECTED
    # The only thing admitted is the (valid) class beside the too-old cluster.
    assert [o.metadata.name for _, o in result.admitted] == ["eks-cpu"]


def test_bundled_recipes_are_admitted():
    result = admit_paths([REPO / "recipes"])
    assert result.errors == []
    kinds = {o.kind for _, o in result.admitted}
    assert kinds == {"InferenceClass", "InferenceCluster", "ModelDeployment", "InferenceGateway", "ModelService",
                     "ModelCache"}


def test_defaults_are_applied_as_the_api_server_would():
    body = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "l4"},
            "spec": {"devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}]}}
    result = admit_manifests([Manifest("inline", body)])
    (_, klass), = result.admitted
    device = klass.spec.devices[0]
    assert (device.claim, device.count) == ("DRA", 1)
    assert body["spec"]["devices"][0] == {"name": "gpu", "driver": "gpu.nvidia.com",
                                          "deviceClassName": "gpu.nvidia.com"}, "the input is never mutated"


def admit_cluster(name, cluster, pool, class_name):
    """Admit one InferenceCluster against the classes of the mixed-fleet recipe, already known."""
    body = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": name},
            "spec": {"cluster": cluster, "nodePools": [{"name": pool, "className": class_name}]}}
    known = admit_paths([REPO / "recipes/mixed-fleet/classes.yaml"])
    return admit_manifests([Manifest("inline", body)], known_classes={o.metadata.name: o for _, o in known.admitted})


def test_cpu_cluster_is_checked_against_classes_already_known():
    civo = {"region": "LON1", "kubernetesVersion": "1.34"}
    result = admit_cluster("c", {"source": "Civo", "civo": civo}, "cpu", "civo-cpu")
    assert [e.message for e in result.errors] == [
        "pool cpu uses class civo-cpu, which claims dra.cpu; that needs Kubernetes >= 1.36, and this cluster has "
        "1.34 (declared): set spec.cluster.civo.kubernetesVersion to \"1.36\" or later"]
    # Declaring 1.36 admits it.
    civo["kubernetesVersion"] = "1.36"
    assert admit_cluster("c", {"source": "Civo", "civo": civo}, "cpu", "civo-cpu").ok


def test_every_claimed_driver_is_checked_against_the_declared_version():
    """Not only CPU pools: the NVIDIA driver needs 1.34, so a GPU pool on 1.33 is refused."""
    gke = {"region": "us-central1", "kubernetesVersion": "1.33"}
    result = admit_cluster("g", {"source": "GKE", "gke": gke}, "l4", "gke-l4")
    assert [e.message for e in result.errors] == [
        "pool l4 uses class gke-l4, which claims gpu.nvidia.com; that needs Kubernetes >= 1.34, and this cluster "
        "has 1.33 (declared): set spec.cluster.gke.kubernetesVersion to \"1.34\" or later"]


def test_existing_cluster_may_leave_its_version_to_what_the_cluster_reports():
    existing = {"secretRef": {"name": "k"}}
    assert admit_cluster("lab", {"source": "Existing", "existing": existing}, "epyc", "lab-epyc").ok


@pytest.mark.parametrize("body, expected", [
    ({"kind": "InferenceClass", "metadata": {"name": "x"}}, "apiVersion missing: every manifest names its "
                                                             "apiVersion and kind"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "Bad_Name"},
      "spec": {"devices": [{"name": "a", "driver": "dra.cpu", "deviceClassName": "dra.cpu"}]}},
     "metadata.name: must be a lowercase DNS subdomain such as gpu.nvidia.com of at most 253 characters, got "
     "'Bad_Name'"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "eks.us-west"},
      "spec": {"cluster": {"source": "EKS", "eks": {"region": "us-west-2"}}}},
     "metadata.name: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending alphanumeric) "
     "of at most 63 characters, got 'eks.us-west': it is copied into the crossplane.io/composite label of "
     "everything composed for it"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
      "spec": {"cluster": {"source": "EKS", "eks": {"region": "us-west-2"}},
               "nodePools": [{"name": "GPU_pool", "className": "l4"}]}},
     "spec.nodePools[0].name: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending "
     "alphanumeric), got 'GPU_pool' (A DNS label: it becomes the inferplane.dev/pool node label value and part of "
     "composed resource names.)"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
      "spec": {"cluster": {"source": "Nebius", "nebius": {}},
               "nodePools": [{"name": "h100", "className": "h100", "fabric": {"type": "InfiniBand"}}]}},
     "spec.nodePools: a Nebius pool with fabric.type InfiniBand names its fabric: set fabric.infiniband.fabric "
     "(e.g. fabric-2, the fabric your GPU capacity is on)"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
      "spec": {"cluster": {"source": "AKS", "aks": {"location": "eastus"}},
               "nodePools": [{"name": "h100", "className": "h100",
                              "fabric": {"infiniband": {"fabric": "fabric-2"}}}]}},
     "spec.nodePools[0].fabric.infiniband: fabric.infiniband is only valid when fabric.type is InfiniBand: set "
     "type: InfiniBand or remove it"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
      "spec": {"cluster": {"source": "EKS", "eks": {"region": "us-west-2"}},
               "nodePools": [{"name": "p5", "className": "p5", "capacityBlock": {"capacityReservationId": "cr-XYZ"}}]}},
     "spec.nodePools[0].capacityBlock.capacityReservationId: must match ^cr-[0-9a-f]+$, got 'cr-XYZ' (The "
     "Capacity Reservation of an EC2 Capacity Block for ML, e.g. cr-0123456789abcdef0; used on EKS, ignored "
     "elsewhere)"),
    # The drivers an Existing cluster's owner runs: DNS subdomains, each once, on Existing clusters only.
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
      "spec": {"cluster": {"source": "EKS", "eks": {"region": "us-west-2"},
                           "existing": {"secretRef": {"name": "k"}, "preinstalledDrivers": ["gpu.example.com"]}}}},
     "spec.cluster.existing.preinstalledDrivers: preinstalledDrivers declares the drivers the owner of an Existing "
     "cluster runs, and this cluster is on EKS, where inferplane installs every driver: remove "
     "existing.preinstalledDrivers, or set source: Existing"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
      "spec": {"cluster": {"source": "Existing", "existing": {
          "secretRef": {"name": "k"}, "preinstalledDrivers": ["gpu.example.com", "dra.cpu", "gpu.example.com"]}}}},
     "spec.cluster.existing.preinstalledDrivers[2]: duplicate entry 'gpu.example.com' (also at [0]): a set lists "
     "each value once: remove it"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "c"},
      "spec": {"cluster": {"source": "Existing", "existing": {
          "secretRef": {"name": "k"}, "preinstalledDrivers": ["GPU.Example.com"]}}}},
     "spec.cluster.existing.preinstalledDrivers[0]: must be a lowercase DNS subdomain such as gpu.nvidia.com, got "
     "'GPU.Example.com'"),
    ({"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack", "metadata": {"name": "s"},
      "spec": {"source": "EKS", "clusterName": "s", "preinstalledDrivers": ["gpu.nvidia.com"]}},
     "spec.preinstalledDrivers: only an Existing cluster's owner runs drivers of its own; on a cloud the stack "
     "installs every driver: remove preinstalledDrivers"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "x"},
      "spec": {"devices": []}}, "spec.devices: must have at least 1 item"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "x"},
      "spec": {"devices": [{"name": "a", "driver": "dra.cpu", "deviceClassName": "dra.cpu", "count": "two"}]}},
     "spec.devices[0].count: must be an integer, got 'two'"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "x"},
      "spec": {"devices": [{"name": "a", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
                            "attributes": {"cc": {"version": "8.9"}}}]}},
     "spec.devices[0].attributes.cc.version: a version attribute must be a semantic version such as 9.0.0: "
     "Kubernetes' DRA refuses any other in a ResourceSlice; write major.minor.patch, or use a string attribute"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "x"},
      "spec": {"devices": [{"name": "a", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com",
                            "capacity": {"bad key!": {"value": "1"}}}]}},
     "spec.devices[0].capacity: keys must be names (numaNode) or qualified names (resource.kubernetes.io/numaNode)"),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "x"},
      "spec": {"devices": [{"name": "a", "driver": "dra.cpu", "deviceClassName": "dra.cpu",
                            "capacity": {"cpu": {"value": 1.5}}}]}},
     "spec.devices[0].capacity.cpu.value: must be a Kubernetes quantity such as 80Gi, 500m or 4, got 1.5: write a decimal "
     "as a string, e.g. \"1.5\""),
    ({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "x"},
      "spec": {"devices": [{"name": "a", "driver": "gpu.amd.com", "deviceClassName": "gpu.amd.com",
                            "attributes": {"cus": {"int": 2**63}}}]}},
     "spec.devices[0].attributes.cus.int: 9223372036854775808 does not fit an int64 (Kubernetes stores integers "
     "as 64-bit, -9223372036854775808 to 9223372036854775807): use a smaller number, or quote it if it is text"),
])
def test_single_mistakes(body, expected):
    result = admit_manifests([Manifest("inline", body)])
    messages = [f"{e.path}: {e.message}" if e.path else e.message for e in result.errors]
    assert messages == [expected]


def test_shapeless_manifest_gets_every_error_at_once():
    body = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": "x", "spec": None}
    result = admit_manifests([Manifest("inline", body)])
    assert [f"{e.path}: {e.message}" for e in result.errors] == [
        "metadata: required: add metadata with a name", "spec: must be a mapping, got None"]


def test_validate_command_exit_codes_and_output():
    bad = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", str(BAD)],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1] == "1 valid, 42 errors"
    good = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", str(REPO / "recipes")],
                          capture_output=True, text=True)
    assert good.returncode == 0, good.stderr
    assert good.stdout.splitlines()[0].split() == ["KIND", "NAME", "SOURCE"]


def test_a_message_hiding_a_secret_value_is_the_same_in_every_run(tmp_path):
    """The value is hidden in one order whatever the string hash (PYTHONHASHSEED) of this run."""
    manifest = tmp_path / "secret.yaml"
    manifest.write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: Hunter_2}\nstringData: {token: Hunter_2}\n")
    said = {subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", str(manifest)],
                           capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stderr
            for seed in range(8)}
    assert said == {f"error: {manifest}: Secret/Hunter_2: metadata.name: must be a lowercase DNS subdomain such as "
                    "gpu.nvidia.com of at most 253 characters, got ***\n0 valid, 1 error\n"}
