"""What each cloud offers: its regions, the zones of each, its machines and GKE's accelerator types.

One vendored table per cloud beside this module (`eks.yaml`, `gke.yaml`, ...), each with its sources and
the date they were read in its header. Existing clusters have none: inferplane provisions nothing there.

Tables age, so a name one lacks is a warning at admission (`validate --strict` counts it), with the
nearest names the table has. The simulated provider refuses to create a cluster in a region its table
lacks, or a pool in a zone (GKE, AKS), of a machine (Nebius: platform or preset) or of a GKE accelerator
type it lacks, as the cloud's API would. EKS zones are the subnets' (composed by the foundation): they are
checked at admission only.

Each table also names the GPU each of its GPU machines carries (`gpus`; GKE's accelerator types too,
`accelerator_gpus`), as its DRA driver publishes it: `gpu_of` answers for a class's machine block.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence


from inferplane.api.cloud import MACHINE_BLOCKS, SETTINGS_BLOCKS, ZONED_SOURCES, MachineGpu, block_name
from inferplane.clouds.base import CloudModule
from inferplane.nearest import did_you_mean
from inferplane import vendored_yaml

HERE = Path(__file__).parent
# How messages name a table: its path in the repository.
TABLE_DIR = "inferplane/clouds/offerings"
# Names offered as nearest, at most.
NEAREST = 3


@dataclass(frozen=True)
class Gpu:
    """A table's row: a GPU as its DRA driver publishes it (productName exactly), and how many per node
    (None where the machine's name does not fix it: Nebius's presets, GKE's accelerator block)."""
    driver: str
    product: str
    count: int | None = None
    # No source showing the product exactly as the driver publishes it was found (the table says why).
    unconfirmed: bool = False


@dataclass(frozen=True)
class Offerings:
    cloud: str
    file: str
    read: str
    # Zones per region; a region with none takes no zones (or, on an unzoned cloud, has none to take).
    regions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    machines: frozenset[str] = frozenset()
    # Nebius: the presets of each platform (its machines).
    presets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # GKE: accelerator types; empty elsewhere, where the accelerator is not sent to the cloud.
    accelerators: frozenset[str] = frozenset()
    # The GPU each GPU machine carries per node; Nebius's carry no count (the preset's leading <N>gpu- is).
    gpus: Mapping[str, Gpu] = field(default_factory=dict)
    # GKE: the GPU each accelerator type names (the accelerator block's count is the count).
    accelerator_gpus: Mapping[str, Gpu] = field(default_factory=dict)
    # Which machine names are GPU machines, and those left out of `gpus` with why (a fraction of a GPU...).
    gpu_machines: re.Pattern[str] | None = None
    gpus_left_out: Mapping[str, str] = field(default_factory=dict)

    def named(self) -> str:
        return f"{self.file}, read {self.read}"


@functools.cache
def offerings(cloud: str) -> Offerings | None:
    """The cloud's table; None for a source inferplane provisions nothing on (Existing)."""
    path = HERE / f"{block_name(cloud)}.yaml"
    if not path.exists():
        return None
    data = vendored_yaml.load(path.read_text())
    platforms = data.get("platforms") or {}
    return Offerings(
        cloud=cloud, file=f"{TABLE_DIR}/{path.name}", read=str(data["read"]),
        regions={r: tuple(z or ()) for r, z in (data.get("regions") or {}).items()},
        machines=frozenset(data.get("machines") or platforms),
        presets={p: tuple(v) for p, v in platforms.items()},
        accelerators=frozenset(data.get("accelerators") or ()),
        gpus=_gpus(data.get("gpus")), accelerator_gpus=_gpus(data.get("accelerator_gpus")),
        gpu_machines=re.compile(data["gpu_machines"]) if data.get("gpu_machines") else None,
        gpus_left_out=dict(data.get("gpus_left_out") or {}))


def _gpus(rows: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Gpu]:
    return {name: Gpu(str(row["driver"]), str(row["product"]), row.get("count"), bool(row.get("unconfirmed")))
            for name, row in (rows or {}).items()}


# Nebius's presets name their GPUs per node first: 8gpu-128vcpu-1600gb.
PRESET_GPUS = re.compile(r"^(\d+)gpu-")


def gpu_of(module: CloudModule, machine_block: Mapping[str, Any]) -> MachineGpu | None:
    """The GPU a class's machine block (its provisioning block as written, e.g. {"instanceType": "g6.xlarge"})
    carries per node on a cloud (its CloudModule, which names the block's machine field); None when the
    machine carries none the table knows (or the cloud has no table). On GKE a machine type's built-in GPUs
    win; otherwise the accelerator block's type and count. `inferplane.clouds.machine_gpu` takes the cloud's
    name."""
    table = offerings(module.source)
    if table is None or not module.machine_field:
        return None
    attribute = module.machine_field
    key = MACHINE_BLOCKS[module.source].model_fields[attribute].alias or attribute
    machine = machine_block.get(key, machine_block.get(attribute))
    if not isinstance(machine, str):
        return None
    gpu, count = table.gpus.get(machine), None
    if gpu is not None:
        count = gpu.count
        if count is None:  # Nebius: the preset says
            match = PRESET_GPUS.match(str(machine_block.get("preset", "")))
            count = int(match.group(1)) if match else None
    else:
        accelerator = machine_block.get("accelerator")
        if isinstance(accelerator, Mapping) and (gpu := table.accelerator_gpus.get(accelerator.get("type"))):
            count = int(accelerator.get("count", 1))
    if gpu is None or not count:
        return None
    return MachineGpu(machine, gpu.driver, gpu.product, count, gpu.unconfirmed, table.named())


# ---- what a manifest names (admission's warnings): (field path, message) pairs


def _lacks(table: Offerings, what: str, value: str, names: Iterable[str], consequence: str, among: str = "") -> str:
    fix = did_you_mean(value, sorted(names), NEAREST) or "use one the table lists."
    return (f"{what} {value} is not in {table.cloud}'s table{among} ({table.named()}): {fix} {consequence}. If "
            f"{table.cloud} offers it since, add it to the table")


def region_field(cloud: str) -> str:
    """The settings field naming a cloud's region (`location` on AKS); '' where it has none (Nebius)."""
    fields = SETTINGS_BLOCKS[cloud].model_fields
    return next((name for name in ("region", "location") if name in fields), "")


def placement_problems(cloud: str, settings: Any, base: str,
                       pools: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, str]]:
    """A cluster's region (`base` is its settings block's path) and each pool's zones (path, zones)."""
    table, name = offerings(cloud), region_field(cloud)
    if table is None or not name:
        return []
    region = getattr(settings, name)
    if region not in table.regions:
        return [(f"{base}.{name}", _lacks(table, "region", region, table.regions,
                                          "Apply holds the cluster: the provider fails to create it"))]
    if cloud not in ZONED_SOURCES:
        return []  # zones are ignored here, with a ZonesIgnored event
    return [problem for path, zones in pools for index, zone in enumerate(zones)
            if (problem := _zone_problem(table, region, zone, f"{path}[{index}]"))]


