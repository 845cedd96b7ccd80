"""ModelReplica composition: one replica's engine workloads on the cluster it is pinned to, as
provider-kubernetes Objects on that cluster's ClusterProviderConfig (named after the cluster, as
the serving stack composes it).

Per engine, `copies` of one serving unit: a Deployment for a Standalone member, a LeaderWorkerSet for
a Leader with its Workers. Each device request of a member becomes one `resource.k8s.io/v1`
ResourceClaimTemplate, which the member's pods claim and the engine container uses. Pods are pinned
to their member's pool by its label and tolerate exactly that pool's taints plus the deployment's own
tolerations: never a blanket toleration, which would let an engine onto another vendor's nodes. The
engine container is the user's, as written. One Service fronts every serving pod; PrefillDecode
serving adds the Gateway API Inference Extension InferencePool and its endpoint picker. An HTTPRoute on
the cluster's gateway serves the replica under /<namespace>/<replica>/, where its ModelEndpoint points.

Conditions this function sets:
- `Composed`: True (`Available`) once the workloads are composed; False with `InvalidSpec` (the
  replica cannot be read), `WaitingForCluster` (the cluster or a pool's class does not exist) or
  `UnknownPool` (a member names a pool the cluster does not have). Whenever it is False, what was
  composed before is kept as it is: a replica that cannot be composed never loses running engines.
- `EnginesRunning`: True when every engine workload's Object reports its pods running; False with
  `Creating` while the cluster has not reported yet, or with the workload Object's own reason
  (`Unschedulable`) and message, which names each pod that does not run, its nodes and why. The
  replica's Ready condition carries that message.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from pydantic import ValidationError

from inferplane import API_GROUP
from inferplane.accelerators.cpu import CPU_CAPACITY, pinned_cpu_resources
from inferplane.api.drivers import POOL_LABEL
from inferplane.api.inference_class import InferenceClass, read_class
from inferplane.api.inference_cluster import InferenceCluster
from inferplane.api.managed import PROVIDER_CONFIG_KIND, child_name
from inferplane.api.model_cache import CACHE_MOUNT_PATH, cache_volume_name
from inferplane.api.model_replica import ModelReplica, ReplicaEngine, ReplicaMember
from inferplane.compose.base import READY, Composer, Request, Requirement, Resource, Response, composite_name, \
    is_ready, validation_problems
from inferplane.compose.inference_cluster import class_requirement_key, pool_labels_and_taints, pool_role
from inferplane.compose.pool_views import pool_view
from inferplane.compose.serving_stack import OBJECT_API_VERSION
from inferplane.routing.gateway import CLUSTER_GATEWAY_NAME, CLUSTER_GATEWAY_NAMESPACE, GATEWAY_API_GROUP, \
    GATEWAY_API_VERSION, replica_prefix
# PHASE_LABEL: the endpoint picker's prefill and decode filters choose pods by it (prefill | decode).
from inferplane.routing.inference_extension import INFERENCE_EXTENSION_EXPERIMENTAL_GROUP, INFERENCE_POOL_API_VERSION, \
    INFERENCE_POOL_GROUP, INFERENCE_POOL_KIND, PHASE_LABEL
from inferplane.scheduling.matching import consumed
from inferplane.scheduling.snapshot import PoolClass

COMPOSED = "Composed"
ENGINES_RUNNING = "EnginesRunning"
# Composition keys of the workloads whose pods must run for the replica to serve.
WORKLOAD_KEY_PREFIX = "workload-"
EPP_KEY = "epp"
CLUSTER_REQUIREMENT = "cluster"

# Labels inferplane sets on the engine pods (users may not set keys under our group, so these never
# collide with theirs): which replica and engine a pod serves, and, on the pods that serve the API
# (a Standalone pod, a gang's leader), the label the replica's Service and InferencePool select.
REPLICA_LABEL = f"{API_GROUP}/replica"
ENGINE_LABEL = f"{API_GROUP}/engine"
ROLE_LABEL = f"{API_GROUP}/role"
SERVING_LABEL = f"{API_GROUP}/serving"

# Engines serve in the workload cluster's default namespace, as Modelplane's do: it exists on every
# cluster, and replica names (unique per placement) keep co-located replicas apart.
REMOTE_NAMESPACE = "default"
# The engine pods' volume of the ModelCache a replica references.
CACHE_VOLUME = "model-cache"
# A gang member's engine finds its leader and its rank through these, whatever runs the gang: aliases of
# what the LeaderWorkerSet controller injects into every pod (0 on the leader, 1..size-1 on the workers).
# Ahead of the user's env, so that the user's own entries and the command can say $(INFERPLANE_RANK);
# the MODELPLANE_ names too, which manifests written for Modelplane use.
GANG_ENV = tuple({"name": f"{prefix}_{name}", "value": f"$({source})"}
                 for prefix in ("INFERPLANE", "MODELPLANE")
                 for name, source in (("LEADER_ADDRESS", "LWS_LEADER_ADDRESS"), ("RANK", "LWS_WORKER_INDEX")))
# The OpenAI-compatible port every engine serves on; the Service exposes it on 80.
ENGINE_PORT = 8000

DRA_API_VERSION = "resource.k8s.io/v1"
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
# A Deployment and a LeaderWorkerSet both say Available=True once their replicas are up, and neither
# has a Ready condition, so their Objects derive readiness from it; the guard keeps the query false
# (not erroring) before the workload has any status.
AVAILABLE_QUERY = ('has(object.status.conditions) && '
                   'object.status.conditions.exists(c, c.type == "Available" && c.status == "True")')

# The endpoint picker, as Modelplane v0.3.1 runs it for PrefillDecode serving: llm-d's inference
# scheduler, which embeds the Inference Extension's picker and adds the prefill/decode profiles.
EPP_IMAGE = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.8.0"
EPP_GRPC_PORT = 9002
EPP_HEALTH_PORT = 9003
EPP_CONFIG_FILE = "epp-config.yaml"
# The picker's prefix-cache producer must cut prompts into the decode engine's KV blocks, or prefix
# routing silently degrades; vLLM's default block size applies when the engine's args name none.
DEFAULT_KV_BLOCK_SIZE = 16


class ModelReplicaComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.replica: ModelReplica | None = None
        # pool name -> the tolerations of exactly that pool's taints
        self.pool_tolerations: dict[str, list[dict[str, str]]] = {}
        self.pool_classes: dict[str, PoolClass] = {}  # pool name -> its class as its devices are published
        self.cluster_ready = False

    def compose(self) -> Response:
        if not self.read_replica() or not self.read_pools():
            return self.response
        if not self.cluster_ready and self.request.observed:
            # An outage, or a cluster the gate holds (its classes now want what its cloud cannot serve):
            # what runs there is kept exactly as it runs, not recomposed from classes it no longer matches.
            self.keep_observed()
            self.condition(COMPOSED, "True", "KeptAsRunning",
                           f"InferenceCluster {self.spec.cluster_name} is not ready: ModelReplica {self.name}'s "
                           "workloads are kept as they run until it is")
            self.compose_readiness()
            return self.response
        for engine in self.spec.engines:
            self.compose_engine(engine)
        self.compose_service()
        if self.prefill_decode:
            self.compose_inference_pool()
        self.compose_route()
        self.condition(COMPOSED, "True", "Available",
                       f"ModelReplica {self.name}'s workloads are composed for cluster {self.spec.cluster_name}")
        self.compose_readiness()
        return self.response

    # ---- steps

    def read_replica(self) -> bool:
        try:
            self.replica = ModelReplica.model_validate(self.request.composite)
            return True
        except ValidationError as error:
            return self.hold("InvalidSpec", f"ModelReplica {composite_name(self.request.composite)} is invalid "
                                            f"({validation_problems(error)}): fix the spec")

    def read_pools(self) -> bool:
        """The taints of every pool the members name, from the cluster's pools and their classes."""
        cluster_name = self.spec.cluster_name
        self.response.requirements[CLUSTER_REQUIREMENT] = Requirement(
            InferenceCluster.api_version_string(), InferenceCluster.KIND, cluster_name)
        if CLUSTER_REQUIREMENT not in self.request.required:
            self.keep_observed()  # first call: the runtime fetches the cluster and calls again
            return False
        observed = self.request.required[CLUSTER_REQUIREMENT]
        if observed is None:
            return self.hold("WaitingForCluster", f"ModelReplica {self.name} is pinned to InferenceCluster "
                             f"{cluster_name}, which does not exist: create it, or let the ModelDeployment "
                             "place the replica again")
        try:
            cluster = InferenceCluster.model_validate(observed)
        except ValidationError as error:
            return self.hold("WaitingForCluster", f"InferenceCluster {cluster_name} is invalid "
                             f"({validation_problems(error)}): fix it")
        self.cluster_ready = is_ready(observed)
        pools = {p.name: p for p in cluster.spec.node_pools}
        wanted = sorted({m.node_pool_name for e in self.spec.engines for m in e.members})
        unknown = [p for p in wanted if p not in pools]
        if unknown:
            return self.hold("UnknownPool", f"ModelReplica {self.name} runs on pool {', '.join(unknown)}, which "
                             f"InferenceCluster {cluster_name} does not have (its pools: "
                             f"{', '.join(sorted(pools))}): place the replica on one of them")
        class_names = sorted({pools[p].class_name for p in wanted})
        for name in class_names:
            self.response.requirements[class_requirement_key(name)] = Requirement(
                InferenceClass.api_version_string(), InferenceClass.KIND, name)
        if any(class_requirement_key(n) not in self.request.required for n in class_names):
            self.keep_observed()
            return False
        classes = {}
        for name in class_names:
            classes[name] = read_class(self.request.required[class_requirement_key(name)])
            if isinstance(classes[name], ValidationError):
                return self.hold("WaitingForCluster", f"InferenceClass {name}, which pool(s) "
                                 f"{', '.join(p for p in wanted if pools[p].class_name == name)} of InferenceCluster "
                                 f"{cluster_name} use, does not exist or is invalid: create or fix it")
        for pool_name in wanted:
            klass = classes[pools[pool_name].class_name]
            _, taints = pool_labels_and_taints(pools[pool_name], klass, pool_role(klass))
            self.pool_tolerations[pool_name] = [toleration_for(t) for t in taints]
            self.pool_classes[pool_name] = pool_view(klass)
        return True

    def compose_engine(self, engine: ReplicaEngine) -> None:
        for member in engine.members:
            for request in member.device_requests or []:
                self.desire_object(f"claim-{engine.name}-{role(member)}-{request.name}", {
                    "apiVersion": DRA_API_VERSION, "kind": "ResourceClaimTemplate",
                    "metadata": {"name": self.claim_template_name(engine, member, request.name),
                                 "namespace": REMOTE_NAMESPACE},
                    "spec": {"spec": {"devices": {"requests": [{"name": request.name, "exactly": {
                        "deviceClassName": request.device_class_name,
                        "allocationMode": "ExactCount",
                        "count": request.count,
                        **({"selectors": [{"cel": {"expression": s.cel}} for s in request.selectors if s.cel]}
                           if request.selectors else {}),
                        # A share of the device (DRA consumable capacity): resource.k8s.io/v1 ExactDeviceRequest.capacity.
                        **({"capacity": {"requests": {k: str(v) for k, v in request.capacity.requests.items()}}}
                           if request.capacity else {}),
                    }}]}}},
                })
        standalone = next((m for m in engine.members if m.role == "Standalone"), None)
        self.desire_object(f"workload-{engine.name}",
                           self.deployment(engine, standalone) if standalone else self.leader_worker_set(engine),
                           ready_query=AVAILABLE_QUERY)

    def compose_service(self) -> None:
        self.desire_object("service", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": self.name, "namespace": REMOTE_NAMESPACE, "labels": self.replica_labels()},
            "spec": {"selector": {SERVING_LABEL: self.name},
                     "ports": [{"name": "http", "port": 80, "targetPort": ENGINE_PORT}]},
        })

    def compose_route(self) -> None:
        """The replica's path on its cluster's gateway: /<namespace>/<replica>/, rewritten to / for the
        engines (which serve /v1/...), sent to the Service, or for PrefillDecode to the InferencePool."""
        backend: dict[str, Any] = ({"group": INFERENCE_POOL_GROUP, "kind": INFERENCE_POOL_KIND,
                                    "name": child_name(self.name, "pool")} if self.prefill_decode
                                   else {"group": "", "kind": "Service", "name": self.name, "port": 80})
        self.desire_object("route", {
            "apiVersion": GATEWAY_API_VERSION, "kind": "HTTPRoute",
            "metadata": {"name": self.name, "namespace": REMOTE_NAMESPACE, "labels": self.replica_labels()},
            "spec": {"parentRefs": [{"group": GATEWAY_API_GROUP, "kind": "Gateway", "name": CLUSTER_GATEWAY_NAME,
                                     "namespace": CLUSTER_GATEWAY_NAMESPACE}],
                     "rules": [{"matches": [{"path": {"type": "PathPrefix",
                                                      "value": replica_prefix(self.namespace, self.name)}}],
                                "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {
                                    "type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}],
                                "backendRefs": [backend]}]},
        })

    def compose_inference_pool(self) -> None:
        """The InferencePool over both phases' serving pods, and the endpoint picker that chooses a
        prefill and a decode pod for each request."""
        epp = child_name(self.name, "epp")
        pool = child_name(self.name, "pool")
        labels = self.replica_labels()
        self.desire_object("inference-pool", {
            "apiVersion": INFERENCE_POOL_API_VERSION, "kind": INFERENCE_POOL_KIND,
            "metadata": {"name": pool, "namespace": REMOTE_NAMESPACE, "labels": labels},
            "spec": {"selector": {"matchLabels": {SERVING_LABEL: self.name}},
                     "targetPorts": [{"number": ENGINE_PORT}],
                     "endpointPickerRef": {"name": epp, "port": {"number": EPP_GRPC_PORT}, "failureMode": "FailOpen"}},
        })
        meta = {"name": epp, "namespace": REMOTE_NAMESPACE, "labels": labels}
        read = ["get", "list", "watch"]
        self.desire_object("epp-service-account", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
        self.desire_object("epp-role", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta,
            # What the picker watches: the pool's pods, the pool, and InferenceObjectives.
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": read},
                      {"apiGroups": [INFERENCE_POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
                      {"apiGroups": [INFERENCE_EXTENSION_EXPERIMENTAL_GROUP], "resources": ["inferenceobjectives"],
                       "verbs": read}]})
        self.desire_object("epp-role-binding", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
            "subjects": [{"kind": "ServiceAccount", "name": epp, "namespace": REMOTE_NAMESPACE}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": epp}})
        self.desire_object("epp-config", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                                          "data": {EPP_CONFIG_FILE: epp_config(self.decode_block_size())}})
        self.desire_object("epp", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": epp}}, "template": {
                "metadata": {"labels": {"app": epp}},
                "spec": {"serviceAccountName": epp, "containers": [{
                    "name": "epp", "image": EPP_IMAGE,
                    "args": [f"--pool-name={pool}", f"--pool-namespace={REMOTE_NAMESPACE}",
                             f"--pool-group={INFERENCE_POOL_GROUP}",
                             f"--config-file=/config/{EPP_CONFIG_FILE}", f"--grpc-port={EPP_GRPC_PORT}"],
                    "ports": [{"name": "grpc", "containerPort": EPP_GRPC_PORT},
                              {"name": "grpc-health", "containerPort": EPP_HEALTH_PORT}],
                    "volumeMounts": [{"name": "config", "mountPath": "/config"}]}],
                    "volumes": [{"name": "config", "configMap": {"name": epp}}]}}},
        }, ready_query=AVAILABLE_QUERY)
        self.desire_object("epp-service", {
            "apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"selector": {"app": epp}, "ports": [
                {"name": "grpc-ext-proc", "port": EPP_GRPC_PORT, "targetPort": EPP_GRPC_PORT,
                 "appProtocol": "http2"}]}})

    def compose_readiness(self) -> None:
        """Whether the engines run, from what their workload Objects report."""
        stuck, waiting = [], []
        for key in sorted(k for k in self.response.desired if k.startswith(WORKLOAD_KEY_PREFIX) or k == EPP_KEY):
            if self.response.desired[key].ready:
                continue
            ready = next((c for c in (self.request.observed.get(key, {}).get("status") or {}).get("conditions") or []
                          if c.get("type") == READY), None)
            if ready is not None and ready.get("reason") not in (None, "Creating"):
                stuck.append((ready["reason"], f"{key}: {ready.get('message', '')}"))
            else:
                waiting.append(key)
        if stuck:
            self.condition(ENGINES_RUNNING, "False", stuck[0][0],
                           f"ModelReplica {self.name} on cluster {self.spec.cluster_name}: "
                           f"{'; '.join(m for _, m in stuck)}")
        elif waiting:
            self.condition(ENGINES_RUNNING, "False", "Creating",
                           f"waiting for cluster {self.spec.cluster_name} to run {', '.join(waiting)}")
        else:
            self.condition(ENGINES_RUNNING, "True", "Running",
                           f"every engine pod of ModelReplica {self.name} runs with its devices allocated")

    # ---- workloads

    def deployment(self, engine: ReplicaEngine, member: ReplicaMember) -> Resource:
        name = self.workload_name(engine)
        selector = {REPLICA_LABEL: self.name, ENGINE_LABEL: engine.name}
        return {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": REMOTE_NAMESPACE, "labels": self.replica_labels()},
            "spec": {"replicas": engine.copies, "selector": {"matchLabels": selector},
                     "template": self.pod_template(engine, member, serving=True)},
        }

    def leader_worker_set(self, engine: ReplicaEngine) -> Resource:
        leader = next(m for m in engine.members if m.role == "Leader")
        worker = next(m for m in engine.members if m.role == "Worker")
        nodes = worker.worker.nodes if worker.worker is not None else 1
        return {
            "apiVersion": LWS_API_VERSION, "kind": "LeaderWorkerSet",
            "metadata": {"name": self.workload_name(engine), "namespace": REMOTE_NAMESPACE,
                         "labels": self.replica_labels()},
            "spec": {"replicas": engine.copies, "leaderWorkerTemplate": {
                # A gang: the leader and one pod per worker node, started and restarted together.
                "size": nodes + 1,
                "restartPolicy": "RecreateGroupOnPodRestart",
                # Only the leader serves the API: followers carry no serving label.
                "leaderTemplate": self.pod_template(engine, leader, serving=True, gang=True),
                "workerTemplate": self.pod_template(engine, worker, serving=False, gang=True),
            }},
        }

    def pod_template(self, engine: ReplicaEngine, member: ReplicaMember, serving: bool, gang: bool = False
                     ) -> Resource:
        template = member.template.model_dump(by_alias=True, exclude_none=True)
        metadata = template.get("metadata") or {}
        labels = {**(metadata.get("labels") or {}), REPLICA_LABEL: self.name, ENGINE_LABEL: engine.name,
                  ROLE_LABEL: role(member)}
        if serving:
            labels[SERVING_LABEL] = self.name
        if engine.phase is not None:
            labels[PHASE_LABEL] = engine.phase.lower()
        spec = template.get("spec") or {}
        claims = [(r.name, self.claim_template_name(engine, member, r.name)) for r in member.device_requests or []]
        cache = self.spec.model_cache_ref
        for container in spec.get("containers", []):
            if container["name"] == "engine" and claims:
                cpus = self.pinned_cpus(member)  # stated as the CPU driver requires (accelerators/cpu.py)
                container["resources"] = {**(pinned_cpu_resources(cpus) if cpus else {}),
                                          "claims": [{"name": claim} for claim, _ in claims]}
            if container["name"] == "engine" and cache is not None:
                # Read-write: engines write beside the weights (tokenizer, compile and lock files), and
                # the ReadWriteMany volume is shared by every pod of the gang.
                container["volumeMounts"] = [{"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT_PATH}]
            if container["name"] == "engine" and gang:
                container["env"] = [*GANG_ENV, *container.get("env", ())]
        if cache is not None:
            spec["volumes"] = [{"name": CACHE_VOLUME, "persistentVolumeClaim": {
                "claimName": cache_volume_name(self.namespace, cache.name)}}]
        spec["nodeSelector"] = {POOL_LABEL: member.node_pool_name}
        tolerations = self.pool_tolerations[member.node_pool_name] + [
            t.model_dump(by_alias=True, exclude_none=True) for t in self.spec.tolerations or []]
        if tolerations:
            spec["tolerations"] = tolerations
        if claims:
            spec["resourceClaims"] = [{"name": claim, "resourceClaimTemplateName": template_name}
                                      for claim, template_name in claims]
        return {"metadata": {**metadata, "labels": labels}, "spec": spec}

    # ---- helpers

    def desire_object(self, key: str, manifest: Resource, ready_query: str | None = None) -> None:
        """A provider-kubernetes Object on the replica's cluster, in the replica's namespace (a
        namespaced composite composes into its own namespace, as Crossplane v2 does)."""
        readiness = ({"policy": "DeriveFromCelQuery", "celQuery": ready_query} if ready_query
                     else {"policy": "SuccessfulCreate"})
        self.desire(key, {
            "apiVersion": OBJECT_API_VERSION, "kind": "Object",
            "metadata": {"name": f"{self.name}-{key}", "namespace": self.namespace, "labels": self.replica_labels()},
            "spec": {"providerConfigRef": {"kind": PROVIDER_CONFIG_KIND, "name": self.spec.cluster_name},
                     "readiness": readiness, "forProvider": {"manifest": manifest}},
        })

    def hold(self, reason: str, message: str) -> bool:
        """Compose nothing new and keep what runs; say why."""
        self.condition(COMPOSED, "False", reason, message)
        self.keep_observed()
        return False

    def decode_block_size(self) -> int:
        decode = next(e for e in self.spec.engines if e.phase == "Decode")
        for member in decode.members:
            for container in (member.template.spec.containers if member.template.spec else []):
                size = kv_block_size(container.args or [])
                if size is not None:
                    return size
        return DEFAULT_KV_BLOCK_SIZE

    def workload_name(self, engine: ReplicaEngine) -> str:
        # Never the replica's own name, which its Service takes: a LeaderWorkerSet's controller makes
        # the gang's headless Service under the workload's name, and only when none exists.
        return child_name(self.name, engine.name)

    def pinned_cpus(self, member: ReplicaMember):
        """The CPUs the member's dra.cpu claims pin to its engine container: a share's, or a whole device's."""
        klass = self.pool_classes[member.node_pool_name]
        return sum(consumed(klass, r.device_class_name, r.count, [s.cel for s in r.selectors or [] if s.cel],
                            tuple((k, str(v)) for k, v in (r.capacity.requests if r.capacity else {}).items())
                            ).get(CPU_CAPACITY, 0) for r in member.device_requests or [])

    def claim_template_name(self, engine: ReplicaEngine, member: ReplicaMember, request: str) -> str:
        return child_name(self.name, engine.name, role(member), request)

    def replica_labels(self) -> dict[str, str]:
        return {REPLICA_LABEL: self.name}

    @property
    def prefill_decode(self) -> bool:
        return self.spec.serving is not None and self.spec.serving.mode == "PrefillDecode"

    @property
    def spec(self):
        assert self.replica is not None
        return self.replica.spec

    @property
    def name(self) -> str:
        assert self.replica is not None
        return self.replica.metadata.name

    @property
    def namespace(self) -> str:
        assert self.replica is not None
        return self.replica.metadata.namespace or "default"


def role(member: ReplicaMember) -> str:
    return member.role.lower()


def toleration_for(taint: dict[str, str]) -> dict[str, str]:
    """The toleration of exactly this taint: its key, value and effect."""
    out = {"key": taint["key"], "operator": "Equal", "value": taint.get("value", ""),
           "effect": taint.get("effect", "NoSchedule")}
    if not out["value"]:
        out = {"key": out["key"], "operator": "Exists", "effect": out["effect"]}
    return out


def kv_block_size(args: list[str]) -> int | None:
    """The KV block size an engine's args set (vLLM's --block-size, SGLang's --page-size), if any."""
    for index, arg in enumerate(args):
        for flag in ("--block-size", "--page-size"):
            value = arg[len(flag) + 1:] if arg.startswith(f"{flag}=") else (
                args[index + 1] if arg == flag and index + 1 < len(args) else None)
            if value is not None and value.isdigit():
                return int(value)
    return None


def epp_config(block_size: int) -> str:
    """The picker's configuration for prefill/decode: a prefill and a decode profile, each filtering
    its phase's pods and scoring them by prefix-cache hits and queue length. A request goes through
    prefill first only when enough of its prompt is not cached yet."""
    scorers = [{"pluginRef": "max-score-picker"}, {"pluginRef": "prefix-cache-scorer", "weight": 2},
               {"pluginRef": "queue-scorer", "weight": 1}]
    config = {
        "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            # autoTune off: with it on the producer's block size stays 0 and nothing is ever cached.
            {"type": "approx-prefix-cache-producer",
             "parameters": {"autoTune": False, "blockSizeTokens": block_size, "maxPrefixBlocksToMatch": 256,
                            "lruCapacityPerServer": 31250}},
            {"type": "prefix-cache-scorer"}, {"type": "disagg-headers-handler"}, {"type": "queue-scorer"},
            {"type": "prefill-filter"}, {"type": "decode-filter"}, {"type": "max-score-picker"},
            # 0 would disable the decider (decode-only for every request).
            {"type": "prefix-based-pd-decider", "parameters": {"nonCachedTokens": 16}},
            {"type": "disagg-profile-handler", "parameters": {"deciders": {"prefill": "prefix-based-pd-decider"}}},
        ],
        "schedulingProfiles": [
            {"name": "prefill", "plugins": [{"pluginRef": "prefill-filter"}, *copy.deepcopy(scorers)]},
            {"name": "decode", "plugins": [{"pluginRef": "decode-filter"}, *copy.deepcopy(scorers)]},
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


def compose_model_replica(request: Request) -> Response:
    return ModelReplicaComposer(request).compose()
