"""Who owns which fields: `metadata.managedFields` read and written, and the two operations of
structured-merge-diff's Updater (merge/update.go, v6): `apply` (a manager's applied configuration:
merged, what it no longer applies pruned, conflicts with other managers refused unless forced) and
`update` (any other write: the writer takes what it changed, the others lose it)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from inferplane.fieldmanager.fieldset import FieldError, Path, fields_of, from_fields_v1, path_string, to_fields_v1, with_prefixes
from inferplane.fieldmanager.merge import merged, remove
from inferplane.fieldmanager.schema import Shape, shape_of

APPLY, UPDATE = "Apply", "Update"
# kube-apiserver's limit on a field manager's name (k8s.io/apimachinery pkg/apis/meta/v1/validation/
# validation.go, v0.37.0-beta.0: FieldManagerMaxLength = 128).
MAX_MANAGER = 128
# What the API server leaves out of every field set (k8s.io/apimachinery pkg/util/managedfields/internal/
# stripmeta.go, v0.37.0-beta.0, NewStripMetaManager: apiVersion, kind, metadata itself and metadata's name,
# namespace, creationTimestamp, selfLink, uid, clusterName, generation, managedFields, resourceVersion).
# metadata.deletionTimestamp and deletionGracePeriodSeconds are ours: upstream does not strip them. And
# the status, which the main resource's writes do not change: it is the main resource's reset fields
# (a custom resource's with the status subresource: k8s.io/apiextensions-apiserver
# pkg/registry/customresource/strategy.go, GetResetFields), which the field manager hands to
# structured-merge-diff's Updater as its IgnoreFilter (internal/structuredmerge.go,
# NewStructuredMergeManager).
STRIPPED: tuple[Path, ...] = (("f:apiVersion",), ("f:kind",), ("f:status",)) + tuple(
    ("f:metadata", "f:" + name) for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation", "managedFields",
        "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"))


UNKNOWN_MANAGER = "unknown"


def manager_from_user_agent(user_agent: str) -> str:
    """The manager of a write that names none: the User-Agent up to its first `/`, unprintable characters
    left out, at most MAX_MANAGER bytes (k8s.io/apiserver pkg/endpoints/handlers/create.go, v0.37.0-beta.0:
    managerOrUserAgent and prefixFromUserAgent). Unlike upstream, spaces other than U+0020 (category Zs)
    are kept here, where Go's unicode.IsPrint drops them. An empty result is "unknown", as the API server
    names it (k8s.io/apimachinery pkg/util/managedfields/internal/buildmanagerinfo.go, buildManagerInfo)."""
    out, size = [], 0
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable() and unicodedata.category(char) != "Zs":
            continue
        size += len(char.encode())
        if size > MAX_MANAGER:
            break
        out.append(char)
    return "".join(out) or UNKNOWN_MANAGER


@dataclass
class Entry:
    manager: str
    operation: str
    api_version: str
    paths: set[Path] = field(default_factory=set)
    time: str | None = None
    subresource: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        # A manager is its name, operation and subresource; an Update manager's API version too, an Apply
        # manager's never (k8s.io/apimachinery pkg/util/managedfields/internal/managedfields.go,
        # v0.37.0-beta.0: BuildManagerIdentifier, which never includes the time or the fields).
        return (self.manager, self.operation, self.api_version if self.operation == UPDATE else "", self.subresource)

    def describe(self) -> str:
        """As a conflict names it (internal/conflict.go, v0.37.0-beta.0: printManager): an Update manager
        with its API version and no time (printManager adds ` at TIME` only to an identifier carrying one,
        and BuildManagerIdentifier never gives it one)."""
        name = f'"{self.manager}"'
        if self.subresource:
            name += f' with subresource "{self.subresource}"'
        if self.operation == UPDATE:
            name += f" using {self.api_version}"
        return name


Managers = dict[tuple[str, str, str, str], Entry]


def read(obj: dict[str, Any] | None) -> Managers:
    """The managers an object records (entries that are not FieldsV1 entries are dropped)."""
    out: Managers = {}
    for raw in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("manager", ""), str) or raw.get("fieldsType",
                                                                                               "FieldsV1") != "FieldsV1":
            continue
        entry = Entry(raw.get("manager", ""), raw.get("operation") or UPDATE, str(raw.get("apiVersion", "")),
                      from_fields_v1(raw.get("fieldsV1")), raw.get("time"), str(raw.get("subresource") or ""))
        if entry.paths:
            out.setdefault(entry.key, entry).paths |= entry.paths
    return out


def written(managers: Managers) -> list[dict[str, Any]]:
    """managedFields as the API server writes them, Apply entries first, then by time and manager
    (internal/managedfields.go, v0.37.0-beta.0: sortEncodedManagedFields)."""
    entries = sorted(managers.values(), key=lambda e: (e.operation, e.time or "", e.manager, e.api_version,
                                                       e.subresource))
    out = []
    for entry in entries:
        body = {"manager": entry.manager, "operation": entry.operation, "apiVersion": entry.api_version}
        if entry.time:
            body["time"] = entry.time
        body.update(fieldsType="FieldsV1", fieldsV1=to_fields_v1(entry.paths))
        if entry.subresource:
            body["subresource"] = entry.subresource
        out.append(body)
    return out


def managed_part(obj: dict[str, Any] | None) -> dict[str, Any]:
    """What of an object field sets are made of: all but its status and server-set metadata."""
    if not obj:
        return {}
    out = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if ("f:metadata", "f:" + k) not in STRIPPED}
    out.pop("metadata", None)
    if meta:
        out["metadata"] = meta
    return out


@dataclass
class Conflicts(Exception):
    """Fields another manager owns that a write would change: [(path, manager)]."""
    conflicts: list[tuple[Path, Entry]]

    def message(self) -> str:
        # internal/conflict.go, v0.37.0-beta.0: getConflictMessage (which groups by the manager identifier,
        # sorted; we sort by the printed name).
        if len(self.conflicts) == 1:
            path, entry = self.conflicts[0]
            return f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_string(path)}"
        lines = []
        for manager in sorted({e.describe() for _, e in self.conflicts}):
            lines.append(f"conflicts with {manager}:")
            lines += [f"- {path_string(p)}" for p, e in self.conflicts if e.describe() == manager]
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)


def _compare(old: dict[Path, Any], new: dict[Path, Any]) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, modified, removed) from one object's fields to another's (typed/compare.go)."""
    added = new.keys() - old.keys()
    removed = old.keys() - new.keys()
    modified = {p for p in old.keys() & new.keys() if old[p] is not new[p] and old[p] != new[p]}
    return set(added), modified, set(removed)


