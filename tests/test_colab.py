"""A notebook opened alone, as the book's Colab button opens it, installs the book's helpers and
replays from the recordings the package carries.

Every notebook's first cell (tools/first_cell.py writes it from one template) imports helpers
where they are installed (the book's build, a Space, a local JupyterLab: the repository, helpers/
installed editable) and, only where they are not (Colab), first runs
`%pip install "attention-profiled-helpers[colab] @ git+<repository>@<branch>"`. The wheel carries
the replay sets (setup.py copies notebooks/traces into helpers/replay_sets), and
helpers/core/config.py reads that copy where the repository's folder is absent.

Checked here: the cells; what the cell does in both places (a stand-in shell records the %pip
it would run); the wheel built from the working tree (its replay files, byte for byte the
repository's, its data files, its extra at requirements.txt's pins); the wheel installed away from
the repository, replaying from its own copy; and Colab played offline (benchmarks/colab_offline.py):
a fresh virtual environment without helpers, one notebook alone in an empty folder, its own first
cell installing the package from the book's GitHub URL (pointed at a local git repository of the
working tree, pip with --no-index), executed with nbclient, every glued value the same as the
repository's run. The benchmark also times the way through a prebuilt wheel and a second run
(benchmarks/results/colab_offline.md).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import BOOK_GROUP, ROOT, executed_notebook

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def first_cell(path: Path) -> dict:
    return json.loads(path.read_text())["cells"][0]


def tool():
    spec = importlib.util.spec_from_file_location("first_cell", ROOT / "tools" / "first_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pins() -> dict[str, str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return dict(line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))


def git_files(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
                         cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    return [name for name in out if name and (ROOT / name).is_file()]


# ------------------------------------------------------------------------------------ the cells

def test_every_notebook_starts_with_the_template_cell():
    template = tool().source()
    for path in NOTEBOOKS:
        cell = first_cell(path)
        assert cell["cell_type"] == "code" and "".join(cell["source"]) == template, \
            f"{path.name}: its first cell is not tools/first_cell.py's (run python tools/first_cell.py)"
        assert cell["metadata"].get("tags") == ["remove-cell"], path.name
        assert cell["outputs"] == [] and cell["execution_count"] is None, path.name
    assert subprocess.run([sys.executable, str(ROOT / "tools" / "first_cell.py"), "--check"],
                          capture_output=True).returncode == 0


def test_the_cell_installs_the_books_package_from_the_books_repository():
    source = tool().source()
    repository = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installs = re.findall(r"^\s+%pip install -q \"(.+)\"$", source, re.M)
    assert installs == [f"{project['name']}[colab] @ git+{repository['url']}@{repository['branch']}"]
    # the extra is what Colab may lack, at the book's pins, and never torch (Colab's is a CUDA build)
    extra = project["optional-dependencies"]["colab"]
    assert extra and all("==" in r for r in extra), extra
    for requirement in extra:
        name, version = requirement.split("==")
        assert pins()[name] == version, f"{name} is pinned to {pins()[name]} in requirements.txt"
    assert not any(r.split("==")[0] in ("torch", "numpy", "pandas") for r in extra)


CELL_IN_A_SHELL = """
import contextlib, importlib.util, io, json, sys
import pandas as pd
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
magics = []
shell.run_line_magic = lambda name, line, *a, **k: magics.append((name, line))
if sys.argv[2] == "alone":       # Colab: helpers cannot be found (until pip would have installed them)
    find_spec = importlib.util.find_spec
    importlib.util.find_spec = lambda name, *a: None if name == "helpers" else find_spec(name, *a)
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    result = shell.run_cell(open(sys.argv[1]).read())
print(json.dumps({"magics": magics, "printed": out.getvalue(), "ok": result.success,
                  "styled": pd.get_option("display.max_colwidth") is None}))
