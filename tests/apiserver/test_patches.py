"""The patch types, as kube-apiserver applies them: RFC 7386 merge patch, and the strategic merge patch
of the core kinds with the list strategies of their vendored definitions and its directives."""

import re

import pytest

from inferplane.apiserver.patches import PatchError, list_strategies, merge_patch, strategic_merge_patch

SECRET = {"apiVersion": "v1", "kind": "Secret",
          "metadata": {"name": "s", "namespace": "ml", "labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"],
                       "ownerReferences": [{"uid": "u1", "name": "one"}, {"uid": "u2", "name": "two"}]},
          "data": {"k": "dg==", "old": "bw=="}, "type": "Opaque"}


def test_the_strategies_come_from_the_vendored_definitions():
    assert list_strategies("Secret") == {("metadata", "finalizers"): None, ("metadata", "ownerReferences"): "uid"}
    assert list_strategies("Namespace")[("status", "conditions")] == "type"


def test_merge_patch_rfc7386():
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]}) == {
        "a": {"c": 2, "d": 3}, "l": [3]}
    assert merge_patch({"a": 1}, ["whole"]) == ["whole"]


@pytest.mark.parametrize("patch, expected", [
    # Maps merge, null removes a key.
    ({"data": {"old": None, "new": "bg=="}}, {"k": "dg==", "new": "bg=="}),
    # $patch: replace on a map replaces it whole.
    ({"data": {"$patch": "replace", "only": "bw=="}}, {"only": "bw=="}),
    # $retainKeys keeps only the keys it names, then the patch merges.
    ({"data": {"$retainKeys": ["k"], "k": "dw=="}}, {"k": "dw=="}),
])
def test_strategic_merge_of_maps(patch, expected):
    assert strategic_merge_patch("Secret", SECRET, patch)["data"] == expected


def test_strategic_merge_of_lists_by_their_strategies():
    patched = strategic_merge_patch("Secret", SECRET, {"metadata": {
        "finalizers": ["z"], "$deleteFromPrimitiveList/finalizers": ["x"],
        "ownerReferences": [{"uid": "u2", "name": "renamed"}, {"uid": "u1", "$patch": "delete"}, {"uid": "u3"}],
        "$setElementOrder/finalizers": ["z", "y"]}})
    assert patched["metadata"]["finalizers"] == ["z", "y"]
    assert patched["metadata"]["ownerReferences"] == [{"uid": "u2", "name": "renamed"}, {"uid": "u3"}]
    assert patched["metadata"]["labels"] == {"a": "1", "b": "2"}


@pytest.mark.parametrize("patch, message", [
    ({"data": {"$patch": "merge-please"}}, "data: $patch: 'merge-please' is not a directive: use replace or delete"),
    ({"metadata": {"$unknown": 1}}, "metadata.$unknown: $unknown is not a strategic merge directive this server"),
    ({"metadata": {"ownerReferences": [{"name": "no-uid"}]}}, "each item of a merged list names its uid"),
])
def test_what_is_refused_says_where_and_what_to_send(patch, message):
    with pytest.raises(PatchError, match=re.escape(message)):
        strategic_merge_patch("Secret", SECRET, patch)
