"""ModelDeployment and ModelReplica are Modelplane v0.3.1's, field for field: its published manifests
are admitted once the group is rewritten, and our generated schemas are its XRDs' schemas."""

import copy
import re
from pathlib import Path

import pytest
import yaml

from inferplane import cel
from inferplane.admission import admit_manifests
from inferplane.admission.manifests import Manifest
from inferplane.api import ModelDeployment, ModelReplica
from inferplane.api.xrd import openapi_schema, xrd
from inferplane.cli.views import get_table

MODELPLANE = Path(__file__).resolve().parents[2] / "inferplane" / "data" / "modelplane-v0.3.1"


def rewritten(text: str) -> str:
    return text.replace("modelplane.ai", "inferplane.dev")


def modelplane_documents(kind: str) -> list[Manifest]:
    found = []
    for path in sorted((MODELPLANE / "manifests").rglob("*.yaml")):
        for index, body in enumerate(yaml.safe_load_all(rewritten(path.read_text()))):
            if body and body.get("kind") == kind:
                found.append(Manifest(f"{path.relative_to(MODELPLANE / 'manifests')}#{index}", body))
    return found


def test_every_modelplane_model_deployment_manifest_is_admitted():
    manifests = modelplane_documents("ModelDeployment")
    result = admit_manifests(manifests)
    assert result.errors == []
    assert sorted((m.source, o.metadata.namespace, o.metadata.name, o.spec.replicas) for m, o in result.admitted) == [
        ("concepts/model-deployment-multinode.yaml#0", "ml-team", "qwen3-coder", 1),
        ("concepts/model-deployment.yaml#0", "ml-team", "qwen3-8b", 1),
        ("examples/kimi-k2/model-deployment.yaml#0", "ml-team", "kimi-k2", 1),
        ("examples/laguna/model-deployment-sglang.yaml#0", "ml-team", "laguna", 1),
        ("examples/laguna/model-deployment.yaml#0", "ml-team", "laguna", 1),
        ("examples/nemotron-3.5-lightning/model-deployment.yaml#0", "ml-team", "nemotron-lightning", 1),
        ("examples/qwen2.5-72b/model-deployment.yaml#0", "ml-team", "qwen-72b", 2),
        ("examples/qwen3-coder/model-deployment-fp8.yaml#0", "ml-team", "qwen3-coder-sgl", 1),
        ("examples/qwen3-coder/model-deployment.yaml#0", "ml-team", "qwen3-coder", 1),
        ("getting-started/aks/model-deployment-west.yaml#0", "ml-team", "qwen-west", 1),
        ("getting-started/aks/model-deployment.yaml#0", "ml-team", "qwen-demo", 1),
        ("getting-started/eks/model-deployment-west.yaml#0", "ml-team", "qwen-west", 1),
        ("getting-started/eks/model-deployment.yaml#0", "ml-team", "qwen-demo", 1),
        ("getting-started/gke/model-deployment-west.yaml#0", "ml-team", "qwen-west", 1),
        ("getting-started/gke/model-deployment.yaml#0", "ml-team", "qwen-demo", 1),
        ("getting-started/nebius/model-deployment-scale.yaml#0", "ml-team", "qwen-west", 1),
        ("getting-started/nebius/model-deployment.yaml#0", "ml-team", "qwen-demo", 1),
        ("overview/model-deployment.yaml#0", "ml-team", "qwen-demo", 1),
        ("reference/modeldeployments.yaml#0", "ml-team", "qwen3-8b", 2),
    ]


