"""The built book in a real browser: headless Chromium through Playwright (Debian's
chromium-headless-shell, else its chromium: conftest.CHROMIUM).

The book is built once per session into a temporary --path-output (or taken from
ATTN_PROFILED_BOOK_HTML, an existing _build/html, to iterate quickly), served by
`python -m http.server` on 127.0.0.1, and every page is opened in the light and the dark theme:

- no console error, no uncaught exception, no failed request, and no request to anything but the
  local server (every other request is aborted, so the test itself never touches the network);
- every plotly figure drew its data, no ipywidgets view is left undrawn, math rendered;
- text in outputs (tables, chart text, cards) keeps a readable contrast on both themes;
- guess/look toggles open and close; kernel names read literally, in the page and in hovers;
- notebook pages offer the .ipynb download and the Colab and GPU Space launch links;
- the occupancy calculator calculates on its page as helpers.occupancy does (a sweep of every GPU),
  keeps its configuration in the page's address, says what is wrong with a bad link, and reads at
  1400×900 and 390×844; chapter 07's links open it with each kernel loaded;
- as readers see it, on a laptop (1400×900, light and dark) and on a phone (390×844): no page
  wider than the screen, no table scrolled sideways or cut off (on a phone a wide table is cards);
- every stage page links its trace: the link downloads a Kineto trace, and the Open in Perfetto
  button, with ui.perfetto.dev routed to a local stub that answers PONG and records what it
  receives, delivers a buffer that gunzips to the same trace;
- the closing table: one row per stage, each lesson opens onto every verdict;
- the partial plotly.js bundle registers every trace type the built pages draw.

A full-page screenshot of each page, theme and width goes to <build output>/_build/screenshots
(the path is printed at the end of the session; none in CI, see SCREENSHOTS). Chromium is installed by the environment (.ci/run),
never by the test.
"""
from __future__ import annotations

import gzip
import html as htmllib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import IN_CI, ROOT

pytestmark = pytest.mark.browser

THEMES = ("light", "dark")
LAPTOP, PHONE = (1400, 900), (390, 844)
# every page: light and dark on a laptop, and on a phone (light: the layout is the same in dark)
VIEWS = [("light", LAPTOP), ("dark", LAPTOP), ("light", PHONE)]
MIN_CONTRAST = 3.0  # WCAG's floor for large text and graphics; body text is far above it
# Full-page screenshots are for a person to look at (beside the build; the path is printed at the
# end). CI (CI=true: a fresh clone whose temporary folders nobody opens) draws none: about 80 full
# pages, drawn for no one, a minute of the 2-core run. ATTN_PROFILED_SCREENSHOTS=1 or 0 decides
# otherwise. No check reads them.
SCREENSHOTS = os.environ.get("ATTN_PROFILED_SCREENSHOTS", "0" if IN_CI else "1") != "0"


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part["chapters"]]
    return [f"{f}.html" for f in files] + ["genindex.html", "search.html", "index.html"]


PAGES = toc_pages()


def page_group(path: str):
    """The xdist load group of the checks that read one page: they run on one worker, one after
    the other (conftest keeps them together in a run without xdist too), so that the page is
    loaded once per view and shared (shared_visit), not once per check."""
    return pytest.mark.xdist_group(f"page-{path}")


def page_params(paths: list[str]) -> list:
    """`path` parameters in their page's load group (the test ids stay the paths)."""
    return [pytest.param(path, marks=page_group(path)) for path in paths]


def stage_pages() -> list[str]:
    """Notebook pages about one stage: those whose code names the page's profile (`prof = ...`)."""
    pages = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "code")
        if re.search(r"^prof = ", code, re.M):
            pages.append(f"notebooks/{path.stem}.html")
    return pages


STAGE_PAGES = stage_pages()
NOTEBOOK_SOURCES = {f"notebooks/{p.stem}.html" for p in (ROOT / "notebooks").glob("*.ipynb")}
# MyST Markdown notebooks (a kernelspec in the front matter): executed, downloadable as .ipynb
TEXT_NOTEBOOKS = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")
                  if "\nkernelspec:" in p.read_text().split("\n---", 1)[0]}


# --- session fixtures: build, serve, browse -----------------------------------------------------

@pytest.fixture(scope="session")
def book(book_build, request) -> Path:
    """The built _build/html (conftest's one build per run); screenshots go beside it, in
    _build/screenshots."""
    html_dir = book_build / "html"
    shots = html_dir.parent / "screenshots"
    shots.mkdir(exist_ok=True)

    def report():
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and SCREENSHOTS:
            reporter.write_line(f"browser screenshots: {shots}")
    request.addfinalizer(report)
    return html_dir


_SERVERS: dict[Path, str] = {}  # the book's folder -> its server's address, one per run


@pytest.fixture(scope="session")
def server(book):
    """`python -m http.server` over the build. Other modules import this fixture, which gives each
    of them its own session fixture: the first starts the server, the others share it (so that a
    page loaded by one module's check is the same page, at the same address, for another's)."""
    if book in _SERVERS:
        yield _SERVERS[book]
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(book)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{base}/index.html", timeout=2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("python -m http.server did not start")
            time.sleep(0.2)
    _SERVERS[book] = base
    yield base
    _SHARED.close_all()
    del _SERVERS[book]
    proc.terminate()
    proc.wait(timeout=10)


# A loaded page is settled when its fonts are in, the theme's script has resolved the colour scheme
# (data-theme "auto" until it has), every chart is drawn by plotly and re-fitted by
# chart_fit.js to the width it has now (data-fit-width; a chart in a closed fold has none yet), every
# formula is typeset by MathJax, and two frames have passed since (Font Awesome draws its icons on the
# next frame, and a layout the last of them caused is done)
SETTLED_JS = """async () => {
  const ready = () => document.fonts.status === 'loaded'
    && ['light', 'dark'].includes(document.documentElement.dataset.theme)
    && [...document.querySelectorAll('.plotly-graph-div')].every(gd => gd._fullLayout
         && (!gd.clientWidth || !gd.closest('.cell_output') || gd.getAttribute('data-fit-width') === String(gd.clientWidth)))
    && document.querySelectorAll('mjx-container').length >= document.querySelectorAll('.math').length;
  if (!ready()) return false;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return ready();
}"""


