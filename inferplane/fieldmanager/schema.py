"""What a kind's schema says of its lists and maps, as structured-merge-diff reads it: a list is a
map keyed by its `x-kubernetes-list-map-keys` (`x-kubernetes-list-type: map`), a set
(`x-kubernetes-list-type: set`) or atomic (replaced whole: the default of a custom resource's lists);
a core kind's list without a list type but with `x-kubernetes-patch-strategy: merge` is keyed by its
`x-kubernetes-patch-merge-key`, or a set without one (k8s.io/kube-openapi pkg/schemaconv/smd.go,
getListElementRelationship: the list type from the extensions, then the patch strategy; read at commit
bc653b64f974, the pseudo-version k8s.io/apimachinery v0.37.0-beta.0 requires: kube-openapi is not
released by tag). A map's declared fields (`properties`) are fields of a struct; any other key
(`additionalProperties`, or no schema: a kind without a published schema is "deduced",
structured-merge-diff's `__untyped_deduced_`, typed/parser.go DeducedParseableType) is a key of a
granular map, owned itself as well as what is under it."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from inferplane import DATA, KUBERNETES_RELEASE
from inferplane.api import KINDS_BY_NAME
from inferplane.api.xrd import openapi_schema

Schema = dict[str, Any]


@dataclass(frozen=True)
class ListType:
    kind: str  # "map", "set" or "atomic"
    keys: tuple[str, ...] = ()


ATOMIC = ListType("atomic")


class Shape:
    """A kind's schema with the definitions its references name; None: deduced (no schema)."""

    def __init__(self, definitions: dict[str, Schema], root: Schema | None, core: bool):
        self.definitions, self.root, self.core = definitions, root, core

    def resolve(self, schema: Schema | None) -> Schema | None:
        for _ in range(16):  # a $ref, or allOf: [{$ref}] as kube-openapi writes a documented reference
            if not schema:
                return schema
            ref = schema.get("$ref") or next((s.get("$ref") for s in schema.get("allOf") or [] if "$ref" in s), None)
            if not ref:
                return schema
            schema = self.definitions.get(ref.rsplit("/", 1)[-1])
        return schema

    def field(self, schema: Schema | None, name: str) -> tuple[bool, Schema | None]:
        """(declared, its schema) of a map's key."""
        if schema is None:
            return False, None
        properties = schema.get("properties")
        if properties and name in properties:
            return True, self.resolve(properties[name])
        extra = schema.get("additionalProperties")
        return False, self.resolve(extra) if isinstance(extra, dict) else None

    def items(self, schema: Schema | None) -> Schema | None:
        return None if schema is None else self.resolve(schema.get("items"))

    def list_type(self, schema: Schema | None) -> ListType:
        if schema is None:
            return ATOMIC
        kind = schema.get("x-kubernetes-list-type")
        if kind == "map":
            return ListType("map", tuple(schema.get("x-kubernetes-list-map-keys") or ()))
        if kind == "set":
            return ListType("set")
        if kind is None and self.core and schema.get("x-kubernetes-patch-strategy", "").startswith("merge"):
            key = schema.get("x-kubernetes-patch-merge-key")
            return ListType("map", (key,)) if key else ListType("set")
        return ATOMIC

    @staticmethod
    def atomic_map(schema: Schema | None) -> bool:
        return bool(schema) and schema.get("x-kubernetes-map-type") == "atomic"


# The pinned Kubernetes release's ObjectMeta and core kinds, vendored (admission reads them too).
KUBERNETES = DATA / f"kubernetes-{KUBERNETES_RELEASE}"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.cache
def _definitions() -> dict[str, Schema]:
    return {**json.loads((KUBERNETES / "objectmeta.json").read_text())["$defs"],
            **json.loads((KUBERNETES / "core-v1.json").read_text())["$defs"]}


@functools.cache
def shape_of(api_version: str, kind: str) -> Shape:
    """A kind's schema: ours from its model (the schema its XRD publishes: api/xrd.py), a core kind's
    from Kubernetes' definitions; the metadata of either is ObjectMeta's. Any other kind is deduced."""
    definitions = _definitions()
    ours = KINDS_BY_NAME.get(kind)
    if "/" not in api_version and f"io.k8s.api.core.v1.{kind}" in definitions:
        return Shape(definitions, definitions[f"io.k8s.api.core.v1.{kind}"], core=True)
    if ours is not None and ours.api_version_string() == api_version:
        root = openapi_schema(ours)
        root = {**root, "properties": {**root["properties"], "metadata": {"$ref": _META}}}
        return Shape(definitions, root, core=False)
    return Shape(definitions, None, core=False)
