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
from inferplane.api import ALL_KINDS, CLOUD_CLUSTER_KINDS

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
    # Condition types and the reasons the runtimes and providers share (Crossplane's).
    Fact("the Ready condition type", "api/function.py", r"Ready",
         allowed=(("api/model_cache.py", "Ready"),  # a ModelCache's phase, its own fact
                  # A Node's and a Pod's condition type: Kubernetes' (the kubelet's) fact, not Crossplane's.
                  ("simulator/cluster_objects.py", "Ready"))),
    Fact("the Synced condition type", "api/function.py", r"Synced"),
    Fact("a provider's failure reason", "api/function.py", r"ReconcileError"),
    Fact("a provider's success reason", "api/function.py", r"ReconcileSuccess"),
    # The Kubernetes release whose API is served and whose definitions are vendored under data/.
    Fact("the pinned Kubernetes release", "__init__.py", r".*\bv1\.37\b.*"),
    # A cloud's name, a dict's key included (a driver stack's clouds): CloudSource's values name them.
    Fact("a cloud's name", "api/cloud.py", r"EKS|GKE|AKS|Nebius|Vultr|Civo|Existing",
         allowed=(("compose/inference_cluster.py", "Existing"),)),  # ClusterReady's reason, from the source
    # A kind's name: its class's KIND, read everywhere else (the function registry's keys among them). A
    # cloud's cluster kind is named from its cloud's name, which the fact above finds.
    *(Fact(f"the {kind.KIND} kind's name", f"{kind.__module__.removeprefix('inferplane.').replace('.', '/')}.py",
           re.escape(kind.KIND)) for kind in ALL_KINDS if kind not in CLOUD_CLUSTER_KINDS.values()),
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


def constants(tree: ast.AST) -> tuple[str, ...]:
    """A module's string constants: f-string pieces and a dict's keys included, docstrings not."""
    prose = _docstrings(tree)
    return tuple(node.value for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose)


def sources() -> dict[str, Path]:
    """The package's modules by path under inferplane/, generated data left out."""
    return {source.relative_to(PACKAGE).as_posix(): source for source in sorted(PACKAGE.rglob("*.py"))
            if "data" not in source.relative_to(PACKAGE).parts}


@functools.cache
def strings() -> dict[str, tuple[str, ...]]:
    """Every module's string constants, by its path under inferplane/."""
    return {module: constants(ast.parse(source.read_text(), str(source))) for module, source in sources().items()}


@pytest.mark.parametrize("fact", FACTS, ids=lambda fact: fact.name)
def test_a_fact_is_written_in_its_home_alone(fact: Fact):
    assert any(re.fullmatch(fact.pattern, s) for s in strings()[fact.home]), f"{fact.home} no longer holds it"
    elsewhere = sorted((module, s) for module, found in strings().items() if module != fact.home
                       for s in found if re.fullmatch(fact.pattern, s) and (module, s) not in fact.allowed)
    assert elsewhere == [], f"{fact.name} retyped outside {fact.home}: import it from there"


def test_the_check_finds_a_retyped_literal():
    """The matching itself: a retyped fact in code is found, one in a docstring or comment is not; a
    dict's key counts (a driver stack's clouds)."""
    found = constants(ast.parse('"""kubeadm-config, in prose."""\n# kubeadm-config\nNAME = f"{1}" "kubeadm-config"\n'
                                'LABEL = "node.kubernetes.io/instance-type"\nSTACK = {"EKS": 1}\n'
                                'RELEASE = f"kubernetes-v1.37.0"\nFUNCTIONS = {"ModelCache": f}\n'))
    assert sorted(fact.name for fact in FACTS for s in found if re.fullmatch(fact.pattern, s)) == [
        "a cloud's name", "kubeadm's ConfigMap", "the ModelCache kind's name", "the instance-type node label",
        "the pinned Kubernetes release"]


# The folder of vendored data: every path into it starts from DATA (inferplane/__init__.py).
DATA_HOME = "__init__.py"


def data_paths(tree: ast.AST) -> list[int]:
    """The lines that build a path into a folder named data (`... / "data"`, `.joinpath("data", ...)`)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            operands = (node.right,)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "joinpath":
            operands = tuple(node.args[:1])
        else:
            continue
        if any(isinstance(o, ast.Constant) and isinstance(o.value, str) and o.value.split("/")[0] == "data"
               for o in operands):
            found.append(node.lineno)
    return sorted(found)


def test_the_data_folder_is_found_in_one_place():
    assert data_paths(ast.parse(sources()[DATA_HOME].read_text())), f"{DATA_HOME} no longer names it"
    elsewhere = [f"inferplane/{module}:{line}" for module, source in sources().items() if module != DATA_HOME
                 for line in data_paths(ast.parse(source.read_text(), str(source)))]
    assert elsewhere == [], "a path to data/ computed again: start from inferplane.DATA"


def test_the_data_check_sees_each_way_of_building_the_path():
    code = 'A = Path(__file__).parents[1] / "data" / "crds"\nB = HERE.joinpath("data/charts")\nC = x / "metadata"\n'
    assert data_paths(ast.parse(code)) == [1, 2]
