"""How long the book takes to build and how heavy its pages are. Numbers to report, not a test.

    python benchmarks/book_benchmarks.py                 # a clean clone of HEAD
    python benchmarks/book_benchmarks.py --worktree      # the working tree as it is (tracked and
                                                         # untracked files, .gitignore respected)
    python benchmarks/book_benchmarks.py --html _build/html   # weights only, of a built book

In a fresh copy of the repository, with the jupyter-book of this Python environment:

1. cold build: `jupyter-book build . -W -n --keep-going`, nothing built before;
2. rebuild with nothing changed;
3. rebuild after one helper changes (a comment appended to helpers/views/tables.py): the notebooks
   must run again, or their pages would show the old helper's outputs. The table says how many
   notebooks each build executed;
4. the weight of each page in headless Chromium, cold cache: the HTML alone, and everything the
   page loads except plotly.js (one shared file, cached after the first page); and, gzipped
   (level 6, as a web server compresses text), the page's own weight (its HTML and the files only
   it loads) and what a first visit to it transfers (everything it loads, cold cache);
5. time to first render of the heaviest page: first contentful paint, and the moment every
   plotly figure on it has drawn (median of three cold loads).

Chromium is Debian's /usr/bin/chromium, driven through Playwright.
"""
from __future__ import annotations

import argparse
import gzip
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
SHARED = ("plotly.min.js", "plotly-cartesian.min.js")  # whichever plotly.js the book loads
GZIP_LEVEL = 6


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
    loaded_by: dict[str, dict[str, bytes]] = {}
    for path in pages:
        context = browser.new_context()  # a new context: a cold cache
        page = context.new_page()
        bodies: dict[str, bytes] = {}

        def keep(response, bodies=bodies):
            if response.url.startswith(base) and response.status == 200:
                try:
                    bodies[response.url.split("#")[0]] = response.body()
                except Exception:  # a response the page dropped (navigated away): not transferred
                    pass
        page.on("response", keep)
        page.goto(f"{base}/{path}", wait_until="networkidle")
        wait_drawn(page)
        page.wait_for_timeout(300)
        loaded_by[path] = dict(bodies)
        context.close()
    # a file's "own" page: the only page that loads it (shared files are cached after one visit)
    users: dict[str, int] = {}
    for bodies in loaded_by.values():
        for url in bodies:
            users[url] = users.get(url, 0) + 1
    rows = []
    for path, bodies in loaded_by.items():
        gz = {u: len(gzip.compress(b, GZIP_LEVEL)) for u, b in bodies.items()}
        html = f"{base}/{path}"
        shared = sum(len(b) for u, b in bodies.items() if u.split("?")[0].endswith(SHARED))
        vendored = sum(len(b) for u, b in bodies.items() if "/_static/vendor/" in u and not u.split("?")[0].endswith(SHARED))
        own = [u for u in bodies if u == html or users[u] == 1]
        rows.append({"page": path, "html KB": len(bodies.get(html, b"")) / 1024,
                     "loaded KB": sum(map(len, bodies.values())) / 1024,
                     "without plotly.js KB": (sum(map(len, bodies.values())) - shared) / 1024,
                     "of which vendored widgets/MathJax KB": vendored / 1024, "requests": len(bodies),
                     "own KB gz": sum(gz[u] for u in own) / 1024,
                     "first visit KB gz": sum(gz.values()) / 1024})
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


WEIGHT_COLUMNS = ["page", "html KB", "loaded KB", "without plotly.js KB", "of which vendored widgets/MathJax KB",
                  "requests", "own KB gz", "first visit KB gz"]


def weigh(html_dir: Path) -> tuple[list[dict], str, float, float]:
    pages = sorted(str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html")
                   if not p.relative_to(html_dir).parts[0].startswith("_"))
    from playwright.sync_api import sync_playwright
    proc, base = serve(html_dir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
            weights = page_weights(browser, base, pages)
            heaviest = max(weights, key=lambda r: r["first visit KB gz"])["page"]
            fcp, drawn = time_to_render(browser, base, heaviest)
            browser.close()
    finally:
        proc.terminate()
    return weights, heaviest, fcp, drawn


def report_weights(html_dir: Path, weights: list[dict], heaviest: str, fcp: float, drawn: float) -> None:
    bundle = next((p for p in html_dir.rglob("*.js") if p.name.endswith(SHARED)), None)
    if bundle is not None:
        data = bundle.read_bytes()
        print(f"\nplotly.js: {bundle.relative_to(html_dir)}, {len(data) / 1024:.0f} KB, "
              f"{len(gzip.compress(data, GZIP_LEVEL)) / 1024:.0f} KB gzipped; loaded once, shared by every chart page")
    print(f"\npage weight, cold cache (gz: gzip level {GZIP_LEVEL}; own: the HTML and the files only this page loads)\n")
    print(table(weights, WEIGHT_COLUMNS))
    top = next(r for r in weights if r["page"] == heaviest)
    print(f"\nheaviest first visit: {heaviest}: {top['first visit KB gz']:.0f} KB gzipped; first contentful "
          f"paint {fcp:.0f} ms, every chart drawn {drawn:.0f} ms after navigation (median of 3 cold loads)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worktree", action="store_true",
                        help="copy the working tree instead of cloning HEAD")
    parser.add_argument("--html", type=Path, help="weigh the pages of this built book only (no builds)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    args = parser.parse_args()

    if args.html:
        print(f"machine: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
              f"built book: {args.html}")
        report_weights(args.html, *weigh(args.html))
        return

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
        builds.append({"build": "rebuild, helpers/views/tables.py changed", "seconds": seconds,
                       "notebooks executed": executed})
        notebooks = len(list((repo / "notebooks").glob("*.ipynb")))
        html_dir = repo / "_build" / "html"
        measured = weigh(html_dir)

        print(f"machine: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
              f"source: {'working tree' if args.worktree else 'clone of HEAD'}; "
              f"{notebooks} notebooks in notebooks/\n")
        print(table(builds, ["build", "seconds", "notebooks executed"]))
        report_weights(html_dir, *measured)
    finally:
        if args.keep:
            print(f"\nkept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
