"""The Crossplane Configuration package: what `inferplane package build DIR` writes.

    DIR/configuration/   the Configuration package's root (`crossplane xpkg build --package-root`):
        crossplane.yaml     meta Configuration: Crossplane version, dependencies pinned exactly
        xrds/               the generated XRDs (inferplane/crossplane/xrds/)
        compositions/       one Pipeline Composition per kind: compose, then add Usages
    DIR/function/        the Function package's root: crossplane.yaml (meta Function) and the
                         Dockerfile of its runtime image (built from the repository's root)
    DIR/install/         what a platform team applies: the Configuration (which pulls in the Function
                         and the providers), and the Function as it would be pulled in
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

from inferplane.api import ALL_KINDS
from inferplane.api.xrd import xrd_files
from inferplane.clouds import CLOUD_MODULES
from inferplane.clouds.base import ProviderPackage
from inferplane.crossplane.function import USAGES_INPUT
from inferplane.compose.model_cache import HYDRATION_IMAGE
from inferplane.compose.registry import composition_functions
from inferplane.api.managed import HELM_API_VERSION, OBJECT_API_VERSION

VERSION = f"v{version('inferplane')}"
# Where the packages are pushed; `package build --image` names another registry.
REGISTRY = "xpkg.inferplane.dev/inferplane"
FUNCTION_PACKAGE = f"{REGISTRY}/function-inferplane"
CONFIGURATION_PACKAGE = f"{REGISTRY}/configuration-inferplane"
# v2: namespaced managed resources (`*.m.*`), apiextensions.crossplane.io/v2 XRDs and
# protection.crossplane.io Usages.
CROSSPLANE_VERSION = ">=v2.0.0"
# The image the Function runs on: the pinned Python image the model cache's hydration Job runs on too.
PYTHON_IMAGE = HYDRATION_IMAGE



def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0]


# The providers the serving stacks compose through (Helm releases, Kubernetes Objects), pinned exactly to the
# versions Modelplane v0.3.1 ships together (its crossplane-project.yaml). Each cloud module pins its own
# (CloudModule.provider_packages).
STACK_PROVIDERS: dict[str, ProviderPackage] = {
    group_of(HELM_API_VERSION): ("xpkg.upbound.io/upbound/provider-helm", "v1.4.0"),
    group_of(OBJECT_API_VERSION): ("xpkg.upbound.io/upbound/provider-kubernetes", "v1.3.0"),
}


def provider_packages() -> dict[str, ProviderPackage]:
    """The provider package serving each API group the compositions compose: the stacks' and every cloud's;
    None for a group no published package serves that we know of (the package says so rather than guess one)."""
    out = dict(STACK_PROVIDERS)
    for module in CLOUD_MODULES.values():
        out.update(module.provider_packages)
    return out


def function_name(package: str) -> str:
    """The name Crossplane gives a package it installs as a dependency: `<organization>-<repository>`
    of its reference, which is what a Composition's functionRef names."""
    organization, repository = package.split(":", 1)[0].split("/")[-2:]
    return f"{organization}-{repository}"


def _meta(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "annotations": {
        "meta.crossplane.io/maintainer": "inferplane <dev@inferplane.dev>",
        "meta.crossplane.io/source": "github.com/inferplane/inferplane",
        "meta.crossplane.io/license": "Apache-2.0",
        "meta.crossplane.io/description": description}}


def configuration_meta(function_package: str, function_version: str) -> dict[str, Any]:
    # Every provider a composition may use: a cloud's network or identity kinds are composed only for
    # some clusters (an EFA pool's security groups), so the table is the list, not one fleet's use.
    providers = sorted({package for package in provider_packages().values() if package})
    return {
        "apiVersion": "meta.pkg.crossplane.io/v1", "kind": "Configuration",
        "metadata": _meta("inferplane", "Fleet-level inference control plane: classes, clusters, serving "
                                        "stacks and model deployments"),
        "spec": {"crossplane": {"version": CROSSPLANE_VERSION},
                 "dependsOn": [{"function": function_package, "version": function_version},
                               *({"provider": p, "version": v} for p, v in providers)]}}


