"""`inferplane apply` processes sharing one state folder.

Two started together, many times over: whatever the interleaving, both exit 0, every write either
acknowledged is present afterwards, and the state (every object with its spec and status, and every
simulated cluster) equals what one render of the union of their manifests gives. An apply waits for
the reconciler lease's holder, takes over a crashed holder's expired lease, and says so clearly when
it gives up waiting on a busy lease or a locked store.
"""

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from inferplane.cli.views import fleet_table
from inferplane.engine.control_plane import ControlPlane
from inferplane.runtime.lease import write_lease
from inferplane.runtime.store import Store
from inferplane.simulator.synthetic_fleet import fleet_manifests
from inferplane.simulator.cluster_objects import simulated_objects

REPO = Path(__file__).resolve().parents[2]
TRIALS = 3
# A trial is two small applies; far longer means one of them hangs.
TRIAL_TIMEOUT = 120


def write(folder: Path, manifests: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for manifest in manifests:
        (folder / f"{manifest['kind']}-{manifest['metadata']['name']}.yaml").write_text(yaml.safe_dump(manifest))
    return folder


def split(count: int) -> tuple[list[dict], list[dict]]:
    manifests = fleet_manifests(count)
    return ([m for m in manifests if m["kind"] == "InferenceClass"],
            [m for m in manifests if m["kind"] == "InferenceCluster"])


def apply_together(state: Path, first: Path, second: Path) -> list[dict[str, str]]:
    """Start both applies at once; each one's acknowledged writes, {object: verb}."""
    command = [sys.executable, "-m", "inferplane.cli.main", "apply", "--state", str(state), "-f"]
    processes = [subprocess.Popen(command + [str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=REPO) for folder in (first, second)]
    acknowledged = []
    deadline = time.monotonic() + TRIAL_TIMEOUT
    for process in processes:
        out, err = process.communicate(timeout=max(1, deadline - time.monotonic()))
        assert "Traceback" not in err, err
        assert process.returncode == 0, err
        acknowledged.append(dict(line.rsplit(" ", 1) for line in out.splitlines()))
    return acknowledged


def comparable(store: Store) -> tuple[dict, dict]:
    """Every object and every simulated cluster without what the engine stamps on a write
    (resourceVersion, generation, creationTimestamp and managedFields' times: a render in memory stamps no time; the uid, given
    at creation from the version: owner references name their owner by kind and name instead)."""
    identity = {o["metadata"]["uid"]: (o["kind"], o["metadata"]["name"]) for o in store.list()}

    def stripped(obj: dict) -> dict:
        meta = {k: v for k, v in obj["metadata"].items()
                if k not in ("resourceVersion", "generation", "creationTimestamp", "uid")}
        if "managedFields" in meta:  # the time of each entry: stamped on a write too
            meta["managedFields"] = [{k: v for k, v in e.items() if k != "time"} for e in meta["managedFields"]]
        if "ownerReferences" in meta:
            meta["ownerReferences"] = [{**{k: v for k, v in ref.items() if k != "uid"},
                                        "owner": identity.get(ref.get("uid"))} for ref in meta["ownerReferences"]]
        return {**obj, "metadata": meta}

    objects = {}
    for obj in store.list():
        objects[(obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = stripped(obj)
    clusters = {name: [stripped(o) for o in held] for name, held in simulated_objects(store).items()}
    return objects, clusters


def rendered(*folders: Path) -> tuple[dict, dict]:
    runtime = ControlPlane(None)
    result = runtime.apply(list(folders))
    assert result.admission.ok and result.report.converged
    return comparable(runtime.store)


def assert_state_is_the_render(state: Path, expected: tuple[dict, dict]) -> None:
    store = Store(state)
    try:
        objects, clusters = comparable(store)
        assert store.queue.queued() == 0, "the queue ran dry"
    finally:
        store.close()
    assert fleet_table(list(objects.values())) == fleet_table(list(expected[0].values()))
    assert objects == expected[0]
    assert clusters == expected[1]


def stored_spec(state: Path, kind: str, name: str) -> dict:
    store = Store(state)
    try:
        return next(o for o in store.list(kind) if o["metadata"]["name"] == name)["spec"]
    finally:
        store.close()


# Which of four clusters each apply holds: disjoint, or sharing the middle two.
FLEETS = {"different": (slice(0, 2), slice(2, 4)), "overlapping": (slice(0, 3), slice(1, 4))}


@pytest.mark.parametrize("trial", range(TRIALS))
@pytest.mark.parametrize("fleets", FLEETS)
def test_two_fleets(tmp_path, fleets, trial):
    classes, clusters = split(4)
    first_part, second_part = FLEETS[fleets]
    first = write(tmp_path / "first", classes + clusters[first_part])
    second = write(tmp_path / "second", classes + clusters[second_part])
    acknowledged = apply_together(tmp_path / "state", first, second)
    verbs = {}
    for ack in acknowledged:
        for obj, verb in ack.items():
            if obj.startswith("inferencecluster"):
                verbs.setdefault(obj.rsplit("/", 1)[1], []).append(verb)
    # A cluster in both fleets: one apply created it, the other found it as it wanted it.
    expected = {"different": {"eks-0000": ["created"], "gke-0001": ["created"], "aks-0002": ["created"],
                              "nebius-0003": ["created"]},
                "overlapping": {"eks-0000": ["created"], "gke-0001": ["created", "unchanged"],
                                "aks-0002": ["created", "unchanged"], "nebius-0003": ["created"]}}
    assert {name: sorted(v) for name, v in verbs.items()} == expected[fleets]
    assert_state_is_the_render(tmp_path / "state", rendered(first, second))


@pytest.fixture(scope="module")
def applied_fleet(tmp_path_factory):
    """A state with a fleet of four clusters at its fixpoint, and its manifests."""
    root = tmp_path_factory.mktemp("fleet")
    classes, clusters = split(4)
    write(root / "manifests", classes + clusters)
    assert ControlPlane(root / "state").apply([root / "manifests"]).report.converged
    return root, classes, clusters


@pytest.mark.parametrize("trial", range(TRIALS + 1))
def test_an_acknowledged_change_is_never_reverted_by_the_other_apply(tmp_path, applied_fleet, trial):
    """The lost update: one apply changes a cluster's nodeCount while the other changes the class that
    cluster uses (so its reconcile rewrites the cluster's status)."""
    root, classes, clusters = applied_fleet
    state = tmp_path / "state"
    shutil.copytree(root / "state", state)
    target = clusters[trial % len(clusters)]
    name = target["metadata"]["name"]
    used = target["spec"]["nodePools"][0]["className"]

    changed_classes = yaml.safe_load(yaml.safe_dump(classes))
    for klass in changed_classes:
        if klass["metadata"]["name"] == used:
            # Another GPU model, as the NVIDIA driver reports an L40S.
            klass["spec"]["devices"][0]["attributes"] = {"productName": {"string": "NVIDIA L40S"}}
            klass["spec"]["devices"][0]["capacity"]["memory"] = {"value": "46068Mi"}
    first = write(tmp_path / "first", changed_classes + [c for c in clusters if c is not target])
    resized = yaml.safe_load(yaml.safe_dump(target))
    resized["spec"]["nodePools"][0]["nodeCount"] = 3
    second = write(tmp_path / "second", [resized])

    acknowledged = apply_together(state, first, second)
    assert acknowledged[0][f"inferenceclass.inferplane.dev/{used}"] == "configured"
    assert acknowledged[1] == {f"inferencecluster.inferplane.dev/{name}": "configured"}
    assert stored_spec(state, "InferenceCluster", name)["nodePools"][0]["nodeCount"] == 3
    klass = stored_spec(state, "InferenceClass", used)
    assert klass["devices"][0]["capacity"]["memory"] == {"value": "46068Mi"}
    assert_state_is_the_render(state, rendered(first, second))


def run_apply(state: Path, folder: Path, *options: str) -> subprocess.CompletedProcess:
    run = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "apply", "--state", str(state), "-f",
                          str(folder), *options], capture_output=True, text=True, cwd=REPO, timeout=TRIAL_TIMEOUT)
    assert "Traceback" not in run.stderr, run.stderr
    return run


def test_an_apply_waits_for_the_lease_holder_and_says_so_when_it_gives_up(tmp_path):
    from inferplane.runtime.lease import Lease

    classes, clusters = split(1)
    folder = write(tmp_path / "fleet", classes + clusters)
    holder = Lease(Store(tmp_path / "state"), duration=60)
    assert holder.try_acquire()  # another reconciler at work, renewing its lease

    run = run_apply(tmp_path / "state", folder, "--timeout", "1")
    assert run.returncode == 3
    waited, summary = run.stderr.strip().splitlines()
    assert waited == (
        f"error: the fleet has not reached its fixpoint: {holder.holder} is still reconciling this state; your "
        "objects are stored and it reconciles them too: run the command again with a longer --timeout to wait "
        "for it")
    assert re.fullmatch(r"applied in \d+\.\d s: \d+ changed \(\d+ created\), 0 unchanged; 1 not ready: "
                        r"InferenceCluster/eks-0000 \(not reconciled yet\)", summary)
    assert "inferencecluster.inferplane.dev/eks-0000 created" in run.stdout.splitlines()
    deleting = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "delete", "icluster", "eks-0000",
                               "--state", str(tmp_path / "state"), "--timeout", "1"], capture_output=True, text=True,
                              cwd=REPO, timeout=TRIAL_TIMEOUT)
    assert (deleting.returncode, deleting.stdout) == (3, "")
    assert deleting.stderr.strip() == (
        f"error: nothing deleted: {holder.holder} is still reconciling this state: run the command again with a "
        "longer --timeout to wait for it")

    holder.release()
    run = run_apply(tmp_path / "state", folder)
    assert run.returncode == 0, run.stderr
    assert {line.rsplit(" ", 1)[1] for line in run.stdout.splitlines()} == {"unchanged"}
    assert_state_is_the_render(tmp_path / "state", rendered(folder))


