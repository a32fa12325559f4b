"""benchmarks/run_notebooks.py, the notebooks step of benchmarks/gpu_session.sh: a fresh kernel per
notebook, or (--pool N) the next notebook's kernel started ahead, with torch and the helpers imported
as it starts (space/kernel_startup.py), as a reader's JupyterLab does. Run here on two tiny notebooks
whose first cell says what its kernel had imported before it."""
import json
import subprocess
import sys

import nbformat
import pytest

from conftest import ROOT

PROBE = "import sys\nprint(sorted(m for m in ('torch', 'helpers') if m in sys.modules))"


@pytest.fixture
def pages(tmp_path):
    paths = []
    for name in ("a", "b", "c"):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(PROBE), nbformat.v4.new_code_cell("import os\nprint(os.getcwd())")]
        paths.append(tmp_path / f"{name}.ipynb")
        nbformat.write(nb, paths[-1])
    return paths


def run(tmp_path, pages, *extra):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run_notebooks.py"), *extra, "--cwd",
                           str(tmp_path), str(tmp_path / "out"), "pass", *map(str, pages)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = [[o.get("text", "") for c in nbformat.read(tmp_path / "out" / p.name, 4).cells for o in c.outputs]
               for p in pages]
    return done.stdout, outputs


@pytest.mark.parametrize("depth", [1, 3])
def test_pooled_kernels_start_with_torch_and_the_helpers_imported(tmp_path, pages, depth):
    out, outputs = run(tmp_path, pages, "--pool", str(depth))
    for page, (first, cwd) in zip(pages, outputs):
        assert first.strip() == "['helpers', 'torch']" and cwd.strip() == str(tmp_path), (page, first, cwd)
    lines = [line for line in out.splitlines() if ".ipynb" in line]
    assert len(lines) == 3 and all("pooled" in line and "kernel start + warm-up" in line and line.endswith("ok")
                                   for line in lines), out
    assert "all notebooks:" in out and f"(pooled kernels, {depth} ahead)" in out


def test_fresh_kernels_import_nothing_ahead(tmp_path, pages):
    out, outputs = run(tmp_path, pages)
    assert [first.strip() for first, _ in outputs] == ["[]"] * 3
    assert sum("fresh kernel  ok" in line for line in out.splitlines()) == 3
