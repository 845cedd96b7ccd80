"""Field ownership as structured-merge-diff keeps it: FieldsV1, conflicts naming the manager and the
field, and what a manager stops applying removed unless another manager owns it (a map's key, a
list-map's item keyed by name, a scalar)."""

import pytest

from inferplane.fieldmanager import managers as fm
from inferplane.fieldmanager.fieldset import FieldError
from inferplane.fieldmanager.schema import shape_of

API = "inferplane.dev/v1alpha1"
SHAPE = shape_of(API, "InferenceCluster")
BASE = {"apiVersion": API, "kind": "InferenceCluster", "metadata": {"name": "c", "labels": {"team": "ml"}},
        "spec": {"cluster": {"source": "Existing"}, "maxNodeCount": 4,
                 "nodePools": [{"name": "a", "className": "x", "nodeCount": 1}]}}


def applied(live, config, managers, manager, force=False):
    return fm.apply(fm.managed_part(live), fm.managed_part(config), managers, fm.Entry(manager, fm.APPLY, API), SHAPE,
                    force)


def test_fields_v1_of_an_apply():
    _, managers = applied(None, BASE, {}, "kubectl")
    [entry] = fm.written(managers)
    assert entry["manager"] == "kubectl" and entry["operation"] == "Apply"
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:team": {}}},
        "f:spec": {"f:cluster": {"f:source": {}}, "f:maxNodeCount": {},
                   "f:nodePools": {'k:{"name":"a"}': {".": {}, "f:className": {}, "f:name": {}, "f:nodeCount": {}}}}}
    assert fm.read({"metadata": {"managedFields": fm.written(managers)}})[("kubectl", "Apply", "", "")].paths == \
        managers[("kubectl", "Apply", "", "")].paths


def test_a_changed_value_another_manager_owns_is_a_conflict_and_force_takes_it():
    live, managers = applied(None, BASE, {}, "kubectl")
    changed = {**BASE, "spec": {**BASE["spec"], "maxNodeCount": 8}}
    with pytest.raises(fm.Conflicts) as raised:
        applied(live, changed, managers, "gitops")
    assert raised.value.message() == 'Apply failed with 1 conflict: conflict with "kubectl": .spec.maxNodeCount'
    # The same value is no conflict: both own it.
    _, shared = applied(live, BASE, managers, "gitops")
    assert ("f:spec", "f:maxNodeCount") in shared[("gitops", "Apply", "", "")].paths
    out, forced = applied(live, changed, managers, "gitops", force=True)
    assert out["spec"]["maxNodeCount"] == 8
    assert ("f:spec", "f:maxNodeCount") not in forced[("kubectl", "Apply", "", "")].paths


def test_a_conflict_with_an_update_names_its_api_version_and_no_time():
    """As kube-apiserver words it: `conflict with "kubectl-edit" using API: .spec.maxNodeCount`."""
    live, managers = applied(None, BASE, {}, "kubectl")
    edited = {**BASE, "spec": {**BASE["spec"], "maxNodeCount": 6}}
    managers = fm.stamped(managers, fm.update(fm.managed_part(live), fm.managed_part(edited), managers,
                                              fm.Entry("kubectl-edit", fm.UPDATE, API), SHAPE), "2026-12-05T13:00:00Z")
    with pytest.raises(fm.Conflicts) as raised:
        applied(edited, {**BASE, "spec": {**BASE["spec"], "maxNodeCount": 8}}, managers, "gitops")
    assert raised.value.message() == ('Apply failed with 1 conflict: conflict with "kubectl-edit" using '
                                      f'{API}: .spec.maxNodeCount')


DROPS = [  # (what the first manager's second apply leaves out, where it was)
    (lambda c: c["metadata"]["labels"].pop("team"), lambda o: o["metadata"].get("labels", {}).get("team")),
    (lambda c: c["spec"]["nodePools"].clear(), lambda o: [p["name"] for p in o["spec"].get("nodePools", [])]),
    (lambda c: c["spec"].pop("maxNodeCount"), lambda o: o["spec"].get("maxNodeCount")),
]


