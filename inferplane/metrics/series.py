"""The vendor-neutral GPU series (`inferplane_gpu_*`), their labels, and the units sources come in.

Names follow Prometheus' conventions (base unit in the name) and OpenTelemetry's hardware
conventions for what each series means. Every mapping, built-in or a user's, targets only these.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Quantity(str, Enum):
    BYTES = "bytes"
    RATIO = "ratio"
    WATTS = "watts"
    JOULES = "joules"
    CELSIUS = "celsius"


@dataclass(frozen=True)
class Target:
    name: str
    quantity: Quantity
    help: str
    # Prometheus' metric type of the normalized series: what `rate()` is meant for.
    type: str = "gauge"


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("inferplane_gpu_memory_used_bytes", Quantity.BYTES,
           "GPU memory in use, in bytes (OpenTelemetry hw.gpu.memory.usage)."),
    Target("inferplane_gpu_memory_total_bytes", Quantity.BYTES,
           "GPU memory in total, in bytes (OpenTelemetry hw.gpu.memory.limit)."),
    Target("inferplane_gpu_utilization_ratio", Quantity.RATIO,
           "Fraction of time the GPU was busy, 0 to 1 (OpenTelemetry hw.gpu.utilization)."),
    Target("inferplane_gpu_power_watts", Quantity.WATTS, "GPU power draw, in watts (OpenTelemetry hw.gpu.power)."),
    Target("inferplane_gpu_energy_joules_total", Quantity.JOULES,
           "Energy the GPU consumed, in joules; a counter: rate() gives average power (OpenTelemetry hw.energy).",
           type="counter"),
    Target("inferplane_gpu_temperature_celsius", Quantity.CELSIUS,
           "GPU temperature, in degrees Celsius (OpenTelemetry hw.temperature)."),
    # NVIDIA only: AMD's matrix-core (MFMA) activity is a profiler metric its exporter keeps off.
    Target("inferplane_gpu_tensor_active_ratio", Quantity.RATIO,
           "Fraction of cycles the tensor pipe was active, 0 to 1 (NVIDIA only)."),
)}

# The labels every normalized series carries (when the source has them), in this order.
LABELS: tuple[str, ...] = ("vendor", "gpu", "uuid", "model", "node", "pod", "namespace", "container")
# The labels a mapping takes from its source series (`vendor` is the mapping's own).
SOURCE_LABELS: tuple[str, ...] = LABELS[1:]


@dataclass(frozen=True)
class Unit:
    quantity: Quantity
    # value_in_base_unit = value * multiply / divide. Dividing by an exact power of ten keeps
    # 45 percent at 0.45 where multiplying by 0.01 would give 0.45000000000000001.
    multiply: int = 1
    divide: int = 1

    def convert(self, value: float) -> float:
        return value * self.multiply / self.divide

    def promql(self, expression: str) -> str:
        """The PromQL that converts `expression` to the base unit."""
        if self.multiply != 1:
            expression = f"{expression} * {self.multiply}"
        if self.divide != 1:
            expression = f"{expression} / {self.divide}"
        return expression


UNITS: dict[str, Unit] = {
    "Bytes": Unit(Quantity.BYTES),
    "Mebibytes": Unit(Quantity.BYTES, multiply=1024 * 1024),
    "Ratio": Unit(Quantity.RATIO),
    "Percent": Unit(Quantity.RATIO, divide=100),
    "Watts": Unit(Quantity.WATTS),
    "Joules": Unit(Quantity.JOULES),
    "Millijoules": Unit(Quantity.JOULES, divide=1000),
    "Microjoules": Unit(Quantity.JOULES, divide=1_000_000),
    "Celsius": Unit(Quantity.CELSIUS),
}
