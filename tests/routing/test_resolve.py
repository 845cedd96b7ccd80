"""Gateway API's HTTPRoute semantics (v1.5.1): path matching, precedence, weights and rewrites."""

from fractions import Fraction

import pytest

from inferplane.routing.resolve import HTTPRequest, prefix_matches, replace_prefix, resolve

# ReplacePrefixMatch, as the HTTPPathModifier documentation's table has it.
REWRITES = [
    ("/foo/bar", "/foo", "/xyz", "/xyz/bar"),
    ("/foo/bar", "/foo", "/xyz/", "/xyz/bar"),
    ("/foo/bar", "/foo/", "/xyz", "/xyz/bar"),
    ("/foo/bar", "/foo/", "/xyz/", "/xyz/bar"),
    ("/foo", "/foo", "/xyz", "/xyz"),
    ("/foo/", "/foo", "/xyz", "/xyz/"),
    ("/foo/bar", "/foo", "", "/bar"),
    ("/foo/", "/foo", "", "/"),
    ("/foo", "/foo", "", "/"),
    ("/foo/", "/foo", "/", "/"),
    ("/foo", "/foo", "/", "/"),
    ("/ml-team/qwen/v1/completions", "/ml-team/qwen/", "/", "/v1/completions"),
    ("/ml-team/qwen/v1/completions", "/ml-team/qwen/", "/ml-team/qwen-demo-0/", "/ml-team/qwen-demo-0/v1/completions"),
]


@pytest.mark.parametrize("path, prefix, replacement, expected", REWRITES)
def test_replace_prefix_match(path, prefix, replacement, expected):
    assert replace_prefix(path, prefix, replacement) == expected


@pytest.mark.parametrize("prefix, path, matches", [
    ("/abc", "/abc", True), ("/abc", "/abc/", True), ("/abc", "/abc/def", True), ("/abc", "/abcd", False),
    ("/abc/", "/abc", True), ("/", "/anything", True), ("/ml-team/qwen/", "/ml-team/qwen-cpu/v1", False),
])
def test_path_prefix_matches_whole_elements(prefix, path, matches):
    assert prefix_matches(prefix, path) is matches


def route(name, rules, namespace="ml-team", created="2026-01-01T00:00:00Z"):
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
            "spec": {"rules": rules}}


def prefix(value, backends=(("svc", 1),), **extra):
    return {"matches": [{"path": {"type": "PathPrefix", "value": value}, **extra}],
            "backendRefs": [{"name": n, "port": 80, "weight": w} for n, w in backends]}


POST = lambda path, **kw: HTTPRequest("POST", path, **kw)  # noqa: E731


def test_the_longest_prefix_wins_across_routes():
    routes = [route("all", [prefix("/ml-team/", [("catch-all", 1)])]),
              route("qwen", [prefix("/ml-team/qwen/", [("qwen", 1)])])]
    assert resolve(routes, POST("/ml-team/qwen/v1/completions")).route == "ml-team/qwen"
    # /ml-team/qwen-cpu is not under /ml-team/qwen/: element-wise, it falls to the shorter prefix.
    assert resolve(routes, POST("/ml-team/qwen-cpu/v1/completions")).route == "ml-team/all"
    assert resolve(routes, POST("/other/v1")) is None


def test_exact_beats_prefix_then_method_then_headers():
    rules = [prefix("/v1/completions", [("by-prefix", 1)]),
             {"matches": [{"path": {"type": "Exact", "value": "/v1/completions"}}], "backendRefs": [{"name": "exact"}]},
             prefix("/v1/completions", [("by-method", 1)], method="POST"),
             prefix("/v1/completions", [("by-header", 1)], method="POST", headers=[{"name": "X-Tier", "value": "gold"}])]
    picked = lambda request: resolve([route("r", rules)], request).forwards[0].name  # noqa: E731
    assert picked(POST("/v1/completions")) == "exact"
    assert picked(POST("/v1/completions/x", headers={"x-tier": "gold"})) == "by-header"
    assert picked(POST("/v1/completions/x")) == "by-method"
    assert picked(HTTPRequest("GET", "/v1/completions/x")) == "by-prefix"


def test_ties_go_to_the_oldest_route_then_the_name():
    same = [prefix("/a/")]
    routes = [route("b", same, created="2026-01-02T00:00:00Z"), route("z", same, created="2026-01-01T00:00:00Z"),
              route("a", same, created="2026-01-02T00:00:00Z")]
    assert resolve(routes, POST("/a/x")).route == "ml-team/z"
    assert resolve(routes[:1] + routes[2:], POST("/a/x")).route == "ml-team/a"


def test_weights_share_the_rule_and_each_backend_rewrites_its_own_way():
    rule = prefix("/ml-team/qwen/", [("stable", 19), ("canary", 1), ("off", 0)])
    rule["backendRefs"][0]["filters"] = [{"type": "URLRewrite", "urlRewrite": {"path": {
        "type": "ReplacePrefixMatch", "replacePrefixMatch": "/ml-team/qwen-stable-0/"}}}]
    rule["backendRefs"][1]["filters"] = [{"type": "URLRewrite", "urlRewrite": {"path": {
        "type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}]
    forwards = resolve([route("qwen", [rule])], POST("/ml-team/qwen/v1/completions")).forwards
    assert [(f.name, f.share, f.path) for f in forwards] == [
        ("stable", Fraction(19, 20), "/ml-team/qwen-stable-0/v1/completions"),
        ("canary", Fraction(1, 20), "/v1/completions"),
        ("off", Fraction(0), "/ml-team/qwen/v1/completions"),
    ]


def test_a_rule_without_matches_catches_every_path():
    assert resolve([route("r", [{"backendRefs": [{"name": "svc"}]}])], POST("/x/y")).match == {
        "path": {"type": "PathPrefix", "value": "/"}}
