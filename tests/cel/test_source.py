"""Token-level reading of CEL source: string literals are never rewritten."""

import cel
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferplane.cel import evaluate
from inferplane.cel.library import FOLDERS
from inferplane.cel.source import cel_string, device_domains, device_fields, fold_constants, tokens


@pytest.mark.parametrize("source, strings", [
    (r'"a\"b" + x', [r'"a\"b"']),
    (r"r'a\' + x", [r"r'a\'"]),
    ('"""a"b""" + \'\'\'c\'\'\'', ['"""a"b"""', "'''c'''"]),
    ('b"xy" == rb"z" && R"q" != Br"w"', ['b"xy"', 'rb"z"', 'R"q"', 'Br"w"']),
    ('x // "not a string"\n+ "yes"', ['"yes"']),
])
def test_string_tokens(source, strings):
    assert [t.text for t in tokens(source) if t.kind == "string"] == strings


@pytest.mark.parametrize("source, domains", [
    ('device.attributes["gpu.nvidia.com"].productName == "x"', {"gpu.nvidia.com"}),
    ("device.capacity['dra.cpu'].cpu.isGreaterThan(quantity('1')) && "
     "device.attributes[\"resource.kubernetes.io\"].numaNode == 0", {"dra.cpu", "resource.kubernetes.io"}),
    ('device . attributes [ "a.com" ] . x', {"a.com"}),
    ('"device.attributes[\\"fake.com\\"]" == device.driver', set()),
    ('other.device.attributes["no.com"].x', set()),
    ('device.attributes[d].x', set()),
])
def test_device_domains(source, domains):
    assert device_domains(source) == domains


@pytest.mark.parametrize("source, fields", [
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0 && '
     'device.attributes["gpu.nvidia.com"].productName != "x" && device.capacity["gpu.nvidia.com"].memory.sign() > 0',
     (("capacity", "gpu.nvidia.com", "memory"), ("attributes", "gpu.nvidia.com", "productName"))),
    ('device.attributes["resource.kubernetes.io"].numaNode == 0', (("attributes", "resource.kubernetes.io",
                                                                    "numaNode"),)),
    ('"device.attributes[\\"fake.com\\"].x" == device.driver', ()),
    ('device.attributes["a.com"].size() == 0', ()),
    ('device.attributes[d].x', ()),
])
def test_device_fields(source, fields):
    assert device_fields(source) == fields


@pytest.mark.parametrize("source, folded", [
    ('quantity("20Gi")', '{"\\u0000k8s.io/quantity": "21474836480"}'),
    ('semver("v1.2", true).major()', '{"\\u0000k8s.io/semver": "1.2.0"}.major()'),
    ('x.compareTo(quantity( "1.5" )) >= 0', 'x.compareTo({"\\u0000k8s.io/quantity": "1500m"}) >= 0'),
    ('quantity("10KB")', 'quantity("10KB")'),  # invalid: the error must surface at evaluation
    ('quantity(x)', 'quantity(x)'),
    ('"quantity(\\"1\\")"', '"quantity(\\"1\\")"'),
    ('a.quantity("1")', 'a.quantity("1")'),
    ('semver("1.0.0", x)', 'semver("1.0.0", x)'),
])
def test_fold_constants(source, folded):
    assert fold_constants(source, FOLDERS) == folded


@pytest.mark.parametrize("value", ["plain", 'quo"te', "back\\slash", "\x00tag", "new\nline", "ünï", "😀"])
def test_cel_string_round_trips(value):
    assert cel.evaluate(cel_string(value)) == value


@given(st.text())
def test_string_literals_survive_folding(value):
    # Whatever a string literal holds (quotes, backslashes, "quantity(...)"), folding leaves it alone.
    assert evaluate(f'[{cel_string(value)}, quantity("1")]') == [value, "1"]
