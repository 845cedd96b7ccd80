"""`inferplane validate` starts without the heavy modules only some paths need (bench/cli_bench.py
times it): a loop over a folder of manifests, one call per file, pays the start for every file."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HEAVY = ("prompt_toolkit", "rich", "jsonschema", "kubernetes_validate", "grpc")


def imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_admitting_valid_manifests_imports_none_of_the_heavy_modules():
    """A recipe's class, cluster, deployment (CEL selectors) and service, all admitted."""
    recipe = REPO / "recipes" / "qwen2.5-0.5b-nvidia-eks"
    code = ("import inferplane.cli.main\nfrom inferplane.admission import admit_paths\nfrom pathlib import Path\n"
            f"result = admit_paths([Path({str(recipe)!r})])\nassert not result.errors, result.errors\n"
            "assert {obj.kind for _, obj in result.admitted} >= {'InferenceClass', 'InferenceCluster', "
            "'ModelDeployment'}, result.admitted")
    assert imported_after(code) == []


def test_an_invalid_manifest_still_gets_every_error_with_its_path(tmp_path):
    """The full validator is built on the first failure: what it reports is unchanged."""
    manifest = tmp_path / "class.yaml"
    manifest.write_text("apiVersion: inferplane.dev/v1alpha1\nkind: InferenceClass\nmetadata: {name: l4}\n"
                        "spec:\n  devices:\n  - {name: gpu, driver: 7, deviceClassName: gpu.nvidia.com, extra: 1}\n")
    done = subprocess.run([sys.executable, "-m", "inferplane.cli.main", "validate", "-f", str(manifest)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert "spec.devices[0].driver" in done.stderr
    assert "extra" in done.stderr
    assert "0 valid, 2 errors" in done.stderr


def test_the_cel_command_line_is_still_there_when_read():
    """The `cel` package's own command line is loaded when something reads it, not before."""
    code = ("import inferplane.cel, sys\nassert 'prompt_toolkit' not in sys.modules\n"
            "import cel.cli\nassert callable(cel.cli.main)")
    assert "prompt_toolkit" in imported_after(code)