def test_a_gang_is_read_with_its_defaults():
    (manifest,) = [m for m in modelplane_documents("ModelDeployment")
                   if m.source.startswith("concepts/model-deployment-multinode")]
    (_, deployment), = admit_manifests([manifest]).admitted
    spec = deployment.spec.template.spec
    (engine,) = spec.engines
    leader, worker = engine.members
    assert (spec.model_cache_ref.name, spec.serving, engine.copies) == ("qwen3-coder", None, 1)
    assert (leader.role, leader.worker, worker.role, worker.worker.nodes) == ("Leader", None, "Worker", 1)
    request = worker.node_selector.devices[0]
    assert (request.name, request.count, request.selectors[0].cel) == (
        "gpu", 8, 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("120Gi")) >= 0\n')
    assert leader.template.spec.containers[0].command[:2] == ["/bin/sh", "-c"]


def _without_prose(node):
    """A schema without descriptions (ours are our own words), whitespace folded in rules."""
    if isinstance(node, dict):
        return {k: _without_prose(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_prose(v) for v in node]
    if isinstance(node, str):
        return re.sub(r"\s+", " ", node).strip()
    return node


# Where we are deliberately stricter: an engine's name names Kubernetes workloads, so it must be a DNS label.
ENGINE_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


@pytest.mark.parametrize("kind, plural, engines_at", [
    (ModelDeployment, "modeldeployments", ("template", "spec", "engines")),
    (ModelReplica, "modelreplicas", ("engines",)),
], ids=["ModelDeployment", "ModelReplica"])
def test_spec_schema_is_modelplanes(kind, plural, engines_at):
    theirs = yaml.safe_load(rewritten((MODELPLANE / "apis" / plural / "definition.yaml").read_text()))
    theirs = theirs["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    ours = copy.deepcopy(openapi_schema(kind)["properties"]["spec"])
    node = ours
    for name in engines_at:
        node = node["properties"][name]
    assert node["items"]["properties"]["name"].pop("pattern") == ENGINE_NAME_PATTERN
    # Our addition to a device request: `capacity.requests`, a share of each device (DRA consumable capacity).
    member = node["items"]["properties"]["members"]["items"]["properties"]
    requests = (member["deviceRequests"] if kind is ModelReplica else
                member["nodeSelector"]["properties"]["devices"])["items"]["properties"]
    capacity = requests.pop("capacity")
    assert capacity["properties"]["requests"]["additionalProperties"]["x-kubernetes-int-or-string"] is True
    if kind is ModelReplica:
        # Our one addition to the replica: the deployment's tolerations, verbatim, for the engine pods.
        deployments = openapi_schema(ModelDeployment)["properties"]["spec"]["properties"]["template"]
        assert _without_prose(ours["properties"].pop("tolerations")) == _without_prose(
            deployments["properties"]["spec"]["properties"]["tolerations"])
    assert _without_prose(ours) == _without_prose(theirs)


def test_deployment_xrd_serves_the_scale_subresource_and_columns():
    version = xrd(ModelDeployment)["spec"]["versions"][0]
    assert version["subresources"] == {"scale": {"specReplicasPath": ".spec.replicas",
                                                 "statusReplicasPath": ".status.replicas.total"}}
    assert version["additionalPrinterColumns"] == [
        {"name": "REPLICAS", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "READY", "type": "integer", "jsonPath": ".status.replicas.ready"},
        {"name": "CLUSTERS", "type": "string", "jsonPath": ".status.clusters"}]
    assert "subresources" not in xrd(ModelReplica)["spec"]["versions"][0]


def test_get_md_shows_replicas_ready_and_clusters():
    def deployment(name, status):
        return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "ModelDeployment",
                "metadata": {"name": name, "namespace": "ml-team"}, "spec": {"replicas": 3}, **status}

    # AGE, last, depends on the clock: left out.
    assert [line.rsplit("   ", 1)[0].rstrip() for line in get_table([
        deployment("qwen3-8b", {"status": {"replicas": {"total": 3, "ready": 2}, "clusters": ["eks-a", "gke-b"]}}),
        deployment("new", {}),
    ], namespaces=True).splitlines()] == [
        "NAMESPACE   NAME       REPLICAS   READY    CLUSTERS",
        "ml-team     qwen3-8b   3          2        eks-a,gke-b",
        "ml-team     new        3          <none>   <none>",
    ]


REPLICA = """
apiVersion: inferplane.dev/v1alpha1
kind: ModelReplica
metadata: {name: qwen3-8b-eks-a-0, namespace: ml-team}
spec:
  clusterName: eks-a
  engines:
    - name: qwen3-8b
      members:
        - nodePoolName: l4
          deviceRequests:
            - name: gpu
              deviceClassName: gpu.nvidia.com
              selectors: [{cel: 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0'}]
          template:
            spec:
              containers: [{name: engine, image: vllm/vllm-openai:v0.23.0}]
"""


def test_a_replica_pinned_to_a_cluster_is_admitted_with_defaults():
    (_, replica), = admit_manifests([Manifest("replica.yaml", yaml.safe_load(REPLICA))]).admitted
    (engine,) = replica.spec.engines
    (member,) = engine.members
    assert (replica.spec.cluster_name, engine.copies, member.role, member.node_pool_name) == (
        "eks-a", 1, "Standalone", "l4")
    assert (member.device_requests[0].device_class_name, member.device_requests[0].count) == ("gpu.nvidia.com", 1)


def test_a_replica_whose_engine_claims_nothing_is_refused():
    body = yaml.safe_load(REPLICA)
    member = body["spec"]["engines"][0]["members"][0]
    member["deviceRequests"][0]["selectors"] = [{"cel": "device.driver"}]
    body["spec"]["engines"].append({"name": "coordinator", "members": [
        {"nodePoolName": "l4", "worker": {"nodes": 1}, "template": member["template"]}]})
    result = admit_manifests([Manifest("replica.yaml", body)])
    assert [str(e) for e in result.errors] == [
        "replica.yaml: ModelReplica/qwen3-8b-eks-a-0: spec.engines[1]: at least one member of an engine must carry "
        "deviceRequests",
        "replica.yaml: ModelReplica/qwen3-8b-eks-a-0: spec.engines[1].members[0]: worker may only be set on a Worker "
        "member",
        "replica.yaml: ModelReplica/qwen3-8b-eks-a-0: spec.engines[0].members[0].deviceRequests[0].selectors[0].cel: "
        "must evaluate to bool, not string: compare the value, e.g. device.driver == \"gpu.nvidia.com\"",
    ]


RECIPES = Path(__file__).resolve().parents[2] / "recipes"
SERVING_RECIPES = ("qwen2.5-0.5b-amd", "qwen2.5-0.5b-cpu", "qwen2.5-0.5b-nvidia-eks")


def class_devices(klass):
    """A class's claimable devices as a selector sees them, with their counts (a class device has a
    ResourceSlice device's shape)."""
    return [(cel.Device.from_resource_slice(device["driver"], device), device.get("count", 1))
            for device in klass["spec"]["devices"] if device.get("claim", "DRA") == "DRA"]


def test_each_recipe_deployment_selects_its_own_recipes_class_and_no_other():
    classes = {}
    for recipe in SERVING_RECIPES:
        (klass,) = yaml.safe_load_all((RECIPES / recipe / "class.yaml").read_text())
        classes[klass["metadata"]["name"]] = class_devices(klass)
    selected = {}
    for recipe in SERVING_RECIPES:
        (_, deployment), = admit_manifests([Manifest(recipe, yaml.safe_load((RECIPES / recipe / "model.yaml")
                                                                            .read_text()))]).admitted
        (member,) = deployment.spec.template.spec.engines[0].members
        selected[recipe] = sorted(
            name for name, devices in classes.items()
            if all(any(count >= request.count and all(cel.selector(s.cel).matches(device) for s in request.selectors)
                       for device, count in devices)
                   for request in member.node_selector.devices))
    assert selected == {"qwen2.5-0.5b-amd": ["amd-mi325x"], "qwen2.5-0.5b-cpu": ["civo-cpu-medium"],
                        "qwen2.5-0.5b-nvidia-eks": ["eks-l4"]}
