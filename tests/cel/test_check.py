"""Device selectors checked as the API server checks a ResourceClaim's: types against `device`,
length, nesting and estimated cost; every refusal a sentence, never a crash."""

import pytest

from inferplane.cel.check import estimated_cost, selector_problems

NESTED_FOUR = ("device.attributes.all(d, device.attributes[d].all(k, device.attributes.all(e, "
               "device.attributes[e].all(j, true))))")


@pytest.mark.parametrize("expression", [
    'device.driver == "gpu.nvidia.com"',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) >= 0',
    'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
    'device.attributes["gpu.nvidia.com"].productName',  # any type: Kubernetes accepts it, checks at run time
    'device.driver.lowerAscii().matches("^gpu") && size(device.driver) > 3',
    'device.allowMultipleAllocations',
    'math.greatest(1, 2) > 1 && sets.contains([1, 2], [1])',
    'device.attributes.all(d, device.attributes[d].all(k, true))',
    '[1, 2, 3].all(a, [1, 2, 3].all(b, [1, 2].all(c, [1].all(d, a > 0))))',  # literal lists are small
])
def test_what_kubernetes_accepts_passes(expression):
    assert selector_problems(expression) == []


@pytest.mark.parametrize("expression, problem", [
    ('device.driver', 'must evaluate to bool, not string: compare the value, e.g. device.driver == "gpu.nvidia.com"'),
    ('device.driver + 1 == 2',
     "not a valid CEL expression: at 1:15: found no matching overload for '_+_' applied to '(string, int)'"),
    ('"a" + 1 == "a1"',
     "not a valid CEL expression: at 1:5: found no matching overload for '_+_' applied to '(string, int)'"),
    ('gpu.driver == "x"', "not a valid CEL expression: at 1:4: undeclared reference to 'gpu.driver' (in container '')"),
    ('vendor(device) == "x"', "not a valid CEL expression: at 1:7: undeclared reference to 'vendor' (in container '')"),
    ('device.vendor == "x"',
     "not a valid CEL expression: at 1:7: undefined field 'vendor' not found in struct 'inferplane.dra.Device'"),
    ('(' * 3000 + 'true' + ')' * 3000,
     "not a valid CEL expression: nested too deeply (the checker's limit is 32 levels): split it into several "
     "selectors"),
    ('device' + '.a' * 20000 + ' == 1',
     "is 40011 characters long, over the 10240 a selector may have (Kubernetes' CELSelectorExpressionMaxLength): "
     "shorten it or split it into several selectors"),
    (NESTED_FOUR, "estimated cost 4,597,126 exceeds the budget of 1,000,000 per selector (Kubernetes' "
                  "CELSelectorExpressionMaxCost, about 1 ms of evaluation): nest fewer comprehensions"),
])
def test_what_kubernetes_refuses_is_refused_with_the_reason(expression, problem):
    assert selector_problems(expression) == [problem]


def test_cost_grows_with_each_nested_comprehension_over_device_maps():
    assert estimated_cost('device.driver == "x"') == 6
    one = estimated_cost('device.attributes.all(d, true)')
    two = estimated_cost('device.attributes.all(d, device.attributes[d].all(k, true))')
    assert (one, two) == (134, 4486)