"""


@pytest.mark.parametrize("where", ["repository", "alone"])
def test_what_the_cell_does(tmp_path, where):
    # run in an IPython shell whose magics are recorded, not run: in the repository it installs
    # nothing and prints nothing; alone, it runs the one %pip line. Both install the book's style.
    (tmp_path / "cell.py").write_text(tool().source())
    run = subprocess.run([sys.executable, "-c", CELL_IN_A_SHELL, str(tmp_path / "cell.py"), where],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["ok"] and seen["printed"] == "" and seen["styled"], seen
    if where == "repository":
        assert seen["magics"] == []
    else:
        [(name, line)] = seen["magics"]
        assert name == "pip" and line.startswith("install -q ") and "[colab] @ git+https://" in line


@BOOK_GROUP
def test_the_first_cell_prints_nothing_in_the_build(book_build):
    for path in NOTEBOOKS:
        cell = executed_notebook(book_build, path.stem).cells[0]
        assert cell.outputs == [], f"{path.name}: {cell.outputs}"
        page = (book_build / "html" / "notebooks" / f"{path.stem}.html").read_text()
        assert "use_book_style" not in page and "%pip install" not in page, path.name


# ------------------------------------------------------------------------------------ the wheel

@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from the repository as a clone has it (the tracked files and new ones
    not ignored: a test's synthetic replay set is ignored), offline, with this venv's setuptools."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "clone"
    for name in git_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes((ROOT / name).read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    str(source), "-w", str(tmp / "dist")], check=True, capture_output=True, text=True)
    [built] = (tmp / "dist").glob("attention_profiled_helpers-*.whl")
    return built


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_wheel_carries_the_replay_sets_and_the_package(wheel):
    with zipfile.ZipFile(wheel) as z:
        shipped = {n: sha(z.read(n)) for n in z.namelist() if not n.endswith("/")}
        metadata = z.read(next(n for n in shipped if n.endswith(".dist-info/METADATA"))).decode()
    traces = {n[len("notebooks/traces/"):]: sha((ROOT / n).read_bytes()) for n in git_files("notebooks/traces")}
    assert traces and any(n.endswith(".json.gz") for n in traces)
    packaged = {n[len("helpers/replay_sets/"):]: h for n, h in shipped.items() if n.startswith("helpers/replay_sets/")}
    assert packaged == traces, "the wheel's replay sets are not the repository's notebooks/traces"
    # every file of the package, its scripts and stylesheets included, byte for byte
    for name in git_files("helpers"):
        assert shipped.get(name) == sha((ROOT / name).read_bytes()), f"the wheel lacks {name}"
    # the extra the first cell installs, at the pins of pyproject.toml
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "Provides-Extra: colab" in metadata
    for requirement in project["optional-dependencies"]["colab"]:
        assert f'Requires-Dist: {requirement}; extra == "colab"' in metadata


PROBE = """
import json, sys
import helpers
from helpers.core import config
from helpers.core.replay_set import ReplaySet
profile = helpers.profile_stage("naive", quiet=True)
print(json.dumps({"helpers": helpers.__file__, "root": str(config.replay_root()),
                  "trace": str(profile.trace_path), "gpu": ReplaySet.configured().identity.device_name,
                  "stages": ReplaySet.configured().stages()}))
