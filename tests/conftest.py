import gzip
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]  # tests/test_honest_skips.py runs small suites with this conftest

ROOT = Path(__file__).resolve().parent.parent
# Debian's headless shell of Chromium (package chromium-headless-shell, the same Blink at the same
# version as its `chromium`; what Playwright itself drives for headless runs): a page load costs it
# about half the CPU of the full browser in headless mode (the run's largest consumer; see
# benchmarks/results/test_suite_time.md, run 15). The full browser where the shell is not installed.
CHROMIUM = next((p for p in (Path("/usr/bin/chromium-headless-shell"), Path("/usr/bin/chromium")) if p.exists()),
                Path("/usr/bin/chromium-headless-shell"))
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
TRACES = sorted((ROOT / "notebooks" / "traces").glob("*/*__*.json.gz"))


# CI (a fresh clone, .ci/run) sets CI=true: there every pinned tool must be present, and a test
# that needs one fails instead of skipping, so that a missing tool never passes as a skip
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_tool(what: str, how: str = "pip install -r requirements.txt") -> None:
    """Skip (or, in CI, fail) a test whose pinned tool is missing, saying which and how to get it."""
    message = f"{what} is missing: {how}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: a pinned tool must be installed)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def require(module: str, what: str | None = None):
    """Import a pinned module, or skip (fail in CI) saying it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing_tool(f"{what or module} ({err})")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """The whole suite (`python -m pytest`, no test named) runs on two workers with pytest-xdist,
    tests of one load group (the book build and what reads it) on one worker. A run naming tests,
    or giving -n itself, is left as asked."""
    whole_suite = config.args_source != pytest.Config.ArgsSource.ARGS  # no test named on the command line
    if (config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None) is None
            and whole_suite and not config.option.collectonly and "PYTEST_XDIST_WORKER" not in os.environ):
        config.option.numprocesses = 2
        config.option.dist = "loadgroup"
        config.option.loadscopereorder = False  # in the collection order: the book's readers last


def cuda_available() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the load groups added here
def pytest_collection_modifyitems(config, items):
    _one_worker_per_module_fixture(items)
    # the tests that read the book build come last: the build runs in the background meanwhile
    late = _reads_the_book(items)
    items.sort(key=late.__getitem__)
    _keep_page_groups_together(items)
    _longest_first_after_the_build(items, late)
    _name_load_groups(config, items)
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False here)")
    for item in items:
        # the marker, not `"gpu" in item.keywords`: keywords hold every node's name up to the
        # checkout's folder, and a checkout named gpu skipped the whole suite
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


def _group_of(item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "")) if mark else ""


def _reads_the_book(items) -> dict:
    """Per item: does it, or a test of its xdist load group, read the build? pytest-xdist sends a
    group where its first test stands: a group whose first test needs no build (test_ledger_book's
    planted-ledger check, in the book group) sent the whole book group to a worker mid-run, which
    then waited for the build while the other worker ran the rest alone. A group is late as a
    whole."""
    reads = {item: bool(BOOK_FIXTURES & set(getattr(item, "fixturenames", ()))) for item in items}
    late_groups = {_group_of(item) for item in items if reads[item]} - {""}
    return {item: reads[item] or _group_of(item) in late_groups for item in items}


def _keep_page_groups_together(items) -> None:
    """The checks that share one page's loads (test_browser.page_group: an xdist group named
    page-<path>) run one after the other, where the first of them stood: pytest-xdist's loadgroup
    sends a group to one worker in this order, and a run without xdist keeps it too, so that each
    page is loaded once per view and shared while it is open."""
    first: dict[str, int] = {}
    keys = []
    for i, item in enumerate(items):
        name = _group_of(item)
        keys.append(first.setdefault(name, i) if str(name).startswith("page-") else i)
    order = sorted(range(len(items)), key=keys.__getitem__)  # stable: a group keeps its own order
    items[:] = [items[i] for i in order]


def _longest_first_after_the_build(items, late: dict) -> None:
    """Among the tests that wait for the build, the book group first (one long unit, on one
    worker), then the tests on their own (the live charts, chapter 7's calculator links: some of
    the longest),
    then the page groups (many units of a few seconds each): the two workers then finish close
    together, instead of one running the last long test while the other waits."""
    def rank(item) -> int:
        if not late[item]:
            return 0
        group = _group_of(item)
        return 1 if group == "book" else 3 if group.startswith("page-") else 2
    items.sort(key=rank)  # stable: each rank keeps its order, a page group stays together


def _one_worker_per_module_fixture(items) -> None:
    """A module whose tests share a module-scoped fixture of its own (three torch.compile runs in
    test_fx_cache, the replay set's counters in test_hardware_views, ...) runs on one pytest-xdist
    worker: split between the two, each worker computed the fixture again. Tests already in a load
    group keep theirs; browser tests stay spread (their module fixtures are cheap, their tests long:
    test_guess_js's two readers would run one after the other)."""
    for item in items:
        if (item.get_closest_marker("xdist_group") is not None or item.get_closest_marker("browser") is not None
                or not hasattr(item, "_fixtureinfo")):
            continue
        module = item.nodeid.split("::", 1)[0]
        for name in item._fixtureinfo.names_closure:
            defs = item._fixtureinfo.name2fixturedefs.get(name) or ()
            if any(d.scope in ("module", "class", "package") and (d.baseid or "").split("::", 1)[0] == module
                   for d in defs):
                item.add_marker(pytest.mark.xdist_group(f"module-{module}"))
                break


def _name_load_groups(config, items) -> None:
    """pytest-xdist 3.8 sends a load group to one worker by appending `@group` to each test's node
    id through `item._nodeid`, which pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386): every
    xdist_group was silently ignored, each test sent on its own. Append it where pytest 9.2 reads
    the id, on a worker of a loadgroup run (a later xdist that does it too adds the same name again:
    the scheduler reads the last)."""
    if not ("PYTEST_XDIST_WORKER" in os.environ and getattr(config.option, "loadgroup", False)):
        return
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # a pytest before 9.2: xdist's own `_nodeid` works there
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def load_static_book():
    """book/_ext/static_book.py, the book's Sphinx extension (Sphinx finds it by path, not as a package)."""
    spec = importlib.util.spec_from_file_location("static_book", ROOT / "book" / "_ext" / "static_book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def raw_document(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def _events(source: Path | list[dict]) -> list[dict]:
    return source if isinstance(source, list) else raw_document(source)["traceEvents"]


def raw_last_step(source: Path | list[dict]) -> tuple[list[tuple[dict, set[str]]], tuple[float, float], list[dict]]:
    """The last profiler step's GPU events, read from the raw JSON (a file, or its event list) with
    plain loops: each event (with `launched_by`, the runtime or driver call of the same correlation
    id) and the names of the host ops that hold that call; the step's (start, end); and all events."""
    events = _events(source)
    steps = [e for e in events if re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")) and e["ph"] == "X"]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and e.get("ph") == "X" and lo <= e["ts"] <= hi}
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    out = []
    for e in sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                     and e["args"].get("correlation") in calls), key=lambda e: e["ts"]):
        call = calls[e["args"]["correlation"]]
        holders = {o["name"] for o in ops if o["ts"] <= call["ts"] and o["ts"] + o["dur"] >= call["ts"] + call["dur"]}
        out.append((e | {"launched_by": call["name"]}, holders))
    return out, (lo, hi), events


def raw_forward_ops(source: Path | list[dict]) -> list[str]:
    """The names of the host ops (cpu_op and user_annotation events) under the last profiler step's
    attn_fwd annotation (itself excluded), read from the raw JSON (a file, or its event list)."""
    events = _events(source)
    _, (lo, hi), _ = raw_last_step(events)
    root = next(e for e in events if e.get("cat") == "user_annotation" and e.get("name") == "attn_fwd"
                and e.get("ph") == "X" and lo <= e["ts"] <= hi)
    return [e["name"] for e in events if e.get("cat") in ("cpu_op", "user_annotation") and e.get("ph") == "X"
            and e is not root and root["ts"] <= e["ts"] and e["ts"] + e["dur"] <= root["ts"] + root["dur"]]


def raw_per_step(events: list[dict]) -> list[tuple[float, float]]:
    """Per profiler step, from the raw events: GPU time (the summed durations of the GPU events
    whose launch, tied by correlation id, lies in the step) and CPU time (the step's attn_fwd
    annotation), in µs; in step order, so the last row is the step the tables show."""
    complete = [e for e in events if e.get("ph") == "X"]
    steps = sorted((e for e in complete if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))),
                   key=lambda e: int(e["name"].split("#")[1]))
    rows = []
    for step in steps:
        lo, hi = step["ts"], step["ts"] + step["dur"]
        calls = {e["args"]["correlation"] for e in complete if e.get("cat") in ("cuda_runtime", "cuda_driver")
                 and lo <= e["ts"] <= hi and "correlation" in e.get("args", {})}
        gpu = sum(e["dur"] for e in complete if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                  and e["args"].get("correlation") in calls)
        cpu = sum(e["dur"] for e in complete if e.get("name") == "attn_fwd" and e.get("cat") == "user_annotation"
                  and lo <= e["ts"] <= hi)
        rows.append((gpu, cpu))
    return rows