class Visit:
    """One page in one theme, with everything that went wrong while it loaded."""

    def __init__(self, browser, base: str, path: str, theme: str, viewport: tuple[int, int] = LAPTOP):
        self.base, self.path, self.theme, self.size = base, path, theme, viewport
        self.problems: list[str] = []
        self.memo: dict[str, object] = {}
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                           color_scheme=theme, accept_downloads=True)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(
            f"console error: {m.text} ({m.location.get('url', '')})"))
        self.page.on("pageerror", lambda e: self.problems.append(f"uncaught exception: {e}"))
        # ERR_ABORTED is the browser cancelling a request of its own (a navigation leaving the page
        # before its favicon came, say), not the book failing one; a request outside the book is
        # reported by _route, and a missing file by the response's status
        self.page.on("requestfailed", lambda r: "ERR_ABORTED" not in (r.failure or "") and self.problems.append(
            f"failed request: {r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.problems.append(
            f"HTTP {r.status}: {r.url}"))

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.base + "/") or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.problems.append(f"request outside the book: {url}")
            route.abort()

    def open(self):
        """The page loaded and settled: waited for by what the checks read, not by fixed pauses
        (networkidle's 500 ms and 300 ms more cost ~0.8 s a load, ~100 loads a run)."""
        url = f"{self.base}/{self.path}"
        self.page.goto(url, wait_until="load")
        # a page that sends the reader on (index.html's meta refresh): the checks read the page it
        # lands on, once that has loaded (the browser is on its way there when goto returns)
        with urllib.request.urlopen(url, timeout=10) as sent:
            refresh = re.search(rb'http-equiv="Refresh" content="\d+; url=([^"]+)"', sent.read(4096))
        if refresh:
            self.page.wait_for_url(urllib.parse.urljoin(url, refresh.group(1).decode()), wait_until="load")
        # no page draws an ipywidget: the guesses are their own outputs' JavaScript
        views = self.page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
        assert not views, f"{self.path} holds {views} ipywidgets views, which nothing draws"
        self.page.wait_for_function(SETTLED_JS, timeout=30000)
        return self

    def close(self):
        self.context.close()

    def once(self, what: str, read):
        """What `read(self)` returns, read once per load: the checks that share this visit and
        need the same reading (a probe of the drawn page) get the first one's."""
        if what not in self.memo:
            self.memo[what] = read(self)
        return self.memo[what]


class SharedVisits:
    """Pages loaded once per view (path, theme, size) and kept open for every check that reads
    them without changing them for good (test_page, test_reading_limits, the drawn-chart check,
    the calculator's views): one load instead of one per check. A check that leaves the page
    changed (a click that navigates, a guess answered) takes the `visit` fixture instead: its own
    load. The last few views stay open (a page's checks run one after the other: page_group)."""

    KEEP = 4  # the views of one page: light and dark on a laptop, light (and dark) on a phone

    def __init__(self):
        self.open: dict[tuple, Visit] = {}

    def get(self, browser, base: str, path: str, theme: str, viewport: tuple[int, int]) -> Visit:
        key = (id(browser), base, path, theme, tuple(viewport))
        v = self.open.pop(key, None)
        if v is None:
            v = Visit(browser, base, path, theme, viewport).open()
        self.open[key] = v  # the most recent last
        while len(self.open) > self.KEEP:
            self.open.pop(next(iter(self.open))).close()
        return v

    def take(self, browser, base: str, path: str, theme: str, viewport: tuple[int, int]) -> Visit:
        """The view as get() gives it, taken out of the shared ones, for a check that changes it
        for good (questions answered): the last check of its page group; a check after it would
        load the page again. The caller closes it."""
        v = self.get(browser, base, path, theme, viewport)
        del self.open[(id(browser), base, path, theme, tuple(viewport))]
        return v

    def close_all(self) -> None:
        while self.open:
            self.open.pop(next(iter(self.open))).close()


_SHARED = SharedVisits()


@pytest.fixture
def visit(browser, server):
    opened: list[Visit] = []

    def open_page(path: str, theme: str = "light", viewport: tuple[int, int] = LAPTOP) -> Visit:
        v = Visit(browser, server, path, theme, viewport).open()
        opened.append(v)
        return v

    yield open_page
    for v in opened:
        v.close()


@pytest.fixture
def shared_visit(browser, server):
    """Like `visit`, but the page comes from the loads shared by the checks that read it
    (SharedVisits): for checks that leave the page as they found it."""
    def open_page(path: str, theme: str = "light", viewport: tuple[int, int] = LAPTOP) -> Visit:
        return _SHARED.get(browser, server, path, theme, viewport)
    return open_page


@pytest.fixture
def last_visit(browser, server):
    """Like `shared_visit`, for the last check of a page group, which changes the page for good:
    the shared load is taken (SharedVisits.take) and closed after the test."""
    taken: list[Visit] = []

    def open_page(path: str, theme: str = "light", viewport: tuple[int, int] = LAPTOP) -> Visit:
        taken.append(_SHARED.take(browser, server, path, theme, viewport))
        return taken[-1]
    yield open_page
    for v in taken:
        v.close()


# --- the JavaScript probes ---------------------------------------------------------------------

PLOTS_JS = """() => [...document.querySelectorAll('.plotly-graph-div')].map(gd => ({
  id: gd.id,
  traces: (gd._fullData || []).length,
  points: (gd._fullData || []).reduce((n, t) => n + ((t.x || t.y || t.z || t.text || []).length || 0), 0),
  drawn: gd.querySelectorAll('.trace .point, .trace .js-line, .trace .textpoint, .hm image').length,
}))"""

