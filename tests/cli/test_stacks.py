"""`inferplane stacks`: one row per supported driver of every cloud, with what serves it."""

from click.testing import CliRunner

from inferplane.cli.main import cli

EXPECTED = """\
CLOUD      DRIVER            COMPONENTS
EKS        dra.cpu           dra-driver-cpu
EKS        dra.net           aws-dranet
EKS        gpu.nvidia.com    dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter
EKS        neuron.aws.com    neuron-helm-chart
GKE        dra.cpu           dra-driver-cpu
GKE        gpu.nvidia.com    nvidia-driver-installer, dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter
GKE        tpu.google.com    dra-driver-google-tpu, tpu-critical-pods-quota
AKS        dra.cpu           dra-driver-cpu
AKS        gpu.nvidia.com    dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter
Nebius     dra.cpu           dra-driver-cpu
Nebius     gpu.nvidia.com    dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter
Vultr      dra.cpu           dra-driver-cpu
Vultr      gpu.nvidia.com    dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter
Civo       dra.cpu           dra-driver-cpu
Civo       gpu.nvidia.com    dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter
Existing   dra.cpu           dra-driver-cpu
Existing   gaudi.intel.com   node-feature-discovery, intel-gaudi-resource-driver
Existing   gpu.amd.com       node-feature-discovery, amd-gpu-operator, amd-device-config
Existing   gpu.nvidia.com    node-feature-discovery, dra-driver-nvidia-gpu, nvidia-critical-pods-quota, dcgm-exporter
"""


def test_the_stacks_table_lists_every_cloud_driver_and_what_serves_it():
    result = CliRunner().invoke(cli, ["stacks"])
    assert result.exit_code == 0, result.output
    assert result.output == EXPECTED
