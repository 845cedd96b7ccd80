"""Dry runs and diffs: what applying would change, per resource, with Secrets' values masked as kubectl
masks them."""

from __future__ import annotations

from typing import Any

from inferplane.cli.output import qualified_name
from inferplane.runtime.store import Resource


# ---- dry runs and diffs: what applying would change, per resource

# Set by the engine on every write: not a change a user makes.
_VOLATILE_METADATA = ("resourceVersion", "generation", "creationTimestamp", "uid")


def _comparable(obj: Resource) -> Resource:
    meta = {k: v for k, v in obj["metadata"].items() if k not in _VOLATILE_METADATA}
    return {k: v for k, v in {**obj, "metadata": meta}.items() if k != "status"}


def _by_name(objects: list[Resource]) -> dict[str, Resource]:
    return {f"{qualified_name(o)}{'@' + o['metadata']['namespace'] if o['metadata'].get('namespace') else ''}": o
            for o in objects}


def changes(before: list[Resource], after: list[Resource]) -> list[tuple[str, str]]:
    """(kind.group/name, created | configured | deleted) for every object whose spec or metadata differ."""
    old, new = _by_name(before), _by_name(after)
    out = []
    for key in sorted(old.keys() | new.keys()):
        name = qualified_name((new.get(key) or old[key]))
        if key not in old:
            out.append((name, "created"))
        elif key not in new:
            out.append((name, "deleted"))
        elif _comparable(old[key]) != _comparable(new[key]):
            out.append((name, "configured"))
    return out


def unified_diffs(before: list[Resource], after: list[Resource]) -> str:
    """One unified diff per changed object, of its YAML without status and engine-set metadata; a
    Secret's values masked as kubectl diff masks them."""
    import difflib

    import yaml

    old, new = _by_name(before), _by_name(after)
    out = []
    for key in sorted(old.keys() | new.keys()):
        live, applied = masked_secrets(_comparable(old[key]) if key in old else None,
                                       _comparable(new[key]) if key in new else None)
        a = yaml.safe_dump(live, sort_keys=True).splitlines(True) if live is not None else []
        b = yaml.safe_dump(applied, sort_keys=True).splitlines(True) if applied is not None else []
        if a != b:
            name = qualified_name((new.get(key) or old[key]))
            out += difflib.unified_diff(a, b, f"live/{name}", f"applied/{name}")
    return "".join(out)


# kubectl diff's masks (k8s.io/kubectl pkg/cmd/diff/diff.go, `Masker`): every value of a Secret's data
# is `***`; a key in both objects whose value changed reads `*** (before)` and `*** (after)`.
SECRET_MASK, SECRET_MASK_BEFORE, SECRET_MASK_AFTER = "***", "*** (before)", "*** (after)"


def masked_secrets(live: Resource | None, applied: Resource | None) -> tuple[Resource | None, Resource | None]:
    """The two sides of a diff with a Secret's data masked as kubectl diff masks it; so is a Secret a
    provider-kubernetes Object carries to a cluster (`spec.forProvider.manifest`)."""
    import copy

    live, applied = copy.deepcopy(live), copy.deepcopy(applied)
    for path in (("data",), ("stringData",), ("spec", "forProvider", "manifest", "data"),
                 ("spec", "forProvider", "manifest", "stringData")):
        before, after = _secret_values(live, path), _secret_values(applied, path)
        for key in before:
            changed = key in after and before[key] != after[key]
            before[key] = SECRET_MASK_BEFORE if changed else SECRET_MASK
        for key in after:
            changed = key in before and before[key] == SECRET_MASK_BEFORE
            after[key] = SECRET_MASK_AFTER if changed else SECRET_MASK
    return live, applied


def carried_secrets_masked(obj: Resource) -> Resource:
    """`obj`, or when it is an Object carrying a Secret to a cluster, a copy with the Secret's values masked."""
    manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest") if obj.get("kind") == "Object" \
        else None
    if not isinstance(manifest, dict) or (manifest.get("apiVersion"), manifest.get("kind")) != ("v1", "Secret"):
        return obj
    return masked_secrets(obj, None)[0] or obj


def _secret_values(obj: Resource | None, path: tuple[str, ...]) -> dict[str, Any]:
    """The mapping at `path` when `obj` is (or, below spec, carries) a v1 Secret; else an empty one."""
    holder = obj
    for step in path[:-1]:
        holder = holder.get(step) if isinstance(holder, dict) else None
    is_secret = isinstance(holder, dict) and holder.get("apiVersion") == "v1" and holder.get("kind") == "Secret"
    values = holder.get(path[-1]) if is_secret else None
    return values if isinstance(values, dict) else {}