CONTRAST_JS = """(minRatio) => {
  const parse = (c) => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(',').map(Number); return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const lum = ({r, g, b}) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a >= 0.5) return c;
    }
    return parse(getComputedStyle(document.body).backgroundColor) || {r: 255, g: 255, b: 255, a: 1};
  };
  const visible = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none' && Number(s.opacity) > 0.3; };
  const bad = [];
  const check = (el, colour, what) => {
    const fg = parse(colour); if (!fg || fg.a < 0.5) return;
    const bg = background(el.closest('svg') ? el.closest('svg').parentElement : el);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < minRatio) bad.push(`${what} "${el.textContent.trim().slice(0, 50)}": ${colour} on rgb(${bg.r}, ${bg.g}, ${bg.b}), ${ratio.toFixed(2)}:1`);
  };
  for (const el of document.querySelectorAll('.cell_output *')) {
    if (el.closest('.hoverlayer, .modebar, svg, .widget-subarea, .jupyter-widgets')) continue;
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (own && visible(el)) check(el, getComputedStyle(el).color, el.tagName.toLowerCase());
  }
  for (const el of document.querySelectorAll('.js-plotly-plot .main-svg text')) {
    if (el.closest('.hoverlayer, .updatemenu-container, .slider-container') || !el.textContent.trim() || !visible(el)) continue;
    if (el.closest('.barlayer, .heatmaplayer')) continue;  // drawn over its own bar or cell
    check(el, getComputedStyle(el).fill, 'chart text');
  }
  return bad.slice(0, 20);
}"""

# what a reader would have to scroll sideways: the page itself, and every table (a table that
# overflows the article, or sits in a box scrolled sideways)
LAYOUT_JS = """() => {
  const out = {page: document.scrollingElement.scrollWidth, screen: window.innerWidth, tables: []};
  const article = document.querySelector('.bd-article') || document.body;
  const right = article.getBoundingClientRect().right;
  for (const table of document.querySelectorAll('.bd-article table')) {
    if (!table.getClientRects().length) continue;  // folded away (a closed <details>)
    // the calculator's resource table too: on a phone each resource is a card (issue 29: it cut
    // its last column off)
    const box = table.getBoundingClientRect();
    let scrolled = null;
    for (let e = table.parentElement; e && e !== article; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if ((o === 'auto' || o === 'scroll' || o === 'hidden') && e.scrollWidth > e.clientWidth + 1) { scrolled = e; break; }
    }
    if (scrolled || box.right > right + 1) {
      const head = [...table.querySelectorAll('th')].slice(0, 3).map(t => t.textContent.trim()).join(' | ');
      out.tables.push(`${head}: ${Math.round(box.width)} px wide in ${Math.round(scrolled ? scrolled.clientWidth : right - box.left)} px`
                      + (scrolled ? ' (scrolled sideways)' : ' (cut off)'));
    }
  }
  return out;
}"""

HOVER_CANDIDATES_JS = """() => {
  const out = [];
  document.querySelectorAll('.plotly-graph-div').forEach((gd, g) => {
    (gd.data || []).forEach((t, i) => {
      const full = (gd._fullData || [])[i] || {};
      const axis = (name, letter) => gd._fullLayout[letter + 'axis' + (name || letter).slice(1)] || {};
      if (full.visible !== true || axis(full.xaxis, 'x').visible === false || axis(full.yaxis, 'y').visible === false) return;
      const cd = t.customdata; if (!cd || !cd.length) return;
      for (let j = 0; j < cd.length; j++) {
        const first = Array.isArray(cd[j]) ? cd[j][0] : cd[j];
        if (typeof first === 'string' && /&lt;|&amp;/.test(first)) { out.push([g, i, j, first, (full.xaxis || 'x') + (full.yaxis || 'y')]); return; }
      }
    });
  });
  return out;
}"""


def body_text(v: Visit) -> str:
    return v.page.evaluate("() => document.body.innerText")


def contrast(v: Visit) -> list[str]:
    """Text below MIN_CONTRAST on the page as loaded, read once per load."""
    return v.once("contrast", lambda v: v.page.evaluate(CONTRAST_JS, MIN_CONTRAST))


# --- the tests ------------------------------------------------------------------------------------

def test_every_built_page_is_tested(book):
    built = {str(p.relative_to(book)) for p in book.rglob("*.html")
             if not p.relative_to(book).parts[0].startswith("_")}
    assert built == set(PAGES), f"untested pages: {sorted(built - set(PAGES))}"


def check_toggles(v: Visit) -> None:
    """myst-nb's hide-output folds (the looks, after the guesses) start closed, open, and close."""
    toggles = v.page.locator("details.hide")
    for i in range(toggles.count()):
        details = toggles.nth(i)
        details.scroll_into_view_if_needed()
        body = details.locator(".cell_output").first
        assert not details.evaluate("d => d.open") and not body.is_visible(), f"fold {i} starts open"
        details.locator(":scope > summary").click()
        assert details.evaluate("d => d.open") and body.is_visible(), f"fold {i} did not open"
        details.locator(":scope > summary").click()
        assert not details.evaluate("d => d.open") and not body.is_visible(), f"fold {i} did not close"


def check_hovers(v: Visit) -> None:
    """A hover that names a kernel with < or & shows the name literally (plotly would eat <...>)."""
    for g, curve, point, escaped, subplot in v.page.evaluate(HOVER_CANDIDATES_JS):
        literal = htmllib.unescape(escaped)
        hover = v.page.evaluate(
            """([g, curve, point, subplot]) => { const gd = document.querySelectorAll('.plotly-graph-div')[g];
                 Plotly.Fx.hover(gd, [{curveNumber: curve, pointNumber: point}], subplot);
                 return gd.querySelector('.hoverlayer').textContent; }""", [g, curve, point, subplot])
        assert literal[:60] in hover, f"hover shows {hover[:120]!r}, not {literal[:60]!r}"
        assert "&lt;" not in hover and "&amp;" not in hover, hover[:120]
        v.page.evaluate("(g) => Plotly.Fx.unhover(document.querySelectorAll('.plotly-graph-div')[g])", g)


