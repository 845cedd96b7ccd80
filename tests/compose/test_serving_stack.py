"""ServingStack composition: the join per cloud, the values that matter, conditions, readiness, CRDs."""

import json

import pytest

from inferplane.api.json_data import json_copy
from hypothesis import given
from hypothesis import strategies as st

from inferplane.accelerators.catalog import CLOUDS, NEUTRAL, supported_drivers
from inferplane.api.drivers import AMD_GPU, CPU, DRANET, DRIVERS, GAUDI, NVIDIA_GPU
from inferplane.api.cloud import PROVIDERS, SOURCES
from inferplane.compose.base import Request
from inferplane.compose.serving_stack import compose_serving_stack

NV, AMD, CPU_, NET, HPU = NVIDIA_GPU.name, AMD_GPU.name, CPU.name, DRANET.name, GAUDI.name
UNKNOWN = "tpu.example.com"
ABSENT = object()

# What the cluster's gateway brings: Envoy Gateway, its class and Gateway, and what resolves a
# PrefillDecode replica's InferencePool backends (the Inference Extension's CRDs and Envoy AI Gateway).
GATEWAY_KEYS = {"release-envoy-gateway", "object-gateway-class", "object-gateway",
                "object-crd-inferenceobjectives-inference-networking-x-k8s-io",
                "object-crd-inferencepools-inference-networking-k8s-io",
                "object-crd-inferencepools-inference-networking-x-k8s-io", "release-ai-gateway-crds",
                "release-ai-gateway"}
NEUTRAL_KEYS = {"release-cert-manager", *GATEWAY_KEYS, "release-kube-prometheus-stack", "release-lws"}
NVIDIA_KEYS = {"release-dra-driver-nvidia-gpu", "object-nvidia-critical-pods-quota", "release-dcgm-exporter"}
CPU_KEYS = {"release-dra-driver-cpu"}
# GKE pools leave the driver to Google's installer DaemonSet, which the stack composes.
GKE_NVIDIA_KEYS = NVIDIA_KEYS | {"object-nvidia-driver-installer"}
NFD_KEYS = {"release-node-feature-discovery"}
AMD_KEYS = {"release-amd-gpu-operator", "object-amd-device-config"}
GAUDI_KEYS = {"release-intel-gaudi-resource-driver"}


def stack(cloud, drivers=ABSENT, name="stack-1", cluster="cluster-1", **spec):
    body = {"source": cloud, "clusterName": cluster, **spec}
    if drivers is not ABSENT:
        body["draDrivers"] = list(drivers)
    return {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack",
            "metadata": {"name": name}, "spec": body}


def compose(cloud, drivers=ABSENT, observed=None, **spec):
    return compose_serving_stack(Request(composite=stack(cloud, drivers, **spec), observed=observed or {}))


def values(response, key):
    return response.desired[key].resource["spec"]["forProvider"]["values"]


def manifest(response, key):
    return response.desired[key].resource["spec"]["forProvider"]["manifest"]


def condition(response, type_):
    found = response.condition(type_)
    return found.status, found.reason


# ---- the whole set of component keys, per cloud and claimed drivers

# (cloud, claimed drivers, expected keys beyond the neutral ones, drivers reported unsupported)
CASES = [
    *[row for cloud in PROVIDERS for nvidia in [GKE_NVIDIA_KEYS if cloud == "GKE" else NVIDIA_KEYS] for row in [
        (cloud, [], set(), []),
        (cloud, [NV], nvidia, []),
        (cloud, [CPU_], CPU_KEYS, []),
        (cloud, [NV, CPU_], nvidia | CPU_KEYS, []),
        (cloud, [AMD], set(), [AMD]),
        # DRANET is served on EKS only, by AWS's chart; elsewhere it is unsupported.
        (cloud, [NET], {"release-aws-dranet"} if cloud == "EKS" else set(), [] if cloud == "EKS" else [NET]),
    ]],
    ("Existing", [], set(), []),
    ("Existing", [NV], NFD_KEYS | NVIDIA_KEYS, []),
    ("Existing", [AMD], NFD_KEYS | AMD_KEYS, []),
    ("Existing", [CPU_], CPU_KEYS, []),
    ("Existing", [NET], set(), [NET]),
    ("Existing", [NV, CPU_], NFD_KEYS | NVIDIA_KEYS | CPU_KEYS, []),
    ("Existing", [NV, AMD, CPU_], NFD_KEYS | NVIDIA_KEYS | AMD_KEYS | CPU_KEYS, []),
    ("Existing", [HPU], NFD_KEYS | GAUDI_KEYS, []),
    # Intel's Gaudi driver is served on Existing clusters only: no cloud of ours offers Gaudi2/Gaudi3.
    ("EKS", [HPU, NV], NVIDIA_KEYS, [HPU]),
    ("GKE", [AMD, NV, UNKNOWN], GKE_NVIDIA_KEYS, [AMD, UNKNOWN]),
]


