"""The runtime driven with a toy kind (toy.py): composing, garbage collection, requirements, deletion and
a run that owns part of the queue, with none of inferplane's kinds."""

from __future__ import annotations

import ast
from pathlib import Path

from inferplane.runtime.keys import Key
from inferplane.runtime.reconciler import Reconciler
from inferplane.runtime.store import Store
from toy import API_VERSION, FUNCTIONS, GROUP, library, shelf

# What the runtime's tests may not lean on: the runtime knows no kind of ours (tests/test_structure.py).
DOMAIN = {"compose", "clouds", "accelerators", "scheduling", "simulator", "admission", "engine", "crossplane",
          "apiserver", "cli"}


def key(kind: str, name: str) -> Key:
    return Key(GROUP, kind, "", name)


def ready(obj: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))


def applied(store: Store, *objects: dict) -> Reconciler:
    """The objects written as a user writes them, then the queue worked off to the fixpoint."""
    for obj in objects:
        current = store.get(Key.of(obj))
        if current is not None:
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        store.put(obj)
        store.queue.enqueue("reconcile", [Key.of(obj)])
    reconciler = Reconciler(store, FUNCTIONS)
    assert reconciler.run().converged
    assert store.queue.queued() == 0
    return reconciler


def test_the_runtime_tests_import_no_kind_of_ours():
    for source in Path(__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                parts = name.split(".")
                assert not (parts[0] == "inferplane" and len(parts) > 1 and parts[1] in DOMAIN), f"{source.name}: {name}"


def test_a_composite_composes_its_resources_and_is_ready_once_they_are():
    store = Store(None)
    applied(store, shelf("a", ["dune", "emma"]))
    books = store.list("Book")
    assert [b["metadata"]["name"] for b in books] == ["a-dune", "a-emma"]
    assert all(b["metadata"]["ownerReferences"][0]["name"] == "a" for b in books)
    assert ready(store.get(key("Shelf", "a")))


def test_what_a_composite_no_longer_desires_is_deleted_and_said_in_an_event():
    store = Store(None)
    applied(store, shelf("a", ["dune", "emma"]))
    applied(store, shelf("a", ["dune"]))
    assert [b["metadata"]["name"] for b in store.list("Book")] == ["a-dune"]
    assert [e["reason"] for e in store.event_log.events(key("Shelf", "a"))] == ["DeletedComposed"]


def test_a_composite_requiring_a_whole_kind_reconciles_when_one_of_it_comes():
    store = Store(None)
    applied(store, library("town"), shelf("a", []))
    assert store.get(key("Library", "town"))["status"]["shelves"] == 1
    applied(store, shelf("b", ["emma"]))
    assert store.get(key("Library", "town"))["status"]["shelves"] == 2


def test_deleting_a_composite_deletes_what_it_composed():
    store = Store(None)
    reconciler = applied(store, shelf("a", ["dune", "emma"]), shelf("b", ["odyssey"]))
    assert reconciler.delete(key("Shelf", "a"))
    reconciler.run()
    assert [b["metadata"]["name"] for b in store.list("Book")] == ["b-odyssey"]
    assert store.get(key("Shelf", "a")) is None


def test_a_run_that_owns_part_of_the_queue_leaves_the_rest_queued_for_another():
    store = Store(None)
    for name in ("a", "b"):
        store.put(shelf(name, [name]))
    store.queue.enqueue("reconcile", [key("Shelf", "a"), key("Shelf", "b")])
    reconciler = Reconciler(store, FUNCTIONS)
    reconciler.run(owns=lambda k: k.name.startswith("a"))
    assert [b["metadata"]["name"] for b in store.list("Book")] == ["a-a"]
    assert store.queue.queued() == 1 and store.queue.next_item(unparked=True) is None  # set aside, still queued
    with store.transaction():
        store.queue.unpark()
    reconciler.run()
    assert [b["metadata"]["name"] for b in store.list("Book")] == ["a-a", "b-b"]
    assert store.get(key("Shelf", "b"))["apiVersion"] == API_VERSION and store.queue.queued() == 0
