"""helpers/ in layers: the imports of every module, read from its source (an AST walk, nothing is
imported), form no cycle, and no module imports a layer above its own.

    profiling (0)  <  pages (1)  <  occupancy (2)  <  helpers/__init__.py, the public API (3)

Every import counts, at the top of a module or inside a function: a lazy import is still a
dependency. Tools (tools/) and tests are outside helpers/ and may import anything."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "helpers"
LAYERS = {"profiling": 0, "pages": 1, "occupancy": 2}
TOP = 3  # helpers/__init__.py


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return TOP
    return LAYERS[parts[1]]


def resolve(module: str, path: Path, node: ast.ImportFrom) -> list[str]:
    """The helpers modules an ImportFrom names (a package's submodules count as themselves)."""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = package[:len(package) - node.level + 1]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    found = []
    for alias in node.names:
        candidate = f"{target}.{alias.name}"
        found.append(candidate if candidate in MODULES else target)
    return [t for t in found if t in MODULES]


def imports_of(module: str) -> set[str]:
    path = MODULES[module]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            out |= set(resolve(module, path, node))
    for node in ast.walk(ast.parse(path.read_text())):
        # a module named in a string and imported with importlib (the API's lazy names, a
        # stage's hook) is a dependency too
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in MODULES \
                and node.value.startswith("helpers."):
            out.add(node.value)
    out.discard(module)
    return out


GRAPH = {m: imports_of(m) for m in MODULES}


def test_the_walk_sees_the_package():
    # the walk is not vacuous: it finds every layer, and edges within and across them
    assert {m.split(".")[1] for m in MODULES if "." in m} == set(LAYERS)
    assert "helpers.profiling.profile" in GRAPH["helpers.pages.tables"]
    assert "helpers.profiling.stages" in GRAPH["helpers.profiling.capture"]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer(module):
    higher = sorted(m for m in GRAPH[module] if layer(m) > layer(module))
    assert not higher, f"{module} (layer {layer(module)}) imports a higher layer: {higher}"


def test_no_import_cycle():
    # Tarjan's strongly connected components: a cycle is a component of more than one module
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles in helpers/: {cycles}"


def test_a_cycle_or_a_higher_import_would_be_caught(tmp_path):
    # the checks above on a made-up graph: the same functions must fail on what they forbid
    made_up = {"helpers.profiling.a": {"helpers.pages.b"}, "helpers.pages.b": {"helpers.profiling.a"}}
    assert layer("helpers.pages.b") > layer("helpers.profiling.a")
    saved = dict(GRAPH)
    GRAPH.clear()
    GRAPH.update(made_up)
    try:
        with pytest.raises(AssertionError, match="import cycles"):
            test_no_import_cycle()
        with pytest.raises(AssertionError, match="imports a higher layer"):
            test_no_module_imports_a_higher_layer("helpers.profiling.a")
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def top_level_packages(source: str) -> set[str]:
    """Every top-level package a module's source imports, helpers or not (absolute imports, at any
    depth of the module, and names handed to importlib as strings)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            out.add(node.args[0].value.split(".")[0])
    return out


@pytest.mark.parametrize("source", ["from tools import record", "import tools.record_ncu",
                                    "def f():\n    from tools.record import main", "import tools",
                                    "importlib.import_module('tools.record')"])
def test_an_import_of_tools_would_be_caught(source):
    assert "tools" in top_level_packages(source)


def test_tools_are_not_in_the_package():
    # maintainer tools (recording, builds, experiments' CLI) live in tools/, and nothing in
    # helpers/ imports them
    assert not any("record" == m.split(".")[-1] for m in MODULES)
    for module, path in MODULES.items():
        assert "tools" not in top_level_packages(path.read_text()), module
        assert "if __name__ == \"__main__\"" not in path.read_text(), f"{module} has a command-line entry: move it to tools/"
