"""Which objects a command means: types, namespaces as kubectl does them, names and label selectors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from inferplane.cli.resources import ResourceType, resolve
from inferplane.api.selectors import SelectorError, parse_selector

if TYPE_CHECKING:
    from inferplane.engine.control_plane import ControlPlane
    from inferplane.runtime.store import Key

DEFAULT_NAMESPACE = "default"


def namespace_for(types: list[ResourceType], namespace: str | None, all_namespaces: bool = False) -> str | None:
    """The namespace namespaced types are read in: -n, else `default`; None with -A (every one).
    -n on a cluster-scoped type is refused: it has no namespace to look in."""
    scoped = [t.kind for t in types if not t.namespaced]
    if namespace is not None and scoped:
        raise click.UsageError(f"{scoped[0]} is cluster-scoped: drop -n/--namespace (it has no namespace)")
    if namespace is not None and all_namespaces:
        raise click.UsageError("-n/--namespace and -A/--all-namespaces exclude each other: give one")
    return None if all_namespaces else namespace or DEFAULT_NAMESPACE


def _in(obj: dict[str, Any], type_: ResourceType) -> bool:
    version = obj.get("apiVersion", "")
    group = version.rsplit("/", 1)[0] if "/" in version else ""
    return obj.get("kind") == type_.kind and group == type_.group


@dataclass
class Selection:
    """What `get` found: objects per type, in the order the types were given."""
    found: list[tuple[ResourceType, list[dict[str, Any]]]]
    missing: list[str]


def select(types: list[ResourceType], objects_of, names: tuple[str, ...], namespace: str | None,
           selector: str | None) -> Selection:
    """`objects_of(type)` gives every object of a type; keep those in the namespace (namespaced types
    only), of the names given and matching the label selector."""
    try:
        matches = parse_selector(selector)
    except SelectorError as error:
        raise click.BadParameter(str(error), param_hint="'-l' / '--selector'") from None
    found, missing = [], []
    for type_ in types:
        objects = [o for o in objects_of(type_) if _in(o, type_)
                   and (not type_.namespaced or namespace is None
                        or (o["metadata"].get("namespace") or DEFAULT_NAMESPACE) == namespace)
                   and matches(o["metadata"].get("labels") or {})]
        if names:
            by_name = {o["metadata"]["name"]: o for o in objects}
            objects = [by_name[n] for n in names if n in by_name]
            where = f" in namespace {namespace}" if type_.namespaced and namespace else ""
            missing += [f'{type_.qualified} "{n}" not found{where}' for n in names if n not in by_name
                        and len(types) == 1]
        found.append((type_, objects))
    return Selection(found, missing)


def one_type(typed: str) -> ResourceType:
    """The single type a single-object command names; where groups share the name, the user picks."""
    types = resolve(typed)
    if len(types) > 1:
        raise click.UsageError(f"{typed!r} names {len(types)} kinds: use one of "
                               f"{', '.join(t.qualified for t in types)}")
    return types[0]


def object_key(typed: str, name: str, namespace: str | None) -> "Key":
    """The key of the object KIND NAME [-n NS] means, in the control plane's store."""
    from inferplane.runtime.store import Key

    type_ = one_type(typed)
    if type_.in_cluster:
        raise click.UsageError(f"{type_.plural} live in a target cluster: `inferplane get {type_.plural} --cluster "
                               "NAME` reads them")
    ns = namespace_for([type_], namespace)
    return Key(type_.group, type_.kind, ns if type_.namespaced else "", name)


def fetch(runtime: "ControlPlane", typed: str, name: str, namespace: str | None) -> dict[str, Any]:
    key = object_key(typed, name, namespace)
    obj = runtime.get(key)
    if obj is None:
        where = f" in namespace {key.namespace}" if key.namespace else ""
        hint = " (-n NAMESPACE or `get -A` finds it elsewhere)" if key.namespace else ""
        raise click.ClickException(f'{one_type(typed).qualified} "{name}" not found{where}{hint}')
    return obj


def event_subject(reference: str, namespace: str | None) -> "Key":
    """--for KIND/NAME: the key of the object whose events to show."""
    if "/" not in reference:
        raise click.BadParameter(f"{reference!r}: write KIND/NAME, e.g. icluster/eks-l4", param_hint="'--for'")
    typed, name = reference.split("/", 1)
    return object_key(typed, name, namespace)


def objects_named(runtime: "ControlPlane", args: tuple[str, ...], namespace: str | None, selector: str | None = None,
                  every: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """kubectl's TYPE NAME..., TYPE/NAME... or TYPE with -l/--all (`label`, `wait`): (objects found,
    not-found messages)."""
    if not args:
        raise click.UsageError("name the objects: TYPE NAME..., TYPE/NAME..., or TYPE with -l SELECTOR or --all")
    if all("/" in a for a in args):
        pairs = [a.split("/", 1) for a in args]
    elif "/" in "".join(args):
        raise click.UsageError("write either TYPE NAME... or TYPE/NAME..., not both")
    else:
        if len(args) == 1 and not (selector or every):
            raise click.UsageError(f"name the {args[0]} objects, or pass -l SELECTOR or --all")
        pairs = [(args[0], name) for name in args[1:]] or [(args[0], None)]
    objects, missing = [], []
    for typed, name in pairs:
        type_ = one_type(typed)
        ns = namespace_for([type_], namespace)
        selection = select([type_], lambda t: runtime.list(t.kind), (name,) if name else (), ns, selector)
        objects += [o for _, found in selection.found for o in found]
        missing += selection.missing
    return objects, missing
