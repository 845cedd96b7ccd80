"""An entry's weight is its whole share, spread evenly over its endpoints, within Gateway API's cap."""

import pytest

from inferplane.routing.weights import spread

CASES = {
    # (entry weight, endpoints) per entry -> each endpoint's backendRef weight
    "one endpoint": ([(1, 1)], [[1]]),
    "five endpoints of one entry": ([(1, 5)], [[1, 1, 1, 1, 1]]),
    "canary 95/5 over 3 and 2 endpoints": ([(95, 3), (5, 2)], [[38, 38, 38], [3, 3]]),
    "twice the weight, more endpoints": ([(2, 4), (1, 6)], [[3, 3, 3, 3], [1, 1, 1, 1, 1, 1]]),
    "an entry that selects nothing takes no share": ([(80, 3), (20, 0)], [[1, 1, 1], []]),
    "nothing selected at all": ([(1, 0), (3, 0)], [[], []]),
    "the cap: the largest lands on 1,000,000, none below 1": (
        [(1_000_000, 1), (1, 7)], [[1_000_000], [1, 1, 1, 1, 1, 1, 1]]),
}


@pytest.mark.parametrize("entries, expected", CASES.values(), ids=CASES)
def test_spread(entries, expected):
    assert spread(entries) == expected


def test_scaling_a_deployment_keeps_every_entry_share():
    # 95/5 with the stable deployment at 3, then at 6 replicas: the canary's share stays 5%.
    for stable in (3, 6):
        weights = spread([(95, stable), (5, 2)])
        assert [sum(w) for w in weights] in ([114, 6], [228, 12])
        assert sum(weights[1]) * 20 == sum(weights[0]) + sum(weights[1])
