"""The package's layers: every import between inferplane's packages points down, never up or sideways."""

from __future__ import annotations

import ast
from pathlib import Path

import inferplane

PACKAGE = Path(inferplane.__file__).parent

# Top to bottom; a package may import only from the layers below its own (and the package root's
# constants, which sit under everything).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"cli"}),
    # The Crossplane runtime serves compose's registry of composition functions and packages them.
    frozenset({"crossplane"}),
    # The embedded engine: admission, then the runtime hosting the functions and the simulator.
    frozenset({"engine"}),
    frozenset({"simulator"}),
    frozenset({"compose", "admission"}),
    frozenset({"clouds", "accelerators", "scheduling"}),
    # Routing's facts: the catalog composes each cluster's gateway that replicas' routes attach to.
    frozenset({"routing"}),
    # GPU metrics: the catalog says which component exports them and ships their rules.
    frozenset({"metrics"}),
    # The embedded controller runtime, which knows no kind of ours (kinds register with it).
    frozenset({"runtime"}),
    frozenset({"cel", "api"}),
)
LAYER_OF = {package: depth for depth, layer in enumerate(LAYERS) for package in layer}


def imported_packages(source: Path) -> set[str]:
    """inferplane's packages a module imports, at any depth of the module (lazy imports count)."""
    found = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from inferplane import cel` imports the package cel.
            modules = ([f"{node.module}.{alias.name}" for alias in node.names] if node.module == "inferplane"
                       else [node.module])
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "inferplane" and len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
                found.add(parts[1])
    return found


def edges() -> set[tuple[str, str, str]]:
    """(importing package, imported package, file) for every import that crosses a package."""
    out = set()
    for source in PACKAGE.rglob("*.py"):
        parts = source.relative_to(PACKAGE).parts
        if len(parts) < 2:
            continue
        for target in imported_packages(source) - {parts[0]}:
            out.add((parts[0], target, str(source.relative_to(PACKAGE.parent))))
    return out


def test_every_package_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYER_OF)


def test_imports_point_down_only():
    upward = sorted(f"{file}: {source} imports {target}" for source, target, file in edges()
                    if LAYER_OF[target] <= LAYER_OF[source])
    assert upward == []


def test_the_reader_sees_imports_across_packages():
    # The check above is only as good as the edges it reads: these are known to exist.
    found = {(source, target) for source, target, _ in edges()}
    assert {("cli", "engine"), ("engine", "compose"), ("compose", "clouds"), ("clouds", "api"),
            ("admission", "cel"), ("accelerators", "api")} <= found


def test_the_runtime_knows_no_kind_of_ours():
    # The runtime is generic: the kinds, clouds, drivers and placement come to it from above.
    imported = {target for source, target, _ in edges() if source == "runtime"}
    assert not imported & {"compose", "clouds", "accelerators", "scheduling", "simulator", "engine", "crossplane"}
    assert ("engine", "runtime") in {(s, t) for s, t, _ in edges()}  # the reader sees the package at all
