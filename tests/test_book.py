"""The book builds from the repo with warnings as errors, executing every notebook (in replay here)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import BOOK_GROUP, ROOT, executed_notebook, load_static_book, says_unrecorded

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


@pytest.fixture(scope="session")
def built_book(book_build) -> Path:
    return book_build / "html"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_committed_without_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    for cell in cells:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None, path.name


def test_every_notebook_is_in_the_toc():
    listed = set(toc_files())
    for path in NOTEBOOKS:
        assert f"notebooks/{path.stem}" in listed


@BOOK_GROUP
def test_book_has_a_page_per_notebook_with_its_charts(built_book):
    for path in NOTEBOOKS:
        page = built_book / "notebooks" / f"{path.stem}.html"
        assert page.exists(), page
        html = page.read_text()
        charts = sum('charts.' in "".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                     if c["cell_type"] == "code")
        assert html.count("Plotly.newPlot") >= charts, path.stem
        assert "Traceback" not in html, path.stem
        assert "cell_output" in html, f"{path.stem} was not executed"


@BOOK_GROUP
def test_plotly_js_is_loaded_once_from_static_where_a_chart_is(built_book):
    # the partial bundle, vendored (book/_vendor) at the version plotly.py writes figures for
    from plotly.offline import get_plotlyjs_version
    bundle = built_book / "_static" / "vendor" / "plotly" / "plotly-cartesian.min.js"
    assert bundle.exists() and f" v{get_plotlyjs_version()}\n" in bundle.read_text()[:200]
    assert not (built_book / "_static" / "plotly.min.js").exists()
    for page in built_book.rglob("*.html"):
        html = page.read_text()
        charts = "Plotly.newPlot" in html
        assert html.count("plotly-cartesian.min.js") == (1 if charts else 0), page.name
        assert len(html.encode()) < 3_000_000, f"{page.name} inlines plotly.js?"


@BOOK_GROUP
def test_stage_traces_are_files_of_the_build_not_inlined(built_book):
    for page in built_book.glob("notebooks/*.html"):
        html = page.read_text()
        assert "data:application/gzip" not in html, page.name
        for href in re.findall(r"class='ap-trace-download' download=\"[^\"]+\" href=\"([^\"]+)\"", html):
            assert (page.parent / href).resolve().is_file(), (page.name, href)


@BOOK_GROUP
def test_no_page_loads_the_widget_manager_or_its_state(built_book):
    # the guesses are their own outputs' JavaScript (helpers/views/guess.py): no widget anywhere
    for page in built_book.rglob("*.html"):
        html = page.read_text()
        for marker in ("embed-amd", "require.js", "application/vnd.jupyter.widget-state+json"):
            assert marker not in html, (page.name, marker)


@BOOK_GROUP
def test_replay_banner_is_on_every_stage_page(built_book):
    for path in NOTEBOOKS:
        html = (built_book / "notebooks" / f"{path.stem}.html").read_text()
        assert "Replaying" in html or "live on" in html or says_unrecorded(path.stem, html), path.stem


@BOOK_GROUP
def test_prose_numbers_come_from_the_trace(built_book):
    """01's opening sentence, as the built page shows it, against the raw events of the recording
    (tests/independent/raw.py: the last ProfilerStep's GPU events, tied to their launch by
    correlation id), not against the Profile that made the page."""
    from independent import raw
    f = raw.forward(raw.stage_path("naive"))
    text = re.sub(r"<[^>]+>", "", (built_book / "notebooks" / "01_naive.html").read_text())
    text = re.sub(r"\s+", " ", text)
    assert f"One forward launched {f.count()} GPU events" in text
    assert f"kept the GPU busy for {f.gpu_us:.1f} µs" in text


def _outputs(nb) -> list:
    """A notebook's outputs as text, but for glue's: the build keeps glued values in its own store and
    leaves them out of jupyter_execute (they are checked against the traces in test_compiled_flex
    and test_prose_numbers_come_from_the_trace)."""
    outputs = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if any(k.startswith("application/papermill.record") for k in out.get("data", {})):
                continue
            data = {k: v for k, v in out.get("data", {}).items() if "widget" not in k}
            text = json.dumps([data, out.get("text", "")], sort_keys=True)
            outputs.append(re.sub(r"[0-9a-f]{32}", "<id>", text))  # widget model ids are random
    return outputs


@BOOK_GROUP
@pytest.mark.parametrize("name", ["02_inplace", "08_at_a_glance"])
def test_restart_and_run_all_twice_gives_the_same_results(name, monkeypatch, book_build):
    # the book's outputs are the replayed ones; live, every run measures afresh and differs. The
    # first run is the book build's own execution; the second, a fresh kernel here.
    import nbclient
    import nbformat
    monkeypatch.setenv("ATTN_PROFILED_MODE", "replay")
    path = ROOT / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    first, second = _outputs(executed_notebook(book_build, name)), _outputs(nb)
    assert first and first == second
