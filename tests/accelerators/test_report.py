from inferplane.accelerators.catalog import CLOUDS, supported_drivers
from inferplane.accelerators.report import render_stacks_table


def rows():
    lines = render_stacks_table().splitlines()
    return lines[0].split(), [line.split(None, 2) for line in lines[1:]]


def test_header_and_one_row_per_supported_driver_of_every_cloud():
    header, body = rows()
    assert header == ["CLOUD", "DRIVER", "COMPONENTS"]
    assert [(cloud, driver) for cloud, driver, _ in body] == [
        (cloud, driver) for cloud in CLOUDS for driver in supported_drivers(cloud)]


def test_rows_name_the_serving_components_or_external():
    _, body = rows()
    table = {(cloud, driver): served for cloud, driver, served in body}
    assert table[("EKS", "dra.net")] == "external"
    assert table[("GKE", "dra.cpu")] == "dra-driver-cpu"
    assert table[("AKS", "gpu.nvidia.com")] == "dra-driver-nvidia-gpu, nvidia-critical-pods-quota"
    assert table[("Existing", "gpu.amd.com")] == "node-feature-discovery, amd-gpu-operator, amd-device-config"


def test_columns_line_up():
    lines = render_stacks_table().splitlines()
    driver_at = lines[0].index("DRIVER")
    assert all(line[driver_at - 3:driver_at] == "   " and line[driver_at] != " " for line in lines)
