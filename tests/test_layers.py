"""helpers/ in layers: the imports of every module, read from its source (an AST walk, nothing is
imported), form no cycle, and no module imports a layer above its own.

    core (0) < sources (1) < views (2) < occupancy (3) < chapters (4) < helpers/__init__.py (5)

Acquisition (sources) is reached only from the public API: views, occupancy and chapters take
Profiles and tables and never import sources. No module imports tools/, and only
helpers/core/config.py reads the environment.

Every import counts, at the top of a module or inside a function: a lazy import is still a
dependency. Tools (tools/) and tests are outside helpers/ and may import anything."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "helpers"
LAYERS = {"core": 0, "sources": 1, "views": 2, "occupancy": 3, "chapters": 4}
TOP = 5  # helpers/__init__.py
# the layers that take data and never fetch it
NO_SOURCES = {"views", "occupancy", "chapters"}


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


def raw_imports(module: str) -> set[str]:
    """Every absolute module name a module imports, inside helpers or not."""
    path = MODULES[module]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add(node.module or "")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            out.add(str(node.args[0].value))
    return out


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
RAW = {m: raw_imports(m) for m in MODULES}


def test_the_walk_sees_the_package():
    # the walk is not vacuous: it finds every layer, and edges within and across them
    assert {m.split(".")[1] for m in MODULES if "." in m} == set(LAYERS)
    assert "helpers.core.profile" in GRAPH["helpers.views.tables"]
    assert "helpers.core.stages" in GRAPH["helpers.sources.capture"]


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_view_imports_acquisition(module):
    # views, occupancy and chapters are handed Profiles and tables: the notebook fetches them
    # through helpers' top level
    if package_of(module) in NO_SOURCES:
        fetched = sorted(m for m in GRAPH[module] if package_of(m) == "sources")
        assert not fetched, f"{module} imports acquisition (helpers.sources): {fetched}"


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
    made_up = {"helpers.core.a": {"helpers.views.b"}, "helpers.views.b": {"helpers.core.a", "helpers.sources.c"},
               "helpers.sources.c": set()}
    assert layer("helpers.views.b") > layer("helpers.core.a")
    saved = dict(GRAPH)
    GRAPH.clear()
    GRAPH.update(made_up)
    try:
        with pytest.raises(AssertionError, match="import cycles"):
            test_no_import_cycle()
        with pytest.raises(AssertionError, match="imports a higher layer"):
            test_no_module_imports_a_higher_layer("helpers.core.a")
        with pytest.raises(AssertionError, match="imports acquisition"):
            test_no_view_imports_acquisition("helpers.views.b")
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def imports_tools(module: str) -> list[str]:
    return sorted(n for n in RAW[module] if n.split(".")[0] == "tools")


def test_tools_are_not_in_the_package():
    # maintainer tools (recording, builds, experiments' CLI) live in tools/, and nothing in
    # helpers/ imports them
    assert not any("record" == m.split(".")[-1] for m in MODULES)
    for module, path in MODULES.items():
        assert not imports_tools(module), f"{module} imports tools/: {imports_tools(module)}"
        assert "if __name__ == \"__main__\"" not in path.read_text(), f"{module} has a command-line entry: move it to tools/"


def test_an_import_of_tools_would_be_caught():
    # plant one in a made-up module: the same check finds it, plain, from-style and importlib
    for planted in ({"tools.record"}, {"tools"}, {"json", "tools.compare_builds"}):
        RAW["helpers.views.planted"] = planted
        try:
            assert imports_tools("helpers.views.planted")
        finally:
            del RAW["helpers.views.planted"]


def reads_environment(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv")
               and isinstance(n.value, ast.Name) and n.value.id == "os" for n in ast.walk(tree))


def test_only_config_reads_the_environment():
    readers = sorted(m for m, p in MODULES.items() if reads_environment(p))
    assert readers == ["helpers.core.config"], readers


def test_a_read_of_the_environment_would_be_caught(tmp_path):
    for planted in ('import os\nmode = os.environ.get("ATTN_PROFILED_MODE")\n', 'import os\nos.getenv("X")\n',
                    'import os\nx = os.environ["X"]\n'):
        (tmp_path / "m.py").write_text(planted)
        assert reads_environment(tmp_path / "m.py")
    (tmp_path / "m.py").write_text("from . import config\nmode = config.mode_setting()\n")
    assert not reads_environment(tmp_path / "m.py")
