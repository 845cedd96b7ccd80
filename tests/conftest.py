import dataclasses
from pathlib import Path

import pytest
from hypothesis import settings

# Tests never assert wall-clock time: on a loaded machine one slow example is not a failure.
settings.register_profile("inferplane", deadline=None)
settings.load_profile("inferplane")

REPO = Path(__file__).resolve().parents[1]
# Published CRDs, vendored with their sources (inferplane/data/crds/README.md).
PUBLISHED_CRDS = REPO / "inferplane" / "data" / "crds"


def published_crd_schemas(folder: str):
    """The schemas of the published CRDs vendored in one folder under PUBLISHED_CRDS."""
    from inferplane.admission.openapi import CRDSchemas

    return CRDSchemas(sorted((PUBLISHED_CRDS / folder).glob("*.yaml")))


@pytest.fixture(scope="session")
def crossplane_crds():
    return published_crd_schemas("crossplane")


@pytest.fixture(scope="session")
def provider_crds():
    """The cloud providers' CRDs; `.violations(obj)` lists what an API server would refuse, as text."""
    class ProviderCRDs:
        schemas = published_crd_schemas("providers")

        def violations(self, obj):
            if obj.get("apiVersion") == "v1":  # a core kind beside them (Nebius's cloud-init Secret)
                import kubernetes_validate

                try:
                    kubernetes_validate.validate(obj, "1.37.0", strict=True)
                except kubernetes_validate.ValidationError as error:
                    return [f"{'.'.join(map(str, error.path))}: {error.message}"]
                return []
            return [f"{v.path}: {v.message}" for v in self.schemas.validate(obj)]

    return ProviderCRDs()


@pytest.fixture(scope="session")
def gateway_api_crds():
    """Gateway API v1.5.1's standard-channel CRDs (and the Inference Extension's, which the package ships)."""
    from inferplane.admission.openapi import CRDSchemas
    from inferplane.routing.inference_extension import CRDS_FILE

    return CRDSchemas(sorted((PUBLISHED_CRDS / "gateway-api").glob("*.yaml")) + [CRDS_FILE])


@pytest.fixture
def mutate_component(monkeypatch):
    """mutate_component(key, **changes): the accelerator catalog with one component changed on every
    cloud that lists it, as a broken catalog would be (undone after the test)."""
    from inferplane.accelerators import catalog

    def mutate(key, **changes):
        clouds = {cloud: dataclasses.replace(stack, components=tuple(
            dataclasses.replace(c, **changes) if c.key == key else c for c in stack.components))
            for cloud, stack in catalog.CLOUDS.items()}
        monkeypatch.setattr(catalog, "CLOUDS", clouds)
    return mutate


@pytest.fixture(scope="session")
def inference_extension_crds():
    """The Inference Extension's CRDs as the repository vendors them (what the stacks install)."""
    from inferplane.admission.openapi import CRDSchemas
    from inferplane.routing.inference_extension import CRDS_FILE

    return CRDSchemas([CRDS_FILE])


# A command run as a user bound by file modes (a subprocess). chmod alone does not bind root
# (CAP_DAC_OVERRIDE reads and writes anyway), so as root the command runs with every capability dropped
# from its bounding set (util-linux's setpriv): still uid 0, so it reads pytest's root-only tmp folder,
# but a file or folder without read, write or search permission is closed to it, as to any user. (A
# read-only mount needs privileges a test does not have.)
SETPRIV_ARGS = ("--inh-caps=-all", "--bounding-set=-all")


@pytest.fixture
def unprivileged() -> list[str]:
    """The prefix that runs a command bound by file modes; skips where nothing can bind it."""
    import os
    import shutil
    import subprocess

    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None or subprocess.run([setpriv, *SETPRIV_ARGS, "true"]).returncode != 0:
        pytest.skip("running as root without a working setpriv: nothing here can bind a command by file modes")
    return [setpriv, *SETPRIV_ARGS]
