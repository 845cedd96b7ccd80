"""Whatever a user writes, admission answers with errors or an object: never a traceback."""

import copy
import re
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferplane.admission import admit_manifests
from inferplane.admission.manifests import Manifest

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
VALID = [d for p in sorted(RECIPES.rglob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]

JUNK = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                 st.floats(allow_nan=False), st.text(max_size=12), st.lists(st.integers(), max_size=3),
                 st.dictionaries(st.text(max_size=6), st.integers(), max_size=3))


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, prefix + (index,))


def mutate(document, path, action, junk):
    import copy

    doc = copy.deepcopy(document)
    if not path:
        return junk if action == "replace" else doc
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "delete" and isinstance(parent, dict):
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[f"{last}Extra"] = junk
    else:
        parent[last] = junk
    return doc


@st.composite
def broken_manifests(draw):
    document = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        options = list(paths(document))
        path = draw(st.sampled_from(options))
        document = mutate(document, path, draw(st.sampled_from(["replace", "delete", "add"])), draw(JUNK))
    return document


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broken_manifests())
def test_admission_never_raises(document):
    body = document if isinstance(document, dict) else {"value": document}
    result = admit_manifests([Manifest("fuzz", body)])
    for error in result.errors:
        assert str(error).startswith("fuzz: ")
        assert error.message


# Values that once passed admission and broke the engine, among ordinary junk.
HOSTILE = st.one_of(
    JUNK, st.dates(), st.sampled_from(["1e1001", "-5Gi", "1e-1001", "9" * 1200, "c" * 70, ".nan"]),
    st.integers(min_value=2**63, max_value=2**200), st.floats(allow_nan=True, allow_infinity=True),
    st.recursive(st.none(), lambda inner: st.lists(inner, min_size=1, max_size=1), max_leaves=120),
    st.from_regex(r"[a-z]{40,70}", fullmatch=True))


RECIPE_SETS = [[d for p in sorted(folder.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]
               for folder in sorted(RECIPES.iterdir()) if folder.is_dir()]
QUANTITY_LIKE = re.compile(r"^[0-9.]+([a-zA-Z]{0,2})$")


def leaf_variants(value):
    """Hostile values of the same shape as a leaf: a quantity beyond the engine, a negative one, a
    name as long as admission allows, a date, a number too wide for int64."""
    if isinstance(value, str) and QUANTITY_LIKE.match(value):
        return ["1e1001", f"-{value}", f"{value}e999", "0.0000000001"]
    if isinstance(value, str):
        return [value + "x" * (63 - len(value)), (value * 20)[:52], "2024-01-02"]
    if isinstance(value, int) and not isinstance(value, bool):
        return [-value - 1, 2**63, 10**30]
    return [None]


@st.composite
def hostile_manifests(draw):
    """A recipe (classes, clusters and deployments together, so apply reconciles them) with leaves
    turned hostile and structure broken."""
    documents = copy.deepcopy(draw(st.sampled_from(RECIPE_SETS)))
    for index, document in enumerate(documents):
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            leaves = [p for p in paths(document) if p and not isinstance(value_at(document, p), (dict, list))]
            if leaves and draw(st.integers(min_value=0, max_value=3)):  # mostly leaves: the document stays valid
                path = draw(st.sampled_from(leaves))
                replacement = draw(st.sampled_from(leaf_variants(value_at(document, path))))
                document = mutate(document, path, "replace", replacement)
            else:
                path = draw(st.sampled_from(list(paths(document))))
                document = mutate(document, path, draw(st.sampled_from(["replace", "delete", "add"])), draw(HOSTILE))
        documents[index] = document
    return documents


def value_at(document, path):
    for step in path:
        document = document[step]
    return document


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                 HealthCheck.function_scoped_fixture])
@given(hostile_manifests())
def test_apply_never_fails_on_what_validate_admitted(tmp_path_factory, documents):
    from inferplane.admission import admit_paths
    from inferplane.engine.control_plane import ControlPlane

    folder = tmp_path_factory.mktemp("manifests")
    (folder / "all.yaml").write_text(yaml.safe_dump_all(documents))
    validated = admit_paths([folder])
    runtime = ControlPlane(None)
    try:
        applied = runtime.apply([folder])  # raises on any traceback a user would see
        assert [str(e) for e in applied.admission.errors] == [str(e) for e in validated.errors]
        assert [key.name for key, _ in applied.applied] == [o.metadata.name for _, o in validated.admitted]
        assert all(verb in ("created", "configured", "unchanged") for _, verb in applied.applied)
    finally:
        runtime.close()
