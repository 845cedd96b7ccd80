"""The generated recording rules, evaluated by Prometheus' own promtool against both vendors' series.

promtool comes from Debian's `prometheus` package, installed by `scripts/setup test`; these tests
are never skipped. The expectations live in `promtool/*.yaml`, worked out by hand.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from inferplane.metrics.mappings import GPUMetricsMapping, builtin_mappings
from inferplane.metrics.rules import rule_file

TESTS = Path(__file__).parent / "promtool"
PROMTOOL = shutil.which("promtool")


def builtin(vendor: str) -> dict:
    return next(m for m in builtin_mappings() if m.vendor == vendor).model_dump(by_alias=True, exclude_none=True)


def cases(vendor: str) -> list[dict]:
    return yaml.safe_load((TESTS / f"{vendor}.yaml").read_text())["tests"]


def failing_cases(tmp_path: Path, mappings: list[dict], vendor: str) -> dict[str, str]:
    """promtool's verdict on each test case of a vendor's file, run one by one: {name: output} of
    the failing ones (promtool 2.42 does not name the case that failed)."""
    assert PROMTOOL, "promtool is missing: `bash scripts/setup test` installs Debian's prometheus package"
    rules = rule_file(GPUMetricsMapping.model_validate(m) for m in mappings)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False))
    check = subprocess.run([PROMTOOL, "check", "rules", "rules.yaml"], cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    failed = {}
    for case in cases(vendor):
        (tmp_path / "case.yaml").write_text(yaml.safe_dump(
            {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [case]}, sort_keys=False))
        result = subprocess.run([PROMTOOL, "test", "rules", "case.yaml"], cwd=tmp_path, capture_output=True,
                                text=True)
        if result.returncode != 0:
            failed[case["name"]] = result.stdout + result.stderr
    return failed


BUILTIN = [builtin("nvidia"), builtin("amd")]


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_builtin_rules_pass_promtool(tmp_path, vendor):
    assert len(cases(vendor)) == 4
    assert failing_cases(tmp_path, BUILTIN, vendor) == {}


def _wrong_factor() -> tuple[list[dict], str, str]:
    nvidia = builtin("nvidia")
    nvidia["spec"]["series"][0]["fromUnit"] = "Bytes"  # memory used read as bytes, not MiB
    return [nvidia, builtin("amd")], "nvidia", "nvidia memory in bytes, total is used + free + reserved"


def _dropped_label() -> tuple[list[dict], str, str]:
    amd = builtin("amd")
    del amd["spec"]["labels"]["container"]
    return [builtin("nvidia"), amd], "amd", "amd memory in bytes"


def _amd_as_nvidia() -> tuple[list[dict], str, str]:
    nvidia, amd = builtin("nvidia"), builtin("amd")
    moved = [s for s in amd["spec"]["series"] if s["source"] == ["gpu_used_vram"]]
    nvidia["spec"]["series"] += moved
    nvidia["spec"]["labels"] = {k: list(dict.fromkeys(amd["spec"]["labels"][k] + v)) for k, v in nvidia["spec"]["labels"].items()}
    amd["spec"]["series"] = [s for s in amd["spec"]["series"] if s not in moved]
    return [nvidia, amd], "amd", "amd memory in bytes"


@pytest.mark.parametrize("mutation", [_wrong_factor, _dropped_label, _amd_as_nvidia],
                         ids=["wrong-conversion-factor", "dropped-label", "amd-series-mapped-as-nvidia"])
def test_a_broken_mapping_fails_a_named_promtool_test(tmp_path, mutation):
    mappings, vendor, failing_test = mutation()
    failed = failing_cases(tmp_path, mappings, vendor)
    assert failing_test in failed
    assert "FAILED" in failed[failing_test]
