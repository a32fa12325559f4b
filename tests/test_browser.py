"""The built book in a real browser: headless Chromium (Debian's /usr/bin/chromium) through Playwright.

The book is built once per session into a temporary --path-output (or taken from
ATTN_PROFILED_BOOK_HTML, an existing _build/html, to iterate quickly), served by
`python -m http.server` on 127.0.0.1, and every page is opened in the light and the dark theme:

- no console error, no uncaught exception, no failed request, and no request to anything but the
  local server (every other request is aborted, so the test itself never touches the network);
- every plotly figure drew its data, saved ipywidgets views rendered, math rendered;
- text in outputs (tables, chart text, cards) keeps a readable contrast on both themes;
- guess/look toggles open and close; kernel names read literally, in the page and in hovers;
- notebook pages offer the .ipynb download and the Colab and GPU Space launch links;
- the occupancy calculator calculates on its page as helpers.occupancy does (a sweep of every GPU),
  keeps its configuration in the page's address, says what is wrong with a bad link, and reads at
  1400×900 and 390×844; chapter 07's links open it with each kernel loaded.

A full-page screenshot of each page and theme goes to <build output>/_build/screenshots (the
path is printed at the end of the session). Chromium is installed by the environment (.ci/run),
never by the test.
"""
from __future__ import annotations

import html as htmllib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

pytestmark = pytest.mark.browser

THEMES = ("light", "dark")
MIN_CONTRAST = 3.0  # WCAG's floor for large text and graphics; body text is far above it


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part["chapters"]]
    return [f"{f}.html" for f in files] + ["genindex.html", "search.html", "index.html"]


PAGES = toc_pages()
NOTEBOOK_SOURCES = {f"notebooks/{p.stem}.html" for p in (ROOT / "notebooks").glob("*.ipynb")}
# MyST Markdown notebooks (a kernelspec in the front matter): executed, downloadable as .ipynb
TEXT_NOTEBOOKS = {f"book/{p.stem}" for p in (ROOT / "book").glob("*.md")
                  if "\nkernelspec:" in p.read_text().split("\n---", 1)[0]}


# --- session fixtures: build, serve, browse -----------------------------------------------------

@pytest.fixture(scope="session")
def book(tmp_path_factory, request) -> Path:
    """The built _build/html; screenshots go beside it, in _build/screenshots."""
    given = os.environ.get("ATTN_PROFILED_BOOK_HTML")
    if given:
        html_dir = Path(given).resolve()
        assert (html_dir / "index.html").exists(), f"ATTN_PROFILED_BOOK_HTML={given} is not a built book"
    else:
        out = tmp_path_factory.mktemp("browser_book")
        jb = Path(sys.executable).parent / "jupyter-book"
        result = subprocess.run([str(jb), "build", str(ROOT), "-W", "-n", "--keep-going",
                                 "--path-output", str(out)], capture_output=True, text=True, timeout=3000)
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
        html_dir = out / "_build" / "html"
    shots = html_dir.parent / "screenshots"
    shots.mkdir(exist_ok=True)

    def report():
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"browser screenshots: {shots}")
    request.addfinalizer(report)
    return html_dir


@pytest.fixture(scope="session")
def server(book):
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
    yield base
    proc.terminate()
    proc.wait(timeout=10)