def check_download_and_launch(v: Visit) -> None:
    """Every notebook page downloads as .ipynb; an .ipynb page launches on Colab and the GPU Space."""
    if not v.page.locator(".dropdown-download-buttons").count():
        return
    is_notebook = v.path in NOTEBOOK_SOURCES or v.path.removesuffix(".html") in TEXT_NOTEBOOKS
    download = v.page.locator('.dropdown-download-buttons a[href$=".ipynb"]')
    if not is_notebook:
        assert not download.count(), "a page that is no notebook offers an .ipynb"
        return
    assert download.count() == 1, "no .ipynb download button"
    href = download.first.get_attribute("href")
    assert v.page.request.get(f"{v.base}/{Path(v.path).parent}/{href}").ok, f"{href} does not download"
    links = {a.inner_text().strip(): a.get_attribute("href")
             for a in v.page.locator(".dropdown-launch-buttons a").all()}
    if v.path in NOTEBOOK_SOURCES:
        stem = Path(v.path).stem
        assert links.get("Colab", "").startswith("https://colab.research.google.com/github/"), links
        assert links["Colab"].endswith(f"notebooks/{stem}.ipynb"), links
        assert links.get("GPU Space", "").startswith("https://huggingface.co/spaces/"), links
    else:
        assert not links, f"Colab cannot open a MyST text notebook: {links}"


def check_layout(v: Visit) -> None:
    """Nothing wider than the screen, and no table scrolled sideways or cut off: on a laptop a
    table fits the article; on a phone a wide one is laid out as cards."""
    layout = v.page.evaluate(LAYOUT_JS)
    assert layout["page"] <= layout["screen"], \
        f"the page is {layout['page']} px wide on a {layout['screen']} px screen"
    assert not layout["tables"], "tables a reader must scroll sideways:\n" + "\n".join(layout["tables"])


@pytest.mark.parametrize("theme,size", VIEWS, ids=[f"{t}-{w}" for t, (w, _) in VIEWS])
@pytest.mark.parametrize("path", page_params(PAGES))
def test_page(shared_visit, book, path, theme, size):
    """Loads clean, draws every chart, stays legible and fits the screen; on a laptop in light:
    folds, hovers, download, launch (each left as it was: the load is shared)."""
    v = shared_visit(path, theme, size)
    assert v.page.evaluate("() => document.documentElement.dataset.theme") == theme
    for plot in v.page.evaluate(PLOTS_JS):
        assert plot["traces"] > 0 and plot["points"] > 0, f"plotly figure {plot['id']} has no data"
        assert plot["drawn"] > 0, f"plotly figure {plot['id']} drew none of its {plot['points']} points"
    text = body_text(v)
    for escaped in ("&lt;", "&gt;", "&amp;"):
        assert escaped not in text, f"{escaped} shown as text: a kernel name was escaped twice"
    bad = contrast(v)
    assert not bad, f"text below {MIN_CONTRAST}:1 contrast in the {theme} theme:\n" + "\n".join(bad)
    # every Font Awesome icon drawn (static_book cuts fontawesome.js down to the icons the book names)
    undrawn = v.page.evaluate("""() => [...document.querySelectorAll('i[class*="fa-"]')].map(i => i.className)""")
    assert not undrawn, f"icons not drawn: {undrawn}"
    assert v.page.locator("svg.svg-inline--fa").count() > 0
    name = path.removesuffix(".html").replace("/", "__")
    shoot(v.page, book.parent / "screenshots" / f"{name}__{theme}__{size[0]}.png")
    check_layout(v)
    if theme == "light" and size == LAPTOP:
        check_download_and_launch(v)
        check_hovers(v)
        check_toggles(v)
    assert not v.problems, "\n".join(v.problems)


@page_group("book/kernel_names.html")
def test_template_kernel_names_read_literally(shared_visit, book):
    visit = shared_visit
    v = visit("book/kernel_names.html")
    text = body_text(v)
    assert "flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4" in text
    assert "masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)" in text
    assert (book / "notebooks" / "05_sdpa_flash.html").exists(), "the build has no notebooks/05_sdpa_flash.html"
    assert "<Flash_fwd_kernel_traits<" in body_text(visit("notebooks/05_sdpa_flash.html"))


# --- the occupancy calculator ------------------------------------------------------------------

CALCULATOR = "notebooks/calculator.html"


def calculator_state(v: Visit) -> dict:
    v.page.wait_for_function("() => (window.attentionProfiled?.calculators || []).length > 0")
    return v.page.evaluate("""() => { const s = window.attentionProfiled.calculators[0].state();
        return {stale: s.stale, config: s.config, result: s.result && {
          activeBlocks: s.result.activeBlocks, activeWarps: s.result.activeWarps,
          occupancy: s.result.occupancy, limiters: s.result.limiters}}; }""")


def test_the_calculator_calculates_in_the_book(visit, book):
    """No kernel, nothing fetched: the page runs the calculator's own scripts, byte for byte the
    files tests/test_calculator_js.py holds to helpers.occupancy on the sweep of every compute
    capability and product (500,000 configurations: run once per test run, there), and agrees
    with helpers.occupancy on a random sample in full."""
    import calculator_sweep as cs
    from helpers.occupancy.browser import SCRIPTS
    v = visit(CALCULATOR)
    text = body_text(v)
    assert "needs a kernel" not in text and "running Jupyter kernel" not in text
    assert v.page.locator("[data-apo-mounted]").count() == 1
    inline = v.page.evaluate("() => [...document.scripts].filter(s => !s.src).map(s => s.textContent)")
    for name in SCRIPTS:
        assert (ROOT / "helpers" / "occupancy" / "js" / name).read_text() in inline, name
    configs = cs.random_configs(2000, seed=11)
    assert cs.page_answers(v.page, configs) == [cs.python_answer(*c) for c in configs]
    # the page loads no widget manager and no plotly: it draws its own SVG
    scripts = v.page.evaluate("() => [...document.scripts].map(s => s.src).filter(Boolean)")
    assert not [s for s in scripts if "plotly" in s or "embed-amd" in s or "require.js" in s], scripts
    assert not v.problems, "\n".join(v.problems)