def _update(old: dict[Path, Any], new: dict[Path, Any], managers: Managers, mine: tuple, force: bool,
            ) -> tuple[Managers, tuple[set[Path], set[Path], set[Path]]]:
    """Updater.update: another manager's fields that changed are a conflict (taken from it when forced);
    fields gone from the object are gone from every manager."""
    added, modified, removed = compare = _compare(old, new)
    changed = added | modified
    conflicts = [(p, e) for k, e in managers.items() if k != mine for p in sorted(e.paths & changed)]
    if conflicts and not force:
        raise Conflicts(conflicts)
    out: Managers = {}
    for key, entry in managers.items():
        paths = entry.paths if key == mine else entry.paths - changed - removed
        if paths:
            out[key] = entry if paths == entry.paths else replace(entry, paths=paths)
    return out, compare


def apply(live: dict[str, Any] | None, config: dict[str, Any], managers: Managers, entry: Entry, shape: Shape,
          force: bool) -> tuple[dict[str, Any], Managers]:
    """Updater.Apply: the live object with `config` merged in, what `entry.manager` applied before and
    no longer applies removed unless another manager owns it (prune), and the managers afterwards;
    `Conflicts` for fields others own and this changes, unless `force`. `live`, `config`: managed_part."""
    live = live or {}
    old = fields_of(live, shape, STRIPPED)
    config_fields = fields_of(config, shape, STRIPPED)
    out = merged(live, config, shape)
    managers = dict(managers)
    last = managers.get(entry.key)
    entry.paths = set(config_fields)
    managers[entry.key] = entry
    if last is not None and last.paths:
        # prune (merge/update.go: prune, addBackOwnedItems): remove what this manager applied last time
        # unless it applies it now or another manager owns it (or something under it).
        kept = with_prefixes(p for k, e in managers.items() for p in e.paths)
        for path in sorted(with_prefixes(last.paths) - kept, key=len):
            if path not in STRIPPED and path != ("f:metadata",):
                remove(out, path)
    new = fields_of(out, shape, STRIPPED)
    managers, _ = _update(old, new, managers, entry.key, force)
    return out, managers


