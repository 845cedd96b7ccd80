"""Shell completion of kinds and names (click completes commands and options itself)."""

from __future__ import annotations

from typing import Any

from click.shell_completion import CompletionItem


def complete_kinds(incomplete: str) -> list[CompletionItem]:
    """Plurals and short names; after a comma (`iclass,ic`), the next kind of the list."""
    from inferplane.cli.resources import resource_types

    done, _, word = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    spellings = sorted({n for t in resource_types() for n in (t.plural, *t.short_names)})
    return [CompletionItem(prefix + s) for s in spellings if s.startswith(word)]


def complete_names(params: dict[str, Any], incomplete: str) -> list[str]:
    """Names of the objects of the kind already typed, from the state; nothing where there is no state."""
    from inferplane.cli.resources import resolve_many
    from inferplane import state_dir
    from inferplane.runtime.store import STORE_FILE, Store, StoreError

    folder = state_dir(params.get("state"))
    if not params.get("kind") or not (folder / STORE_FILE).is_file():
        return []
    try:
        types = resolve_many(params["kind"])
    except Exception:  # noqa: BLE001 - a half-typed kind completes to nothing, never to an error
        return []
    try:
        store = Store(folder, read_only=True)
    except (StoreError, OSError):  # a state that cannot be read completes to nothing; the command says why
        return []
    try:
        names = {o["metadata"]["name"] for t in types if not t.in_cluster for o in store.list(t.kind)}
    except Exception as exc:
        if store.database.failure(exc) is None:
            raise
        return []
    finally:
        store.close()
    return sorted(n for n in names if n.startswith(incomplete))
