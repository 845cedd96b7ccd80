"""Kubernetes versions: every driver's minimum, and every cloud's default against the drivers it serves."""

import pytest

from inferplane.accelerators import supported_drivers
from inferplane.api.drivers import DRIVERS
from inferplane.clouds.kubernetes_version import DEFAULT_KUBERNETES_VERSION, minor


def test_every_driver_states_its_minimum_kubernetes_version():
    assert {name: d.min_kubernetes_version for name, d in DRIVERS.items()} == {
        "gpu.nvidia.com": "1.34",  # dra-driver-nvidia-gpu v0.4.0 prerequisites
        "gpu.amd.com": "1.32",  # AMD GPU operator v1.5.1 DRA docs
        "dra.cpu": "1.36",  # grouped mode needs DRAConsumableCapacity, on by default from 1.36
        "dra.net": "1.35",  # aws-dranet 1.0.0 README prerequisites
        "gaudi.intel.com": "1.34",  # Intel's Gaudi resource driver v0.7.x, doc/gaudi/README.md
        "tpu.google.com": "1.34",  # dra-driver-google-tpu v0.2.0 demos: DRA is GA in 1.34
        "neuron.aws.com": "1.34",  # aws-neuron-sdk containers/neuron-dra.rst: control plane 1.34
    }


def test_patch_minimums_are_the_drivers_own_words():
    assert {name: d.min_patch_version for name, d in DRIVERS.items() if d.min_patch_version} == {
        # create-tpu-cluster-for-dra.sh: "The label only works on or after GKE version: 1.34.1-gke.1127000".
        "tpu.google.com": "1.34.1-gke.1127000",
        # neuron-dra.rst: "For Node AMI, we support 1.34.2+".
        "neuron.aws.com": "1.34.2",
    }


@pytest.mark.parametrize("cloud", sorted(DEFAULT_KUBERNETES_VERSION))
def test_every_clouds_default_version_satisfies_every_driver_it_serves(cloud):
    default = DEFAULT_KUBERNETES_VERSION[cloud]
    too_new = [f"{d} needs {DRIVERS[d].min_kubernetes_version}" for d in supported_drivers(cloud)
               if minor(default) < minor(DRIVERS[d].min_kubernetes_version)]
    assert too_new == [], f"{cloud} defaults to {default}"
