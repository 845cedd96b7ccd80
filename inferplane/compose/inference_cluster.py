"""InferenceCluster: the classes' drivers collected, the gate, role-tagged pools, cloud cluster and stack.

The function never destroys what runs: whenever it cannot compose (a class is missing, a claimed
driver is unsupported, the cluster's Kubernetes is too old for a driver, a pool's class does not
fit the cloud), it re-declares every observed composed resource exactly as it was, so that garbage
collection deletes nothing, and says why in the ClusterReady condition.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml
from pydantic import ValidationError

from inferplane.accelerators import unsupported_devices_message
from inferplane import API_GROUP
from inferplane.api.json_data import shared_copy
from inferplane.api.drivers import CPU, DRANET, DRIVERS, POOL_LABEL, DriverKind
from inferplane.api.cloud import AUTOSCALED_POOL_BOUNDS, AUTOSCALED_SOURCES, ZONED_SOURCES
from inferplane.api.cloud_cluster import CLOUD_CLUSTER_KINDS, PoolRole
from inferplane.api.inference_class import InferenceClass, read_class
from inferplane.api.inference_cluster import CLUSTER_READY, WAITING_FOR_KUBERNETES_VERSION, InferenceCluster, \
    NodePool
from inferplane.api.serving_stack import STACK_READY, ServingStack
from inferplane.clouds import CLOUD_MODULES
from inferplane.clouds.base import KUBECONFIG_KEY, connection_secret_name
from inferplane.clouds.kubernetes_version import cluster_kubernetes_version, kubernetes_version_problems
from inferplane.api.managed import MANAGED_NAMESPACE, PROVIDER_CONFIG_KIND, observed_manifest
from inferplane.compose.base import CONFLICT, READY, RECONCILE_ERROR, Composer, Desired, Event, Request, Requirement, \
    Response, composite_name, condition_of, is_ready, validation_problems
from inferplane.compose.serving_stack import OBJECT_API_VERSION

CLOUD_CLUSTER_KEY = "cluster"  # the cloud cluster composite (absent for Existing)
STACK_KEY = "serving-stack"
# An Existing cluster that declares no Kubernetes version is asked for the one it runs: an
# observe-only provider-kubernetes Object reads kubeadm's ClusterConfiguration, and its own
# ClusterProviderConfig reaches the cluster before the serving stack (which waits for the answer).
VERSION_PROBE_KEY = "kubernetes-version"
VERSION_PROBE_CONFIG_KEY = "kubernetes-version-provider-config"
KUBEADM_CONFIG_NAMESPACE, KUBEADM_CONFIG_NAME = "kube-system", "kubeadm-config"
KUBEADM_CONFIG = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": KUBEADM_CONFIG_NAME, "namespace": KUBEADM_CONFIG_NAMESPACE}}
# On a stack kept as it was while the gate holds its cluster: why it is held. Its components still run,
# but it is not the stack the cluster's classes ask for, so views show it as held rather than Ready.
HELD_ANNOTATION = f"{API_GROUP}/held"


def class_requirement_key(name: str) -> str:
    return f"class-{name}"


def pool_role(klass: InferenceClass) -> PoolRole:
    """GPU when the class claims a GPU driver; every other pool is a CPU pool."""
    claimed = klass.spec.claimed_drivers()
    return PoolRole.GPU if any(DRIVERS[d].kind is DriverKind.GPU for d in claimed if d in DRIVERS) else PoolRole.CPU


def pool_labels_and_taints(pool: NodePool, klass: InferenceClass, role: PoolRole) -> tuple[dict[str, str], list[dict]]:
    labels = {POOL_LABEL: pool.name}
    taints: list[dict[str, str]] = []
    names = klass.spec.claimed_drivers()
    claimed = [DRIVERS[name] for name in names if name in DRIVERS]
    if role == PoolRole.CPU:
        # The CPU driver's agent selects this label. A pool of a driver inferplane does not know (one an
        # Existing cluster's owner runs) keeps the taint, which holds the stack's workloads off it, but not
        # the label, unless it claims CPUs too: the CPU driver would have nothing to publish there.
        if CPU.name in names or len(claimed) == len(names):
            labels.update(CPU.node_labels)
        taints.append(CPU.pool_taint.to_dict())
    else:
        for driver in claimed:
            if driver.kind is DriverKind.GPU:
                labels.update(driver.node_labels)
                if driver.pool_taint:
                    taints.append(driver.pool_taint.to_dict())
    # A network driver's pools are GPU or CPU pools: its label is what tells them from the others.
    for driver in claimed:
        if driver.kind is DriverKind.NETWORK:
            labels.update(driver.node_labels)
    return labels, taints


def pool_bounds(pool: NodePool, source: str) -> tuple[int | None, int | None]:
    """(minNodeCount, maxNodeCount) of a pool. On EKS, GKE and AKS a pool that sets neither
    autoscales between AUTOSCALED_POOL_BOUNDS (widened to include its nodeCount), as on Modelplane."""
    if source in AUTOSCALED_SOURCES and pool.min_node_count is None and pool.max_node_count is None:
        low, high = AUTOSCALED_POOL_BOUNDS
        return min(low, pool.node_count), max(high, pool.node_count)
    return pool.min_node_count, pool.max_node_count


def pool_zones(pool: NodePool, source: str) -> list[str]:
    """The zones a pool spans: its own, where the cloud takes zones (elsewhere they are ignored, with a warning)."""
    return list(pool.zones) if source in ZONED_SOURCES else []


def node_pool(pool: NodePool, klass: InferenceClass, source: str) -> dict[str, Any]:
    """A user pool in the cloud cluster kinds' nodePools format, without its machine: role, size,
    labels and taints. The one place a pool's shape is decided, for clouds and existing clusters alike."""
    role = pool_role(klass)
    labels, taints = pool_labels_and_taints(pool, klass, role)
    entry: dict[str, Any] = {"name": pool.name, "role": role, "nodeCount": pool.node_count,
                             "labels": labels, "taints": taints}
    low, high = pool_bounds(pool, source)
    if low is not None:
        entry["minNodeCount"] = low
    if high is not None:
        entry["maxNodeCount"] = high
    if zones := pool_zones(pool, source):
        entry["zones"] = zones
    # Passed on for the cloud to use (EKS: capacity blocks and EFA; Nebius and AKS: InfiniBand).
    for field_, value in (("capacityBlock", pool.capacity_block), ("fabric", pool.fabric)):
        if value is not None:
            entry[field_] = value.model_dump(by_alias=True, exclude_none=True)
    return entry