def test_a_link_opens_the_calculator_on_its_configuration(visit, book):
    from urllib.parse import urlencode
    from helpers.occupancy.browser import calculator_query
    from helpers.occupancy.calculator import LIMITERS, occupancy
    config = ("L40S", 256, 72, 30000, 50, "default")
    v = visit(f"{CALCULATOR}?{calculator_query(*config[:4], carveout=config[4], shared_memory_limit=config[5])}")
    want = occupancy(*config[:4], carveout=config[4], shared_memory_limit=config[5])
    state = calculator_state(v)
    assert state["config"] == {"gpu": "L40S", "threads": 256, "registers": 72, "smem": 30000,
                               "carveout": 50, "limit": "default"}
    assert state["result"] == {"activeBlocks": want.active_blocks, "activeWarps": want.active_warps,
                               "occupancy": want.occupancy,
                               "limiters": [k for k in LIMITERS if k in want.limiters]}
    # a reader's change goes into the address, which reproduces it
    v.page.locator('.apo-field[data-field="registers"] input[type="text"]').fill("40")
    expected = calculator_query("L40S", 256, 40, 30000, carveout=50, shared_memory_limit="default")
    v.page.wait_for_function("(q) => location.search === '?' + q", arg=expected)
    again = visit(f"{CALCULATOR}?{expected}")
    assert calculator_state(again)["config"]["registers"] == 40
    # a bad link says so, and shows the defaults
    bad = visit(f"{CALCULATOR}?{urlencode({'gpu': 'GTX 9999', 'threads': '0'})}")
    notice = bad.page.locator(".apo-notice")
    assert notice.is_visible() and "gpu=GTX 9999" in notice.inner_text() and "threads=0" in notice.inner_text()
    initial = bad.page.evaluate("() => JSON.parse(document.querySelector('.apo-data').textContent).initial")
    assert calculator_state(bad)["config"] == initial
    # a refused field: its message, the results stale
    field = v.page.locator('.apo-field[data-field="threads"]')
    field.locator('input[type="text"]').fill("1025")
    with pytest.raises(ValueError) as refused:
        occupancy("L40S", 1025, 40, 30000)
    assert field.locator(".apo-error").inner_text() == str(refused.value)
    assert calculator_state(v)["stale"]
    for visit_ in (v, again, bad):
        assert not visit_.problems, "\n".join(visit_.problems)


@page_group(CALCULATOR)
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("viewport", [(1400, 900), (390, 844)], ids=["laptop", "phone"])
def test_the_calculator_reads_on_a_laptop_and_a_phone(shared_visit, book, viewport, theme):
    v = shared_visit(CALCULATOR, theme, viewport)
    calculator_state(v)
    # nothing wider than the screen (the resource table scrolls inside its own box)
    overflow = v.page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than a {viewport[0]}px screen"
    for selector in (".apo-headline", ".apo-curves", ".apo-sm", ".apo-controls"):
        box = v.page.locator(selector).bounding_box()
        assert box and box["width"] <= viewport[0], selector
    bad = contrast(v)
    assert not bad, "\n".join(bad)
    name = f"calculator__{viewport[0]}x{viewport[1]}__{theme}"
    shoot(v.page, book.parent / "screenshots" / f"{name}.png")
    v.page.locator(".apo-results").screenshot(path=str(book.parent / "screenshots" / f"{name}__results.png"))
    assert not v.problems, "\n".join(v.problems)