"""


def probe(env: dict, cwd: Path) -> dict:
    run = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=cwd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_installed_alone_the_package_replays_from_its_own_copy(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, capture_output=True)
    bare = tmp_path / "bare"   # the editable install of helpers/ hidden, as if it had never been made
    bare.mkdir()
    (bare / "sitecustomize.py").write_text(
        "import sys\nsys.meta_path[:] = [f for f in sys.meta_path\n"
        "                    if not getattr(f, '__module__', '').startswith('__editable__')]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTN_PROFILED_", "PYTHONPATH"))}
    alone = probe(env | {"PYTHONPATH": f"{bare}{os.pathsep}{site}", "ATTN_PROFILED_MODE": "replay"}, tmp_path)
    here = probe(env | {"ATTN_PROFILED_MODE": "replay"}, ROOT / "notebooks")

    packaged = site / "helpers" / "replay_sets"
    assert alone["helpers"] == str(site / "helpers" / "__init__.py") and alone["root"] == str(packaged)
    assert here["root"] == str(ROOT / "notebooks" / "traces")
    trace = Path(alone["trace"])
    assert trace.parent == packaged / "h200"
    assert trace.read_bytes() == (ROOT / "notebooks" / "traces" / "h200" / trace.name).read_bytes()
    # the same set, seen the same way: the GPU named in the recordings, every recorded stage
    assert (alone["gpu"], alone["stages"]) == (here["gpu"], here["stages"])
    recorded = sorted(p.name.split("__")[0] for p in (ROOT / "notebooks" / "traces" / "h200").glob(
        "*__b8_h16_s1024_d64_bfloat16_causal.json.gz"))
    assert sorted(alone["stages"]) == recorded


def test_the_replay_folder_falls_back_to_the_packaged_copy(tmp_path):
    from helpers.core import config
    repository, packaged = tmp_path / "notebooks" / "traces", tmp_path / "replay_sets"
    packaged.mkdir()
    assert config.default_replay_dir(repository, packaged) == packaged       # Colab: no repository
    repository.mkdir(parents=True)
    assert config.default_replay_dir(repository, packaged) == repository     # a checkout: its own
    assert config.default_replay_dir(tmp_path / "none", tmp_path / "none2") == tmp_path / "none"


# ------------------------------------------------------------------------------------ Colab, offline

def colab_offline():
    spec = importlib.util.spec_from_file_location("colab_offline", ROOT / "benchmarks" / "colab_offline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_notebook_alone_installs_the_helpers_by_its_first_cell_and_replays(tmp_path):
    colab = colab_offline()
    notebook = ROOT / "notebooks" / "02_inplace.ipynb"
    reference, _ = colab.reference_run(notebook, tmp_path)
    origin, image = colab.image(tmp_path, {})
    run = colab.by_the_first_cell(notebook, tmp_path, origin, image, reference, again=False)["first_cell"]
    assert not run["errors"], run["errors"]
    assert run["glued"] == len(reference) > 0 and run["same_glue"], f"glued values differ: {run['differing']}"
    # the package the cell installed, in the fresh environment, replaying from its own copy
    venv = tmp_path / "venv-cell"
    assert run["prefix"] == str(venv)
    helpers_dir = Path(run["helpers"]).parent
    assert helpers_dir.is_relative_to(venv) and run["replay_root"] == str(helpers_dir / "replay_sets")
    assert re.search(r"^attention-profiled-helpers\s", run["installed"], re.M)
    assert run["first_cell_printed"] in ("", "Note: you may need to restart the kernel to use updated packages.")


# ------------------------------------------------------------------------------------ the charts

def test_in_colab_charts_bring_their_own_plotly_js():
    # Colab renders neither plotly's mimetype nor a div that expects the book's _static/plotly.min.js;
    # its charts are fitted as the book's are (chart_fit.js, test_browser's live charts measure it)
    code = ("import sys, types\n"
            "sys.modules['google.colab'] = types.ModuleType('google.colab')\n"
            "import plotly.io as pio, plotly.graph_objects as go\n"
            "import helpers; helpers.use_book_style()\n"
            "bundle = pio.renderers[pio.renderers.default].to_mimebundle(go.Figure(go.Bar(y=[1])).to_dict())\n"
            "from helpers.views.charts import FIT_JS\n"
            "html = bundle['text/html']\n"
            "print(pio.renderers.default, sorted(bundle), 'src=\"https://cdn.plot.ly/plotly-' in html,\n"
            "      FIT_JS.splitlines()[-1] in html and 'data-fit-width' in html)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["book_colab", "['text/html']", "True", "True"]
