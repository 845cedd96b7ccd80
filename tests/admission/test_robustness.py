"""Whatever a user writes, admission answers with errors or an object: never a traceback."""

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
