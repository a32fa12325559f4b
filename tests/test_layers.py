"""helpers/ in layers: the imports of every module, read from its source (an AST walk, nothing is
imported), form no cycle, and no module imports a layer above its own.

    core (0) < sources (1) < views (2) < occupancy (3) < chapters (4) < helpers/__init__.py (5)

A feature slice (helpers/counters/, helpers/training/, ...: every package of helpers/ that is not
a layer) is one topic over several layers: each of its modules is named for its layer (`core.py`
or `core_<part>.py`, `sources`, `views`, `occupancy`, `chapter`) and is held to that layer's rules,
in its own slice and across the package: helpers.training.core is layer 0 and imports nothing
above core, helpers.counters.chapter is layer 4 and never imports a sources module (its own
slice's or any other). A slice's package (its __init__.py, layer 4.5: above chapters, below the
top) forwards to its page module on first use and imports nothing else.

Acquisition (sources) is reached only from the public API: views, occupancy and chapters take
Profiles and tables and never import sources. Handed, never fetched: those three layers read no
file (no core.recordings or core.replay_set, no open or read of a path but their own package's
scripts), take no callable to fetch with (no parameter annotated Callable or Session, none they
call), and helpers/__init__.py binds nothing into their modules. No module imports tools/, and only
helpers/core/config.py reads the environment.

Every import counts, at the top of a module or inside a function: a lazy import is still a
dependency. Tools (tools/) and tests are outside helpers/ and may import anything."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "helpers"
LAYERS = {"core": 0, "sources": 1, "views": 2, "occupancy": 3, "chapters": 4}
TOP = 5  # helpers/__init__.py
# a feature slice's module is named for its layer: `<prefix>.py` or `<prefix>_<part>.py`
SLICE_PREFIXES = {"core": "core", "sources": "sources", "views": "views", "occupancy": "occupancy",
                  "chapter": "chapters"}
FACE = 4.5  # a slice's package: forwards to its page module, below helpers/__init__.py
SLICES = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py") if p.parent.name not in LAYERS)
# the layers that take data and never fetch it
NO_SOURCES = {"views", "occupancy", "chapters"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


class NotALayer(AssertionError):
    pass


def kind(module: str) -> str:
    """The layer a module belongs to, by its name: `helpers.views.tables` and
    `helpers.breakdown.views` are views; `top` for helpers/__init__.py, `face` for a slice's
    package. A slice's module named for no layer is an error."""
    parts = module.split(".")
    if len(parts) == 1:
        return "top"
    if parts[1] in LAYERS:
        return parts[1]
    if len(parts) == 2:
        return "face"
    prefix = parts[2].split("_")[0]
    if prefix not in SLICE_PREFIXES:
        raise NotALayer(f"{module}: a slice's module is named for its layer "
                        f"({', '.join(SLICE_PREFIXES)}, or <layer>_<part>)")
    return SLICE_PREFIXES[prefix]


def layer(module: str) -> float:
    return {"top": TOP, "face": FACE}.get(kind(module)) or LAYERS[kind(module)]


def slice_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] not in LAYERS else None


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
    assert {m.split(".")[1] for m in MODULES if "." in m} == set(LAYERS) | set(SLICES)
    assert "helpers.core.profile" in GRAPH["helpers.views.tables"]
    assert "helpers.core.stages" in GRAPH["helpers.sources.capture"]
    # the slices: every one, with edges inside a slice, into it and out of it
    assert set(SLICES) >= {"counters", "smem_cliff", "training", "own_model", "breakdown"}
    assert {kind(m) for m in MODULES if slice_of(m) == "training"} == {"face", "core", "sources", "chapters"}
    assert "helpers.training.core" in GRAPH["helpers.training.chapter"]
    assert "helpers.counters.chapter" in GRAPH["helpers.training.chapter"]
    assert "helpers.counters.core" in GRAPH["helpers.sources.ncu"]
    assert "helpers.views.charts" in GRAPH["helpers.breakdown.views"]
    assert GRAPH["helpers.counters"] == {"helpers.counters.chapter"}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if slice_of(m)))
def test_every_module_of_a_slice_is_named_for_its_layer(module):
    assert kind(module) in (*LAYERS, "face")


def test_a_slice_module_named_for_no_layer_would_be_caught():
    for planted in ("helpers.training.misc", "helpers.counters.chapters", "helpers.breakdown.view",
                    "helpers.own_model.page_chapter"):
        with pytest.raises(NotALayer, match="named for its layer"):
            test_every_module_of_a_slice_is_named_for_its_layer(planted)


