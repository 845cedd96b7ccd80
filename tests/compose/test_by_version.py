"""ByVersion remembers a conversion per (uid, resourceVersion): a changed object is converted again."""

from inferplane.compose.base import ByVersion


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
