"""What a full apply holds, held once: composed objects share their marks, a key nobody watches is
noted without a set of its own yet is watched as soon as a composite requires it, and the store counts
its objects without decoding them."""

import pytest

from inferplane.runtime.composed import COMPOSITE_LABEL, COMPOSITION_KEY, composed_metadata
from inferplane.runtime.keys import Key
from inferplane.runtime.reconciler import Reconciler
from inferplane.runtime.store import Store
from inferplane.runtime.watchers import Watchers

COMPOSITE = {"apiVersion": "infrastructure.inferplane.dev/v1alpha1", "kind": "ServingStack",
             "metadata": {"name": "eks-0000", "uid": "u-1"}}


def test_objects_a_composite_composes_share_its_marks_which_refuse_changes():
    first = composed_metadata(COMPOSITE, "release-a", {"name": "a", "labels": {"component": "x"}})
    second = composed_metadata(COMPOSITE, "release-b", {"name": "b", "labels": {"component": "x"}})
    assert first["ownerReferences"] is second["ownerReferences"]
    assert first["ownerReferences"] == [{"apiVersion": COMPOSITE["apiVersion"], "kind": "ServingStack",
                                         "name": "eks-0000", "uid": "u-1", "controller": True,
                                         "blockOwnerDeletion": True}]
    assert first["labels"] is second["labels"] and first["labels"] == {"component": "x", COMPOSITE_LABEL: "eks-0000"}
    assert first["annotations"] == {COMPOSITION_KEY: "release-a"}
    with pytest.raises(TypeError, match="cannot be changed in place"):
        first["labels"]["component"] = "y"  # a change meant for one would reach every object sharing it
    with pytest.raises(TypeError):
        first["ownerReferences"].append({})


def test_marks_of_labels_that_are_not_strings_are_their_own():
    given = {"count": 3}
    meta = composed_metadata(COMPOSITE, "thing", {"name": "t", "labels": given})
    assert meta["labels"] == {"count": 3, COMPOSITE_LABEL: "eks-0000"}
    meta["labels"]["count"] = 4  # a dict of its own: changing it reaches nothing else
    assert given == {"count": 3}


def test_a_key_nobody_watched_is_watched_once_a_composite_requires_it():
    store = Store(None)
    watchers = Watchers(store)
    stack, release = Key("g", "ServingStack", "", "s"), Key("g", "Release", "ns", "r")
    assert watchers.of(release) == set()  # asked first: nobody
    with store.transaction():
        store.requirements.set(stack, [release])
    watchers.note(stack, {release})
    assert watchers.of(release) == {stack}
    assert Watchers(store).of(release) == {stack}  # as the store says
    watchers.note(stack, set())
    assert watchers.of(release) == set()


def test_a_fleet_applied_in_memory_shares_each_composites_owner_reference(tmp_path, monkeypatch):
    from inferplane.engine.control_plane import ControlPlane
    from inferplane.simulator.synthetic_fleet import write_fleet

    runtime = ControlPlane(None)
    seen = {}
    run = Reconciler.run

    def keep_cache(self):
        report = run(self)
        seen["objects"] = list(self.cache.objects.values())
        return report

    monkeypatch.setattr(Reconciler, "run", keep_cache)
    assert runtime.apply([write_fleet(tmp_path / "fleet", 3)]).report.converged
    composed = [o for o in seen["objects"] if o["metadata"].get("ownerReferences")]
    by_owner = {}
    for obj in composed:
        by_owner.setdefault(obj["metadata"]["ownerReferences"][0]["uid"], set()).add(
            id(obj["metadata"]["ownerReferences"]))
    assert len(composed) > 3 * 20
    assert all(len(copies) == 1 for copies in by_owner.values())  # one reference a composite, however many it composed
    assert runtime.store.count() == len(runtime.list()) == len(seen["objects"])


class Cycle:
    def __init__(self):
        self.itself = self  # freed only by the cyclic collector


def test_a_run_collects_the_cycles_each_batch_leaves_and_leaves_the_collector_as_it_was(tmp_path, monkeypatch):
    import gc
    import weakref

    from inferplane.engine.control_plane import ControlPlane
    from inferplane.runtime import reconciler
    from inferplane.simulator.synthetic_fleet import write_fleet

    left = []
    reconcile = Reconciler.reconcile

    def leaving_a_cycle(self, key, bumps=None):
        left.append(weakref.ref(Cycle()))
        return reconcile(self, key, bumps)

    monkeypatch.setattr(Reconciler, "reconcile", leaving_a_cycle)
    monkeypatch.setattr(reconciler, "BATCH_SECONDS", 0.0)  # a batch for each queue item
    gc.disable()  # no collection but the run's own
    try:
        assert ControlPlane(tmp_path / "state").apply([write_fleet(tmp_path / "fleet", 2)]).report.converged
        assert not gc.isenabled() and gc.get_freeze_count() == 0
        # Every batch's cycles are gone at its end; the last batch's are left for the collector after the run.
        assert len(left) > 10 and [ref() is None for ref in left][:-1] == [True] * (len(left) - 1)
    finally:
        gc.enable()
    assert ControlPlane(tmp_path / "other").apply([write_fleet(tmp_path / "fleet", 1)]).report.converged
    assert gc.isenabled() and gc.get_freeze_count() == 0