def _zone_problem(table: Offerings, region: str, zone: str, path: str) -> tuple[str, str] | None:
    zones = table.regions[region]
    if zone in zones:
        return None
    owner = next((r for r, z in table.regions.items() if zone in z), None)
    if owner is not None:
        hint = did_you_mean(zone, zones, NEAREST) or f"use one of {', '.join(zones)}."
        return path, (f"zone {zone} is in region {owner}, not in the cluster's region {region} ({table.named()}): "
                      f"{hint} The cloud refuses a pool in another region's zone")
    if not zones:
        return path, (f"region {region} has no zones in {table.cloud}'s table ({table.named()}): remove the pool's "
                      "zones (the cloud refuses them), or add the region's zones to the table if it has some since")
    return path, _lacks(table, "zone", zone, zones, "The cloud refuses a pool in it", f" of {region}'s zones")


def machine_problems(cloud: CloudModule, machine: Any, base: str) -> list[tuple[str, str]]:
    """A pool's machine block (`base` is its path) on a cloud (its CloudModule, which names the block's
    machine field and what the cloud calls a machine): the machine, Nebius's preset, GKE's accelerator."""
    table = offerings(cloud.source)
    if table is None:
        return []
    held = "Apply holds every cluster with a pool of it: the provider fails to create the pool's node group"
    out = []
    attribute = cloud.machine_field
    value = getattr(machine, attribute)
    if value not in table.machines:
        alias = type(machine).model_fields[attribute].alias or attribute
        out.append((f"{base}.{alias}", _lacks(table, cloud.machine_word, value, table.machines, held)))
    elif table.presets and machine.preset not in table.presets[value]:
        out.append((f"{base}.preset", _lacks(table, "preset", machine.preset, table.presets[value], held,
                                             f" of {value}'s presets")))
    accelerator = getattr(machine, "accelerator", None)
    if table.accelerators and accelerator is not None and accelerator.type not in table.accelerators:
        out.append((f"{base}.accelerator.type",
                     _lacks(table, "accelerator type", accelerator.type, table.accelerators, held)))
    return out


# ---- what the simulated provider refuses to create


def provider_refusal(module: CloudModule, names: Mapping[str, Sequence[str]]) -> str | None:
    """Why the cloud's API refuses a resource naming these (`region`, `zone`, `machine`, `preset`,
    `accelerator`: the values a managed resource carries), in the provider's words; None: it creates it.
    `module`: the cloud's CloudModule."""
    cloud = module.source
    table = offerings(cloud)
    if table is None:
        return None
    regions = names.get("region", ())
    for region in regions:
        if region not in table.regions:
            return f"InvalidParameterException: unknown region {region}: {cloud} offers no such region"
    # A zone of the resource's region, or of any region where the resource names none (an AKS pool).
    zones = {z for r in (regions or table.regions) for z in table.regions[r]}
    for zone in names.get("zone", ()):
        if zone not in zones:
            return f"InvalidParameterException: unknown zone {zone}{f' in region {regions[0]}' if regions else ''}"
    for machine in names.get("machine", ()):
        if machine not in table.machines:
            return (f"InvalidParameterException: unknown {module.machine_word} {machine}: "
                    f"{cloud} offers no such machine")
        for preset in names.get("preset", ()):
            if table.presets and preset not in table.presets[machine]:
                return f"InvalidParameterException: platform {machine} has no preset {preset}"
    for accelerator in names.get("accelerator", ()):
        if table.accelerators and accelerator not in table.accelerators:
            return f"InvalidParameterException: unknown accelerator type {accelerator}"
    return None