def test_chapter_07_opens_each_kernel_in_the_calculator(visit, book):
    from urllib.parse import parse_qs, urlsplit
    v = visit("notebooks/07_occupancy.html")
    links = v.page.locator("a.apo-kernel-link")
    hrefs = links.evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert len(hrefs) >= 10 and all(h.startswith("calculator.html?") for h in hrefs)
    for href in hrefs[:: max(1, len(hrefs) // 6)]:
        opened = visit(f"notebooks/{href}")
        q = {k: v_[0] for k, v_ in parse_qs(urlsplit(href).query).items()}
        state = calculator_state(opened)
        assert not opened.page.locator(".apo-notice").is_visible()
        assert state["config"] == {"gpu": q["gpu"], "threads": int(q["threads"]),
                                   "registers": int(q["registers"]), "smem": int(q["smem"]),
                                   "carveout": None, "limit": "opt-in"}
        assert not opened.problems, "\n".join(opened.problems)
    # following a link is a reader's click, too
    links.first.click()
    v.page.wait_for_url("**/calculator.html?*")
    assert calculator_state(v)["config"]["threads"] == int(parse_qs(urlsplit(hrefs[0]).query)["threads"][0])
    assert not v.problems, "\n".join(v.problems)


# --- tables as readers read them ---------------------------------------------------------------

def test_a_long_kernel_name_is_one_hover_or_tap_away(visit):
    v = visit("notebooks/05_sdpa_flash.html", "light", PHONE)
    name = v.page.locator("table.ap-table details.ap-name").first
    name.scroll_into_view_if_needed()
    summary = name.locator("summary")
    full = summary.get_attribute("title")
    assert len(full) > len(summary.inner_text()), "the cell shows a shortened name"
    assert full.startswith("void ") or "<" in full
    assert not name.locator("code.ap-full-name").is_visible()
    summary.click()  # a tap
    assert name.locator("code.ap-full-name").inner_text() == full
    assert v.page.evaluate(LAYOUT_JS)["page"] <= PHONE[0], "the whole name wraps inside the screen"
    assert not v.problems, "\n".join(v.problems)


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["1400", "390"])
def test_the_closing_table_teaches_a_lesson_per_stage(visit, size):
    import helpers
    v = visit("notebooks/08_at_a_glance.html", "light", size)
    table = v.page.locator("table.ap-table").filter(has=v.page.locator("details.ap-expand")).first
    rows = table.locator("tbody tr")
    stages = helpers.closing_stages(mode="replay") if "Replaying" in body_text(v) else None
    if stages is not None:
        assert [rows.nth(i).locator("th").inner_text() for i in range(rows.count())] == stages
    for i in range(rows.count()):
        cell = rows.nth(i).locator("td[data-label='verdict from the trace']")
        lesson = cell.locator("details.ap-expand")
        if not lesson.count():
            continue
        assert cell.evaluate("td => td.getBoundingClientRect().height") < 0.4 * size[1], \
            "one lesson per row: a row stays short"
        lesson.locator("summary").click()  # one click: every verdict behind the lesson
        verdicts = lesson.locator("ul.ap-verdicts li")
        assert verdicts.count() >= 1 and verdicts.first.is_visible()
    check_layout(v)
    assert not v.problems, "\n".join(v.problems)


# --- plotly.js: a partial bundle that holds every trace type the book draws ----------------------

BUNDLE = "vendor/plotly/plotly-cartesian.min.js"


def drawn_trace_types(page_html: str) -> set[str]:
    """The type of every trace of every Plotly.newPlot call in a built page (plotly's default,
    scatter, where a trace names none)."""
    decoder, types = json.JSONDecoder(), set()
    for call in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", page_html):
        data, _ = decoder.raw_decode(page_html, call.end())
        types |= {trace.get("type", "scatter") for trace in data}
    return types


def test_the_plotly_bundle_holds_every_trace_type_the_book_draws(shared_visit, book):
    visit = shared_visit
    pages = {str(p.relative_to(book)): p.read_text() for p in book.rglob("*.html")
             if not p.relative_to(book).parts[0].startswith("_")}
    drawn = {path: drawn_trace_types(text) for path, text in pages.items()}
    types = set().union(*drawn.values())
    assert types, "no chart found in the built pages"
    for path, text in pages.items():
        if drawn[path]:
            assert text.count(BUNDLE) == 1 and "plotly.min.js" not in text, path
    v = visit(next(p for p, t in drawn.items() if t))
    registered = set(v.page.evaluate("() => Object.keys(Plotly.PlotSchema.get().traces)"))
    assert types <= registered, f"the bundle lacks {sorted(types - registered)}"
    assert not v.problems, "\n".join(v.problems)


# --- one truth per page (issue 21): what a reader meets unfolded ----------------------------------

MAX_PROSE_WORDS, MAX_TABLE_ROWS = 1200, 60

# every chart shown: its title inside the chart, its legend inside the chart and clear of the title
CHARTS_JS = """() => {
  const shown = (el) => (el.checkVisibility ? el.checkVisibility() : el.getClientRects().length > 0);
  const charts = [];
  document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
    const r = gd.getBoundingClientRect();
    if (!r.width || !shown(gd)) return;  // folded away
    const t = gd.querySelector('.g-gtitle'), l = gd.querySelector('.legend');
    const tb = t && t.getBoundingClientRect(), lb = l && l.getBoundingClientRect();
    const has = (b) => b && b.width > 0 && b.height > 0;
    const title = t ? t.textContent.slice(0, 50) : '';
    if (has(tb) && (tb.left < r.left - 1 || tb.right > r.right + 1)) charts.push(`title past the chart's edge: ${title}`);
    if (has(tb) && tb.top < r.top - 1) charts.push(`title above the chart's top: ${title}`);
    if (has(lb) && (lb.left < r.left - 2 || lb.right > r.right + 2)) charts.push(`legend past the chart's edge: ${title}`);
    if (has(tb) && has(lb) && lb.top < tb.bottom - 1 && lb.bottom > tb.top + 1 && lb.left < tb.right && lb.right > tb.left)
      charts.push(`legend over the title: ${title}`);
    // a subplot's title (an annotation) inside the chart
    gd.querySelectorAll('.annotation').forEach((a) => {
      const ab = a.getBoundingClientRect();
      if (has(ab) && (ab.left < r.left - 1 || ab.right > r.right + 1))
        charts.push(`annotation past the chart's edge: ${a.textContent.slice(0, 50)} (${title})`);
      if (has(ab) && has(lb) && ab.top < lb.bottom - 1 && ab.bottom > lb.top + 1 && ab.left < lb.right && ab.right > lb.left)
        charts.push(`annotation over the legend: ${a.textContent.slice(0, 50)} (${title})`);
    });
  });
  return charts;
}"""

READING_JS = """() => {
  const article = document.querySelector('.bd-article') || document.body;
  // a closed fold's content keeps its boxes in Chromium (content-visibility): checkVisibility
  const shown = (el) => (el.checkVisibility ? el.checkVisibility() : el.getClientRects().length > 0);
  // prose: the text a reader reads without opening anything: not code, tables, charts, the
  // outputs' printed text, a guess-first question's form (its label, hints and reveal: the
  // interface, not the chapter's prose), nor what sits in a closed fold
  const skip = 'table, pre, code, .cell_input, .js-plotly-plot, svg, .output.stream, .output.text_plain, ' +
               'nav, .headerlink, .ap-sm, .widget-subarea, .jupyter-widgets, [data-apq], script, style';
  let words = 0;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip) || !shown(el)) continue;
    words += (n.textContent.match(/[A-Za-z0-9][\\w'’.-]*/g) || []).length;
  }
  let rows = 0;
  for (const tr of article.querySelectorAll('table tbody tr')) if (shown(tr)) rows += 1;
  const charts = (""" + CHARTS_JS + """)();
  return {words, rows, charts};
}"""

NOTEBOOK_PAGES = [p for p in PAGES if p.startswith("notebooks/")]


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["1400", "390"])
@pytest.mark.parametrize("path", page_params(NOTEBOOK_PAGES))
def test_reading_limits(shared_visit, book, path, size):
    """What a reader meets before opening anything: at most 1,200 words of prose and 60 table rows
    a chapter; every chart's title and legend inside the chart and clear of each other; no console
    error. The page is test_page's load (shared_visit)."""
    v = shared_visit(path, "light", size)
    # chart_fit.js measures and lays out each shown chart after plotly draws it, then marks it
    v.page.wait_for_function("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(gd => gd.checkVisibility())
        .every(gd => gd.getAttribute('data-fit-width') === String(gd.clientWidth))""", timeout=20000)
    got = v.page.evaluate(READING_JS)
    # no screenshot here: test_page takes this page's, light theme, at both widths
    print(f"reading limits: {path} at {size[0]} px: {got['words']} words, {got['rows']} rows")  # -s shows it
    assert got["words"] <= MAX_PROSE_WORDS, f"{got['words']} words of unfolded prose"
    assert got["rows"] <= MAX_TABLE_ROWS, f"{got['rows']} unfolded table rows"
    assert not got["charts"], "\n".join(got["charts"])
    assert not v.problems, "\n".join(v.problems)


SHOT_MAX_PX = 12000  # a screenshot is for a person to look at: the API page is ~90,000 px tall


def shoot(page, path: Path) -> None:
    """A full-page screenshot, cut at SHOT_MAX_PX: drawing the API reference whole took 30 s (none
    where SCREENSHOTS is off)."""
    if not SCREENSHOTS:
        return
    height = page.evaluate("() => document.documentElement.scrollHeight")
    width = page.viewport_size["width"]
    page.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": 0, "width": width,
                                                         "height": min(height, SHOT_MAX_PX)})


# --- the same charts live: JupyterLab (a Space) and Colab, not only the static book ------------

def live_figures(build: Path) -> list[tuple[str, dict]]:
    """Every chart of the book as a live notebook receives it: plotly's mimetype bundle (figure
    and config) that helpers' renderer put in each executed notebook's outputs."""
    figures = []
    for path in sorted((build / "jupyter_execute").rglob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for out in cell.get("outputs", []):
                bundle = out.get("data", {}).get("application/vnd.plotly.v1+json")
                if bundle:
                    figures.append((f"{path.stem} cell {cell.get('id', '?')}", bundle))
    return figures


def live_page(figures: list[tuple[str, dict]], how: str) -> str:
    """One page of charts at a notebook's output width: as JupyterLab draws the mimetype (the
    figure and its config, no script of ours), or each chart the Colab renderer's HTML, in its own
    frame as Colab shows an output."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from helpers.views import charts
    charts.install()
    parts = []
    for i, (where, bundle) in enumerate(figures):
        fig = go.Figure(bundle["data"] and {"data": bundle["data"], "layout": bundle["layout"]})
        if how == "jupyterlab":
            parts.append(f"<div class='out' title='{htmllib.escape(where)}'>" + fig.to_html(
                include_plotlyjs=False, full_html=False, div_id=f"live-{i}", config=bundle.get("config", {}))
                + "</div>")
        else:
            doc = pio.renderers["book_colab"].to_mimebundle(fig.to_dict())["text/html"]
            height = (bundle["layout"].get("height") or 450) + 120
            parts.append(f"<iframe class='out' title='{htmllib.escape(where)}' style='width:100%;"
                         f"height:{height}px;border:0' srcdoc='{htmllib.escape(doc, quote=True)}'></iframe>")
    head = "<script src='/plotly.min.js'></script>" if how == "jupyterlab" else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'>{head}<style>body{{margin:0;padding:0 16px}}"
            f".out{{display:block;width:100%;margin:12px 0}}</style></head><body>{''.join(parts)}</body></html>")