@pytest.mark.parametrize("cloud,drivers,extra,unsupported", CASES,
                         ids=[f"{c}-{'+'.join(d) or 'none'}" for c, d, _, _ in CASES])
def test_component_keys(cloud, drivers, extra, unsupported):
    response = compose(cloud, drivers)

    assert set(response.desired) == NEUTRAL_KEYS | extra
    assert response.status["components"] == [key.split("-", 1)[1] for key in response.desired]
    if unsupported:
        assert condition(response, "DriversSupported") == ("False", "UnsupportedDrivers")
        message = response.condition("DriversSupported").message
        assert f"claims {', '.join(unsupported)}, which {cloud} clusters cannot serve" in message
        assert f"{cloud} clusters support {', '.join(supported_drivers(cloud))}" in message
        assert [(e.type, e.reason) for e in response.events] == [("Warning", "UnsupportedDrivers")]
    else:
        assert condition(response, "DriversSupported") == ("True", "AllSupported")
        assert response.events == []


def test_the_eks_unsupported_message_reads_as_documented():
    message = compose("EKS", [AMD]).condition("DriversSupported").message
    assert message.startswith("ServingStack stack-1 claims gpu.amd.com, which EKS clusters cannot serve; "
                              "EKS clusters support dra.cpu, dra.net, gpu.nvidia.com, neuron.aws.com. Nothing is installed for it")


# ---- absent versus empty draDrivers


@pytest.mark.parametrize("cloud", SOURCES)
def test_absent_dra_drivers_install_the_clouds_full_list(cloud):
    response = compose(cloud)
    assert response.status["components"] == [c.key for c in CLOUDS[cloud].components]
    assert condition(response, "DriversSupported") == ("True", "NotStamped")


@pytest.mark.parametrize("cloud", SOURCES)
def test_empty_dra_drivers_install_the_neutral_components_only(cloud):
    response = compose(cloud, [])
    assert response.status["components"] == [c.key for c in NEUTRAL]
    assert condition(response, "DriversSupported") == ("True", "AllSupported")


def test_stamping_dra_drivers_applies_the_join():
    before, after = compose("Existing"), compose("Existing", [NV])
    assert set(before.desired) - set(after.desired) == AMD_KEYS | CPU_KEYS | GAUDI_KEYS


# ---- the values that matter


