"""A class's device held to its driver: what can never match a device the driver publishes is refused
(`device_problems`); what disagrees with the driver's table of models is advice (`device_advice`).

The user describes their own hardware: a model the table lacks, a value the table has otherwise, a
capacity above the table's are theirs to state, and admission says (a `Warning:` with the fix) what the
simulation and placement will read. Refused is only what the driver's source never produces: an
attribute or capacity it does not publish, a type it does not write, a value form it never writes (an AMD
productName with a space), a value its DeviceClass excludes, or a per-device value stated per class.
"""

from __future__ import annotations

from typing import Mapping

from inferplane.accelerators.devices import Attribute, DeviceModel, DriverSlices, Identified, Varies, countable, \
    quantity_or_text, shown, short
from inferplane.api.cloud import MachineGpu

Problem = tuple[str, str]  # (field path, message)


def device_problems(shape: DriverSlices, path: str, attributes: Mapping[str, Attribute],
                    capacity: Mapping[str, str]) -> list[Problem]:
    """Every way a class device's attributes (`{key: {type: value}}`, keys as written) and capacities
    (`{key: quantity}`) can never match what its driver publishes."""
    problems: list[Problem] = []
    published = ", ".join(sorted(a.name for a in shape.attributes))
    for key, value in attributes.items():
        q, at = shape.qualified(key), f"{path}.attributes.{key}"
        spec = shape.spec(q)
        if spec is None:
            problems.append((at, f"the {shape.driver} driver publishes no attribute {q}: it publishes {published} "
                                 f"({shape.source})"))
            continue
        ((kind, raw),) = value.items() if len(value) == 1 else ((None, None),)
        if kind != spec.type:
            problems.append((at, f"the {shape.driver} driver publishes {q} as {spec.type}: write {{{spec.type}: ...}}"))
        elif spec.varies is Varies.DEVICE:
            problems.append((at, f"{q} differs from device to device on a node, so a class cannot state it: "
                                 "select on it in a deployment's device selectors instead"))
        elif q in shape.pinned and shape.pinned[q] != value:
            want = shown(shape.pinned[q])
            problems.append((at, f"DeviceClass {shape.device_classes[0].name} selects only devices whose {q} is "
                                 f"{want}, so a device stating {shown(value)} is never allocated: write {want} "
                                 "or leave it out"))
        elif (why := shape.value_problem(q, raw)) is not None:
            problems.append((at, why))
    for key in capacity:
        q = shape.qualified(key)
        if q not in shape.capacities:
            problems.append((f"{path}.capacity.{key}.value",
                             f"the {shape.driver} driver publishes no capacity {q}: it publishes "
                             f"{', '.join(shape.capacities) or 'none'} ({shape.source})"))
    return problems


def device_advice(shape: DriverSlices, path: str, attributes: Mapping[str, Attribute], capacity: Mapping[str, str],
                  machine: MachineGpu | None) -> list[Problem]:
    """What a class device states (qualified keys; `written` is how the class wrote each) that the driver's
    table says otherwise, or that the table cannot check: warnings, each with what the simulation and
    placement read and the fix."""
    if shape.model_from_capacity is not None:
        return []
    if machine is not None and shape.product_key and machine.driver != shape.driver:
        return [(path, f"{machine.machine} carries {machine.count} {machine.product} ({machine.driver}), not "
                       f"{shape.driver} devices ({machine.table}): no node of this class has them, so nothing is "
                       "allocated; claim the machine's GPU, or provision a machine that has these devices")]
    identified = shape.identify(attributes, machine)
    if identified.model is None:
        return [_unknown_model(shape, path, identified, attributes, capacity, machine)]
    return _disagreements(shape, path, identified, attributes, capacity)


def _unknown_model(shape: DriverSlices, path: str, identified: Identified, attributes: Mapping[str, Attribute],
                   capacity: Mapping[str, str], machine: MachineGpu | None) -> Problem:
    if identified.named and machine is not None:
        what = (f"inferplane's table has no {shape.driver} model {shown(next(iter(identified.named.values())))}, "
                f"the GPU of {machine.machine}")
    elif identified.by:
        what = f"inferplane's table has no {shape.driver} model with {identified.by}"
    else:
        what = (f"the class names no {shape.driver} model ({' or '.join(short(k) for k in shape.model_keys)}) and "
                "provisions no machine whose GPU inferplane knows")
    stated = [f"{short(k)} {shown(v)}" for k, v in sorted(attributes.items()) if shape.varies(k, Varies.MODEL)]
    stated += [f"{short(k)} {v}" for k, v in sorted(capacity.items())]
    missing = [short(k) for k in shape.capacities if k not in capacity or not countable(capacity[k])]
    leaves = (f"; it states no {', '.join(missing)}, so a selector on {'them' if len(missing) > 1 else 'it'} "
              "matches nothing here" if missing else "")
    return (f"{path}.attributes",
            f"{what}: admitted as the class states it ({', '.join(stated) or 'nothing'}), which the simulation "
            f"publishes and placement reads{leaves}. If the device is one the table has, name it: "
            f"{', '.join(m.name for m in shape.models)} ({shape.source})")


def _disagreements(shape: DriverSlices, path: str, identified: Identified, attributes: Mapping[str, Attribute],
                   capacity: Mapping[str, str]) -> list[Problem]:
    model: DeviceModel = identified.model  # type: ignore[assignment]
    which = f"{model.name} ({identified.by})"
    out: list[Problem] = []
    for q, value in sorted(attributes.items()):
        if not shape.varies(q, Varies.MODEL) or q in model.unconfirmed or model.attributes.get(q) == value:
            continue
        want = model.attributes.get(q)
        out.append((f"{path}.attributes.{shape.class_key(q)}",
                    f"the {shape.driver} driver publishes {q} = {shown(want)} for {which}, not {shown(value)}: "
                    f"the simulation publishes {shown(want)}; write it or leave it out" if want is not None else
                    f"the {shape.driver} driver publishes no {q} for {which}: the simulation publishes none; "
                    "leave it out"))
    for q, value in sorted(capacity.items()):
        at = f"{path}.capacity.{shape.class_key(q)}.value"
        want = model.capacity.get(q)
        if q not in shape.capacities or not countable(value) or q in model.unconfirmed:
            continue
        if want is None:
            out.append((at, f"the {shape.driver} driver publishes no {q} for {which}: leave it out"))
        elif quantity_or_text(value) > quantity_or_text(want):
            out.append((at, f"the {shape.driver} driver reports {q} as {want} for {which}, not {value}: the "
                            f"simulation publishes and placement reads {want}; write {want}, or leave it out"))
        elif quantity_or_text(value) < quantity_or_text(want):
            out.append((at, f"the {shape.driver} driver reports {q} as {want} for {which}, more than the {value} "
                            f"stated: admitted as a floor; placement and allocation read {want} (write it to say so)"))
    return out