# the two CDNs the Colab renderer's HTML names, each served by the live charts' local server under
# its own path: the same bytes (plotly.js is checked against the tag's integrity hash), with
# Chromium's HTTP cache on (Playwright's request routing turns it off: every one of 64 frames then
# fetched and compiled its own 3.5 MB plotly.js)
LIVE_CDNS = {"https://cdn.plot.ly/": "/cdn.plot.ly/", "https://cdnjs.cloudflare.com/ajax/libs/mathjax/": "/mathjax/"}
_LIVE_PAGES: dict[tuple, str] = {}


def live_page_once(build: Path, how: str, firsts: bool = False) -> tuple[str, int]:
    """live_page and its number of charts, built once per run (both widths share it: the page does
    not depend on the width): every chart of the build, or (firsts) the first of each notebook."""
    key = (build, how, firsts)
    if key not in _LIVE_PAGES:
        figures = live_figures(build)
        assert len(figures) >= 20, f"only {len(figures)} charts in the executed notebooks"
        if firsts:
            by_notebook: dict[str, tuple[str, dict]] = {}
            for where, bundle in figures:
                by_notebook.setdefault(where.split(" cell ")[0], (where, bundle))
            figures = list(by_notebook.values())
        _LIVE_PAGES[key] = live_page(figures, how), len(figures)
    return _LIVE_PAGES[key]