@pytest.mark.parametrize("face", SLICES)
def test_a_slice_package_forwards_to_its_page_module_and_imports_nothing_else(face):
    # its __init__ imports one module of its own slice, lazily, and it is no acquisition: the
    # page names of `helpers.<slice>` are its views, occupancy or chapter module's
    module = f"helpers.{face}"
    imported = GRAPH[module] | {n for n in RAW[module] if n.startswith("helpers")}
    assert len(imported) == 1, f"{module} imports {sorted(imported)}: its page module only"
    (page,) = imported
    assert slice_of(page) == face and kind(page) in NO_SOURCES, \
        f"{module} forwards to {page}: a page module of its own slice (views, occupancy, chapter)"


def package_of(module: str) -> str:
    """The layer whose rules a module keeps (`kind`): a slice's module keeps its layer's."""
    return kind(module)


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


# the layer rule inside a slice and across slices: each planted edge breaks it
PLANTED_SLICE_EDGES = [
    # a slice's core imports its own chapter, its own sources, another slice's views
    ("helpers.training.core", "helpers.training.chapter", "imports a higher layer"),
    ("helpers.training.core_backward", "helpers.training.sources_modes", "imports a higher layer"),
    ("helpers.smem_cliff.core", "helpers.breakdown.views", "imports a higher layer"),
    # a layer module imports a slice's higher module, or a slice's package (its face)
    ("helpers.core.stages", "helpers.own_model.sources", "imports a higher layer"),
    ("helpers.chapters.roofline", "helpers.counters", "imports a higher layer"),
    ("helpers.training.sources_step", "helpers.training", "imports a higher layer"),
    ("helpers.counters.core", "helpers.views.tables", "imports a higher layer"),
    # a page module of a slice imports acquisition: its own slice's, another slice's, the layer's
    ("helpers.counters.chapter", "helpers.counters.sources", "imports acquisition"),
    ("helpers.own_model.chapter", "helpers.training.sources_modes", "imports acquisition"),
    ("helpers.breakdown.views", "helpers.sources.modes", "imports acquisition"),
    ("helpers.smem_cliff.occupancy", "helpers.smem_cliff.sources", "imports acquisition"),
    ("helpers.chapters.claims", "helpers.own_model.sources", "imports acquisition"),
]


@pytest.mark.parametrize("module, planted, message", PLANTED_SLICE_EDGES)
def test_a_planted_slice_edge_would_be_caught(module, planted, message):
    assert module in GRAPH and planted in MODULES   # real modules, one edge added
    GRAPH[module] = GRAPH[module] | {planted}
    try:
        with pytest.raises(AssertionError, match=message):
            test_no_module_imports_a_higher_layer(module)
            test_no_view_imports_acquisition(module)
    finally:
        GRAPH[module] = GRAPH[module] - {planted}


@pytest.mark.parametrize("face, planted", [
    ("counters", {"helpers.counters.sources"}),                              # forwards to acquisition
    ("training", {"helpers.chapters.roofline"}),                             # to another slice's or layer's
    ("breakdown", {"helpers.breakdown.views", "helpers.breakdown.core"}),    # imports more than its page
    ("own_model", {"helpers.own_model.chapter", "helpers"}),                 # imports the top
])
def test_a_slice_package_importing_more_would_be_caught(face, planted):
    module = f"helpers.{face}"
    saved = set(GRAPH[module])
    GRAPH[module] = planted
    try:
        with pytest.raises(AssertionError, match="its page module only|a page module of its own slice"):
            test_a_slice_package_forwards_to_its_page_module_and_imports_nothing_else(face)
    finally:
        GRAPH[module] = saved


def test_a_cycle_inside_a_slice_would_be_caught():
    saved = dict(GRAPH)
    GRAPH["helpers.training.core"] = GRAPH["helpers.training.core"] | {"helpers.training.core_backward"}
    GRAPH["helpers.training.core_backward"] = GRAPH["helpers.training.core_backward"] | {"helpers.training.core"}
    try:
        with pytest.raises(AssertionError, match="import cycles"):
            test_no_import_cycle()
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


# ------------------------------------------------------------------------ handed, never fetched

# the core modules that read the replay set from disk: a page's module is handed what they read
REPLAY_READERS = {"helpers.core.recordings", "helpers.core.replay_set"}
# calls that read a file, by the called name (a method, or a function of a module)
READS = {"open", "read_text", "read_bytes", "glob", "rglob", "iterdir", "listdir", "scandir", "walk",
         "load", "loads_file", "read_csv", "read_json", "read_parquet", "read_pickle", "read_table",
         "read_document", "recording_path", "recording_dir", "replay_root", "configured", "of_device"}


