"""One home per fact: each fact below is written once, in its home module, and imported everywhere else.

A literal of a fact in any other module of the package (a string, or a piece of an f-string; docstrings
and comments are prose and do not count) fails, naming the module and the home to import from.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import inferplane

PACKAGE = Path(inferplane.__file__).parent


@dataclass(frozen=True)
class Fact:
    name: str
    home: str  # the module's path under inferplane/
    pattern: str  # a regular expression a string constant that retypes the fact matches in full
    allowed: tuple[tuple[str, str], ...] = ()  # (module, literal) that match but state another fact


FACTS = (
    # Every group of ours: the API group, and the groups and prefixes under it.
    Fact("the API group", "__init__.py", r"([a-z]+\.)?inferplane\.dev(/.*)?",
         allowed=(("crossplane/package.py", "xpkg.inferplane.dev/inferplane"),)),  # a registry's host
    # dra.cpu's minimum, which every cloud's default Kubernetes version is; "1.34" is a stale copy.
    Fact("the Kubernetes minimum", "api/drivers.py", r"1\.3[4-6]"),
    Fact("the ClusterReady condition type", "api/inference_cluster.py", r"ClusterReady",
         allowed=(("scheduling/cluster_filters.py", "ClusterReady"),)),  # a filter plugin's name
    Fact("the StackReady condition type", "api/serving_stack.py", r"StackReady"),
    # The scheduler waits for a cluster held so (COMING_UP_REASONS): a retyped copy could drift from it.
    Fact("the reason of a cluster whose version is not reported yet", "api/inference_cluster.py",
         r"WaitingForKubernetesVersion"),
    Fact("the instance-type node label", "api/drivers.py", r"node\.kubernetes\.io/instance-type"),
    Fact("the helm provider config's key", "compose/serving_stack.py", r"provider-config-(helm|kubernetes)"),
    Fact("kubeadm's ConfigMap", "compose/inference_cluster.py", r"kubeadm-config"),
    Fact("the pinned Python image", "compose/model_cache.py", r"python:\d.*"),
)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the module's, classes' and functions' docstring nodes."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@functools.cache
def strings() -> dict[str, tuple[str, ...]]:
    """Every module's string constants (f-string pieces included, docstrings not), by its path under
    inferplane/."""
    out = {}
    for source in sorted(PACKAGE.rglob("*.py")):
        if "data" in source.relative_to(PACKAGE).parts:
            continue
        tree = ast.parse(source.read_text(), str(source))
        prose = _docstrings(tree)
        out[source.relative_to(PACKAGE).as_posix()] = tuple(
            node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose)
    return out


@pytest.mark.parametrize("fact", FACTS, ids=lambda fact: fact.name)
def test_a_fact_is_written_in_its_home_alone(fact: Fact):
    assert any(re.fullmatch(fact.pattern, s) for s in strings()[fact.home]), f"{fact.home} no longer holds it"
    elsewhere = sorted((module, s) for module, found in strings().items() if module != fact.home
                       for s in found if re.fullmatch(fact.pattern, s) and (module, s) not in fact.allowed)
    assert elsewhere == [], f"{fact.name} retyped outside {fact.home}: import it from there"


def test_the_check_finds_a_retyped_literal(tmp_path: Path):
    """The matching itself: a retyped fact in code is found, one in a docstring or comment is not."""
    source = tmp_path / "retyped.py"
    source.write_text('"""kubeadm-config, in prose."""\n# kubeadm-config\nNAME = f"{1}" "kubeadm-config"\n'
                      'LABEL = "node.kubernetes.io/instance-type"\n')
    tree = ast.parse(source.read_text())
    prose = _docstrings(tree)
    found = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and id(n) not in prose]
    assert [fact.name for fact in FACTS for s in found if re.fullmatch(fact.pattern, s)] == [
        "the instance-type node label", "kubeadm's ConfigMap"]
