"""How long the book takes to build and how heavy its pages are. Numbers to report, not a test.

    python benchmarks/book_benchmarks.py                 # a clean clone of HEAD
    python benchmarks/book_benchmarks.py --worktree      # the working tree as it is (tracked and
                                                         # untracked files, .gitignore respected)

In a fresh copy of the repository, with the jupyter-book of this Python environment:

1. cold build: `jupyter-book build . -W -n --keep-going`, nothing built before;
2. rebuild with nothing changed;
3. rebuild after one helper changes (a comment appended to helpers/pages/tables.py): the notebooks
   must run again, or their pages would show the old helper's outputs. The table says how many
   notebooks each build executed;
4. the weight of each page in headless Chromium, cold cache: the HTML alone, and everything the
   page loads except plotly.min.js (one shared file, cached after the first page);
5. time to first render of the heaviest page: first contentful paint, and the moment every
   plotly figure on it has drawn (median of three cold loads).

Chromium is Debian's /usr/bin/chromium, driven through Playwright.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"
CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]
SHARED = "plotly.min.js"


def copy_repo(dest: Path, worktree: bool) -> None:
    if not worktree:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(dest)], check=True)
        return
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def build(repo: Path) -> tuple[float, int, str]:
    # the copy's notebooks must import the copy's helpers, not the editable install's
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    result = subprocess.run([str(JUPYTER_BOOK), "build", str(repo), "-W", "-n", "--keep-going"],
                            capture_output=True, text=True, cwd=repo, env=env)
    seconds = time.perf_counter() - start
    log = result.stdout + result.stderr
    if result.returncode != 0:
        sys.exit(f"the build failed:\n{log[-4000:]}")
    executed = len(re.findall(r"Executing notebook", log))
    return seconds, executed, log


def serve(directory: Path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(directory)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return proc, f"http://127.0.0.1:{port}"


def wait_drawn(page) -> None:
    page.wait_for_load_state("load")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.plotly-graph-div')].every(gd => gd._fullLayout)",
        timeout=60000)


def page_weights(browser, base: str, pages: list[str]) -> list[dict]:
    rows = []
    for path in pages:
        context = browser.new_context()  # a new context: a cold cache
        page = context.new_page()
        loaded: list = []
        page.on("requestfinished", lambda r: loaded.append(r))
        page.goto(f"{base}/{path}", wait_until="networkidle")
        wait_drawn(page)
        sizes = {r.url: r.sizes()["responseBodySize"] for r in loaded}
        html = sizes.get(f"{base}/{path}", 0)
        total = sum(sizes.values())
        shared = sum(v for u, v in sizes.items() if u.split("?")[0].endswith(SHARED))
        vendored = sum(v for u, v in sizes.items() if "/_static/vendor/" in u and "fontawesome" not in u)
        rows.append({"page": path, "html KB": html / 1024, "loaded KB": total / 1024,
                     "without plotly.js KB": (total - shared) / 1024,
                     "of which vendored widgets/MathJax KB": vendored / 1024, "requests": len(sizes)})
        context.close()
    return rows


def time_to_render(browser, base: str, path: str, runs: int = 3) -> tuple[float, float]:
    fcp, drawn = [], []
    for _ in range(runs):
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{base}/{path}", wait_until="commit")
        wait_drawn(page)
        drawn.append(page.evaluate("() => performance.now()"))
        fcp.append(page.evaluate(
            "() => (performance.getEntriesByName('first-contentful-paint')[0] || {startTime: NaN}).startTime"))
        context.close()
    return statistics.median(fcp), statistics.median(drawn)


def table(rows: list[dict], columns: list[str]) -> str:
    def fmt(v):
        return f"{v:.1f}" if isinstance(v, float) else str(v)
    widths = [max(len(c), *(len(fmt(r[c])) for r in rows)) for c in columns]
    lines = [" | ".join(c.ljust(w) for c, w in zip(columns, widths)),
             "-|-".join("-" * w for w in widths)]
    lines += [" | ".join(fmt(r[c]).ljust(w) for c, w in zip(columns, widths)) for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worktree", action="store_true",
                        help="copy the working tree instead of cloning HEAD")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="book_bench_"))
    repo = tmp / "repo"
    repo.mkdir()
    try:
        copy_repo(repo, args.worktree)
        builds = []
        seconds, executed, _ = build(repo)
        builds.append({"build": "cold (clean copy)", "seconds": seconds, "notebooks executed": executed})
        seconds, executed, _ = build(repo)
        builds.append({"build": "rebuild, nothing changed", "seconds": seconds, "notebooks executed": executed})
        helper = repo / "helpers" / "pages" / "tables.py"
        helper.write_text(helper.read_text() + "\n# benchmark: one helper changed\n")
        seconds, executed, _ = build(repo)
        builds.append({"build": "rebuild, helpers/pages/tables.py changed", "seconds": seconds,
                       "notebooks executed": executed})
        notebooks = len(list((repo / "notebooks").glob("*.ipynb")))

        html_dir = repo / "_build" / "html"
        pages = sorted(str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html")
                       if not p.relative_to(html_dir).parts[0].startswith("_"))
        from playwright.sync_api import sync_playwright
        proc, base = serve(html_dir)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
                weights = page_weights(browser, base, pages)
                heaviest = max(weights, key=lambda r: r["without plotly.js KB"])["page"]
                fcp, drawn = time_to_render(browser, base, heaviest)
                browser.close()
        finally:
            proc.terminate()
        plotly_kb = (html_dir / "_static" / SHARED).stat().st_size / 1024

        print(f"machine: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
              f"source: {'working tree' if args.worktree else 'clone of HEAD'}; "
              f"{notebooks} notebooks in notebooks/\n")
        print(table(builds, ["build", "seconds", "notebooks executed"]))
        print(f"\npage weight, cold cache (plotly.min.js, shared by every chart page: {plotly_kb:.0f} KB)\n")
        print(table(weights, ["page", "html KB", "loaded KB", "without plotly.js KB",
                              "of which vendored widgets/MathJax KB", "requests"]))
        print(f"\nheaviest page: {heaviest}: first contentful paint {fcp:.0f} ms, "
              f"every chart drawn {drawn:.0f} ms after navigation (median of 3 cold loads)")
    finally:
        if args.keep:
            print(f"\nkept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
