"""`inferplane stacks`: one row per supported driver of every cloud, with what serves it."""

from click.testing import CliRunner

from inferplane.cli.main import cli

EXPECTED = """\
CLOUD      DRIVER           COMPONENTS
EKS        dra.cpu          dra-driver-cpu
EKS        dra.net          external
EKS        gpu.nvidia.com   dra-driver-nvidia-gpu, nvidia-critical-pods-quota
GKE        dra.cpu          dra-driver-cpu
GKE        gpu.nvidia.com   dra-driver-nvidia-gpu, nvidia-critical-pods-quota
AKS        dra.cpu          dra-driver-cpu
AKS        gpu.nvidia.com   dra-driver-nvidia-gpu, nvidia-critical-pods-quota
Nebius     dra.cpu          dra-driver-cpu
Nebius     gpu.nvidia.com   dra-driver-nvidia-gpu, nvidia-critical-pods-quota
Vultr      dra.cpu          dra-driver-cpu
Vultr      gpu.nvidia.com   dra-driver-nvidia-gpu, nvidia-critical-pods-quota
Civo       dra.cpu          dra-driver-cpu
Civo       gpu.nvidia.com   dra-driver-nvidia-gpu, nvidia-critical-pods-quota
Existing   dra.cpu          dra-driver-cpu
Existing   gpu.amd.com      node-feature-discovery, amd-gpu-operator, amd-device-config
Existing   gpu.nvidia.com   node-feature-discovery, dra-driver-nvidia-gpu, nvidia-critical-pods-quota
"""


def test_the_stacks_table_lists_every_cloud_driver_and_what_serves_it():
    result = CliRunner().invoke(cli, ["stacks"])
    assert result.exit_code == 0, result.output
    assert result.output == EXPECTED
