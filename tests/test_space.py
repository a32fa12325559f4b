"""The GPU Space's entry point, space/start.sh, run here: JupyterLab on the notebooks, token always on.

Each test starts it on a free localhost port (ATTN_PROFILED_HOST / ATTN_PROFILED_PORT), with its
own HOME and Jupyter config, and stops its whole process group afterwards. The Docker image
image is built and started by space/check_image.sh, which needs a Docker daemon and is run by hand
(its results are in the README); here space/Dockerfile is checked by reading.

What a Space user does is tested too: a notebook runs on the server start.sh starts (through the
server's REST and kernel websocket API, as JupyterLab runs it), and JupyterLab itself, in headless
Chromium, opens a notebook, runs all its cells, draws its charts and answers its guess form.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, cuda_available

sys.path.insert(0, str(ROOT / "space"))
from run_on_server import run_notebook  # noqa: E402

START = ROOT / "space" / "start.sh"
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


class Server:
    def __init__(self, tmp_path: Path, **env):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "start.log"
        self.token_file = tmp_path / "secret" / "token"
        base_env = {k: v for k, v in os.environ.items()
                    if not k.startswith("JUPYTER") and k not in ("SPACE_ID", "PORT")}
        base_env.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            HOME=str(tmp_path / "home"),
            JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
            JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
            ATTN_PROFILED_HOST="127.0.0.1",
            ATTN_PROFILED_PORT=str(self.port),
            ATTN_PROFILED_TOKEN_FILE=str(self.token_file),
        )
        base_env.update(env)
        (tmp_path / "home").mkdir(exist_ok=True)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(["bash", str(START)], env=base_env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"start.sh exited with {self.proc.returncode}:\n{self.output()[-3000:]}")
            try:
                status, _ = get(f"{self.base}/api/status")
                if status in (200, 403):
                    return
            except OSError:
                pass
            time.sleep(0.5)
        pytest.fail(f"JupyterLab did not answer on {self.base} in {timeout} s:\n{self.output()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture
def server(tmp_path):
    started: list[Server] = []

    def start(**env) -> Server:
        s = Server(tmp_path, **env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def check_token_is_required(s: Server, token: str) -> None:
    status, _ = get(f"{s.base}/api/contents")
    assert status == 403, f"the API answered {status} without a token"
    status, _ = get(f"{s.base}/api/contents", token="not-the-token")
    assert status == 403, f"the API answered {status} to a wrong token"
    status, body = get(f"{s.base}/api/contents", token=token)
    assert status == 200, body[:500]
    listed = sorted(item["name"] for item in json.loads(body)["content"] if item["name"].endswith(".ipynb"))
    assert listed == NOTEBOOKS, "JupyterLab should start in notebooks/"


def test_generated_token_is_written_to_a_private_file_and_never_printed(server):
    s = server()
    s.wait_ready()
    token = s.token_file.read_text().strip()
    assert len(token) >= 32
    assert stat.S_IMODE(s.token_file.stat().st_mode) == 0o600
    check_token_is_required(s, token)
    out = s.output()
    assert str(s.token_file) in out, "start.sh should say where the generated token is"
    assert token not in out, "the token must not appear in the logs"


def test_token_from_the_environment(server, tmp_path):
    token = "a-space-secret-" + "0123456789abcdef" * 2
    s = server(JUPYTER_TOKEN=token, SPACE_ID="someone/attention-profiled")
    s.wait_ready()
    check_token_is_required(s, token)
    assert token not in s.output()
    assert not s.token_file.exists(), "with JUPYTER_TOKEN set nothing is generated"


def test_on_a_space_without_a_token_secret_it_refuses_to_start(server):
    s = server(SPACE_ID="someone/attention-profiled")
    assert s.proc.wait(timeout=30) == 2
    assert "JUPYTER_TOKEN" in s.output()


@pytest.mark.parametrize("token", ["", "   \n", "x", "0123456789abcdef0123456789abcde"],
                         ids=["empty", "blank", "one-character", "31-characters"])
@pytest.mark.parametrize("source", ["JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE"])
def test_an_empty_or_short_token_is_refused(server, tmp_path, source, token):
    if source == "JUPYTER_TOKEN" and not token.strip():
        # an empty JUPYTER_TOKEN is no token: with no file either, start.sh generates one (tested
        # above); an empty token beside a file is the file's token
        env = {"JUPYTER_TOKEN": token, "JUPYTER_TOKEN_FILE": str(tmp_path / "empty")}
        (tmp_path / "empty").write_text("")
    elif source == "JUPYTER_TOKEN":
        env = {"JUPYTER_TOKEN": token}
    else:
        (tmp_path / "token").write_text(token)
        env = {"JUPYTER_TOKEN_FILE": str(tmp_path / "token")}
    s = server(**env)
    assert s.proc.wait(timeout=30) == 2
    out = s.output()
    assert f"is {len(token.strip())} characters long; at least 32" in out
    assert not s.token_file.exists()
    # and a token file no one can read is refused too
    if source == "JUPYTER_TOKEN_FILE" and token == "x":
        missing = server(JUPYTER_TOKEN_FILE=str(tmp_path / "no-such-file"))
        assert missing.proc.wait(timeout=30) == 2 and "cannot read" in missing.output()


def test_a_32_character_token_from_a_file_is_accepted(server, tmp_path):
    token = "0123456789abcdef" * 2
    (tmp_path / "token").write_text(token)  # Jupyter Server takes the file as it is, a newline included
    s = server(JUPYTER_TOKEN_FILE=str(tmp_path / "token"))
    s.wait_ready()
    check_token_is_required(s, token)
    assert token not in s.output()


def dockerignored(patterns: list[str], path: str) -> bool:
    """Whether Docker leaves `path` (relative to the build context) out: a pattern matches the path
    or one of its parent folders (Go's filepath.Match per segment, `**` any number of segments);
    the last matching pattern wins, `!` re-includes."""
    import fnmatch

    def matches(pattern: str, parts: list[str]) -> bool:
        pat = pattern.strip("/").split("/")
        def walk(i: int, j: int) -> bool:
            if i == len(pat):
                return j == len(parts)
            if pat[i] == "**":
                return any(walk(i + 1, k) for k in range(j, len(parts) + 1))
            return j < len(parts) and fnmatch.fnmatchcase(parts[j], pat[i]) and walk(i + 1, j + 1)
        return walk(0, 0)

    parts = path.split("/")
    excluded = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        if any(matches(pattern, parts[:n]) for n in range(1, len(parts) + 1)):
            excluded = not negate
    return excluded


def ignore_patterns(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


LEFT_OUT = [".git/HEAD", ".git/objects/ab/cdef", ".venv/bin/python", "_build/html/index.html",
            ".whl/torch-2.13.0-cp311-none-any.whl", ".pytest_cache/v/cache", "helpers/__pycache__/x.pyc",
            "notebooks/.ipynb_checkpoints/01_naive-checkpoint.ipynb", "attention_profiled_helpers.egg-info/PKG-INFO"]
SENT = ["requirements.txt", "pyproject.toml", "helpers/__init__.py", "helpers/occupancy/js/calculator.js",
        "notebooks/01_naive.ipynb", "notebooks/traces/h200/ceilings.json", "space/start.sh", "book/intro.md"]


def test_dockerignore_at_every_build_context(tmp_path):
    # the Dockerfile's comment names two contexts: the repository root, and the Space repository
    # space/assemble.sh lays out. Each has a .dockerignore (the classic builder reads only that one),
    # and BuildKit's space/Dockerfile.dockerignore says the same.
    comment = (ROOT / "space" / "Dockerfile").read_text().split("FROM", 1)[0]
    assert "docker build -f space/Dockerfile -t attention-profiled ." in comment and "space/assemble.sh" in comment
    root_ignore = ROOT / ".dockerignore"
    assert ignore_patterns(root_ignore) == ignore_patterns(ROOT / "space" / "Dockerfile.dockerignore")
    assembled = tmp_path / "space-repo"
    subprocess.run(["bash", str(ROOT / "space" / "assemble.sh"), str(assembled)], check=True, capture_output=True)
    for ignore in (root_ignore, assembled / ".dockerignore"):
        patterns = ignore_patterns(ignore)
        left = [p for p in LEFT_OUT if not dockerignored(patterns, p)]
        assert not left, f"{ignore} would send {left}"
        sent = [p for p in SENT if dockerignored(patterns, p)]
        assert not sent, f"{ignore} would leave out {sent}"
    # the matcher itself: the last pattern wins, and ! brings a path back
    assert dockerignored([".git"], ".git/config") and not dockerignored([".git"], "a/.git")
    assert dockerignored(["**/.git"], "a/.git") and not dockerignored(["_build", "!_build/keep"], "_build/keep/x")


def test_no_configuration_turns_the_token_off():
    text = START.read_text() + (ROOT / "space" / "Dockerfile").read_text()
    assert not re.search(r"token\s*=\s*(''|\"\")", text, re.I)
    assert "disable_check_xsrf" not in text


def test_space_metadata():
    import yaml
    readme = (ROOT / "space" / "README.md").read_text()
    meta = yaml.safe_load(readme.split("---")[1])
    assert meta["sdk"] == "docker" and meta["app_port"] == 7860
    assert meta["suggested_hardware"] in {"t4-small", "t4-medium", "l4x1", "l40sx1", "a10g-small",
                                          "a10g-large", "a100-large", "h200"}
    dockerfile = (ROOT / "space" / "Dockerfile").read_text()
    assert "requirements.txt" in dockerfile and "space/start.sh" in dockerfile
    assert "EXPOSE 7860" in dockerfile


def started_with_a_token(server, **env) -> tuple[Server, str]:
    token = "a-space-secret-" + "fedcba9876543210" * 2
    s = server(JUPYTER_TOKEN=token, **env)
    s.wait_ready()
    return s, token


def expected_banner(stage: str) -> str:
    # live where this machine has CUDA (the GPU Space), replay of the recorded traces elsewhere;
    # a page's one line names every stage it measured: "Replaying naive, inplace: recorded on …"
    return (r"Profiled " if cuda_available() else r"Replaying ") + rf"[\w, ]*\b{stage}\b"


def code_cells(name: str) -> int:
    cells = json.loads((ROOT / "notebooks" / name).read_text())["cells"]
    return sum(c["cell_type"] == "code" for c in cells)


def test_a_notebook_runs_all_its_cells_on_the_server(server):
    s, token = started_with_a_token(server)
    run = run_notebook(s.base, token, "02_inplace.ipynb")
    assert run.ok, f"cell {run.cells[-1].index} raised {run.cells[-1].error}"
    assert len(run.cells) == code_cells("02_inplace.ipynb")
    assert re.search(expected_banner("inplace"), run.text)
    shown = {m for c in run.cells for m in c.mimetypes}
    # the charts, and the guess-first question as the page's own HTML (no widget: helpers/views/guess.py)
    assert {"application/vnd.plotly.v1+json", "text/html"} <= shown
    assert "application/vnd.jupyter.widget-view+json" not in shown
    assert "Guess first:" in run.text


def test_a_kernel_has_torch_and_the_helpers_imported_before_its_first_cell(server, tmp_path):
    """start.sh's kernels run space/kernel_startup.py as they start (PYTHONSTARTUP): the first cell
    finds torch and the helpers imported already, and nothing defined in its namespace."""
    served = tmp_path / "served"
    served.mkdir()
    probe = "import sys\nprint(sorted(m for m in ('torch', 'helpers', 'plotly') if m in sys.modules), '_warm_up' in dir())"
    (served / "probe.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": probe}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))
    s, token = started_with_a_token(server, ATTN_PROFILED_NOTEBOOKS=str(served))
    run = run_notebook(s.base, token, "probe.ipynb")
    assert run.ok, run.cells[-1].error
    assert "['helpers', 'plotly', 'torch'] False" in run.text


def test_the_kernel_startup_file_does_nothing_outside_a_kernel():
    ran = subprocess.run([sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1]); "
                          "print('torch' in sys.modules)", str(ROOT / "space" / "kernel_startup.py")],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip() == "False", ran.stderr


def run_all_cells(page, tries: int = 3) -> None:
    """Run -> Run All Cells, as a user does, until the first prompt leaves [ ]:.

    Opened straight from its URL, JupyterLab may ask "Select Kernel" before it has loaded the
    kernelspecs (it then cannot match the notebook's python3), and a Run All clicked meanwhile
    is lost. A user presses Select and runs again; so does this.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    for _ in range(tries):
        try:
            accept.wait_for(timeout=5_000)
            accept.click()
            page.locator(".jp-Dialog").wait_for(state="detached")
        except PlaywrightTimeout:
            pass
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
        try:
            page.wait_for_function(
                """() => { const p = document.querySelector('.jp-CodeCell .jp-InputPrompt');
                           return p && p.textContent.trim() !== '[ ]:'; }""", timeout=15_000)
            return
        except PlaywrightTimeout:
            continue
    pytest.fail(f"Run All Cells started nothing in {tries} tries")


@pytest.mark.browser
def test_jupyterlab_runs_a_notebook_draws_its_charts_and_answers_the_guess(server, browser, tmp_path):
    # JupyterLab saves what it runs: serve a copy, so the repository's notebooks stay output-free
    served = tmp_path / "notebooks"
    served.mkdir()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        shutil.copy(path, served / path.name)
    s, token = started_with_a_token(server, ATTN_PROFILED_NOTEBOOKS=str(served))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.goto(f"{s.base}/lab/tree/02_inplace.ipynb?token={token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    run_all_cells(page)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    cells = code_cells("02_inplace.ipynb")
    # every input prompt numbered: [1]: ... [n]: (not [ ]: or [*]:)
    try:
        page.wait_for_function(
            """n => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                                .map(e => e.textContent.trim());
                      return p.length === n && p.every(t => /^\\[\\d+\\]:$/.test(t)); }""",
            arg=cells, timeout=120_000)
    except PlaywrightTimeout:
        page.screenshot(path=str(tmp_path / "jupyterlab-stuck.png"), full_page=True)
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").evaluate_all("ps => ps.map(p => p.textContent)")
        pytest.fail(f"Run All did not finish: prompts {prompts}, kernel status "
                    f"{page.locator('.jp-Notebook-ExecutionIndicator').get_attribute('data-status')}, "
                    f"screenshot {tmp_path / 'jupyterlab-stuck.png'}, server log:\n{s.output()[-3000:]}")
    outputs = page.locator(".jp-OutputArea-output")
    assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']:has-text('Traceback')").count() == 0
    # textContent, not innerText: JupyterLab skips rendering the cells scrolled out of view
    assert re.search(expected_banner("inplace"), page.locator(".jp-Notebook").evaluate("e => e.textContent"))
    # plotly's JupyterLab extension drew the charts (with data), not a fallback text
    plots = page.locator(".jp-OutputArea .js-plotly-plot")
    assert plots.count() >= 3
    for i in range(plots.count()):
        assert plots.nth(i).locator(".main-svg .trace, .main-svg .point, .main-svg path.bars").count() > 0, i
    # and they read on a phone: JupyterLab runs no script of ours, the figure fits by itself
    # (helpers.views.charts.fit_layout): each title and legend inside its chart, clear of each other
    from test_browser import CHARTS_JS, SCREENSHOTS
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current").click()  # the file browser closed
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(1500)  # plotly's responsive resize
    widths = page.locator(".jp-OutputArea .js-plotly-plot").evaluate_all("ps => ps.map(p => p.clientWidth)")
    print("JupyterLab at 390 px: charts", widths, "px wide")
    narrow = page.evaluate(CHARTS_JS)
    if SCREENSHOTS:   # for a person (none in CI): no check reads it
        page.screenshot(path=str(tmp_path / "jupyterlab-390.png"), full_page=True)
    assert not narrow, "\n".join(narrow)
    page.set_viewport_size({"width": 1400, "height": 1000})
    # guess first, then look: the question's own JavaScript judges a typed guess against the
    # answer key the kernel just computed from the trace (helpers/views/guess.py)
    from helpers.views.guess import judge
    import json as _json
    question = page.locator('.jp-OutputArea [data-apq="inplace-kernels"]').first
    question.scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelector('[data-apq=\"inplace-kernels\"]')?.hasAttribute('data-apq-mounted')",
                           timeout=30_000)
    key = _json.loads(question.locator(".apq-data").text_content())
    assert question.locator(".apq-result").is_hidden(), "the look shows only after the guess"
    field = question.locator("input.apq-input")
    field.fill("gemm, softmax, gemm")
    field.press("Enter")
    assert question.get_attribute("data-apq-verdict") == judge(key, "gemm, softmax, gemm")["verdict"]
    assert "gemm, softmax, gemm" in question.locator(".apq-verdict").inner_text()
    right = ", ".join(a["kind"] for a in key["answer"])
    field.fill(right)
    question.locator("button.apq-look").click()
    assert question.get_attribute("data-apq-verdict") == "right"
    if SCREENSHOTS:
        page.screenshot(path=str(tmp_path / "jupyterlab.png"))
    assert page.get_by_text("notified about official Jupyter news").count() == 0, \
        "space/jupyter-config should turn the news prompt off"
    assert outputs.count() > 0 and not errors, errors
    page.close()
