"""Drivers, serving-stack components with their dra_drivers tags, the join, and supported drivers; per DRA
driver (`nvidia`, `amd`, `cpu`, `dranet`, listed in `registry`), the devices it publishes, its DeviceClasses
and its serving stack (components per cloud, with the workloads the simulator runs for them).

The names other packages use, re-exported from the modules that own them.
"""

from inferplane.accelerators.catalog import (
    CLOUDS,
    catalog_errors,
    cloud_stack,
    components,
    serving,
    supported_drivers,
    unsupported_devices_message,
)
from inferplane.accelerators.component import Chart, Component
from inferplane.accelerators.report import stacks_rows

__all__ = ["CLOUDS", "Chart", "Component", "catalog_errors", "cloud_stack", "components", "serving", "stacks_rows",
           "supported_drivers", "unsupported_devices_message"]
