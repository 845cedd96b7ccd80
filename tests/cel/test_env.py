"""Compile cache, evaluation over JSON-like activations, errors, and x-kubernetes-validations rules."""

import logging
import threading

import pytest

from inferplane.cel import CelError, compile_expression, evaluate, evaluate_rule


def test_compile_is_cached_by_text():
    assert compile_expression("1 + 1 == 2") is compile_expression("1 + 1 == 2")
    assert compile_expression("1 + 1 == 2") is not compile_expression("1 + 1 == 2 ")


@pytest.mark.parametrize("expr", ["1 +", "a b", "'unterminated", "self.", "[1, 2", "", "   "])
def test_syntax_errors(expr):
    with pytest.raises(CelError) as info:
        compile_expression(expr)
    assert info.value.message
    assert info.value.expression == expr


def test_syntax_error_points_into_the_source():
    with pytest.raises(CelError, match=r"Syntax error.*\n.*quantity\(\"1\"\) \+"):
        compile_expression('quantity("1") +')


EVALUATIONS = [
    ("x + 1", {"x": 41}, 42),
    ("x.name", {"x": {"name": "a"}}, "a"),
    ("x.items.map(i, i * 2)", {"x": {"items": [1, 2, 3]}}, [2, 4, 6]),
    ("x.filter(i, i > 1)", {"x": [1, 2, 3]}, [2, 3]),
    ("x.all(i, i > 0) && x.exists(i, i == 2) && x.exists_one(i, i == 3)", {"x": [1, 2, 3]}, True),
    ("'b' in x && !('z' in x)", {"x": ["a", "b"]}, True),
    ("size(x) == 2 && x.size() == 2", {"x": {"a": 1, "b": 2}}, True),
    ("has(x.a) && !has(x.z)", {"x": {"a": None}}, True),
    ("x == null", {"x": None}, True),
    ("x > 1.5", {"x": 2.0}, True),
    ("x.lowerAscii().split('-')", {"x": "A-B"}, ["a", "b"]),
    ("x.map(q, quantity(q)).filter(q, q.isGreaterThan(quantity('1Gi'))).size()", {"x": ["2Gi", "512Mi"]}, 1),
    ('"quantity(\\"1\\")"', {}, 'quantity("1")'),  # text in a string literal is never folded
    ("r'quantity(\"1\")' + ''", {}, 'quantity("1")'),
    ('{"q": quantity("1.5")}', {}, {"q": "1500m"}),
]


@pytest.mark.parametrize("expr, activation, expected", EVALUATIONS)
def test_evaluate(expr, activation, expected):
    assert evaluate(expr, activation) == expected


ERRORS = [
    ("x.missing", {"x": {}}, "no such key: missing"),
    ("x[5]", {"x": [1]}, "index out of bounds: 5"),
    ("1 + 'a'", {}, "No such overload"),
    ("y", {}, "Undefined variable or function: 'y'"),
    ("1 / 0", {}, "division by zero"),
    ("int('x')", {}, "int"),
]


@pytest.mark.parametrize("expr, activation, message", ERRORS)
def test_evaluation_errors(expr, activation, message):
    with pytest.raises(CelError, match=message):
        evaluate(expr, activation)


def test_errors_are_one_readable_sentence():
    with pytest.raises(CelError) as info:
        evaluate('quantity("10KB")')
    assert info.value.message.startswith("'10KB' is not a valid quantity")
    assert "Check function arguments" not in info.value.message
    assert info.value.expression == 'quantity("10KB")'


def test_no_variable_leaks_between_evaluations():
    assert evaluate("x", {"x": 1, "y": 2}) == 1
    with pytest.raises(CelError, match="'y'"):
        evaluate("y", {"x": 1})


def test_library_does_not_log_our_function_errors(caplog):
    with caplog.at_level(logging.WARNING, logger="cel"):
        with pytest.raises(CelError):
            evaluate('quantity("bad")')
    assert not [r for r in caplog.records if r.name == "cel"]


def test_evaluate_from_threads():
    failures = []

    def run(n):
        for i in range(200):
            if evaluate("x + n", {"x": i, "n": n}) != i + n:
                failures.append((n, i))

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


# x-kubernetes-validations rules: (rule, self, oldSelf, expected)
RULES = [
    ("self.minReplicas <= self.maxReplicas", {"minReplicas": 1, "maxReplicas": 3}, None, True),
    ("self.minReplicas <= self.maxReplicas", {"minReplicas": 4, "maxReplicas": 3}, None, False),
    ("self == oldSelf", "v1", "v1", True),
    ("self == oldSelf", "v2", "v1", False),
    ("self >= oldSelf", 3, 2, True),
    ("has(self.gpu) ? self.gpu.count > 0 : true", {}, None, True),
    ("self.pools.all(p, p.size > 0)", {"pools": [{"size": 1}, {"size": 2}]}, None, True),
    ("self.pools.exists(p, p.role == 'GPU')", {"pools": [{"role": "CPU"}]}, None, False),
    ("self.pools.exists_one(p, p.role == 'System')", {"pools": [{"role": "System"}, {"role": "GPU"}]}, None, True),
    ("self.pools.map(p, p.name).size() == self.pools.size()", {"pools": [{"name": "a"}]}, None, True),
    ("self.pools.filter(p, p.role == 'GPU').size() <= 1", {"pools": [{"role": "GPU"}] * 2}, None, False),
    ("self.role in ['System', 'GPU', 'CPU']", {"role": "GPU"}, None, True),
    ("isQuantity(self.memory) && quantity(self.memory).isGreaterThan(quantity('1Gi'))",
     {"memory": "16Gi"}, None, True),
    ("quantity(self).compareTo(quantity(oldSelf)) >= 0", "2Gi", "2048Mi", True),
    ("isSemver(self.version, true) && semver(self.version, true).isGreaterThan(semver('1.33.0'))",
     {"version": "1.34"}, None, True),
    ("self.devices.all(d, !has(d.count) || d.count >= 1)", {"devices": [{"name": "a"}, {"count": 2}]}, None, True),
    ("self.labels.all(k, !k.startsWith('inferplane.dev/'))", {"labels": {"app": "x"}}, None, True),
]


@pytest.mark.parametrize("rule, self_value, old_self, expected", RULES)
def test_evaluate_rule(rule, self_value, old_self, expected):
    assert evaluate_rule(rule, self_value, old_self) is expected


def test_rule_without_old_self_cannot_read_it():
    with pytest.raises(CelError, match="oldSelf"):
        evaluate_rule("self == oldSelf", 1)


def test_rule_must_be_boolean():
    with pytest.raises(CelError, match="must evaluate to a bool"):
        evaluate_rule("self.size()", [1])


def test_rule_errors_are_cel_errors():
    with pytest.raises(CelError, match="no such key: maxReplicas"):
        evaluate_rule("self.minReplicas <= self.maxReplicas", {"minReplicas": 1})
    with pytest.raises(CelError, match="not a valid quantity"):
        evaluate_rule("quantity(self) > quantity('1')", "12 GB")


def test_a_field_named_matches_is_read_not_called():
    # Gateway API's HTTPRoute rules count `self[0].matches.size()`: a field, where `.matches(...)` is a call.
    from inferplane.cel.rules import Document

    document = Document({"rules": [{"matches": [1, 2]}], "name": "qwen-cpu"})
    assert document.check("self.rules[0].matches.size() == 2", ())
    assert document.check("self.name.matches('^qwen')", ())
