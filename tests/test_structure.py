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
    # The Kubernetes API over the engine's state; the CLI hands it its resource types and columns.
    frozenset({"apiserver"}),
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
    # Server-side apply's field ownership (managedFields), which the engine records on every write.
    frozenset({"fieldmanager"}),
    # The embedded controller runtime, which knows no kind of ours (kinds register with it).
    frozenset({"runtime"}),
    frozenset({"cel", "api"}),
)
LAYER_OF = {package: depth for depth, layer in enumerate(LAYERS) for package in layer}


def module_name(source: Path) -> str:
    """`inferplane.scheduling.fleet` for inferplane/scheduling/fleet.py, `inferplane.scheduling` for its __init__."""
    parts = list(source.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: Path) -> set[str]:
    """Every module a module imports, absolute, at any depth of the module (lazy imports count): `from .x
    import y` resolved against the module's package, and `from p import m` naming the module p.m when m
    is one (else the package p)."""
    package = module_name(source) if source.name == "__init__.py" else module_name(source).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base)
    return found


def is_module(name: str) -> bool:
    parts = name.split(".")
    if parts[0] != "inferplane":
        return False
    path = PACKAGE.joinpath(*parts[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_packages(source: Path) -> set[str]:
    """inferplane's packages a module imports, at any depth of the module (lazy imports count)."""
    found = set()
    for module in imported_modules(source):
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


def module_graph() -> dict[str, set[str]]:
    """Module -> the inferplane modules it imports, lazy imports included."""
    sources = {module_name(source): source for source in PACKAGE.rglob("*.py")}
    return {name: {m for m in imported_modules(source) if m in sources and m != name}
            for name, source in sources.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(out)


def test_no_import_cycle_between_modules_of_a_package():
    # Across packages the layers forbid a cycle; inside one, a late import can hide one.
    assert cycles(module_graph()) == []


def test_the_cycle_finder_sees_relative_and_lazy_imports():
    graph = module_graph()
    assert "inferplane.scheduling.fleet" in graph["inferplane.scheduling"]  # from .fleet import ...
    assert "inferplane.scheduling.matching" in graph["inferplane.scheduling.fleet"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_package_imports_nothing_from_tests_or_benchmarks():
    found = sorted(f"{source.relative_to(PACKAGE.parent)}: imports {module}" for source in PACKAGE.rglob("*.py")
                   for module in imported_modules(source) if module.split(".")[0] in ("tests", "bench"))
    assert found == []


# ---- size: a module a reader can hold, functions that read as one step

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 50
# Generated data is not read as code: nothing under it counts.
GENERATED = ("data",)


def sized_modules() -> dict[str, Path]:
    """Every module the size limits apply to, by its path under inferplane/."""
    return {source.relative_to(PACKAGE).as_posix(): source for source in sorted(PACKAGE.rglob("*.py"))
            if source.relative_to(PACKAGE).parts[0] not in GENERATED}


def oversize(sources: dict[str, Path]) -> list[str]:
    """Each module over MAX_MODULE_LINES and each function (or method) over MAX_FUNCTION_LINES, with its size."""
    found = []
    for module, source in sources.items():
        text = source.read_text()
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            found.append(f"{module}: {lines} lines")
        for node in ast.walk(ast.parse(text, str(source))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (lines := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    found.append(f"{module}: {node.name}, {lines} lines")
    return found


def test_no_module_or_function_is_over_its_size():
    assert oversize(sized_modules()) == [], "split it by concern, each part named for what it does"


def test_the_size_check_sees_long_functions_and_modules(tmp_path):
    long_function = tmp_path / "long.py"
    long_function.write_text("def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "\n\ndef g():\n    return 1\n")
    long_module = tmp_path / "big.py"
    long_module.write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert oversize({"long.py": long_function, "big.py": long_module}) == [
        f"long.py: f, {MAX_FUNCTION_LINES + 1} lines", f"big.py: {MAX_MODULE_LINES + 1} lines"]