def _own_assets(tree: ast.AST) -> set[str]:
    """Module-level names bound to a path next to the module itself (`HERE = Path(__file__)...`):
    a page module may read its own scripts (the calculator's, the guesses', the chart-fit script)."""
    names = set()
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign) and "__file__" in ast.unparse(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def file_reads(source: str) -> list[str]:
    """Every call in `source` that reads a file or the replay set, as `line: code`; a read of a
    path built from the module's own `__file__` is its package's asset, not data."""
    tree = ast.parse(source)
    assets = _own_assets(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name not in READS:
            continue
        receiver = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
        if "__file__" in receiver or any(a in receiver.replace("(", " ").split() for a in assets):
            continue
        if name == "load" and not (receiver in ("json", "pickle", "np", "numpy", "torch", "yaml")
                                   or receiver.endswith("Profile")):
            continue   # a method named load on something else (a module's own `load` of data it is handed)
        found.append(f"{node.lineno}: {ast.unparse(node)[:100]}")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_page_module_reads_a_file(module):
    # views, occupancy and chapters are handed Profiles and tables: the Session reads the replay set
    if package_of(module) not in NO_SOURCES:
        return
    readers = sorted(GRAPH[module] & REPLAY_READERS)
    assert not readers, f"{module} imports what reads the replay set: {readers}"
    reads = file_reads(MODULES[module].read_text())
    assert not reads, f"{module} reads files itself (the Session reads and hands the data): {reads}"


def fetchers(source: str) -> list[str]:
    """Every function parameter that fetches: annotated as a Session, annotated as a Callable (but
    for a decorator's, which it hands back: `register(judge)` returns `judge`), or called by the
    function it is handed to (`fetch(stage, shape)`), as `function(parameter)`."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        a = fn.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
                  *([a.kwarg] if a.kwarg else [])]
        name = getattr(fn, "name", "lambda")
        returned = {n.value.id for n in ast.walk(fn) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
        for p in params:
            shown = ast.unparse(p.annotation) if p.annotation is not None else ""
            if "Session" in shown or ("Callable" in shown and p.arg not in returned):
                found.append(f"{name}({p.arg}: {shown})")
        names = {p.arg for p in params}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
                found.append(f"{name}({node.func.id}) calls it at line {node.lineno}")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_page_function_takes_a_fetcher(module):
    # a chapter or a view is handed the data, never a function that fetches it
    if package_of(module) in NO_SOURCES:
        taken = fetchers(MODULES[module].read_text())
        assert not taken, f"{module} takes callables that fetch (hand it Profiles and tables): {taken}"


def bindings(source: str) -> list[str]:
    """What helpers/__init__.py would bind into a module: functools.partial, a ModuleType subclass
    or instance, setattr, an assignment to an attribute, a write to a namespace's __dict__."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in ("partial", "ModuleType", "setattr"):
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.Attribute) and node.attr in ("partial", "ModuleType", "__dict__"):
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [f"{node.lineno}: {ast.unparse(t)} =" for t in targets if isinstance(t, ast.Attribute)]
        elif isinstance(node, ast.ClassDef):
            found.append(f"{node.lineno}: class {node.name}")
    return found


def test_the_top_level_binds_nothing_into_modules():
    # `helpers.roofline` is helpers.chapters.roofline itself: nothing bound into it, no wrapper; a
    # slice's package (`helpers.counters`) binds nothing either: its names are its page module's own
    for init in [PACKAGE / "__init__.py", *(PACKAGE / s / "__init__.py" for s in SLICES)]:
        bound = bindings(init.read_text())
        assert not bound, f"{init.relative_to(PACKAGE.parent)} binds into modules: {bound}"
    import helpers
    from helpers.chapters import roofline
    from helpers.counters import chapter as counters
    from helpers.training import chapter as training
    assert helpers.roofline is roofline
    assert helpers.counters.show is counters.show and helpers.counters.Counters is counters.Counters
    assert helpers.training.peak_chart is training.peak_chart and helpers.training.chapter is training


PLANTED_READS = [
    "from ..core.recordings import recorded_profile\ndef f(stage):\n    return recorded_profile(stage)\n",
    "from ..core.replay_set import ReplaySet\ndef f():\n    return ReplaySet.configured().traces()\n",
    "import json\ndef f(path):\n    return json.load(open(path))\n",
    "from pathlib import Path\ndef f(path):\n    return Path(path).read_text()\n",
    "import pandas as pd\ndef f(path):\n    return pd.read_csv(path)\n",
    "from ..core.profile import Profile\ndef f(path):\n    return Profile.load(path)\n",
    "from ..core import config\ndef f():\n    return sorted(config.replay_root().glob('*'))\n",
]
PLANTED_FETCHERS = [
    "def sweep(stages, fetch):\n    return [fetch(s) for s in stages]\n",
    "from typing import Callable\ndef sweep(stages, fetch: Callable[[str], object]):\n    return stages\n",
    "def timings(c, *, capture=None):\n    return [capture(s) for s in c]\n",
    "def page(session: 'Session'):\n    return session\n",
    "from typing import Callable\ndef widget(stages, on_click: Callable):\n    def run():\n        return on_click(stages)\n    return run\n",
]
PLANTED_BINDINGS = [
    "import functools\nfrom .chapters import flex\nbound = {'gap_sweep': functools.partial(flex.gap_sweep, fetch=1)}\n",
    "import types\nclass _Namespace(types.ModuleType):\n    pass\n",
    "from .chapters import counters\ncounters.collect = lambda *a: None\n",
    "def bind(module, fn):\n    module.__dict__.update(fetch=fn)\n",
    "def bind(module, fn):\n    setattr(module, 'fetch', fn)\n",
]


# page modules of a layer and of slices (a slice's views, occupancy and chapter modules are held
# to the same rules): a planted read or fetcher in each must fail
PLANTED_PAGES = ["helpers.views.planted", "helpers.counters.chapter_planted", "helpers.breakdown.views_planted",
                 "helpers.smem_cliff.occupancy_planted"]


@pytest.mark.parametrize("module", PLANTED_PAGES)
@pytest.mark.parametrize("planted", PLANTED_READS)
def test_a_planted_read_would_be_caught(planted, module, tmp_path):
    # the check on a temporary copy of a page module with one read planted: it must fail
    copy = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    copy.parent.mkdir(parents=True)
    copy.write_text((PACKAGE / "views" / "tables.py").read_text() + "\n\n" + planted)
    MODULES[module] = copy
    GRAPH[module] = {m for m in REPLAY_READERS if m.rsplit(".", 1)[-1] in planted} | GRAPH["helpers.views.tables"]
    try:
        with pytest.raises(AssertionError, match="reads the replay set|reads files itself"):
            test_no_page_module_reads_a_file(module)
    finally:
        del MODULES[module], GRAPH[module]


def test_a_decorator_that_registers_a_pure_function_fetches_nothing():
    # the verdict registry's decorator is handed the judge and hands it back: no fetching
    assert not fetchers("from typing import Callable\ndef verdict(stage):\n    def register(judge: Callable) -> Callable:\n"
                        "        REGISTRY[stage] = judge\n        return judge\n    return register\n")


def test_reading_its_own_scripts_is_no_data_read():
    # the package's own assets beside the module: not the replay set, not data
    for source in ('from pathlib import Path\nJS = (Path(__file__).with_name("a.js")).read_text()\n',
                   'from pathlib import Path\nHERE = Path(__file__).parent / "js"\ndef f(n):\n    return (HERE / n).read_text()\n'):
        assert not file_reads(source)


@pytest.mark.parametrize("module", PLANTED_PAGES)
@pytest.mark.parametrize("planted", PLANTED_FETCHERS)
def test_a_planted_fetcher_would_be_caught(planted, module, tmp_path):
    copy = tmp_path / "widgets.py"
    copy.write_text((PACKAGE / "views" / "widgets.py").read_text() + "\n\n" + planted)
    MODULES[module] = copy
    try:
        with pytest.raises(AssertionError, match="takes callables that fetch"):
            test_no_page_function_takes_a_fetcher(module)
    finally:
        del MODULES[module]


def test_a_slice_core_or_sources_module_is_not_a_page():
    # the handed-data rules follow the layer of the name: a slice's sources module reads its recordings
    assert package_of("helpers.training.sources_modes") == "sources" not in NO_SOURCES
    assert package_of("helpers.training.core_backward") == "core" not in NO_SOURCES
    assert {package_of(m) for m in ("helpers.counters.chapter", "helpers.breakdown.views",
                                    "helpers.smem_cliff.occupancy")} == NO_SOURCES


@pytest.mark.parametrize("where", ["__init__.py", "counters/__init__.py"])
@pytest.mark.parametrize("planted", PLANTED_BINDINGS)
def test_a_planted_binding_would_be_caught(planted, where, tmp_path, monkeypatch):
    # a temporary copy of helpers/__init__.py and of the slices' packages, one binding planted in
    # the top or in a slice's package: the check must fail
    copy = tmp_path / "helpers"
    for init in [PACKAGE / "__init__.py", *(PACKAGE / s / "__init__.py" for s in SLICES)]:
        target = copy / init.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(init.read_text() + ("\n\n" + planted if init.relative_to(PACKAGE).as_posix() == where else ""))
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", copy)
    with pytest.raises(AssertionError, match="binds into modules"):
        test_the_top_level_binds_nothing_into_modules()