def test_a_crashed_reconcilers_lease_expires_and_the_next_apply_takes_over(tmp_path):
    classes, clusters = split(1)
    folder = write(tmp_path / "fleet", classes + clusters)
    store = Store(tmp_path / "state")
    with store.transaction():  # a holder that stopped renewing 20 s ago, with a 15 s lease
        write_lease(store, "reconciler", "inferplane pid 1 on gone", time.time() - 20, 15)
    store.close()
    run = run_apply(tmp_path / "state", folder, "--timeout", "5")
    assert run.returncode == 0, run.stderr
    assert_state_is_the_render(tmp_path / "state", rendered(folder))


def test_a_store_locked_by_another_process_is_reported_not_a_traceback(tmp_path):
    import sqlite3

    classes, clusters = split(1)
    folder = write(tmp_path / "fleet", classes + clusters)
    Store(tmp_path / "state").close()
    locker = sqlite3.connect(tmp_path / "state" / "store.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        run = run_apply(tmp_path / "state", folder, "--timeout", "1")
    finally:
        locker.execute("ROLLBACK")
    assert run.returncode == 1
    assert run.stderr.strip() == (
        f"Error: {tmp_path / 'state' / 'store.db'} stayed locked by another process for 1 s: wait for the other "
        "inferplane command (or whatever holds the file) to finish, then run this command again")
