"""A notebook opened alone, as the book's Colab button opens it, fetches the helpers and runs.

Colab gives the notebook a kernel with its own torch and no checkout of this repository. The
first cell of every notebook clones the repository (ATTN_PROFILED_REPO, default the book's
repository URL), installs what Colab may lack at the book's pins, and moves into notebooks/.
Here the kernel is made as bare as Colab's: it starts in an empty folder, and the editable
install of helpers/ is hidden from it, so `import helpers` fails until the first cell has run.
"""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml
from nbclient import NotebookClient

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def first_cell(path: Path) -> dict:
    return json.loads(path.read_text())["cells"][0]


def pins() -> dict[str, str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return dict(line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))


def test_every_notebook_starts_with_the_same_setup_cell():
    cells = {p.name: "".join(first_cell(p)["source"]) for p in NOTEBOOKS}
    assert len(set(cells.values())) == 1, "the setup cells differ"
    source = next(iter(cells.values()))
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert f'"{config["repository"]["url"]}"' in source, "the cell clones another repository than the book's"
    for package, version in pins().items():
        if f'"{package}==' in source:
            assert f'"{package}=={version}"' in source, f"{package} is pinned to {version} in requirements.txt"
    assert "torch" not in source.split("pip")[-1].split("check=True")[0], "the cell must keep Colab's torch"
    for path in NOTEBOOKS:
        cell = first_cell(path)
        assert cell["cell_type"] == "code" and "remove-cell" in cell["metadata"].get("tags", []), path.name


def working_tree_repository(dest: Path) -> Path:
    """A git repository of the working tree as it is now (tracked and new files), to clone from."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@localhost"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=dest, check=True)
    subprocess.run(git + ["add", "-A"], cwd=dest, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "working tree"], cwd=dest, check=True)
    return dest


def hide_editable_install(folder: Path) -> Path:
    # a sitecustomize that drops the editable finder of helpers/, as if it had never been installed
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path\n"
        "                    if not getattr(f, '__module__', '').startswith('__editable__')]\n")
    return folder


def test_a_notebook_alone_fetches_the_helpers_and_runs(tmp_path):
    origin = working_tree_repository(tmp_path / "origin")
    content = tmp_path / "content"  # Colab's working folder
    content.mkdir()
    nb = nbformat.read(ROOT / "notebooks" / "02_inplace.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import helpers, os\nprint(helpers.__file__)\nprint(os.getcwd())"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(hide_editable_install(tmp_path / "bare")), ATTN_PROFILED_REPO=origin.as_uri(),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")

    probe = subprocess.run([sys.executable, "-c", "import helpers"], env=env, cwd=content,
                           capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'helpers'" in probe.stderr, \
        "the kernel should start without helpers, as in Colab"

    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(content)}}).execute(env=env)

    clone = content / "attention-profiled"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True)
    assert head.stdout == subprocess.run(["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True,
                                         text=True, check=True).stdout
    where = nb.cells[-1]["outputs"][0]["text"].splitlines()
    assert where == [str(clone / "helpers" / "__init__.py"), str(clone / "notebooks")]
    printed = "".join(o.get("text", "") for c in nb.cells if c["cell_type"] == "code" for o in c["outputs"])
    assert re.search(r"(Replaying|Profiled) [\w, ]*\binplace\b", printed), printed[:2000]
    errors = [o for c in nb.cells if c["cell_type"] == "code" for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors


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