# A chapter whose recordings are a folder of their own in a replay set (made by its own recorder):
# built from a set without that folder, its page says so in one line instead of a replay line.
OWN_FOLDER = {"08b_decode": "decode"}


def selected_set() -> Path:
    """The replay set the book is built from (the same variable and default as helpers' config)."""
    return ROOT / "notebooks" / "traces" / (os.environ.get("ATTN_PROFILED_REPLAY_GPU") or "h200")


def says_unrecorded(name: str, text: str) -> bool:
    """True where page `name` has no recording in the selected set, which it must then say (and
    only then): its folder is looked up in the set, not asked of the page's code."""
    folder = OWN_FOLDER.get(name)
    if folder is None:
        return False
    absent = not (selected_set() / folder).is_dir()
    said = "is not recorded in this set" in " ".join(text.split())
    assert said == absent, (f"{name}: the set {'lacks' if absent else 'holds'} {folder}/, and the page "
                            f"{'says' if said else 'does not say'} it is not recorded")
    return absent


@pytest.fixture(scope="session")
def recorded_traces() -> list[Path]:
    """The replay set: a test over the recordings takes this fixture, so that an empty set fails
    instead of leaving nothing to parametrize (or skipping)."""
    assert TRACES, "the replay set under notebooks/traces is missing: git checkout -- notebooks/traces"
    return TRACES


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium (CHROMIUM) through Playwright; installed by the environment
    (.ci/run), never downloaded by a test."""
    if not CHROMIUM.exists():
        pytest.fail("Chromium is missing: install Debian's chromium-headless-shell (see .ci/run); "
                    "the tests never download a browser")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield b
        b.close()


# --- the book, built once per test run --------------------------------------------------------
#
# The build (about 5 minutes: it executes every notebook) starts in the background as soon as the
# run knows a selected test needs it, and runs beside the other tests; the tests that read it come
# last in the order, and wait for it if it is still running. Under pytest-xdist the controller
# starts it, the workers wait for it; in one process the process does both.

BOOK_GROUP = pytest.mark.xdist_group("book")  # the tests that read the build's notebooks, on one worker
BOOK_FIXTURES = {"book_build", "built_book", "book"}
_background: dict = {}


def _shared_dir(config) -> Path:
    base = config._tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def _book_command(out: Path) -> list[str]:
    jb = Path(sys.executable).parent / "jupyter-book"
    return [str(jb), "build", str(ROOT), "-W", "-n", "--keep-going", "--path-output", str(out)]


def _start_book_build(config) -> None:
    """Start the build in the background, once per run, where it is not given and can be made."""
    if _background or os.environ.get("ATTN_PROFILED_BOOK_HTML") or "PYTEST_XDIST_WORKER" in os.environ:
        return
    if not (Path(sys.executable).parent / "jupyter-book").exists():
        return  # the fixture says what is missing
    import threading
    shared = _shared_dir(config)
    out, log = shared / "book", open(shared / "book.log", "w")
    proc = subprocess.Popen(_book_command(out), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (shared / "book.started").write_text(str(proc.pid))

    def finish():
        rc = proc.wait()
        log.close()
        (shared / "book.rc.tmp").write_text(str(rc))
        (shared / "book.rc.tmp").rename(shared / "book.rc")
    thread = threading.Thread(target=finish, daemon=True)
    thread.start()
    _background.update(proc=proc, thread=thread)
    if not config.pluginmanager.hasplugin("xdist") or not getattr(config.option, "numprocesses", None):
        _yield_to_the_build()  # one process: this one runs the tests beside the build


def pytest_collection_finish(session):
    if any(BOOK_FIXTURES & set(getattr(item, "fixturenames", ())) for item in session.items):
        _start_book_build(session.config)


class _XdistController:
    """Under xdist the controller collects nothing itself: its workers tell it their test ids."""

    def pytest_configure_node(self, node):
        # a worker parses the command line again (xdist's remote.setup_config), not the options
        # set here: the whole suite's `loadgroup`, chosen in pytest_cmdline_main, never reached it,
        # so no test id carried its group and every xdist_group was ignored (each page's checks,
        # each module fixture, split between the workers). Hand the choice over with the worker's input.
        node.workerinput["attention_profiled_loadgroup"] = node.config.option.dist == "loadgroup"

    def pytest_xdist_node_collection_finished(self, node, ids):
        if any(i.startswith(("tests/test_book.py", "tests/test_browser.py")) or i.endswith("@book") for i in ids):
            _start_book_build(node.config)


# The build is the run's longest chain (every notebook, one after the other, then its readers):
# the processes that run tests beside it yield it the CPU (a higher nice value), and take what it
# leaves; once it is done they run alone, and their nice value no longer matters.
TESTS_BESIDE_THE_BUILD_NICE = 5


def _yield_to_the_build() -> None:
    try:
        os.nice(TESTS_BESIDE_THE_BUILD_NICE)
    except (AttributeError, OSError):  # no os.nice (Windows): the run is only slower
        pass


def pytest_configure(config):
    if getattr(config, "workerinput", {}).get("attention_profiled_loadgroup"):
        config.option.loadgroup = True  # a worker of the whole suite (_XdistController.pytest_configure_node)
    # registered only where xdist is (its hooks are unknown without it)
    if config.pluginmanager.hasplugin("xdist") and "PYTEST_XDIST_WORKER" not in os.environ:
        config.pluginmanager.register(_XdistController(), "attention-profiled-book-controller")
    if "PYTEST_XDIST_WORKER" in os.environ and not os.environ.get("ATTN_PROFILED_BOOK_HTML"):
        _yield_to_the_build()  # a worker: the controller may start the build (no build given)


def pytest_sessionfinish(session):
    proc = _background.get("proc")
    if proc is not None and proc.poll() is None:  # the run ended first (-x, a crash): stop the build
        import signal
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _build_book(out: Path) -> Path:
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():  # the GPU machine runs the tests without the book's build tools
        missing_tool(f"{jb}")
    result = subprocess.run(_book_command(out), capture_output=True, text=True, timeout=3000)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    return out / "_build"


@pytest.fixture(scope="session")
def book_build(request) -> Path:
    """The book's `_build` folder (`html/`, and `jupyter_execute/`: every notebook as the build
    executed it), built once per run: the one execution of the notebooks that the tests read.
    ATTN_PROFILED_BOOK_HTML names an existing `_build/html` to use instead."""
    given = os.environ.get("ATTN_PROFILED_BOOK_HTML")
    if given:
        html = Path(given).resolve()
        assert (html / "index.html").exists(), f"ATTN_PROFILED_BOOK_HTML={given} is not a built book"
        return html.parent
    import time
    shared = _shared_dir(request.config)
    out = shared / "book"
    if (shared / "book.started").exists():  # started in the background: wait for it
        deadline = time.monotonic() + 3000
        while not (shared / "book.rc").exists():
            assert time.monotonic() < deadline, "the book build did not finish in 50 minutes"
            time.sleep(2)
        rc = int((shared / "book.rc").read_text())
        assert rc == 0, f"the book build failed ({rc}):\n{(shared / 'book.log').read_text()[-8000:]}"
        return out / "_build"
    from filelock import FileLock
    with FileLock(str(shared / "book.lock")):  # no background build (tests named by hand)
        if not (out / "_build" / "html" / "index.html").exists():
            _build_book(out)
    return out / "_build"


def executed_notebook(build: Path, name: str):
    """A notebook as the book build executed it (`_build/jupyter_execute/notebooks/<name>.ipynb`)."""
    import nbformat
    path = build / "jupyter_execute" / "notebooks" / f"{name}.ipynb"
    assert path.exists(), f"{path} is missing: the build did not execute {name}"
    return nbformat.read(path, as_version=4)


def built_glue(build: Path, name: str) -> dict[str, str]:
    """What notebooks/<name>.ipynb glued in the book build's own execution, by name, as myst-nb's
    text/plain (quotes stripped): myst-nb writes its glue store beside the executed notebook
    (`_build/jupyter_execute/notebooks/<name>.glue.json`), so a check of the page's glued values
    reads the one execution the page shows instead of executing the notebook again."""
    path = build / "jupyter_execute" / "notebooks" / f"{name}.glue.json"
    assert path.exists(), f"{path} is missing: the build did not execute {name}, or it glued nothing"
    store = json.loads(path.read_text(encoding="utf-8"))
    out = {key: entry["data"]["text/plain"].strip("'\"") for key, entry in store.items()
           if "text/plain" in entry.get("data", {})}
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    out["__markdown__"] = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return out


def executed_glue(name: str) -> dict[str, str]:
    """Execute notebooks/<name>.ipynb with nbclient (a kernel of its own, this process's
    environment) and return what it glued, by name, as myst-nb's text/plain (quotes stripped): for a
    configuration the build never executes (test_timer_pages: a set without timers.json). The
    build's own values are `built_glue`'s."""
    require("myst_nb")  # without it glue is a no-op (the GPU machine has no book tools)
    import nbclient
    import nbformat
    path = ROOT / "notebooks" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            key = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if key:
                out[key] = o["data"]["application/papermill.record/text/plain"].strip("'\"")
    out["__markdown__"] = "\n".join(c["source"] for c in nb.cells if c["cell_type"] == "markdown")
    return out
