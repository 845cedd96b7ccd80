"""Quantity parsing and the CEL quantity library, against Kubernetes' documented results
(k8s.io/apimachinery resource.ParseQuantity tests, k8s.io/apiserver/pkg/cel/library/quantity.go)."""

from fractions import Fraction as F

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferplane.cel import CelError, evaluate, format_quantity, is_quantity, parse_quantity

GI = 2**30

PARSED = [
    ("0", F(0)), ("0n", F(0)), ("0Ki", F(0)), ("-0", F(0)), ("+0", F(0)), ("00", F(0)),
    ("1", F(1)), ("1Ki", F(1024)), ("8Ki", F(8 * 1024)), ("7Mi", F(7 * 2**20)), ("6Gi", F(6 * GI)),
    ("5Ti", F(5 * 2**40)), ("4Pi", F(4 * 2**50)), ("3Ei", F(3 * 2**60)),
    ("5n", F(5, 10**9)), ("4u", F(4, 10**6)), ("3m", F(3, 1000)), ("8k", F(8000)), ("50k", F(50000)),
    ("7M", F(7 * 10**6)), ("6G", F(6 * 10**9)), ("5T", F(5 * 10**12)), ("2P", F(2 * 10**15)), ("1E", F(10**18)),
    # exponent forms
    ("1E-3", F(1, 1000)), ("1e3", F(1000)), ("1E6", F(10**6)), ("1e9", F(10**9)), ("1.3E+6", F(13 * 10**5)),
    ("1.2e3", F(1200)), ("0.5e-1", F(5, 100)),
    # decimals
    ("0.001", F(1, 1000)), ("0.0005k", F(1, 2)), ("0.5", F(1, 2)), ("500m", F(1, 2)), ("9.01", F(901, 100)),
    ("100.035k", F(100035)), ("10.035M", F(10035000)), ("1.01E", F(101 * 10**16)), ("1.5Gi", F(1610612736)),
    ("0.5Mi", F(2**19)), ("0.05Gi", F(536870912, 10)), ("0.025Ti", F(274877906944, 10)),
    # signs
    ("-1.5Ki", F(-1536)), ("+1", F(1)), ("-500m", F(-1, 2)),
    # rounding up to the nano (away from zero)
    ("3.001n", F(4, 10**9)), ("1.1E-9", F(2, 10**9)), ("0.0000000001", F(1, 10**9)), ("0.9n", F(1, 10**9)),
    ("0.00000012345", F(124, 10**9)), ("-0.9n", F(-1, 10**9)), ("0.000000000001Ki", F(2, 10**9)),
    # binary values are capped at 2^63-1
    ("9Ei", F(2**63 - 1)), ("9223372036854775807Ki", F(2**63 - 1)), ("-9Ei", F(-(2**63 - 1))),
    ("12E", F(12 * 10**18)),  # decimal values are not capped
    # written by trolls, still valid
    (".001", F(1, 1000)), (".0001k", F(1, 10)), ("1.", F(1)), ("1.G", F(10**9)),
]


@pytest.mark.parametrize("text, value", PARSED)
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value
    assert is_quantity(text)


def test_an_integer_is_a_quantity_as_int_or_string_fields_allow_but_a_bool_is_not():
    assert (parse_quantity(16), parse_quantity(0)) == (16, 0)
    with pytest.raises(ValueError, match="quantity must be a string, got bool"):
        parse_quantity(True)


INVALID = [
    "", "1.5.5", "Gi", "Mi", "10KB", "20GiB", "200K", "Three", "1,3G", "10Mo", "10Mm",
    "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", "1e",
    "e3", "1e1.5", "1Ki3", "١", "1\n",
]


@pytest.mark.parametrize("text", INVALID)
def test_parse_quantity_rejects(text):
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text)
    assert not is_quantity(text)


def test_absurd_exponents_are_refused_not_computed():
    with pytest.raises(ValueError, match="exponent"):
        parse_quantity("1e999999999")
    assert not is_quantity("1e" + "9" * 5000)


