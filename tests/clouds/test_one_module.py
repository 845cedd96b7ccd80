"""A cloud is one module: nothing outside a cloud's own module asks which cloud it is by its name.

A cloud's name compared as a string (`source == "GKE"`, `source in ("EKS", "AKS")`), used as a key to
reach into a table (`TABLE["Existing"]`), or a list of clouds written out (`for cloud in ("EKS", "GKE")`)
anywhere else in the package fails, naming the module and the line: such a branch is the cloud's fact
living outside its module, and a new cloud would miss it. Ask the cloud's module instead (CloudModule,
clouds/base.py); the registry (clouds/__init__.py) is the one list of clouds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import inferplane
from inferplane.clouds import CLOUD_MODULES

PACKAGE = Path(inferplane.__file__).parent
NAMES = frozenset(CLOUD_MODULES)
# The API's embedding of the clouds' blocks (the kinds' fields), which the kinds are built from.
API_BLOCKS = ("api/cloud.py", "api/cloud_cluster.py")


def own_modules(source: str) -> set[str]:
    """A cloud's module and its helper files (`eks.py`, `eks_foundation.py`), by path under inferplane/."""
    stem = type(CLOUD_MODULES[source]).__module__.rpartition(".")[2]
    return {f"clouds/{path.name}" for path in (PACKAGE / "clouds").glob(f"{stem}*.py")}


def _names_in(node: ast.AST) -> list[str]:
    """The cloud names a comparison's operand or a subscript's key spells: a string, or a tuple, list or set of them."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [item.value for item in items if isinstance(item, ast.Constant) and item.value in NAMES]


def cloud_names_asked(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every cloud name compared as a string, used as a key or listed with another in the
    module, once a line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found += [(node.lineno, name) for operand in (node.left, *node.comparators) for name in _names_in(operand)]
        elif isinstance(node, ast.Subscript):
            found += [(node.lineno, name) for name in _names_in(node.slice)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, name) for name in _names_in(node.value)]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(names := _names_in(node)) > 1:
            found += [(node.lineno, name) for name in names]  # a list of clouds
    return sorted(dict.fromkeys(found), key=lambda found_at: found_at[0])


def test_no_cloud_name_is_asked_outside_its_module():
    asked = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module in API_BLOCKS:
            continue
        for line, name in cloud_names_asked(ast.parse(path.read_text(), str(path))):
            if module not in own_modules(name):
                asked.append(f"inferplane/{module}:{line}: {name!r}")
    assert asked == [], "a cloud's fact outside its module: ask its CloudModule instead"


def test_the_check_sees_each_way_of_asking():
    code = """
if source == "GKE": pass
if "Existing" != source: pass
if source in ("EKS", "AKS", "other"): pass
settings = TABLE["Civo"]
match source:
    case "Vultr": pass
if source == "not a cloud": pass
for cloud in ["Nebius", "Civo"]: pass
TABLE = {"EKS": 1}
"""
    assert cloud_names_asked(ast.parse(code)) == [(2, "GKE"), (3, "Existing"), (4, "EKS"), (4, "AKS"),
                                                   (5, "Civo"), (7, "Vultr"), (9, "Nebius"), (9, "Civo")]
    assert own_modules("EKS") == {"clouds/eks.py", "clouds/eks_foundation.py"}


def protocol_members() -> set[str]:
    """The attributes and methods the CloudModule protocol declares."""
    from inferplane.clouds.base import CloudModule

    declared = set(CloudModule.__annotations__)
    declared |= {name for name, value in vars(CloudModule).items() if callable(value) and not name.startswith("_")}
    return declared


def test_every_cloud_module_implements_the_whole_protocol():
    assert {"provisioned", "pool_kind", "api_version", "nodes_created", "provider_packages", "sample",
            "storage_refusal", "machine_vcpus", "node_labels"} <= protocol_members()
    missing = {source: sorted(name for name in protocol_members() if not hasattr(module, name))
               for source, module in CLOUD_MODULES.items()}
    assert missing == {source: [] for source in CLOUD_MODULES}


def imported(path: Path) -> set[str]:
    """The modules a module imports, absolute (`from inferplane.clouds import eks_foundation` names the module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def test_a_clouds_helper_files_are_reached_only_through_its_module():
    # eks_foundation.py is EKS's own: the rest of the package asks the EKS module, never the file.
    helpers = {f"inferplane.clouds.{path.stem}": source for source in CLOUD_MODULES
               for path in (PACKAGE / "clouds").glob("*.py") if f"clouds/{path.name}" in own_modules(source)
               and path.stem != type(CLOUD_MODULES[source]).__module__.rpartition(".")[2]}
    assert "inferplane.clouds.eks_foundation" in helpers
    reached = sorted(f"{path.relative_to(PACKAGE)} imports {helper}" for path in PACKAGE.rglob("*.py")
                     for helper in imported(path) & set(helpers)
                     if path.relative_to(PACKAGE).as_posix() not in own_modules(helpers[helper]))
    assert reached == []


def test_the_registry_and_the_apis_blocks_name_the_same_clouds_alike():
    # The API's blocks (api/cloud.py) are the kinds' embedding of the clouds the registry lists.
    from inferplane.api.cloud import PROVIDERS, SOURCES

    assert list(CLOUD_MODULES) == list(SOURCES)
    assert [source for source, module in CLOUD_MODULES.items() if module.provisioned] == list(PROVIDERS)