def update(live: dict[str, Any] | None, new_obj: dict[str, Any], managers: Managers, entry: Entry,
           shape: Shape) -> Managers:
    """Updater.Update: the writer owns what it added or changed (and keeps what it owned that is still
    there); the others lose it. Unchanged fields change no one's ownership."""
    old = fields_of(live or {}, shape, STRIPPED)
    new = fields_of(new_obj, shape, STRIPPED)
    managers, (added, modified, removed) = _update(old, new, dict(managers), entry.key, True)
    if not (added or modified or removed):
        return managers
    previous = managers.get(entry.key)
    paths = ((previous.paths if previous else set()) - removed) | added | modified
    if paths:
        managers[entry.key] = replace(entry, paths=paths)
    else:
        managers.pop(entry.key, None)
    return managers


def same(one: Managers, other: Managers) -> bool:
    """Whether two records own the same fields alike (the times aside)."""
    return {k: e.paths for k, e in one.items()} == {k: e.paths for k, e in other.items()}


def stamped(before: Managers, after: Managers, time: str | None) -> Managers:
    """`after` with the time of each entry whose fields changed set to `time`; the others keep the time they
    had (an entry rebuilt for the write has none of its own), so a write that changes no one's fields leaves
    managedFields as they were and the object unchanged. kube-apiserver stamps only the writer's entry (an
    Update's when it took fields, an Apply's when the object changed), never the entries that lost fields
    (k8s.io/apimachinery pkg/util/managedfields/internal/managedfieldsupdater.go, v0.37.0-beta.0)."""
    out = {}
    for key, entry in after.items():
        old = before.get(key)
        unchanged = old is not None and old.paths == entry.paths
        out[key] = replace(entry, time=(entry.time or old.time) if unchanged else (time or None))  # type: ignore[union-attr]
    return out


# The manager `inferplane apply` (and the CLI's other writes) records.
INFERPLANE = "inferplane"


def recorder(manager: str, operation: str, clock: Callable[[], str | None]) -> Callable[[dict, dict | None], list]:
    """What the CLI's writes record, given (the object written, the stored one): `inferplane apply` writes
    each object whole, so it owns every field it applies and takes them from any other manager (an apply
    forced, as `kubectl apply --server-side --force-conflicts`); its other writes (`label`, `scale`) are
    Updates. An object its schema cannot key (a list-map item twice) keeps the record it had."""

    def record(obj: dict[str, Any], current: dict[str, Any] | None) -> list[dict[str, Any]]:
        before = read(current)
        entry = Entry(manager, operation, obj.get("apiVersion", ""))
        shape = shape_of(entry.api_version, obj.get("kind", ""))
        try:
            if operation == APPLY:
                new = fields_of(managed_part(obj), shape, STRIPPED)
                managers = {**before, entry.key: replace(entry, paths=set(new))}
                managers, _ = _update(fields_of(managed_part(current), shape, STRIPPED), new, managers, entry.key, True)
            else:
                managers = update(managed_part(current), managed_part(obj), before, entry, shape)
        except FieldError:
            return ((current or {}).get("metadata") or {}).get("managedFields") or []
        return written(stamped(before, managers, clock()))

    return record
