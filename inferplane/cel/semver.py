"""Semantic versions (semver.org 2.0) as the Kubernetes CEL semver library reads them.

Strict parsing follows blang/semver v4, which Kubernetes uses: exactly MAJOR.MINOR.PATCH, no
leading zeros, an optional pre-release (dot-separated, numeric identifiers without leading zeros)
and optional build metadata. `normalize=True` mirrors the library's `semver(s, true)`: drop one
leading "v", strip leading zeros, and fill a missing minor/patch with 0 ("v1.2" is 1.2.0).
Precedence ignores build metadata, so 1.0.0+a equals 1.0.0+b.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_NUMERIC = re.compile(r"[0-9]+")
_IDENTIFIER = re.compile(r"[0-9A-Za-z-]+")
_UINT64_MAX = 2**64 - 1  # Go parses each number as a uint64


@dataclass(frozen=True)
class Semver:
    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = self.core
        return f"{text}+{'.'.join(self.build)}" if self.build else text

    @property
    def core(self) -> str:
        """The version without build metadata: the part that takes part in precedence."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        return f"{text}-{'.'.join(self.prerelease)}" if self.prerelease else text

    @functools.cached_property
    def precedence(self) -> tuple:
        """A sort key implementing semver precedence: a release sorts after its pre-releases,
        numeric identifiers sort numerically and before alphanumeric ones, and a shorter
        pre-release sorts before a longer one it prefixes."""
        if not self.prerelease:
            pre: tuple = (1,)
        else:
            pre = (0, tuple((0, int(i), "") if i.isdigit() else (1, 0, i) for i in self.prerelease))
        return (self.major, self.minor, self.patch, pre)

    def compare(self, other: Semver) -> int:
        mine, theirs = self.precedence, other.precedence
        return (mine > theirs) - (mine < theirs)


def parse_semver(text: str, normalize: bool = False) -> Semver:
    """Parse a semantic version; ValueError with the reason if it is not one."""
    if not isinstance(text, str):
        raise ValueError(f"version must be a string, got {type(text).__name__}")
    return _parse(_normalized(text) if normalize else text)


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        parse_semver(text, normalize)
    except ValueError:
        return False
    return True


def _normalized(text: str) -> str:
    text = text[1:] if text.startswith("v") else text
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            # "00" becomes "0", and "00-rc" keeps a zero before its pre-release.
            if not part or not part[0].isdigit():
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError(f"{text!r}: a short version cannot carry a pre-release or build metadata")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Semver:
    if not text:
        raise ValueError("version is empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError(f"{text!r} is not a semantic version: expected MAJOR.MINOR.PATCH")
    rest = parts[2]
    build: list[str] = []
    if "+" in rest:
        rest, build_text = rest.split("+", 1)
        build = build_text.split(".")
    prerelease: list[str] = []
    if "-" in rest:
        rest, pre_text = rest.split("-", 1)
        prerelease = pre_text.split(".")
    major, minor, patch = (_number(text, name, value) for name, value in
                           (("major", parts[0]), ("minor", parts[1]), ("patch", rest)))
    for identifier in prerelease:
        if not _IDENTIFIER.fullmatch(identifier):
            raise ValueError(f"{text!r}: invalid pre-release identifier {identifier!r}")
        if identifier.isdigit():
            _number(text, "numeric pre-release identifier", identifier)
    for identifier in build:
        if not _IDENTIFIER.fullmatch(identifier):
            raise ValueError(f"{text!r}: invalid build metadata identifier {identifier!r}")
    return Semver(major, minor, patch, tuple(prerelease), tuple(build))


def _number(text: str, name: str, value: str) -> int:
    if not _NUMERIC.fullmatch(value):
        raise ValueError(f"{text!r}: {name} {value!r} is not a number")
    if len(value) > 1 and value[0] == "0":
        raise ValueError(f"{text!r}: {name} {value!r} must not have leading zeros")
    number = int(value) if len(value) <= 20 else _UINT64_MAX + 1
    if number > _UINT64_MAX:
        raise ValueError(f"{text!r}: {name} {value!r} is out of range")
    return number
