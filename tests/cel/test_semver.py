"""Semantic versions and the CEL semver library, against Kubernetes' documented results
(k8s.io/apiserver/pkg/cel/library/semverlib.go and its tests, semver.org 2.0 precedence)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferplane.cel import CelError, Semver, evaluate, is_semver, parse_semver

VALID = [
    ("1.2.3", Semver(1, 2, 3)),
    ("0.0.0", Semver(0, 0, 0)),
    ("0.1.0-alpha.1", Semver(0, 1, 0, ("alpha", "1"))),
    ("1.2.3-beta.1+build.1", Semver(1, 2, 3, ("beta", "1"), ("build", "1"))),
    ("1.0.0-alpha-1", Semver(1, 0, 0, ("alpha-1",))),
    ("1.0.0+20130313144700", Semver(1, 0, 0, (), ("20130313144700",))),
    ("550.54.15", Semver(550, 54, 15)),
    ("1.0.0-0A.is.legal", Semver(1, 0, 0, ("0A", "is", "legal"))),
]


@pytest.mark.parametrize("text, version", VALID)
def test_parse_semver(text, version):
    assert parse_semver(text) == version
    assert str(parse_semver(text)) == text


INVALID = ["", "1", "1.1", "v1.0.0", "v1.0", " 1.0.0", "1. 0.0", "1.0.0 ", "01.01.01", "1.02.3", "1.2.03",
           "1.2.3-", "1.2.3+", "1.2.3-01", "1.2.3-a..b", "1.2.3+a+b", "1.2.3-a_b", "hello", "200K", "Mi",
           "1.2.x", "-1.2.3", "1.2.3.4"]


@pytest.mark.parametrize("text", INVALID)
def test_parse_semver_rejects(text):
    with pytest.raises(ValueError):
        parse_semver(text)
    assert not is_semver(text)


NORMALIZED = [("v1.0.0", "1.0.0"), ("1.0", "1.0.0"), ("1", "1.0.0"), ("v1.2", "1.2.0"), ("01.01.01", "1.1.1"),
              ("v01.01", "1.1.0"), ("1.2.00-rc.1", "1.2.0-rc.1"), ("1.2.3", "1.2.3")]


@pytest.mark.parametrize("text, normal", NORMALIZED)
def test_normalize(text, normal):
    assert str(parse_semver(text, normalize=True)) == normal


@pytest.mark.parametrize("text", ["", " 1.0.0", "1. 0.0", "1.0.0 ", "1.0-rc.1", "vv1.0.0", "V1.0.0"])
def test_normalize_still_rejects(text):
    assert not is_semver(text, normalize=True)


# semver.org 2.0 section 11: each version is lower than the next.
ORDER = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
         "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "1.9.0", "1.10.0", "1.30.0", "2.0.0"]


def test_precedence_order():
    versions = [parse_semver(v) for v in ORDER]
    for lower, higher in zip(versions, versions[1:]):
        assert lower.compare(higher) == -1 and higher.compare(lower) == 1
    assert parse_semver("1.0.0+a").compare(parse_semver("1.0.0+b")) == 0


@given(st.sampled_from(ORDER), st.sampled_from(ORDER))
def test_cel_compare_matches_precedence(a, b):
    expected = (ORDER.index(a) > ORDER.index(b)) - (ORDER.index(a) < ORDER.index(b))
    assert evaluate("semver(a).compareTo(semver(b))", {"a": a, "b": b}) == expected
    assert evaluate("semver(a).isLessThan(semver(b))", {"a": a, "b": b}) is (expected < 0)
    assert evaluate("semver(a).isGreaterThan(semver(b))", {"a": a, "b": b}) is (expected > 0)


CEL_CASES = [
    ('semver("1.2.3")', "1.2.3"),
    ('isSemver("1.2.3-beta.1+build.1")', True), ('isSemver("")', False), ('isSemver("v1.0.0")', False),
    ('isSemver(" 1.0.0")', False), ('isSemver("1. 0.0")', False), ('isSemver("1.0.0 ")', False),
    ('isSemver("01.01.01")', False), ('isSemver("1")', False), ('isSemver("1.1")', False),
    ('isSemver("", true)', False), ('isSemver(" 1.0.0", true)', False), ('isSemver("1.0.0 ", true)', False),
    ('isSemver("v1.0.0", true)', True), ('isSemver("01.01.01", true)', True), ('isSemver("1", true)', True),
    ('isSemver("1.1", true)', True), ('isSemver("v1.0", false)', False),
    ('semver("v01.01", true) == semver("1.1.0")', True),
    ('semver("v1.2", true)', "1.2.0"),
    ('semver("1.2.3") == semver("1.2.3")', True),
    ('semver("1.2.3") == semver("1.0.0")', False),
    ('semver("1.0.0+a") == semver("1.0.0+b")', True),
    ('semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    ('semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    ('semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    ('semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    ('semver("1.2.3").compareTo(semver("1.2.3"))', 0),
    ('semver("1.2.3").compareTo(semver("2.0.0"))', -1),
    ('semver("1.2.3").compareTo(semver("0.1.2"))', 1),
    ('semver("1.2.3").major() == 1', True), ('semver("1.2.3").minor()', 2), ('semver("1.2.3").patch()', 3),
    ('semver("1.30.0").isGreaterThan(semver("1.9.0"))', True),
    ('semver("1.0.0-rc.1").isLessThan(semver("1.0.0"))', True),
    ('semver(v, true).minor()', 34),
]


@pytest.mark.parametrize("expr, expected", CEL_CASES)
def test_semver_library(expr, expected):
    assert evaluate(expr, {"v": "v1.34"}) == expected


CEL_ERRORS = [
    ('semver("v1.0")', "expected MAJOR.MINOR.PATCH"),
    ("semver('200K')", "not a semantic version"),
    ("semver('Three')", "not a semantic version"),
    ('semver("01.01.01")', "leading zeros"),
    ('semver("1.0-rc", true)', "short version"),
    ("semver(1)", r"no such overload: semver\(int\)"),
    ('semver("1.0.0", 1)', r"no such overload: semver\(string, int\)"),
    ('isSemver([1, 2, 3])', r"no such overload: isSemver\(list\)"),
    ('quantity("1").major()', r"no such overload: major\(Quantity\)"),
    ('semver("1.0.0").compareTo(quantity("1"))', r"no such overload: compareTo\(Semver, Quantity\)"),
]


@pytest.mark.parametrize("expr, message", CEL_ERRORS)
def test_semver_library_errors(expr, message):
    with pytest.raises(CelError, match=message):
        evaluate(expr)
