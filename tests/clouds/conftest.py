"""The providers' published CRDs, checked the way an API server would: schema, defaults, CEL rules."""

from pathlib import Path

import pytest

from inferplane.admission.openapi import CRDSchemas

# CI clones the repository with shared/ beside it, as the developers' machines have it.
PROVIDER_CRDS = Path(__file__).resolve().parents[2].parent / "shared" / "schemas" / "providers"


class ProviderCRDs:
    def __init__(self, directory: Path):
        self.schemas = CRDSchemas.from_dir(directory)

    def violations(self, obj):
        return [f"{v.path}: {v.message}" for v in self.schemas.validate(obj)]


@pytest.fixture(scope="session")
def provider_crds():
    return ProviderCRDs(PROVIDER_CRDS)
