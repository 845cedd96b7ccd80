"""json_copy: a deep copy of JSON-like data, whatever it holds."""

import math

from inferplane.api.json_data import json_copy


def test_a_copy_is_deep_and_equal():
    values = {"a": [1, 2.5, {"b": None, "c": True}], "d": {"e": "x"}}
    copy = json_copy(values)
    assert copy == values
    copy["a"][2]["c"] = False
    copy["d"]["e"] = "y"
    assert values == {"a": [1, 2.5, {"b": None, "c": True}], "d": {"e": "x"}}
    assert [type(v) for v in json_copy([True, 1, 1.0, -0.0, "s"])] == [bool, int, float, float, str]


def test_what_json_would_change_is_kept_as_it_was():
    values = {"tuple": (1, 2), 3: "int key", "big": 2**70, "nan": [math.nan], "bool": [True, 1, 1.0]}
    copy = json_copy(values)
    assert copy["tuple"] == (1, 2) and copy[3] == "int key" and copy["big"] == 2**70
    assert math.isnan(copy["nan"][0])
    assert [type(v) for v in copy["bool"]] == [bool, int, float]
    copy["nan"].append(1)
    assert len(values["nan"]) == 1


def test_scalars_are_themselves():
    assert json_copy("text") == "text" and json_copy(None) is None and json_copy(7) == 7


def test_shared_copies_are_one_for_equal_data_and_refuse_every_change_in_place():
    import copy
    import pickle

    import orjson
    import pytest

    from inferplane.api.json_data import json_copy, shared_copy

    original = {"values": {"tolerations": [{"key": "a"}]}, "n": 1}
    first, second = shared_copy(original), shared_copy(json_copy(original))
    assert first is second and first == original and first is not original
    original["values"]["tolerations"].clear()  # the caller's own data stays its own
    assert first["values"]["tolerations"] == [{"key": "a"}]
    changes = [lambda: first.update(n=2), lambda: first.pop("n"), lambda: first["values"].setdefault("x", 1),
               lambda: first["values"]["tolerations"].append({}), lambda: first["values"]["tolerations"].sort(),
               lambda: first["values"]["tolerations"][0].clear()]
    for change in changes:
        with pytest.raises(TypeError, match="cannot be changed in place"):
            change()
    assert first == {"values": {"tolerations": [{"key": "a"}]}, "n": 1}
    for plain in (copy.copy(first), copy.deepcopy(first), pickle.loads(pickle.dumps(first)), json_copy(first)):
        assert type(plain) is dict and plain == first
    assert type(copy.deepcopy(first)["values"]["tolerations"]) is list
    assert orjson.loads(orjson.dumps(first)) == first