class LiveServer:
    """A local HTTP server for the live charts: the page (`page`, set once the address is known)
    at /, plotly.js at /plotly.min.js and at the CDN's path (LIVE_CDNS), an empty MathJax (no chart
    here typesets math), each cacheable."""

    def __init__(self, plotly_js: bytes):
        import http.server
        import threading
        server = self
        self.page = ""

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0]
                if path.startswith(LIVE_CDNS["https://cdn.plot.ly/"]) and path.endswith(".min.js"):
                    body, kind = plotly_js, "application/javascript"
                elif path.startswith(LIVE_CDNS["https://cdnjs.cloudflare.com/ajax/libs/mathjax/"]):
                    body, kind = b"", "application/javascript"
                elif path == "/plotly.min.js":
                    body, kind = plotly_js, "application/javascript"
                elif path == "/":
                    body, kind = server.page.encode(), "text/html; charset=utf-8"
                elif path == "/favicon.ico":  # asked for by the browser itself, not by the page
                    body, kind = b"", "image/x-icon"
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "max-age=3600")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("how", ["jupyterlab", "colab"])
@pytest.mark.parametrize("size", [PHONE, LAPTOP], ids=["390", "1400"])
def test_live_charts_fit_the_screen(browser, book_build, how, size):
    """Every chart, as a live notebook draws it (JupyterLab: plotly's mimetype with no script of
    ours; Colab: the book's Colab renderer, plotly.js from its CDN and chart_fit.js), keeps its
    title and legend inside the chart and clear of each other at 390 and 1400 px."""
    import plotly
    # Colab draws each output in its own frame with its own plotly.js: every chart costs ~0.6 s of
    # the 2-core CI (40 s at 390 px for all 64). Colab checks the first chart of each notebook at both
    # widths, which exercises its renderer and chart_fit.js as the others do; every chart is still
    # checked as laid out with no script of ours (JupyterLab's mimetype, here, at both widths) and
    # as re-fitted by chart_fit.js (the static book's drawn charts, tests/test_charts_drawn.py).
    page_html, charts = live_page_once(book_build, how, firsts=how == "colab")
    if how == "colab":
        # each frame names both CDNs once; served here from the local server's paths for them
        frames = page_html.count("<iframe ")
        assert frames == charts and all(page_html.count(htmllib.escape(f'src="{cdn}', quote=True)) == frames
                                        for cdn in LIVE_CDNS), "a Colab output that loads no plotly.js or MathJax"
    plotly_js = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()
    server = LiveServer(plotly_js)
    for cdn, path in LIVE_CDNS.items():  # same origin as the page: a same-origin fetch, integrity checked
        page_html = page_html.replace(htmllib.escape(f'src="{cdn}', quote=True),
                                      htmllib.escape(f'src="{server.base}{path}', quote=True))
    server.page = page_html
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    problems: list[str] = []

    def request(r):  # no request routing (it turns the cache off): every other request is a problem
        if not r.url.startswith((server.base + "/", "data:", "about:", "blob:")):
            problems.append(f"request outside the page: {r.url}")
    context.on("request", request)
    page = context.new_page()
    page.on("pageerror", lambda e: problems.append(f"uncaught exception: {e}"))
    page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    try:
        page.goto(server.base + "/", wait_until="load", timeout=300000)  # Colab: a plotly.js a frame
        frames = [page.main_frame] if how == "jupyterlab" else page.main_frame.child_frames
        assert len(frames) == 1 or len(frames) == charts
        bad = []
        for frame in frames:
            frame.wait_for_function("() => [...document.querySelectorAll('.plotly-graph-div')]"
                                    ".every(gd => gd._fullLayout)", timeout=30000)
            if how == "colab":  # chart_fit.js has measured and laid the chart out
                frame.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')]"
                                        ".every(gd => gd.getAttribute('data-fit-width') === String(gd.clientWidth))",
                                        timeout=20000)
            bad += frame.evaluate(CHARTS_JS)
        shots = book_build / "screenshots"
        shots.mkdir(exist_ok=True)
        shoot(page, shots / f"live__{how}__{size[0]}.png")
        assert not bad, f"{len(bad)} of {charts} charts:\n" + "\n".join(bad)
        assert not problems, "\n".join(problems)
    finally:
        context.close()
        server.close()


# --- the trace behind each stage page (after the reading checks: its status line is on the page) -

PERFETTO = "https://ui.perfetto.dev"
# stands in for ui.perfetto.dev: answers PING with PONG, as Perfetto does, and keeps what it gets
PERFETTO_STUB = """<!doctype html><title>Perfetto (test stub)</title><script>
window.pings = 0; window.received = null;
window.addEventListener('message', (e) => {
  if (e.data === 'PING') { window.pings++; e.source.postMessage('PONG', '*'); return; }
  const p = e.data && e.data.perfetto;
  if (p) window.received = {title: p.title, fileName: p.fileName, isBuffer: p.buffer instanceof ArrayBuffer,
                            bytes: Array.from(new Uint8Array(p.buffer))};
});
</script>"""


def kineto_trace(data: bytes) -> dict:
    """The trace a gzipped file holds, checked to be a Kineto chrome trace of one stage."""
    document = json.loads(gzip.decompress(data))
    events = document["traceEvents"]
    assert any(e.get("cat") == "kernel" for e in events), "no kernel event: not a Kineto GPU trace"
    assert any(re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")) for e in events), "no profiler step"
    assert document["provenance"]["stage"]
    return document


def test_there_are_stage_pages():
    assert "notebooks/01_naive.html" in STAGE_PAGES and len(STAGE_PAGES) >= 6, STAGE_PAGES


@pytest.mark.parametrize("path", page_params(STAGE_PAGES))
def test_stage_page_links_its_trace_and_opens_it_in_perfetto(shared_visit, book, path):
    # test_page's load (shared_visit): the download and the popup leave the page itself as it was
    v = shared_visit(path)
    link = v.page.locator("a.ap-trace-download")
    assert link.count() == 1, "a stage page links the trace behind it, once"
    href = link.get_attribute("href")
    assert not href.startswith("data:"), "the book serves the trace as a file of the build"
    assert (book / Path(path).parent / href).resolve().is_file()

    link.scroll_into_view_if_needed()
    with v.page.expect_download() as download:
        link.click()
    downloaded = Path(download.value.path()).read_bytes()
    assert download.value.suggested_filename == link.get_attribute("download")
    document = kineto_trace(downloaded)
    stage = document["provenance"]["stage"]
    assert re.search(rf"(Replaying|Profiled) [\w, ]*\b{stage}\b", body_text(v))
    recorded = ROOT / "notebooks" / "traces" / "h200" / download.value.suggested_filename
    if "Replaying" in body_text(v):
        assert downloaded == recorded.read_bytes(), "in replay the link serves the recorded file as it is"

    # the last route registered wins: ui.perfetto.dev is the stub, everything else stays blocked
    v.context.route(f"{PERFETTO}/**", lambda route: route.fulfill(status=200, content_type="text/html",
                                                                   body=PERFETTO_STUB))
    with v.page.expect_popup() as popup_info:
        v.page.locator("button.ap-perfetto").click()
    popup = popup_info.value
    assert popup.url.startswith(PERFETTO)
    popup.wait_for_function("() => window.received !== null", timeout=15000)
    received = popup.evaluate("() => window.received")
    assert received["isBuffer"] and popup.evaluate("() => window.pings") >= 1
    assert received["fileName"] == download.value.suggested_filename and stage in received["title"]
    assert gzip.decompress(bytes(received["bytes"])) == gzip.decompress(downloaded)
    assert "Sent to Perfetto" in v.page.locator(".ap-perfetto-status").inner_text()
    popup.close()
    assert not v.problems, "\n".join(v.problems)
