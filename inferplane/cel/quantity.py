"""Kubernetes resource quantities ("20Gi", "500m", "1e3") as exact fractions.

Parsing follows `resource.ParseQuantity` (k8s.io/apimachinery): an optional sign, decimal digits
with an optional fraction, then one suffix: binary Ki Mi Gi Ti Pi Ei, decimal n u m "" k M G T P E,
or an exponent e<int> / E<int>. Values finer than 1n are rounded away from zero to 1n, and a
binary-suffixed value is capped at 2^63-1, as Kubernetes does.

Deliberate differences from the Go scanner, all on inputs nobody writes on purpose:
- a number needs at least one digit: Go's scanner reads "Gi", ".", "+" and "-" as zero, but the
  documented grammar (and the CEL library's docs: `quantity('Mi') // error`) rejects them;
- at most 1000 digits and a decimal exponent within +/-1000, so a hostile "1e999999999" cannot
  make Python build a billion-digit integer (Go keeps such values in scaled form).
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

# The suffix grammar Kubernetes accepts; an exponent is a Go ParseInt: optional sign, digits.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>[KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
# Canonical DecimalSI suffixes by power of ten; beyond E Kubernetes falls back to e-notation.
_SUFFIX_FOR_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_EXPONENTS.items()}

MAX_DIGITS = 1000
MAX_EXPONENT = 1000
NANO = 10**9  # quantities are exact down to 1n and no further
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def parse_quantity(text: str | int) -> Fraction:
    """The exact value of a Kubernetes quantity (a string, or an integer as int-or-string fields
    allow: `cpu: 16`); ValueError (with the reason) if malformed."""
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str):
        raise ValueError(f"quantity must be a string, got {type(text).__name__}")
    return _parse(text)


@functools.lru_cache(maxsize=8192)
def _parse(text: str) -> Fraction:
    # Cached: selectors and rules compare the same few quantities again and again.
    if not text:
        raise ValueError("quantity is empty")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{_show(text)} is not a valid quantity: expected a number with an optional suffix "
            "(Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent like e3)"
        )
    int_digits, frac_digits = match["int"], match["frac"] or ""
    if not int_digits and not frac_digits:
        raise ValueError(f"{_show(text)} is not a valid quantity: it has no digits")
    if len(int_digits.lstrip("0")) + len(frac_digits) > MAX_DIGITS:
        raise ValueError(f"{_show(text)} is not a supported quantity: more than {MAX_DIGITS} digits")

    # Leading zeros stripped first: they are not digits that count, and Python refuses to convert a
    # string of more than 4300 digits, zeros or not.
    value = Fraction(int((int_digits + frac_digits).lstrip("0") or "0"), 10 ** len(frac_digits))
    suffix = match["suffix"] or ""
    binary = suffix in _BINARY_EXPONENTS
    if binary:
        value *= 2 ** _BINARY_EXPONENTS[suffix]
    else:
        if suffix in _DECIMAL_EXPONENTS:
            exponent = _DECIMAL_EXPONENTS[suffix]
        else:
            significant = suffix[1:].lstrip("+-").lstrip("0")
            exponent = int(suffix[1:]) if len(significant) <= 4 else MAX_EXPONENT + 1
        if abs(exponent) > MAX_EXPONENT:
            raise ValueError(f"{_show(text)} is not a supported quantity: exponent beyond +/-{MAX_EXPONENT}")
        value *= Fraction(10) ** exponent

    # Kubernetes rounds a non-zero value up (away from zero) to the next nano so that asking for a
    # tiny amount still gets some.
    scaled = value * NANO
    if scaled.denominator != 1:
        value = Fraction(-((-scaled.numerator) // scaled.denominator), NANO)  # ceil of the magnitude
    if binary and value > INT64_MAX:
        value = Fraction(INT64_MAX)
    if match["sign"] == "-":
        value = -value
    return value


def _show(text: str) -> str:
    # Error messages quote the input, but never a megabyte of it.
    return repr(text if len(text) <= 64 else text[:61] + "...")


def is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except ValueError:
        return False
    return True


def format_quantity(value: Fraction | int) -> str:
    """The canonical DecimalSI spelling of a value: an integer mantissa and the largest
    power-of-1000 suffix that keeps it integral ("1500m", "200M", "1073741824").

    Kubernetes remembers whether a quantity was written with a binary suffix and would print
    1Gi as "1Gi"; the value is the same, and one spelling per value keeps equality exact.
    """
    value = Fraction(value)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    nanos = abs(value) * NANO
    if nanos.denominator != 1:
        raise ValueError(f"{value} is finer than 1n, which no quantity can hold")
    mantissa, exponent = nanos.numerator, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    # Bring the exponent down to a multiple of three; the mantissa stays an integer.
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    suffix = _SUFFIX_FOR_EXPONENT.get(exponent, f"e{exponent}")
    return f"{sign}{mantissa}{suffix}"


def canonical_quantity(text: str) -> str:
    """The canonical spelling of a quantity string (ValueError if malformed)."""
    return format_quantity(parse_quantity(text))