class InferenceClusterComposer(Composer):
    def __init__(self, request: Request):
        super().__init__(request)
        self.name = composite_name(request.composite)

    def compose(self) -> Response:
        if not self.read_cluster():
            return self.response
        classes = self.require_classes()
        if classes is None:
            return self.response
        drivers = sorted({d for k in classes.values() for d in k.spec.claimed_drivers()})
        blocked = (self.gate_unsupported_devices(classes) or self.gate_reported_version()
                   or self.gate_kubernetes_version(classes) or self.gate_pool_classes(classes))
        if blocked:
            self.hold(*blocked)
            self.response.status["draDrivers"] = drivers  # what the classes claim, blocked or not
            return self.response
        self.warn_ignored_zones()
        self.warn_dranet_without_efa(classes)
        self.compose_cloud_cluster(classes)
        self.compose_serving_stack(drivers, classes)
        self.compose_status(classes, drivers)
        return self.response

    # ---- steps

    def read_cluster(self) -> bool:
        """Parse the composite's spec; an unreadable one keeps what was composed and says why. Its status
        is this function's own output, read (where it is) from the request, never from the model:
        validating it would cost as much as the spec and could only refuse what inferplane wrote."""
        try:
            self.cluster = InferenceCluster.model_validate({**self.request.composite, "status": None})
        except ValidationError as error:
            self.hold("InvalidSpec", f"InferenceCluster {self.name} is invalid: {validation_problems(error)}: "
                                     "fix the spec")
            return False
        self.source = self.cluster.spec.cluster.source
        self.cloud = CLOUD_MODULES[self.source]
        return True

    def require_classes(self) -> dict[str, InferenceClass] | None:
        """Every referenced class, or None after asking for them / reporting the missing ones."""
        names = sorted({p.class_name for p in self.cluster.spec.node_pools})
        for name in names:
            self.response.requirements[class_requirement_key(name)] = Requirement(
                InferenceClass.api_version_string(), InferenceClass.KIND, name)
        if any(class_requirement_key(n) not in self.request.required for n in names):
            self.keep_observed()  # first call: the runtime fetches the classes and calls again
            return None
        missing = [n for n in names if not self.request.required.get(class_requirement_key(n))]
        if missing:
            self.hold("WaitingForClasses", f"InferenceCluster {self.name} references InferenceClass "
                      f"{', '.join(missing)}, which {'does' if len(missing) == 1 else 'do'} not exist: "
                      "create the class or change the pool's className")
            return None
        classes, problems = {}, []
        for name in names:
            klass = read_class(self.request.required[class_requirement_key(name)])
            if isinstance(klass, ValidationError):
                problems.append(f"InferenceClass {name} is invalid: {validation_problems(klass)}")
            else:
                classes[name] = klass
        if problems:
            self.hold("InvalidClass", f"{'; '.join(problems)}: fix the class that InferenceCluster {self.name} uses")
            return None
        return classes

    def gate_unsupported_devices(self, classes: dict[str, InferenceClass]) -> tuple[str, str] | None:
        """Fail closed: a claimed driver runs only where the cloud's stack serves it or, on an Existing
        cluster, where its owner declares running it."""
        message = unsupported_devices_message(self.cluster, classes)
        return ("UnsupportedDevices", message) if message else None

    def gate_reported_version(self) -> tuple[str, str] | None:
        """An Existing cluster without a declared version: ask it, and wait until it answers."""
        self.reported_version = None
        if cluster_kubernetes_version(self.cluster)[0] is not None:
            return None
        self.compose_version_probe()
        self.reported_version = reported_kubernetes_version(self.request.observed.get(VERSION_PROBE_KEY))
        if self.reported_version is not None:
            return None
        return (WAITING_FOR_KUBERNETES_VERSION,
                f"InferenceCluster {self.name} declares no Kubernetes version, and the cluster has not reported "
                f"one yet (inferplane reads the ConfigMap {KUBEADM_CONFIG_NAMESPACE}/{KUBEADM_CONFIG_NAME}): "
                "wait, or set spec.cluster.existing.kubernetesVersion to the version the cluster runs")

    def gate_kubernetes_version(self, classes: dict[str, InferenceClass]) -> tuple[str, str] | None:
        problems = kubernetes_version_problems(self.cluster, classes, self.reported_version)
        if not problems:
            return None
        return "KubernetesVersionTooOld", "; ".join(p.message for p in problems)

    def gate_pool_classes(self, classes: dict[str, InferenceClass]) -> tuple[str, str] | None:
        """On a cloud, every pool's class must say how to provision it on that cloud."""
        if not self.cloud.provisioned:
            return None
        problems = []
        for pool in self.cluster.spec.node_pools:
            provisioning = classes[pool.class_name].spec.provisioning
            if provisioning is None:
                problems.append(f"pool {pool.name} uses class {pool.class_name}, which has no provisioning: "
                                f"add provisioning with provider {self.source} to it")
            elif provisioning.provider != self.source:
                problems.append(f"pool {pool.name} uses class {pool.class_name}, which provisions on "
                                f"{provisioning.provider}, not {self.source}: use a {self.source} class")
        return ("InvalidPoolClass", "; ".join(problems)) if problems else None

    def warn_ignored_zones(self) -> None:
        """Zones mean something on EKS, GKE and AKS only; elsewhere they are ignored, as on Modelplane."""
        if self.source in ZONED_SOURCES:
            return
        zoned = [p.name for p in self.cluster.spec.node_pools if p.zones]
        if zoned:
            self.response.events.append(Event(
                "Warning", "ZonesIgnored",
                f"pool{'s' if len(zoned) > 1 else ''} {', '.join(zoned)} of InferenceCluster {self.name} set zones, "
                f"which {self.source} clusters ignore (zones apply on {', '.join(ZONED_SOURCES)}): remove them"))

    def warn_dranet_without_efa(self, classes: dict[str, InferenceClass]) -> None:
        """DRANET (served on EKS only) publishes a node's EFA interfaces, which an EKS node has only when
        its pool asks for them: without `fabric.type: EFA` its class's dra.net devices never appear."""
        bare = [p.name for p in self.cluster.spec.node_pools if (p.fabric is None or p.fabric.type != "EFA")
                and DRANET.name in classes[p.class_name].spec.claimed_drivers()]
        for name in bare:
            self.response.events.append(Event(
                "Warning", "NoEFAInterfaces",
                f"pool {name} of InferenceCluster {self.name} claims dra.net devices (EFA interfaces) but has no "
                "fabric.type: EFA, so its nodes get no EFA interface for aws-dranet to publish: set fabric.type: EFA "
                "on the pool"))

    def compose_cloud_cluster(self, classes: dict[str, InferenceClass]) -> None:
        if not self.cloud.provisioned:
            return  # nothing to provision: the operator labels the pools' nodes (docs/clouds.md)
        kind = CLOUD_CLUSTER_KINDS[self.source]
        settings = self.cluster.spec.cluster.settings().model_dump(by_alias=True, exclude_none=True)
        version, _ = cluster_kubernetes_version(self.cluster)
        settings["kubernetesVersion"] = version
        pools = [self.cloud.system_pool()]
        for pool in self.cluster.spec.node_pools:
            klass = classes[pool.class_name]
            machine = klass.spec.provisioning.machine().model_dump(by_alias=True, exclude_none=True)
            pools.append({**node_pool(pool, klass, self.source), "machine": machine})
        resource = {"apiVersion": kind.api_version_string(), "kind": kind.KIND,
                    "metadata": {"name": self.name}, "spec": {**settings, "nodePools": pools}}
        self.desire(CLOUD_CLUSTER_KEY, resource)

    def compose_version_probe(self) -> None:
        ref = self.kubeconfig_secret_ref()
        config_name = f"{self.name}-{VERSION_PROBE_KEY}"
        self.response.desired[VERSION_PROBE_CONFIG_KEY] = Desired({
            "apiVersion": OBJECT_API_VERSION, "kind": PROVIDER_CONFIG_KIND, "metadata": {"name": config_name},
            "spec": {"credentials": {"source": "Secret", "secretRef": ref}}}, ready=True)
        self.desire(VERSION_PROBE_KEY, {
            "apiVersion": OBJECT_API_VERSION, "kind": "Object",
            "metadata": {"name": config_name, "namespace": MANAGED_NAMESPACE},
            "spec": {"managementPolicies": ["Observe"], "forProvider": {"manifest": copy.deepcopy(KUBEADM_CONFIG)},
                     "providerConfigRef": {"kind": PROVIDER_CONFIG_KIND, "name": config_name}}})

    def compose_serving_stack(self, drivers: list[str], classes: dict[str, InferenceClass]) -> None:
        version = cluster_kubernetes_version(self.cluster)[0] or self.reported_version
        owners = self.cluster.spec.cluster.preinstalled_drivers()
        # The owner's drivers run already: the stack installs nothing for them, and knows they run.
        spec: dict[str, Any] = {"source": self.source, "clusterName": self.name,
                                "draDrivers": [d for d in drivers if d not in owners],
                                "kubeconfigSecretRef": self.kubeconfig_secret_ref()}
        if owned := [d for d in drivers if d in owners]:
            spec["preinstalledDrivers"] = owned
        pool_taints = self.pool_taints(classes)
        if pool_taints:
            spec["poolTaints"] = pool_taints
        identity = self.cluster.spec.cluster.settings().identity_secret_ref if not self.cloud.provisioned else None
        if identity is not None:
            spec["identitySecretRef"] = identity.model_dump(by_alias=True, exclude_none=True)
        if version:
            spec["versions"] = {"kubernetes": version}
        self.desire(STACK_KEY, {"apiVersion": ServingStack.api_version_string(), "kind": ServingStack.KIND,
                                "metadata": {"name": self.name}, "spec": spec})

    def pool_taints(self, classes: dict[str, InferenceClass]) -> dict[str, list[dict[str, str]]]:
        """For each claimed driver whose pools carry no taint of its own (DRANET's are GPU or CPU pools),
        the taints of those pools, once each and sorted: what its node agents tolerate."""
        taints: dict[str, dict[tuple[str, ...], dict[str, str]]] = {}
        for pool in self.cluster.spec.node_pools:
            klass = classes[pool.class_name]
            _, pool_taints = pool_labels_and_taints(pool, klass, pool_role(klass))
            for driver in klass.spec.claimed_drivers():
                if driver not in DRIVERS or DRIVERS[driver].pool_taint is not None:
                    continue
                for taint in pool_taints:
                    taints.setdefault(driver, {})[tuple(sorted(taint.items()))] = taint
        return {driver: [by_id[k] for k in sorted(by_id)] for driver, by_id in sorted(taints.items())}

    def autoscaling_maximum(self, pool: NodePool) -> dict[str, int]:
        """{maxNodeCount} where the cloud's autoscaler grows the pool past its nodeCount: the scheduler
        counts those nodes, and the simulated autoscaler adds them when pods wait for them."""
        _, high = pool_bounds(pool, self.source)
        if not self.cloud.autoscales_pools or high is None or high <= pool.node_count:
            return {}
        return {"maxNodeCount": self.nodes_created(pool, high)}

    def nodes_created(self, pool: NodePool, count: int) -> int:
        """The nodes the cloud creates for `count` in the pool's spec: per zone on GKE."""
        return self.cloud.nodes_created(count, pool_zones(pool, self.source))

    def cache_status(self) -> dict[str, Any]:
        """{cache: {storageClassName}}: the ReadWriteMany StorageClass ModelCache volumes use, as Modelplane
        relays it: an Existing cluster's own (spec.cluster.existing.cache), else the one its cloud cluster
        reports; {} while there is none (a cloud without shared storage, or not reported yet)."""
        if not self.cloud.provisioned:
            cache = self.cluster.spec.cluster.settings().cache
            name = cache.storage_class_name if cache is not None else None
        else:
            observed = self.request.observed.get(CLOUD_CLUSTER_KEY) or {}
            name = ((observed.get("status") or {}).get("cache") or {}).get("storageClassName")
        return {"cache": {"storageClassName": name}} if name else {}

    def kubeconfig_secret_ref(self) -> dict[str, str]:
        """Where the target cluster's kubeconfig is: the operator's Secret, or the cloud cluster's."""
        settings = self.cluster.spec.cluster.settings()
        if not self.cloud.provisioned:
            ref = settings.secret_ref
            return {"name": ref.name, "namespace": ref.namespace or MANAGED_NAMESPACE, "key": ref.key}
        return {"name": connection_secret_name(self.name), "namespace": MANAGED_NAMESPACE, "key": KUBECONFIG_KEY}

    def compose_status(self, classes: dict[str, InferenceClass], drivers: list[str]) -> None:
        pools = []
        for pool in self.cluster.spec.node_pools:
            klass = classes[pool.class_name]
            pools.append({
                "name": pool.name, "className": pool.class_name, "role": pool_role(klass),
                "nodeCount": self.nodes_created(pool, pool.node_count),
                **self.autoscaling_maximum(pool),
                "devices": klass.spec.devices_published,
                "drivers": klass.spec.claimed_drivers(),
            })
        observed = self.request.observed
        gateway = ((observed.get(STACK_KEY) or {}).get("status") or {}).get("gateway") or {}
        # Shared: clusters of one pool layout report the same pools (a fleet has a few layouts, and
        # each cluster's pools with their devices are ~8 KiB as Python holds them).
        self.response.status = {"schedulablePools": shared_copy(pools), "draDrivers": drivers,
                                "gateway": {"address": gateway.get("address")},
                                "providerConfigRef": {"name": self.name}, **self.cache_status()}
        if not self.cloud.provisioned:
            self.condition(CLUSTER_READY, "True", "Existing",
                           f"InferenceCluster {self.name} runs on an existing cluster: nothing to provision")
        elif is_ready(observed.get(CLOUD_CLUSTER_KEY)):
            self.condition(CLUSTER_READY, "True", "Available", f"{self.source} cluster {self.name} is ready")
        elif (cloud := condition_of(observed.get(CLOUD_CLUSTER_KEY), READY)).get("reason") in (CONFLICT,
                                                                                                RECONCILE_ERROR):
            # The cloud cluster cannot be provisioned as it is: say why, never "being provisioned".
            self.condition(CLUSTER_READY, "False", cloud["reason"], cloud.get("message", ""))
        else:
            self.condition(CLUSTER_READY, "False", "Creating",
                           f"{self.source} cluster {self.name} and its pools are being provisioned")
        stack = observed.get(STACK_KEY)
        owners = self.cluster.spec.cluster.preinstalled_drivers()
        stacked = [d for d in drivers if d not in owners]
        stack_says = next((c for c in (stack or {}).get("status", {}).get("conditions", [])
                           if c.get("type") == STACK_READY and c.get("status") == "False"
                           and c.get("reason") not in (None, "Creating")), None)
        if is_ready(stack):
            self.condition(STACK_READY, "True", "Available", f"serving stack {self.name} is installed")
        elif stack_says:  # the stack knows why it is stuck (InvalidSpec, ...): say so, never "installing"
            self.condition(STACK_READY, "False", stack_says["reason"], stack_says.get("message", ""))
        else:
            self.condition(STACK_READY, "False", "Installing",
                           f"serving stack {self.name} is being installed"
                           f" (device stacks: {', '.join(stacked) if stacked else 'none'})")

    # ---- helpers

    def hold(self, reason: str, message: str) -> Response:
        self.keep_observed()
        previous = self.request.composite.get("status")
        previous = previous if isinstance(previous, dict) else {}
        self.response.status = {k: previous[k] for k in ("schedulablePools", "draDrivers", "gateway", "providerConfigRef",
                                                         "cache") if k in previous}
        if self.request.observed:
            message += " (the running cluster is kept as it is: no new pools, no new drivers)"
        stack = self.response.desired.get(STACK_KEY)
        if stack is not None:
            annotations = stack.resource["metadata"].setdefault("annotations", {})
            annotations[HELD_ANNOTATION] = f"{reason}: kept as it was, not updated to the classes' drivers"
        self.condition(CLUSTER_READY, "False", reason, message)
        self.condition(STACK_READY, "False", "Blocked", f"serving stack of {self.name} waits for {reason}")
        self.response.events.append(Event("Warning", reason, message))
        return self.response


def reported_kubernetes_version(probe: dict[str, Any] | None) -> str | None:
    """The version in the observed kubeadm ClusterConfiguration ("v1.36.1" -> "1.36.1"), if any."""
    manifest = observed_manifest(probe)
    try:
        config = yaml.safe_load((manifest.get("data") or {}).get("ClusterConfiguration") or "") or {}
    except yaml.YAMLError:
        return None
    version = config.get("kubernetesVersion") if isinstance(config, dict) else None
    if not isinstance(version, str) or not re.match(r"^v?1\.[0-9]+\.[0-9]+", version):
        return None
    return version.removeprefix("v")


def compose_inference_cluster(request: Request) -> Response:
    return InferenceClusterComposer(request).compose()
