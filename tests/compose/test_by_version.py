"""ByVersion remembers a conversion per (uid, resourceVersion): a changed object is converted again.
ByVersions does the same for a whole list (the last one)."""

from inferplane.compose.base import ByVersion, ByVersions
from inferplane.compose.model_deployment import snapshot_cluster_of
from inferplane.runtime.store import Store


def cluster(version, nodes, uid="u-1"):
    metadata = {"name": "gpu-a", "uid": uid}
    if version is not None:
        metadata["resourceVersion"] = version
    return {"metadata": metadata, "status": {"nodes": nodes}}


def test_a_new_version_is_converted_again_and_an_unversioned_object_every_time():
    calls = []

    def nodes(obj):
        calls.append(obj["metadata"].get("resourceVersion"))
        return obj["status"]["nodes"]

    convert = ByVersion(nodes)
    assert [convert(cluster("7", 2)), convert(cluster("7", 2))] == [2, 2]
    assert calls == ["7"]
    assert convert(cluster("8", 5)) == 5  # the status changed: the store gave it a new version
    assert convert(cluster("7", 2, uid="u-2")) == 2  # another object at the same version number
    assert calls == ["7", "8", "7"]
    assert [convert(cluster(None, 3)), convert(cluster(None, 4))] == [3, 4]
    assert calls == ["7", "8", "7", None, None]


def test_a_failing_conversion_is_not_remembered():
    outcomes = iter([ValueError("unreadable"), 1])

    def flaky(obj):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    convert = ByVersion(flaky)
    try:
        convert(cluster("1", 0))
    except ValueError:
        pass
    assert convert(cluster("1", 0)) == 1


def test_a_list_is_converted_again_when_any_object_in_it_changed_came_or_went_or_moved():
    calls = []

    def total(objects):
        calls.append([o["metadata"].get("resourceVersion") for o in objects])
        return sum(o["status"]["nodes"] for o in objects)

    convert = ByVersions(total)
    fleet = [cluster("7", 2), cluster("3", 1, uid="u-2")]
    assert [convert(fleet), convert([dict(o) for o in fleet])] == [3, 3]
    assert calls == [["7", "3"]]
    assert convert([cluster("8", 5), fleet[1]]) == 6  # one changed
    assert convert(fleet[:1]) == 2  # one went
    assert convert(fleet[::-1]) == 3  # the same objects in another order: the function may read the order
    assert convert([*fleet, cluster("9", 4, uid="u-3")]) == 7  # one came
    assert convert([fleet[0], cluster(None, 4, uid="u-3")]) == 6  # unversioned: converted every time
    assert convert([fleet[0], cluster(None, 4, uid="u-3")]) == 6
    assert len(calls) == 7


def test_what_is_remembered_stays_within_its_bytes_counted_by_the_objects_converted():
    from inferplane.kept import size_of

    big = {"metadata": {"name": "gpu-a", "uid": "u-0", "resourceVersion": "1", "labels": {"l": "x" * 10_000}},
           "status": {"nodes": 1}}
    convert = ByVersion(lambda obj: obj["metadata"]["labels"], bound=5 * size_of(big) + 5_000)
    for index in range(50):  # fifty distinct uids, each object some 10 KB
        obj = {**big, "metadata": {**big["metadata"], "uid": f"u-{index}"}}
        assert convert(obj) is obj["metadata"]["labels"]
        assert convert.memo.held <= convert.memo.bound
    assert 1 <= len(convert.memo) <= 5


# ---- within one store: two fresh stores number their objects alike, so a second state in the same process
# (tests, a server after another state) must never read the first state's cluster of the same name.


def stored_cluster(pool: str, metadata: dict | None = None) -> dict:
    return {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceCluster",
            "metadata": {"name": "lab", **(metadata or {})}, "spec": {"cluster": {"source": "Existing"}},
            "status": {"schedulablePools": [{"name": pool, "className": "c", "nodeCount": 1}]}}


def created_in_a_fresh_store() -> dict:
    store = Store(None)
    with store.transaction():
        written, _ = store.put({k: v for k, v in stored_cluster("any").items() if k != "status"})
    return written["metadata"]


def test_a_second_store_s_object_of_the_same_uid_and_version_is_read_afresh():
    first = created_in_a_fresh_store()
    assert [p.name for p in snapshot_cluster_of(stored_cluster("old", first)).pools] == ["old"]
    second = created_in_a_fresh_store()
    assert (first["uid"], first["resourceVersion"]) == (second["uid"], second["resourceVersion"])
    assert [p.name for p in snapshot_cluster_of(stored_cluster("new", second)).pools] == ["new"]