CANONICAL = [
    ("1.5", "1500m"), ("1.08", "1080m"), ("0.2G", "200M"), ("1000M", "1G"), ("300M", "300M"),
    ("1234567M", "1234567M"), ("3k", "3k"), ("1m", "1m"), ("80m", "80m"), ("1n", "1n"), ("1080n", "1080n"),
    (".001Ki", "1024m"), (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
    ("1E", "1E"), ("1000E", "1e21"), ("0", "0"), ("-1.5", "-1500m"), ("1Gi", "1073741824"),
    ("100.035Ki", "102435840m"),
]


@pytest.mark.parametrize("text, canonical", CANONICAL)
def test_canonical_form(text, canonical):
    assert format_quantity(parse_quantity(text)) == canonical


nanos = st.integers(min_value=-(10**30), max_value=10**30)


@given(nanos)
def test_canonical_form_round_trips(n):
    value = F(n, 10**9)
    assert parse_quantity(format_quantity(value)) == value


@given(nanos, nanos)
def test_cel_comparison_is_exact(a, b):
    x, y = format_quantity(F(a, 10**9)), format_quantity(F(b, 10**9))
    expected = (a > b) - (a < b)
    assert evaluate("quantity(x).compareTo(quantity(y))", {"x": x, "y": y}) == expected
    assert evaluate("quantity(x) == quantity(y)", {"x": x, "y": y}) is (a == b)


# (expression, expected) from the quantity library's documentation and tests.
CEL_CASES = [
    ('isQuantity("20")', True), ('isQuantity("20M")', True), ('isQuantity("20Mi")', True),
    ('isQuantity("20Mo")', False), ('isQuantity("10Mm")', False), ('isQuantity("20Gi")', True),
    ('!isQuantity("20GiB")', True), ("isQuantity('1.3G')", True), ("isQuantity('1.3Gi')", True),
    ("isQuantity('1,3G')", False), ("isQuantity('10000k')", True), ("isQuantity('200K')", False),
    ("isQuantity('Three')", False), ("isQuantity('Mi')", False),
    ('quantity("200M") == quantity("200M")', True),
    ('quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', True),
    ('quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && '
     'quantity("0.002G") == quantity("2000k")', True),
    ('quantity("200M") == quantity("0.3G")', False),
    ('quantity("50M").isLessThan(quantity("50Mi"))', True),
    ('quantity("50M").isLessThan(quantity("100M"))', True),
    ('quantity("100M").isLessThan(quantity("50M"))', False),
    ('quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    ('quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ('quantity("50Mi").isGreaterThan(quantity("100Mi"))', False),
    ('quantity("50M").isGreaterThan(quantity("100M"))', False),
    ('quantity("200M").compareTo(quantity("0.2G"))', 0),
    ('quantity("50M").compareTo(quantity("50Mi"))', -1),
    ('quantity("50Mi").compareTo(quantity("50M"))', 1),
    ('quantity("1Gi").compareTo(quantity("1073741824")) == 0', True),
    ('quantity("0.5").compareTo(quantity("500m")) == 0', True),
    ('quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    ('quantity("50k").add(20) == quantity("50020")', True),
    ('quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    ('quantity("50k").add(20).asInteger() == 50020', True),
    ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    ('quantity("50k").sub(20) == quantity("49980")', True),
    ('quantity("50k").sub(20000) == quantity("30k")', True),
    ('quantity("50k").add(20).sub(quantity("100k")).asInteger()', -49980),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()', 20),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', True),
    ('quantity("50k").asInteger()', 50000),
    ('quantity("50k").asInteger() == 50000', True),
    ('quantity("50000000G").isInteger()', True),
    ('quantity("50k").isInteger()', True),
    ('quantity("50").isInteger()', True),
    ('quantity("1.5Gi").isInteger()', True),
    ('quantity("0.5").isInteger()', False),
    ('quantity("9999999999999999999999999999999999999G").isInteger()', False),
    ('quantity("9223372036854775807").isInteger()', True),
    ('quantity("9223372036854775808").isInteger()', False),
    ('quantity("50.703k").asApproximateFloat()', 50703.0),
    ('quantity("50k").sub(20000).asApproximateFloat() == 30000.0', True),
    ('quantity("1e400").asApproximateFloat()', float("inf")),
    ('quantity("-1e400").asApproximateFloat()', float("-inf")),
    ('quantity("-5m").sign()', -1), ('quantity("0Gi").sign()', 0), ('quantity("1n").sign()', 1),
    ('quantity("1Gi")', "1073741824"), ('quantity("1500m")', "1500m"),
    ('[quantity("1Ki"), quantity("1k")].map(q, q.asInteger())', [1024, 1000]),
]


@pytest.mark.parametrize("expr, expected", CEL_CASES)
def test_quantity_library(expr, expected):
    assert evaluate(expr) == expected


CEL_ERRORS = [
    ('quantity("10Mo")', "not a valid quantity"),
    ('quantity("10Mm")', "not a valid quantity"),
    ("quantity('200K')", "not a valid quantity"),
    ("quantity('Three')", "not a valid quantity"),
    ("quantity('Mi')", "no digits"),
    ('quantity("")', "empty"),
    ('quantity("9999999999999999999999999999999999999G").asInteger()', "cannot convert value to integer"),
    ('quantity("0.5").asInteger()', "cannot convert value to integer"),
    ("quantity(1)", "no such overload: quantity(int)"),
    ('quantity("1").add(1.5)', "no such overload: add(Quantity, double)"),
    ('quantity("1").add(true)', "no such overload: add(Quantity, bool)"),
    ('quantity("1").compareTo(1)', "no such overload: compareTo(Quantity, int)"),
    ('quantity("1").compareTo(semver("1.0.0"))', "no such overload: compareTo(Quantity, Semver)"),
    ('"1".asInteger()', "no such overload: asInteger(string)"),
    ('isQuantity(1)', "no such overload: isQuantity(int)"),
]


@pytest.mark.parametrize("expr, message", CEL_ERRORS)
def test_quantity_library_errors(expr, message):
    with pytest.raises(CelError, match=message.replace("(", r"\(").replace(")", r"\)")):
        evaluate(expr)


@given(st.sampled_from(["1", "1.5", "500m", "20Gi", "0.2G", "1e3", "-3Ki", ".5", "1E-3", "3.001n"]))
def test_folded_literal_equals_runtime_call(text):
    # quantity("<literal>") is folded at compile time; quantity(x) runs the Python function.
    assert evaluate(f'quantity("{text}")') == evaluate("quantity(x)", {"x": text})
    assert evaluate(f'quantity("{text}") == quantity(x)', {"x": text}) is True