def unpinned_groups() -> list[str]:
    return sorted(group for group, package in provider_packages().items() if package is None)


def function_meta() -> dict[str, Any]:
    return {"apiVersion": "meta.pkg.crossplane.io/v1beta1", "kind": "Function",
            "metadata": _meta("function-inferplane", "inferplane's composition functions (RunFunction v1)"),
            "spec": {"crossplane": {"version": CROSSPLANE_VERSION}}}


def composition(kind: type, function: str, composes: bool) -> dict[str, Any]:
    """Compose (when the kind has a composition function), then add the Usages of what was desired. A
    kind without a function (InferenceClass) still needs a Composition for Crossplane to reconcile
    it: the Usages step alone, which composes nothing for it."""
    steps = [{"step": "compose", "functionRef": {"name": function}}] if composes else []
    steps.append({"step": "usages", "functionRef": {"name": function}, "input": dict(USAGES_INPUT)})
    return {"apiVersion": "apiextensions.crossplane.io/v1", "kind": "Composition",
            "metadata": {"name": f"{kind.PLURAL}.{kind.GROUP}"},
            "spec": {"compositeTypeRef": {"apiVersion": kind.api_version_string(), "kind": kind.KIND},
                     "mode": "Pipeline", "pipeline": steps}}


def dockerfile() -> str:
    return f"""\
# inferplane's composition functions, served over Crossplane's RunFunction protocol.
# Build from the repository's root: docker build -f <this file> -t <image> .
FROM {PYTHON_IMAGE}
WORKDIR /src
COPY pyproject.toml README.md ./
COPY inferplane ./inferplane
RUN pip install --no-cache-dir . && rm -rf /src
WORKDIR /
# Crossplane passes the mTLS certificates' folder in TLS_SERVER_CERTS_DIR and connects on 9443.
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["inferplane", "function", "serve"]
"""


def install_configuration(configuration_package: str) -> dict[str, Any]:
    return {"apiVersion": "pkg.crossplane.io/v1", "kind": "Configuration", "metadata": {"name": "inferplane"},
            "spec": {"package": configuration_package}}


def install_function(function_package: str, function_version: str) -> dict[str, Any]:
    """The Function as the Configuration's dependency installs it (same name, same package): applied
    first, it lets a platform team add a runtime config or pull secret before the Configuration."""
    return {"apiVersion": "pkg.crossplane.io/v1", "kind": "Function", "metadata": {"name": function_name(function_package)},
            "spec": {"package": f"{function_package}:{function_version}"}}


def _yaml(*documents: dict[str, Any]) -> str:
    return "---\n".join(yaml.safe_dump(d, sort_keys=False, width=120) for d in documents)


def package_files(image: str | None = None) -> dict[str, str]:
    """Relative path -> text of every file of the package. `image`: the Function's package reference
    with its version (default: FUNCTION_PACKAGE at this version)."""
    function_package, _, function_version = (image or f"{FUNCTION_PACKAGE}:{VERSION}").partition(":")
    function_version = function_version or VERSION
    name = function_name(function_package)
    functions = composition_functions()
    files = {f"configuration/xrds/{file}": text for file, text in xrd_files().items()}
    for kind in ALL_KINDS:
        files[f"configuration/compositions/{kind.PLURAL}.{kind.GROUP}.yaml"] = _yaml(
            composition(kind, name, kind.KIND in functions))
    unpinned = unpinned_groups()
    note = (f"# No provider package is pinned for {', '.join(unpinned)}: install a provider serving "
            "that group yourself.\n") if unpinned else ""
    files["configuration/crossplane.yaml"] = note + _yaml(configuration_meta(function_package, function_version))
    files["function/crossplane.yaml"] = _yaml(function_meta())
    files["function/Dockerfile"] = dockerfile()
    files["install/configuration.yaml"] = _yaml(install_configuration(f"{CONFIGURATION_PACKAGE}:{VERSION}"))
    files["install/function.yaml"] = _yaml(install_function(function_package, function_version))
    return files


def build(folder: Path, image: str | None = None) -> list[Path]:
    """Write the package into `folder`; the paths written."""
    written = []
    for relative, text in sorted(package_files(image).items()):
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
