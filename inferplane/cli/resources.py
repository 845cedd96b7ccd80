"""The resource types the CLI knows, as kubectl knows them from discovery: kind, group, plural, short
names and scope. One table serves name resolution, `api-resources`, namespaces and completion."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache

import click


@dataclass(frozen=True)
class ResourceType:
    kind: str
    api_version: str  # "v1", "apps/v1", "inferplane.dev/v1alpha1"
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    # Lives in a simulated target cluster (read with --cluster), not in the control plane's store.
    in_cluster: bool = False

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    @property
    def qualified(self) -> str:
        """kind.group, as kubectl prints a type where two groups share a kind."""
        return f"{self.kind.lower()}.{self.group}" if self.group else self.kind.lower()

    def names(self) -> set[str]:
        """Every spelling that means this type: kind, singular, plural, short names, each also with .group."""
        # A short name's plural too: people type `iclusters` as they type `inferenceclusters`.
        bare = {self.kind.lower(), self.plural, *self.short_names, *(_plural(n) for n in self.short_names)}
        return bare | {f"{n}.{self.group}" for n in bare if self.group}


def _plural(kind: str) -> str:
    lower = kind.lower()
    return lower + ("es" if lower.endswith(("s", "x")) else "s")


@cache
def resource_types() -> tuple[ResourceType, ...]:
    """Every type: inferplane's kinds, the other APIs' kinds users apply (core kinds, provider configs),
    what they compose, and a simulated cluster's Kubernetes kinds."""
    from inferplane.api import ALL_KINDS
    from inferplane.api.stored import CORE_KINDS, PROVIDER_CONFIG_KINDS
    from inferplane.clouds import CLOUD_MODULES
    from inferplane.api.managed import HELM_API_VERSION, OBJECT_API_VERSION
    from inferplane.routing.gateway import GATEWAY_API_VERSION, METALLB_API_VERSION

    types = [ResourceType(k.KIND, k.api_version_string(), k.PLURAL, k.SCOPE == "Namespaced", tuple(k.SHORT_NAMES))
             for k in (*ALL_KINDS, *CORE_KINDS)]
    # Crossplane's managed resources are namespaced (its v2 `.m.` groups); so are ProviderConfigs, where
    # ClusterProviderConfigs are cluster-scoped.
    types += [ResourceType("Release", HELM_API_VERSION, "releases", True),
              ResourceType("Object", OBJECT_API_VERSION, "objects", True)]
    types += [ResourceType(k.KIND, k.api_version_string(), k.PLURAL, k.SCOPE == "Namespaced")
              for k in PROVIDER_CONFIG_KINDS]
    # The control plane's routing objects: an InferenceGateway's, a ModelService's, a ModelEndpoint's.
    types += [ResourceType("GatewayClass", GATEWAY_API_VERSION, "gatewayclasses", False),
              ResourceType("Gateway", GATEWAY_API_VERSION, "gateways", True),
              ResourceType("HTTPRoute", GATEWAY_API_VERSION, "httproutes", True),
              ResourceType("Service", "v1", "services", True, ("svc",)),
              ResourceType("EndpointSlice", "discovery.k8s.io/v1", "endpointslices", True),
              ResourceType("IPAddressPool", METALLB_API_VERSION, "ipaddresspools", True),
              ResourceType("L2Advertisement", METALLB_API_VERSION, "l2advertisements", True)]
    seen = set()
    for module in CLOUD_MODULES.values():
        for kind in (module.cluster_kind, module.pool_kind):
            if kind and (module.api_version, kind) not in seen:
                seen.add((module.api_version, kind))
                types.append(ResourceType(kind, module.api_version, _plural(kind), True))
    types += [
        ResourceType("Node", "v1", "nodes", False, ("no",), in_cluster=True),
        ResourceType("Pod", "v1", "pods", True, ("po",), in_cluster=True),
        ResourceType("DaemonSet", "apps/v1", "daemonsets", True, ("ds",), in_cluster=True),
        ResourceType("Deployment", "apps/v1", "deployments", True, ("deploy",), in_cluster=True),
        ResourceType("StatefulSet", "apps/v1", "statefulsets", True, ("sts",), in_cluster=True),
        ResourceType("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", "leaderworkersets", True, ("lws",),
                     in_cluster=True),
        ResourceType("ResourceSlice", "resource.k8s.io/v1", "resourceslices", False, in_cluster=True),
        ResourceType("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", True, in_cluster=True),
        ResourceType("Event", "v1", "events", True, ("ev",)),
    ]
    return tuple(types)


def shared_kinds() -> set[str]:
    """Kind names that two groups define (Cluster, NodePool, ClusterProviderConfig): printed with their group."""
    counts: dict[str, int] = {}
    for t in resource_types():
        counts[t.kind] = counts.get(t.kind, 0) + 1
    return {kind for kind, n in counts.items() if n > 1}


def display_kind(kind: str, api_version: str) -> str:
    """Kind, or Kind.group where another group has a kind of that name."""
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return f"{kind}.{group}" if kind in shared_kinds() and group else kind


def resolve(typed: str) -> list[ResourceType]:
    """The types one word names (several where groups share a kind name); a clear error with a
    suggestion for a word that names none."""
    wanted = typed.strip().lower()
    found = [t for t in resource_types() if wanted in t.names()]
    if found:
        return found
    spellings = sorted({n for t in resource_types() for n in t.names() if "." not in n})
    hint = difflib.get_close_matches(wanted, spellings, n=1, cutoff=0.6)
    suggestion = f"did you mean {hint[0]!r}?" if hint else "`inferplane api-resources` lists every kind"
    raise click.UsageError(f"unknown resource type {typed!r}: {suggestion}")


def resolve_many(typed: str) -> list[ResourceType]:
    """`iclass,icluster`: every type of a comma-separated list, in the order given, each once."""
    out: list[ResourceType] = []
    for word in filter(None, typed.split(",")):
        out += [t for t in resolve(word) if t not in out]
    if not out:
        raise click.UsageError("no resource type given: `inferplane api-resources` lists every kind")
    return out


def resolve_field_path(typed: str, documented: set[tuple[str, str]], api_version: str | None = None
                       ) -> tuple[ResourceType, list[str]]:
    """`KIND.field.path` as kubectl explain reads it: the kind is the first word, or a prefix naming it
    with its group (`inferenceclusters.inferplane.dev.spec`); the words after it are the field path.
    Only a kind with a published schema (`documented`: (API version, kind) pairs) has documentation."""
    typed = typed.strip().removesuffix(".")
    qualified = sorted(((n, t) for t in resource_types() for n in t.names() if "." in n
                        and (typed.lower() == n or typed.lower().startswith(n + "."))), key=lambda nt: -len(nt[0]))
    if qualified:
        word, rest = typed[:len(qualified[0][0])], typed[len(qualified[0][0]) + 1:]
    else:
        word, _, rest = typed.partition(".")
    found = resolve(word)
    ours = [t for t in found if (t.api_version, t.kind) in documented]
    if not ours:
        kinds = ", ".join(sorted({t.kind for t in resource_types() if (t.api_version, t.kind) in documented}))
        raise click.UsageError(f"{display_kind(found[0].kind, found[0].api_version)} ({found[0].api_version}) has "
                               f"no published schema here to document: explain knows {kinds}")
    if api_version is not None:
        at_version = [t for t in ours if t.api_version == api_version]
        if not at_version:
            raise click.UsageError(f"{ours[0].kind} is served at {ours[0].api_version}, not {api_version}")
        ours = at_version
    return ours[0], rest.split(".") if rest else []