@pytest.mark.parametrize("drop, at", DROPS, ids=["map", "list-map", "scalar"])
def test_a_dropped_field_is_removed_unless_another_manager_owns_it(drop, at):
    import copy
    live, managers = applied(None, BASE, {}, "kubectl")
    less = copy.deepcopy(BASE)
    drop(less)
    alone, _ = applied(live, less, managers, "kubectl")
    assert at(alone) in (None, [])
    # Another manager applying the same field owns it too: it stays.
    _, both = applied(live, BASE, managers, "gitops")
    kept, _ = applied(live, less, both, "kubectl")
    assert at(kept) == at(live)


def test_an_item_without_its_key_is_named():
    bad = {**BASE, "spec": {**BASE["spec"], "nodePools": [{"className": "x"}]}}
    with pytest.raises(FieldError, match=r"\.spec\.nodePools: each item of this list names its name"):
        applied(None, bad, {}, "kubectl")


def test_update_owns_what_it_changed():
    live, managers = applied(None, BASE, {}, "kubectl")
    edited = {**live, "spec": {**live["spec"], "maxNodeCount": 9}}
    after = fm.update(live, edited, managers, fm.Entry("kubectl-edit", fm.UPDATE, API), SHAPE)
    assert after[("kubectl-edit", "Update", API, "")].paths == {("f:spec", "f:maxNodeCount")}
    assert ("f:spec", "f:maxNodeCount") not in after[("kubectl", "Apply", "", "")].paths


def test_the_manager_from_the_user_agent():
    assert fm.manager_from_user_agent("kubectl/v1.37.1 (linux/amd64) kubernetes/abc") == "kubectl"
    assert fm.manager_from_user_agent("OpenAPI-Generator/36.0.3/python") == "OpenAPI-Generator"
    assert fm.manager_from_user_agent("a\x00b" + "c" * 200) == "ab" + "c" * 126
    assert fm.manager_from_user_agent("") == fm.manager_from_user_agent("/v1") == "unknown"


def test_the_clis_apply_of_the_same_fields_later_leaves_managed_fields_as_they_were():
    # A second apply of the same object a second later changes no one's fields: the entry keeps its time, so
    # the object is unchanged (it flipped to "configured" when the clock crossed a second).
    times = iter(["2026-12-05T10:00:00Z", "2026-12-05T10:00:01Z"])
    record = fm.recorder(fm.INFERPLANE, fm.APPLY, lambda: next(times))
    obj = {"apiVersion": "inferplane.dev/v1alpha1", "kind": "InferenceClass", "metadata": {"name": "c"},
           "spec": {"devices": [{"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}]}}
    first = record(obj, None)
    stored = {**obj, "metadata": {**obj["metadata"], "managedFields": first}}
    assert record(obj, stored) == first
    assert first[0]["time"] == "2026-12-05T10:00:00Z"


@pytest.mark.parametrize("live, config, expected", [
    (["a", "b"], ["c", "a"], ["c", "a", "b"]),
    (["a", "b"], ["b", "a"], ["b", "a"]),
    (["a", "b", "c"], ["b", "d"], ["a", "b", "c", "d"]),
    (["a", "b", "c"], ["c", "a"], ["b", "c", "a"]),
])
def test_a_merged_list_map_follows_the_applied_order(live, config, expected):
    """typed/merge.go's visitListItems: items both have in the configuration's order, new items where the
    configuration puts them, live-only items where they stood."""
    from inferplane.fieldmanager.merge import merged

    def pools(names):
        return {**BASE, "spec": {**BASE["spec"], "nodePools": [{"name": n, "className": "l4", "nodeCount": 1}
                                                                for n in names]}}
    out = merged(fm.managed_part(pools(live)), fm.managed_part(pools(config)), SHAPE)
    assert [p["name"] for p in out["spec"]["nodePools"]] == expected