@pytest.mark.parametrize("cloud", SOURCES)
def test_cpu_driver_stays_on_cpu_pools(cloud):
    response = compose(cloud, [CPU_])
    release = response.desired["release-dra-driver-cpu"].resource["spec"]["forProvider"]
    assert release["chart"] == {"name": "dra-driver-cpu", "repository": "oci://registry.k8s.io/dra-driver-cpu/charts",
                                "version": "0.3.0"}
    assert release["values"] == {
        "nodeSelector": {"inferplane.dev/cpu": "true"},
        "tolerations": [{"key": "inferplane.dev/cpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        "driverConfig": {"reservedCPUs": "0-1", "cpuDeviceMode": "grouped"},
    }


def test_aws_dranet_reaches_exactly_the_pools_whose_classes_claim_dranet(crossplane_crds):
    cpu_taint = {"key": "inferplane.dev/cpu", "value": "true", "effect": "NoSchedule"}
    gpu_taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    response = compose("EKS", [NET, NV, CPU_], poolTaints={NET: [cpu_taint, gpu_taint]},
                       kubeconfigSecretRef=KUBECONFIG)
    release = response.desired["release-aws-dranet"].resource
    assert crossplane_crds.validate(release) == []
    assert release["metadata"]["annotations"] == {"crossplane.io/external-name": "aws-dranet"}
    assert release["metadata"]["labels"] == {"inferplane.dev/component": "aws-dranet"}
    assert release["spec"] == {
        "providerConfigRef": {"kind": "ClusterProviderConfig", "name": "cluster-1"},
        "forProvider": {
            "chart": {"name": "aws-dranet", "repository": "https://aws.github.io/eks-charts", "version": "1.0.0"},
            "namespace": "kube-system",
            "values": {
                "nodeSelector": {"inferplane.dev/dranet": "true"},
                "tolerations": [
                    {"key": "inferplane.dev/cpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
                    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
                "deviceClass": {"create": True, "name": "efa.networking.k8s.aws"},
            }}}
    # The stack's other drivers' pool taints are not DRANET's to tolerate.
    only_gpu = compose("EKS", [NET, NV, CPU_], poolTaints={NET: [gpu_taint]})
    assert values(only_gpu, "release-aws-dranet")["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    # Unstamped (the cloud's full list): it tolerates nothing, so it reaches no pool of ours.
    assert values(compose("EKS"), "release-aws-dranet")["tolerations"] == []


@pytest.mark.parametrize("cloud", SOURCES)
def test_nvidia_driver_values(cloud):
    response = compose(cloud, [NV])
    got = values(response, "release-dra-driver-nvidia-gpu")
    assert got["gpuResourcesEnabledOverride"] is True
    assert got["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert got["kubeletPlugin"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                    "effect": "NoSchedule"}]
    assert got.get("nvidiaDriverRoot") == ("/home/kubernetes/bin/nvidia" if cloud == "GKE" else None)
    quota = manifest(response, "object-nvidia-critical-pods-quota")
    assert quota["kind"] == "ResourceQuota" and quota["metadata"]["namespace"] == "nvidia-dra-driver-gpu"
    assert quota["spec"]["scopeSelector"]["matchExpressions"] == [{
        "scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical", "system-cluster-critical"]}]
    assert response.desired["release-dra-driver-nvidia-gpu"].resource["spec"]["forProvider"]["namespace"] == \
        "nvidia-dra-driver-gpu"


def test_amd_operator_runs_in_dra_mode_without_driver_management():
    response = compose("Existing", [AMD])
    release = response.desired["release-amd-gpu-operator"].resource["spec"]["forProvider"]
    assert release["chart"] == {"name": "gpu-operator-charts", "repository": "https://rocm.github.io/gpu-operator",
                                "version": "v1.5.1"}
    assert release["namespace"] == "kube-amd-gpu"
    # KMM is skipped and unwatched; the remediation workflow controller and its Argo CRDs stay out.
    assert release["values"]["kmm"] == {"enabled": False, "watch": False}
    assert release["values"]["remediation"] == {"enabled": False, "installCRDs": False}
    assert release["values"]["node-feature-discovery"] == {"enabled": False}
    assert release["values"]["crds"] == {"defaultCR": {"install": False}}

    config = manifest(response, "object-amd-device-config")
    amd_toleration = [{"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert config["apiVersion"] == "amd.com/v1alpha1" and config["kind"] == "DeviceConfig"
    assert config["metadata"]["namespace"] == "kube-amd-gpu"
    spec = config["spec"]
    assert spec["selector"] == {"feature.node.kubernetes.io/amd-gpu": "true"}
    assert spec["driver"] == {"enable": False}
    assert spec["devicePlugin"]["enableDevicePlugin"] is False
    assert spec["draDriver"]["enable"] is True
    assert spec["draDriver"]["tolerations"] == amd_toleration
    assert ":" in spec["draDriver"]["image"] and not spec["draDriver"]["image"].endswith(":latest")
    assert spec["metricsExporter"]["image"] == "docker.io/rocm/device-metrics-exporter:v1.5.1"
    assert spec["metricsExporter"]["tolerations"] == amd_toleration


def test_nfd_reaches_both_gpu_pools():
    got = values(compose("Existing", [NV, AMD]), "release-node-feature-discovery")
    assert got["worker"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "amd.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        # Every driver whose nodes NFD labels: its worker must reach their pools whichever the stack serves.
        {"key": "intel.feature.node.kubernetes.io/gaudi", "operator": "Exists", "effect": "NoSchedule"},
    ]


# The stack's name and the component, with a hash that keeps stacks' resources apart.
NAMES = {"release-cert-manager": "stack-1-cert-manager-4020aa6798b0",
         "release-envoy-gateway": "stack-1-envoy-gateway-fa8d01d4a80d",
         "object-gateway-class": "stack-1-gateway-class-3b390c9f40b5",
         "object-gateway": "stack-1-gateway-85c56f7ee097",
         "object-crd-inferenceobjectives-inference-networking-x-k8s-io":
             "stack-1-crd-inferenceobjectives-inference-networki-570acc0b42b8",
         "object-crd-inferencepools-inference-networking-k8s-io":
             "stack-1-crd-inferencepools-inference-networking-k8-25b75433877e",
         "object-crd-inferencepools-inference-networking-x-k8s-io":
             "stack-1-crd-inferencepools-inference-networking-x-b584cfd4c4a3",
         "release-ai-gateway-crds": "stack-1-ai-gateway-crds-04cddb3d5007",
         "release-ai-gateway": "stack-1-ai-gateway-a5250d99e339",
         "release-kube-prometheus-stack": "stack-1-kube-prometheus-stack-837a083fafcc",
         "release-lws": "stack-1-lws-3442cea104fe",
         "release-dra-driver-nvidia-gpu": "stack-1-dra-driver-nvidia-gpu-6e9d784e98de",
         "release-dcgm-exporter": "stack-1-dcgm-exporter-9146506a2d9d",
         "object-nvidia-critical-pods-quota": "stack-1-nvidia-critical-pods-quota-6d2832e77874"}


def test_releases_and_objects_target_the_stacks_cluster():
    response = compose("EKS", [NV], cluster="prod-eu")
    for key, desired in response.desired.items():
        resource = desired.resource
        assert resource["spec"]["providerConfigRef"] == {"kind": "ClusterProviderConfig", "name": "prod-eu"}
        assert resource["metadata"]["namespace"] == "inferplane-system"
        component = key.split("-", 1)[1]
        assert resource["metadata"]["name"] == NAMES[key]
        assert resource["metadata"]["labels"] == {"inferplane.dev/component": component}
        if resource["kind"] == "Release":
            assert resource["metadata"]["annotations"] == {"crossplane.io/external-name": component}


def test_gateway_class_is_named_by_the_spec_and_the_gateway_can_be_switched_off():
    named = compose("Civo", [], gateway={"className": "edge"})
    assert manifest(named, "object-gateway-class")["metadata"]["name"] == "edge"
    assert manifest(named, "object-gateway") == {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
        "metadata": {"name": "inference-gateway", "namespace": "envoy-gateway-system"},
        "spec": {"gatewayClassName": "edge", "listeners": [
            {"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}]}}
    off = compose("Civo", [], gateway={"enabled": False})
    assert set(off.desired) == NEUTRAL_KEYS - GATEWAY_KEYS


def test_the_cluster_gateways_address_is_the_stacks():
    object_status = {"status": {"atProvider": {"manifest": {"status": {"addresses": [
        {"type": "IPAddress", "value": "198.18.140.244"}]}}}}}
    assert compose("Civo", []).status["gateway"] == {"address": None}
    assert compose("Civo", [], observed={"object-gateway": object_status}).status["gateway"] == {
        "address": "198.18.140.244"}


def test_values_are_shared_by_equal_stacks_and_refuse_changes_that_would_reach_every_stack():
    """Equal values are one copy for every stack (a fleet's stacks hold the same values thousands of times),
    never the catalog's own data: a change in place is refused, and a json_copy of them is a stack's own."""
    first, second = compose("Existing", [NV]), compose("Existing", [NV])
    shared = values(first, "release-dra-driver-nvidia-gpu")
    assert shared is values(second, "release-dra-driver-nvidia-gpu")
    with pytest.raises(TypeError, match="cannot be changed in place"):
        shared["kubeletPlugin"]["tolerations"].clear()
    own = json_copy(shared)
    own["kubeletPlugin"]["tolerations"].clear()
    assert values(compose("Existing", [NV]), "release-dra-driver-nvidia-gpu")["kubeletPlugin"]["tolerations"]


# ---- readiness


def ready(resource):
    return {**resource, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def test_stack_is_ready_when_every_composed_resource_is_observed_ready():
    first = compose("AKS", [CPU_])
    assert condition(first, "StackReady") == ("False", "Creating")
    assert all(d.ready is False for d in first.desired.values())

    observed = {key: ready(d.resource) for key, d in first.desired.items()}
    done = compose("AKS", [CPU_], observed=observed)
    assert condition(done, "StackReady") == ("True", "Available")
    assert all(d.ready is True for d in done.desired.values())

    del observed["release-dra-driver-cpu"]
    partial = compose("AKS", [CPU_], observed=observed)
    assert condition(partial, "StackReady") == ("False", "Creating")
    assert partial.condition("StackReady").message.endswith("waiting for release-dra-driver-cpu to become ready")


# ---- robustness and determinism


def test_an_invalid_stack_keeps_what_was_composed_and_says_why():
    live = compose("EKS", [NV])
    observed = {key: ready(d.resource) for key, d in live.desired.items()}
    broken = stack("EKS", [NV])
    broken["spec"]["source"] = "OpenStack"
    response = compose_serving_stack(Request(composite=broken, observed=observed))
    assert condition(response, "StackReady") == ("False", "InvalidSpec")
    assert "ServingStack stack-1 is invalid (spec.source" in response.condition("StackReady").message
    assert {key: d.resource for key, d in response.desired.items()} == \
        {key: d.resource for key, d in live.desired.items()}


def test_the_same_request_gives_byte_identical_output():
    def dump(response):
        return json.dumps([{k: d.resource for k, d in response.desired.items()}, response.status,
                           [c.to_dict() for c in response.conditions]], sort_keys=False)
    assert dump(compose("Existing", [CPU_, AMD, NV])) == dump(compose("Existing", [CPU_, AMD, NV]))


# ---- every composed resource is accepted by the providers' published CRDs


KUBECONFIG = {"name": "cluster-1-connection", "namespace": "inferplane-system", "key": "kubeconfig"}


@pytest.mark.parametrize("cloud", SOURCES)
def test_every_composed_resource_validates_against_the_provider_crds(cloud, crossplane_crds):
    response = compose(cloud, gateway={"className": "inference"}, kubeconfigSecretRef=KUBECONFIG)
    assert response.desired
    for key, desired in response.desired.items():
        assert crossplane_crds.validate(desired.resource) == [], key


# ---- properties over random clouds and claimed drivers

claims = st.lists(st.sampled_from(sorted(DRIVERS) + [UNKNOWN]), unique=True)


@given(cloud=st.sampled_from(SOURCES), claimed=claims, data=st.data())
def test_join_properties(cloud, claimed, data):
    response = compose(cloud, claimed)
    by_key = {c.key: c for c in CLOUDS[cloud].components}
    installed = [by_key[key] for key in response.status["components"]]
    supported = set(supported_drivers(cloud))

    # Every installed tagged component serves a claimed driver.
    assert all(c.neutral or c.dra_drivers & set(claimed) for c in installed)
    # Every claimed supported driver has a component.
    for driver in set(claimed) & supported:
        assert any(driver in c.dra_drivers for c in installed)
    # Neutral components are always present.
    assert [c for c in installed if c.neutral] == list(NEUTRAL)
    # Unsupported drivers are reported exactly when claimed.
    expected = ("False", "UnsupportedDrivers") if set(claimed) - supported else ("True", "AllSupported")
    assert condition(response, "DriversSupported") == expected
    # The order of draDrivers does not matter.
    shuffled = compose(cloud, data.draw(st.permutations(claimed)))
    assert {k: d.resource for k, d in shuffled.desired.items()} == {k: d.resource for k, d in response.desired.items()}
    assert list(shuffled.desired) == list(response.desired)
    assert shuffled.status == response.status
    assert [c.to_dict() for c in shuffled.conditions] == [c.to_dict() for c in response.conditions]


@pytest.mark.parametrize("composite", [{}, {"metadata": "x"}, {"metadata": {"name": "s"}, "spec": None}])
def test_garbage_never_raises(composite):
    response = compose_serving_stack(Request(composite=composite))
    assert condition(response, "StackReady") == ("False", "InvalidSpec")
    assert response.desired == {}


def test_provider_configs_point_every_release_at_the_clusters_kubeconfig():
    response = compose("GKE", [NV], kubeconfigSecretRef=KUBECONFIG)
    configs = {key: response.desired[key] for key in ("provider-config-helm", "provider-config-kubernetes")}
    assert {k: (d.resource["apiVersion"], d.resource["kind"], d.resource["metadata"], d.resource["spec"], d.ready)
            for k, d in configs.items()} == {
        "provider-config-helm": ("helm.m.crossplane.io/v1beta1", "ClusterProviderConfig", {"name": "cluster-1"},
                                 {"credentials": {"source": "Secret", "secretRef": KUBECONFIG}}, True),
        "provider-config-kubernetes": ("kubernetes.m.crossplane.io/v1alpha1", "ClusterProviderConfig",
                                       {"name": "cluster-1"},
                                       {"credentials": {"source": "Secret", "secretRef": KUBECONFIG}}, True),
    }
    references = {d.resource["spec"]["providerConfigRef"]["name"] for k, d in response.desired.items()
                  if k.startswith(("release-", "object-"))}
    assert references == {"cluster-1"}


def test_an_identity_secret_is_layered_on_both_provider_configs():
    identity = {"name": "lab-sa-key", "key": "credentials.json", "type": "NebiusServiceAccountCredentials"}
    response = compose("Existing", [NV], kubeconfigSecretRef=KUBECONFIG, identitySecretRef=identity)
    for key in ("provider-config-helm", "provider-config-kubernetes"):
        assert response.desired[key].resource["spec"] == {
            "credentials": {"source": "Secret", "secretRef": KUBECONFIG},
            "identity": {"type": "NebiusServiceAccountCredentials", "source": "Secret",
                         "secretRef": {"name": "lab-sa-key", "namespace": "inferplane-system",
                                       "key": "credentials.json"}}}


def test_without_a_kubeconfig_no_provider_config_is_composed():
    assert not any(key.startswith("provider-config") for key in compose("GKE", [NV]).desired)


def test_gke_installs_the_nvidia_driver_with_googles_cos_installer_pinned_to_a_commit():
    installer = manifest(compose("GKE", [NV]), "object-nvidia-driver-installer")
    assert (installer["kind"], installer["metadata"]["name"], installer["metadata"]["namespace"]) == (
        "DaemonSet", "nvidia-driver-installer", "kube-system")
    assert installer["metadata"]["annotations"] == {"inferplane.dev/source": (
        "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
        "f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml")}
    pod = installer["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["nvidia-driver-installer", "partition-gpus"]
    assert {"name": "NVIDIA_INSTALL_DIR_HOST", "value": "/home/kubernetes/bin/nvidia"} in pod["initContainers"][0]["env"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0] == {"key": "cloud.google.com/gke-accelerator", "operator": "Exists"}
    # No other cloud runs it: their GPU nodes come with the driver.
    assert "object-nvidia-driver-installer" not in compose("EKS", [NV]).desired
