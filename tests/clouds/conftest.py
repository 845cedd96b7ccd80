"""The providers' published CRDs, checked the way an API server would: schema, defaults, CEL rules."""

import copy
from pathlib import Path

import cel
import pytest
import yaml

from inferplane.admission.openapi import CRDSchemas

# CI clones the repository with shared/ beside it, as the developers' machines have it.
PROVIDER_CRDS = Path(__file__).resolve().parents[2].parent / "shared" / "schemas" / "providers"


class ProviderCRDs:
    """Strict schema validation, plus the CRDs' `x-kubernetes-validations` rules after defaulting.

    CRDSchemas does not evaluate rules yet; until it does, the rules are evaluated here so that the
    composed resources are known to pass them (e.g. EKS Cluster requires forProvider.vpcConfig).
    """

    def __init__(self, directory: Path):
        self.schemas = CRDSchemas.from_dir(directory)
        self.raw = {}
        for path in sorted(directory.glob("*.yaml")):
            crd = yaml.safe_load(path.read_text())
            for version in crd["spec"]["versions"]:
                key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                self.raw[key] = version["schema"]["openAPIV3Schema"]

    def violations(self, obj):
        found = [f"{v.path}: {v.message}" for v in self.schemas.validate(obj)]
        if found:
            return found
        defaulted = copy.deepcopy(obj)
        schema = self.raw[(obj["apiVersion"], obj["kind"])]
        _default(schema, defaulted)
        _rules(schema, defaulted, "", found)
        return found


def _default(schema, value):
    if not isinstance(value, dict):
        return
    for name, sub in (schema.get("properties") or {}).items():
        if name not in value and "default" in sub:
            value[name] = copy.deepcopy(sub["default"])
        if name in value:
            _default(sub, value[name])


def _rules(schema, value, path, out):
    for entry in schema.get("x-kubernetes-validations") or []:
        context = cel.Context()
        context.add_variable("self", value)
        if cel.evaluate(entry["rule"], context) is not True:
            out.append(f"{path or '<root>'}: {entry.get('message') or entry['rule']}")
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name in value:
                _rules(sub, value[name], f"{path}.{name}", out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _rules(schema["items"], item, f"{path}[{index}]", out)


@pytest.fixture(scope="session")
def provider_crds():
    return ProviderCRDs(PROVIDER_CRDS)