class Visit:
    """One page in one theme, with everything that went wrong while it loaded."""

    def __init__(self, browser, base: str, path: str, theme: str, viewport=(1280, 900)):
        self.base, self.path, self.theme = base, path, theme
        self.problems: list[str] = []
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                           color_scheme=theme)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(
            f"console error: {m.text} ({m.location.get('url', '')})"))
        self.page.on("pageerror", lambda e: self.problems.append(f"uncaught exception: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(
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
        self.page.goto(f"{self.base}/{self.path}", wait_until="load")
        self.page.wait_for_load_state("networkidle")
        if self.page.locator(".js-plotly-plot, .plotly-graph-div").count():
            self.page.wait_for_function(
                "() => [...document.querySelectorAll('.plotly-graph-div')].every(gd => gd._fullLayout)",
                timeout=30000)
        views = self.page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
        if views:
            # embed-amd.js replaces each saved view with the widget it describes, after `load`
            self.page.wait_for_function(
                f"() => document.querySelectorAll('.jupyter-widgets, .widget-subarea').length >= {views}",
                timeout=30000)
        if self.page.locator(".math").count():
            self.page.wait_for_function(
                "() => document.querySelectorAll('mjx-container').length >= document.querySelectorAll('.math').length",
                timeout=30000)
        self.page.wait_for_timeout(300)
        return self

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, server):
    opened: list[Visit] = []

    def open_page(path: str, theme: str = "light", viewport=(1280, 900)) -> Visit:
        v = Visit(browser, server, path, theme, viewport).open()
        opened.append(v)
        return v

    yield open_page
    for v in opened:
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
        details.locator("summary").click()
        assert details.evaluate("d => d.open") and body.is_visible(), f"fold {i} did not open"
        details.locator("summary").click()
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


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("path", PAGES)
def test_page(visit, book, path, theme):
    """Loads clean, draws every chart, stays legible; in light: folds, hovers, download, launch."""
    v = visit(path, theme)
    assert v.page.evaluate("() => document.documentElement.dataset.theme") == theme
    for plot in v.page.evaluate(PLOTS_JS):
        assert plot["traces"] > 0 and plot["points"] > 0, f"plotly figure {plot['id']} has no data"
        assert plot["drawn"] > 0, f"plotly figure {plot['id']} drew none of its {plot['points']} points"
    text = body_text(v)
    for escaped in ("&lt;", "&gt;", "&amp;"):
        assert escaped not in text, f"{escaped} shown as text: a kernel name was escaped twice"
    bad = v.page.evaluate(CONTRAST_JS, MIN_CONTRAST)
    assert not bad, f"text below {MIN_CONTRAST}:1 contrast in the {theme} theme:\n" + "\n".join(bad)
    name = path.removesuffix(".html").replace("/", "__")
    v.page.screenshot(path=str(book.parent / "screenshots" / f"{name}__{theme}.png"), full_page=True)
    if theme == "light":
        check_download_and_launch(v)
        check_hovers(v)
        check_toggles(v)
    assert not v.problems, "\n".join(v.problems)


def test_template_kernel_names_read_literally(visit, book):
    v = visit("book/kernel_names.html")
    text = body_text(v)
    assert "flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4" in text
    assert "masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)" in text
    if not (book / "notebooks" / "05_sdpa_flash.html").exists():
        pytest.skip("notebooks/05_sdpa_flash.html is not built yet")
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
    """No kernel, nothing fetched: the page's own JavaScript agrees with helpers.occupancy on the
    sweep of every compute capability and product, and on a random sample in full."""
    import calculator_sweep as cs
    v = visit(CALCULATOR)
    text = body_text(v)
    assert "needs a kernel" not in text and "running Jupyter kernel" not in text
    assert v.page.locator("[data-apo-mounted]").count() == 1
    result = cs.run_sweep(v.page, cs.cases())
    assert result["configurations"] > 500_000 and not result["mismatches"], result["mismatches"][:5]
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
    try:
        occupancy("L40S", 1025, 40, 30000)
    except ValueError as err:
        assert field.locator(".apo-error").inner_text() == str(err)
    assert calculator_state(v)["stale"]
    for visit_ in (v, again, bad):
        assert not visit_.problems, "\n".join(visit_.problems)


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("viewport", [(1400, 900), (390, 844)], ids=["laptop", "phone"])
def test_the_calculator_reads_on_a_laptop_and_a_phone(visit, book, viewport, theme):
    v = visit(CALCULATOR, theme, viewport)
    calculator_state(v)
    # nothing wider than the screen (the resource table scrolls inside its own box)
    overflow = v.page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than a {viewport[0]}px screen"
    for selector in (".apo-headline", ".apo-curves", ".apo-sm", ".apo-controls"):
        box = v.page.locator(selector).bounding_box()
        assert box and box["width"] <= viewport[0], selector
    bad = v.page.evaluate(CONTRAST_JS, MIN_CONTRAST)
    assert not bad, "\n".join(bad)
    name = f"calculator__{viewport[0]}x{viewport[1]}__{theme}"
    v.page.screenshot(path=str(book.parent / "screenshots" / f"{name}.png"), full_page=True)
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
