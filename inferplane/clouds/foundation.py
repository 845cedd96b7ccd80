"""What a provisioned cluster stands on: its network, identities, addons and kubeconfig publisher.

Each cloud's foundation is a pure function of plain inputs (the cluster's name, region, pools and
whatever the user brought) that returns the resources to compose plus the fields the cluster and
each pool need to reach them. A user who names their own network or identity gets nothing of that
kind composed: the returned fields then carry the user's values instead of references.

Composed resources reference each other by metadata name (`<field>Ref: {name}`), which Crossplane
resolves in the resources' own namespace, so names are known at compose time and no selector can
match a sibling of another cluster.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from inferplane.api.managed import EXTERNAL_NAME_ANNOTATION, MANAGED_NAMESPACE

Resource = dict[str, Any]
# Maps a resource's stable key to its metadata.name; the cloud module supplies it so that every
# composed resource of a cluster is named one way.
Namer = Callable[[str], str]
# Hex characters of sha256 kept when a name must be shortened: 6 make a clash between two shortened
# names of one cluster a one-in-16-million event.
NAME_HASH = 6


class FoundationError(ValueError):
    """The inputs ask for something the cloud's network cannot hold; the message says what to change."""


@dataclass(frozen=True)
class FoundationPool:
    """What a foundation needs to know of a pool: where it runs, and what needs a launch template
    or a fabric of its own."""

    name: str
    zones: tuple[str, ...] = ()
    machine_type: str | None = None
    disk_size_gb: int | None = None
    capacity_reservation_id: str | None = None
    fabric: str | None = None  # "EFA" or "InfiniBand"; None: no fabric
    infiniband_fabric: str | None = None


@dataclass
class Foundation:
    """Resources to compose by key, the cluster resource's extra forProvider fields, each pool's
    extra forProvider fields by pool name, and the pools that must wait."""

    resources: dict[str, Resource] = field(default_factory=dict)
    cluster_fields: dict[str, Any] = field(default_factory=dict)
    pool_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Pools not composed yet, by name, with what they wait for (a field the provider reports later).
    held_pools: dict[str, str] = field(default_factory=dict)


class ResourceBuilder:
    """Builds a cluster's namespaced managed resources, named by `namer`, with one provider config."""

    def __init__(self, namer: Namer, provider_config: dict[str, str]):
        self.namer = namer
        self.provider_config = provider_config

    def ref(self, key: str) -> dict[str, str]:
        """A reference to the sibling composed under `key`."""
        return {"name": self.namer(key)}

    def resource(self, api_version: str, kind: str, key: str, for_provider: dict[str, Any], *,
                 external_name: str | None = None, connection_secret: str | None = None) -> Resource:
        metadata: dict[str, Any] = {"name": self.namer(key), "namespace": MANAGED_NAMESPACE}
        if external_name:
            metadata["annotations"] = {EXTERNAL_NAME_ANNOTATION: external_name}
        spec: dict[str, Any] = {"forProvider": for_provider, "providerConfigRef": dict(self.provider_config)}
        if connection_secret:
            spec["writeConnectionSecretToRef"] = {"name": connection_secret}
        return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra` merged in, nested objects merged key by key (a foundation's pool fields
    may add to a block, such as GKE's nodeConfig, that the pool itself sets)."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def bounded_name(name: str, max_length: int) -> str:
    """`name` when it fits in `max_length`, else a readable prefix and a hash of the whole name, so
    that the result is stable and two long names sharing a prefix stay distinct."""
    if len(name) <= max_length:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:NAME_HASH]
    return f"{name[:max_length - NAME_HASH - 1].rstrip('-')}-{digest}"
