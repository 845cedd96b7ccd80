"""Weights: a ModelService's entries as Gateway API backendRef weights.

An entry's weight belongs to the entry as a whole and is spread evenly over the endpoints it selects,
so scaling a deployment changes no entry's share. Per endpoint that is weight / count: scaled by the
least common multiple of the counts it is an exact integer, then reduced by the common divisor.
Only when that exceeds Gateway API's per-backendRef cap are the weights scaled down to it (rounded,
never below 1: a weight of 0 would take the endpoint out of rotation).
"""

from __future__ import annotations

import math

from inferplane.api.model_service import MAX_WEIGHT


def spread(entries: list[tuple[int, int]]) -> list[list[int]]:
    """Per entry (weight, number of endpoints), the weight of each of its endpoints. An entry with no
    endpoints gets none; the others share all traffic in proportion to their weights."""
    live = [count for _, count in entries if count]
    if not live:
        return [[] for _ in entries]
    scale = math.lcm(*live)
    exact = [[weight * scale // count] * count if count else [] for weight, count in entries]
    divisor = math.gcd(*(w for weights in exact for w in weights))
    reduced = [[w // divisor for w in weights] for weights in exact]
    highest = max(w for weights in reduced for w in weights)
    if highest <= MAX_WEIGHT:
        return reduced
    return [[max(1, round(w * MAX_WEIGHT / highest)) for w in weights] for weights in reduced]
