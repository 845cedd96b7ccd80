"""The fixpoint is a property of the fleet, not of the machine: the same fleet converges to the same
objects whether each batch holds the whole run or a single reconcile, and the bound on a composite's
reconciles counts those since a user last changed its inputs."""

import itertools

from inferplane.compose.base import Requirement, Response
from inferplane.runtime import reconciler as module
from inferplane.runtime.reconciler import MAX_RECONCILES_PER_OBJECT, Reconciler
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.store import Key, Store
from inferplane.simulator.synthetic_fleet import PLACEMENT_REPLICAS, write_placement_fleet

# Large enough that today's main stopped at the bound on it (the deployment reconciled once per
# replica's cluster simulated, twice), small enough for a test.
PLACEMENT_CLUSTERS = 10
DEPLOYMENT = Key("inferplane.dev", "ModelDeployment", "default", "bench")


def condition(obj, type_):
    return next(c["status"] for c in obj["status"]["conditions"] if c["type"] == type_)


def converged(folder, clock):
    runtime = ControlPlane(None, clock=clock)
    report = runtime.apply([folder]).report
    assert report.converged, report.unconverged
    return runtime, report


def test_the_placement_fleet_converges_alike_on_a_fast_and_on_a_loaded_machine(tmp_path):
    folder = write_placement_fleet(tmp_path / "fleet", PLACEMENT_CLUSTERS)
    # Fast: the clock never moves, so the whole run is one batch. Loaded: every reading is a second
    # later, so every batch holds a single queue item (a reconcile slower than BATCH_SECONDS).
    fast, fast_report = converged(folder, clock=lambda: 0.0)
    seconds = itertools.count()
    slow, slow_report = converged(folder, clock=lambda: float(next(seconds)))

    assert fast_report.reconciled == slow_report.reconciled
    assert fast.list() == slow.list()
    assert fast.store.cluster_objects() == slow.store.cluster_objects()
    # Every replica placed on an H200 pool and serving; the deployment reconciled a handful of times,
    # not once per cluster or replica that changed.
    deployment = slow.get(DEPLOYMENT)
    assert deployment["status"]["replicas"] == {"total": PLACEMENT_REPLICAS, "ready": PLACEMENT_REPLICAS}
    replicas = slow.list("ModelReplica")
    assert len(replicas) == PLACEMENT_REPLICAS
    assert {m["nodePoolName"] for r in replicas for e in r["spec"]["engines"] for m in e["members"]} \
        <= {"pool-0", "pool-2"}
    assert all(condition(r, "Ready") == "True" for r in replicas)
    assert slow_report.reconciled[str(DEPLOYMENT)] < PLACEMENT_REPLICAS


def test_two_composites_that_keep_answering_each_other_are_reported_not_looped_forever():
    """Each reads the other's status and writes its own from it: their inputs' generations never
    change, so the bound holds however the writes alternate."""
    store = Store(None)
    x = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"}, "spec": {}}
    y = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceGateway", "metadata": {"name": "y"}, "spec": {}}

    def answering(kind):
        def function(request):
            other = request.required.get("other") or {}
            seen = (other.get("status") or {}).get("n", 0)
            return Response(status={"n": seen + 1}, requirements={
                "other": Requirement("inferplane.dev/v1alpha1", kind, "y" if kind == "InferenceGateway" else "x")})
        return function

    functions = {"InferenceCluster": answering("InferenceGateway"), "InferenceGateway": answering("InferenceCluster")}
    writer = Reconciler(store, functions=functions)
    writer.submit(x)
    writer.submit(y)
    report = Reconciler(store, functions=functions).run()
    assert not report.converged
    assert report.unconverged == {"InferenceCluster/x": MAX_RECONCILES_PER_OBJECT}
    # The first reconcile of each read nothing yet: what it asked for is an input that changed.
    assert report.reconciled == {"InferenceCluster/x": MAX_RECONCILES_PER_OBJECT + 1,
                                 "InferenceGateway/y": MAX_RECONCILES_PER_OBJECT + 1}


def test_a_composite_whose_input_a_user_keeps_changing_is_bounded_per_change(monkeypatch):
    """A user changes the class a composite requires between every two batches, more times than the
    bound: each change is work of its own, and the run converges on the last one."""
    store = Store(None)
    changes = MAX_RECONCILES_PER_OBJECT + 5

    def klass(n):
        return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "c"},
                "spec": {"description": str(n)}}

    def reads_the_class(request):
        found = request.required.get("class") or {}
        return Response(status={"description": (found.get("spec") or {}).get("description")}, requirements={
            "class": Requirement("inferplane.dev/v1alpha1", "InferenceClass", "c")})

    functions = {"InferenceCluster": reads_the_class}
    user = Reconciler(store, functions=functions)
    user.submit(klass(0))
    user.submit({"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster", "metadata": {"name": "x"},
                 "spec": {}})
    written = itertools.count(1)
    run_batch = module.Reconciler._run_batch

    def a_user_writes_between_batches(self, report):
        if (n := next(written)) <= changes:
            user.submit(klass(n))
        return run_batch(self, report)

    monkeypatch.setattr(module.Reconciler, "_run_batch", a_user_writes_between_batches)
    seconds = itertools.count()
    report = Reconciler(store, functions=functions, clock=lambda: float(next(seconds))).run()
    assert report.converged, report.unconverged
    assert report.reconciled["InferenceCluster/x"] > MAX_RECONCILES_PER_OBJECT
    cluster = store.get(Key("inferplane.dev", "InferenceCluster", "", "x"))
    assert cluster["status"]["description"] == str(changes)
