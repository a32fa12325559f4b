"""The browser calculator (helpers/occupancy/js/, shown by helpers.occupancy.browser) against
helpers.occupancy, in headless Chromium, as a reader uses it.

The page is the calculator's own notebook output (``calculator().to_html()``, what the book and
JupyterLab show) in a page shaped like one of the book's, served from memory at
http://book.test/notebooks/calculator.html; every other request is aborted and reported, so the
calculator must work with nothing to fetch. tests/test_browser.py checks the same on the built
book's page. Every expected value is computed here by helpers.occupancy; none is typed in.
"""
from __future__ import annotations

import math
import random
import re
from urllib.parse import parse_qs, urlsplit

import pytest

import calculator_sweep as cs
from helpers.occupancy.browser import calculator, calculator_query, calculator_url, carveout_percentages
from helpers.occupancy.calculator import LIMITERS, UNLIMITED, occupancy
from helpers.occupancy.charts import impact_series, limiter_label, traced_kernels, utilization_rows
from helpers.occupancy.gpus import PRODUCTS, gpu_spec

pytestmark = pytest.mark.browser

BASE = "http://book.test"
PATH = "/notebooks/calculator.html"


@pytest.fixture(scope="module")
def kernels():
    from helpers import Session
    return traced_kernels(Session(mode="replay").recorded())


@pytest.fixture(scope="module")
def page_html(kernels) -> str:
    output = calculator(presets_from=kernels, gpu=None).to_html()
    # a Sphinx page marks its <html> with data-content_root; the calculator keeps its state in the
    # query string only there
    return ('<!DOCTYPE html><html lang="en" data-content_root="../"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>calculator</title>'
            '</head><body><main><h1>Occupancy calculator</h1><section id="the-calculator">'
            f"{output}</section></main></body></html>")


class Page:
    """One tab on the calculator page, with everything that went wrong while it was open."""

    def __init__(self, browser, html: str, viewport=(1400, 900)):
        self.html = html
        self.problems: list[str] = []
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(
            f"console {m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"uncaught exception: {e}"))

    def _route(self, route):
        url = route.request.url
        if url.split("?")[0] == BASE + PATH:
            route.fulfill(body=self.html, content_type="text/html; charset=utf-8")
        else:
            self.problems.append(f"request outside the page: {url}")
            route.abort()

    def open(self, query: str = ""):
        self.page.goto(BASE + PATH + query, wait_until="load")
        self.page.wait_for_function("() => (window.attentionProfiled?.calculators || []).length > 0")
        return self

    def state(self) -> dict:
        return self.page.evaluate("""() => { const s = window.attentionProfiled.calculators[0].state();
            return {stale: s.stale, config: s.config, result: s.result && {
              activeBlocks: s.result.activeBlocks, activeWarps: s.result.activeWarps,
              occupancy: s.result.occupancy, limiters: s.result.limiters}}; }""")

    def load(self, **config):
        self.page.evaluate("(c) => window.attentionProfiled.calculators[0].load(c)", config)

    def field(self, key: str):
        return self.page.locator(f'.apo-field[data-field="{key}"]')

    def type(self, key: str, text: str):
        self.field(key).locator('input[type="text"]').fill(text)

    def query(self) -> dict:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.page.url).query, keep_blank_values=True).items()}

    def wait_for_query(self, expected: str):
        self.page.wait_for_function("(q) => location.search === '?' + q", arg=expected, timeout=5000)

    def close(self):
        self.context.close()


@pytest.fixture
def open_page(browser, page_html):
    pages: list[Page] = []

    def open_(query: str = "", viewport=(1400, 900)) -> Page:
        p = Page(browser, page_html, viewport).open(query)
        pages.append(p)
        return p

    yield open_
    for p in pages:
        p.close()


def answer(result) -> dict:
    return {"activeBlocks": result.active_blocks, "activeWarps": result.active_warps,
            "occupancy": result.occupancy, "limiters": [k for k in LIMITERS if k in result.limiters]}


def config_of(result) -> dict:
    spec = result.gpu
    return {"gpu": spec.product or spec.capability_str, "threads": result.threads_per_block,
            "registers": result.registers_per_thread, "smem": result.shared_memory_per_block,
            "carveout": result.carveout, "limit": result.shared_memory_limit}


# ------------------------------------------------------------------------ the arithmetic: a sweep

def test_sweep_of_every_gpu_agrees_with_helpers_occupancy(open_page):
    """Every compute capability and product: block sizes, registers and shared-memory sizes with
    the edges and one over each limit, every carveout, both limits. Active blocks, warps and
    limiters agree, and every input Python refuses throws the same message."""
    p = open_page()
    result = cs.run_sweep(p.page, cs.cases())
    assert result["configurations"] > 500_000 and result["rejected"] > 0
    assert not result["mismatches"], (f"{len(result['mismatches'])} of {result['configurations']} "
                                      f"disagree, e.g. (config, page, python): {result['mismatches'][:5]}")
    assert not p.problems, p.problems


def test_random_configurations_agree_in_full(open_page):
    """The fixed API's whole answer: occupancy as a fraction, limiters in order, or the message."""
    p = open_page()
    configs = cs.random_configs(4000, seed=3)
    got = cs.page_answers(p.page, configs)
    want = [cs.python_answer(*c) for c in configs]
    bad = [(c, g, w) for c, g, w in zip(configs, got, want) if g != w]
    assert not bad, bad[:5]
    assert sum("error" in w for w in want) > 100 and sum("error" not in w for w in want) > 1000


REJECTED = [
    # the GPU
    ("GTX 9999", 128, 32, 0, None, "opt-in"), ("sm_99", 128, 32, 0, None, "opt-in"),
    ("9.5", 128, 32, 0, None, "opt-in"), ("6.1", 128, 32, 0, None, "opt-in"),
    ("", 128, 32, 0, None, "opt-in"), (None, 128, 32, 0, None, "opt-in"), (90, 128, 32, 0, None, "opt-in"),
    ((5, 0), 128, 32, 0, None, "opt-in"), ((True, False), 128, 32, 0, None, "opt-in"),
    ("NVIDIA H100 PCIe", 128, 32, 0, None, "opt-in"), ("it's \"quoted\"", 128, 32, 0, None, "opt-in"),
    # values of the wrong kind, each argument in turn
    ("9.0", 12.5, 32, 0, None, "opt-in"), ("9.0", "128", 32, 0, None, "opt-in"),
    ("9.0", True, 32, 0, None, "opt-in"), ("9.0", None, 32, 0, None, "opt-in"),
    ("9.0", float("nan"), 32, 0, None, "opt-in"), ("9.0", float("inf"), 32, 0, None, "opt-in"),
    ("9.0", 128, 0.5, 0, None, "opt-in"), ("9.0", 128, 1e-5, 0, None, "opt-in"),
    ("9.0", 128, "", 0, None, "opt-in"), ("9.0", 128, 32, 1.5e-7, None, "opt-in"),
    ("9.0", 128, 32, "48K", None, "opt-in"), ("9.0", 128, 32, 0, 2.5, "opt-in"),
    ("9.0", 128, 32, 0, "default", "opt-in"), ("9.0", 128, 32, 0, False, "opt-in"),
    # out of range
    ("9.0", 0, 32, 0, None, "opt-in"), ("9.0", 1025, 32, 0, None, "opt-in"),
    ("9.0", -5, 32, 0, None, "opt-in"), ("9.0", 1e21, 32, 0, None, "opt-in"),
    ("9.0", 128, 256, 0, None, "opt-in"), ("9.0", 128, -1, 0, None, "opt-in"),
    ("H200", 128, 32, -1, None, "opt-in"), ("T4", 128, 32, 10**6, None, "opt-in"),
    ("RTX 5090", 128, 32, 102401, None, "default"),
    ("9.0", 128, 32, 0, -1, "opt-in"), ("9.0", 128, 32, 0, 101, "opt-in"),
    ("9.0", 128, 32, 0, None, "max"), ("9.0", 128, 32, 0, None, None), ("9.0", 128, 32, 0, None, 1),
]


def test_every_rejected_input_throws_the_message_of_helpers_occupancy(open_page):
    p = open_page()
    got = cs.page_answers(p.page, REJECTED)
    for config, g in zip(REJECTED, got):
        want = cs.python_answer(*config)
        assert "error" in want, config
        assert g == want, config
    # and the message names the limit
    assert "1024" in got[REJECTED.index(("9.0", 1025, 32, 0, None, "opt-in"))]["error"]


GPU_NAMES = [*PRODUCTS, *(f"{a}" for a in ("9.0", "sm_90", "sm90", "sm_90a", "compute_75", "sm_100",
                                            "sm_100f", "sm_120", " 8.6 ", "SM_89", "10.3", "11.0")),
             "NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB",
             "Tesla T4", "NVIDIA L40S", "NVIDIA L4", "NVIDIA A10G", "NVIDIA H100 80GB HBM3",
             "NVIDIA B200", "NVIDIA GeForce RTX 5090", "h200", "rtx 5090", "NVIDIA H100 PCIe",
             "NVIDIA A10", "NVIDIA L40", "NVIDIA GeForce RTX 5090 Laptop GPU", "NVIDIA H100 NVL",
             "AMD Instinct MI300X", "9.10", "sm_9", "", "  "]


def test_gpu_names_resolve_as_gpu_spec_does(open_page):
    p = open_page()
    got = p.page.evaluate("""(names) => names.map((n) => {
        try { const s = window.attentionProfiled.calculators[0].calc.gpuSpec(n);
              return {capability: s.capability, product: s.product, smCount: s.smCount, name: s.name}; }
        catch (err) { return {error: err.message}; } })""", GPU_NAMES)
    for name, g in zip(GPU_NAMES, got):
        try:
            spec = gpu_spec(name)
            want = {"capability": spec.capability_str, "product": spec.product,
                    "smCount": spec.sm_count, "name": spec.name}
        except ValueError as err:
            want = {"error": str(err)}
        assert g == want, name


def test_values_are_spelled_as_python_spells_them(open_page):
    """repr() in the messages and f"{x:.1f}" in the readouts, including Python's ties to even."""
    p = open_page()
    values = [0.1, 0.5, 12.5, 1e-4, 1e-5, 1.5e-7, 123456.789, 1e15 + 0.5, 2.5e-300, -3.75,
              float("nan"), float("inf"), float("-inf"), "abc", "it's", 'say "x"', "a\\b", "tab\there",
              "é", True, None, (1, 2), ("opt-in",)]
    got = p.page.evaluate("(vs) => vs.map(v => window.attentionProfiled.py.repr(v))", values)
    assert got == [repr(v) for v in values]
    fractions = [6.25, 0.25, 0.35, 2.675, 12.5, 18.75, 100 * (1 / 48), 100 * (31 / 64), 0.0, 99.95]
    got = p.page.evaluate("(vs) => vs.map(v => window.attentionProfiled.py.fixed(v, 1))", fractions)
    assert got == [f"{v:.1f}" for v in fractions]


# ------------------------------------------------------------------------------- what it shows

def _shown(p: Page) -> dict:
    return p.page.evaluate("""() => {
      const root = document.querySelector('[data-apo-calculator]');
      const text = (sel) => [...root.querySelectorAll(sel)].map(e => e.textContent.trim());
      const table = {};
      for (const tr of root.querySelectorAll('.apo-resources tbody tr')) {
        // (units are kept with their numbers by a non-breaking space)
        const cell = (k) => tr.querySelector(`[data-out="${k}"]`).textContent.replace(/\u00a0/g, ' ');
        table[tr.dataset.resource] = {used: cell('used'), capacity: cell('capacity'), left: cell('left'),
                                      allows: cell('allows'), limiting: tr.classList.contains('apo-limiting')};
      }
      const panels = {};
      for (const fig of root.querySelectorAll('.apo-panel')) {
        const area = (kind) => [...fig.querySelectorAll(`rect[data-kind="${kind}"]`)]
          .reduce((a, r) => a + r.width.baseVal.value * r.height.baseVal.value, 0);
        panels[fig.dataset.resource] = {fill: area('fill'), capacity: area('capacity'),
                                        limiter: fig.classList.contains('apo-limiter')};
      }
      const curves = {};
      for (const fig of root.querySelectorAll('.apo-curve')) {
        curves[fig.dataset.curve] = Number(fig.querySelector('.apo-line').dataset.points);
      }
      const out = {};
      for (const e of root.querySelectorAll('.apo-headline [data-out]')) out[e.dataset.out] = e.textContent;
      return {headline: out, table, panels, curves};
    }""")


def _series(p: Page) -> dict:
    return p.page.evaluate("""() => { const s = window.attentionProfiled.calculators[0].state().series;
        const out = {}; for (const k in s) out[k] = {xs: s[k].xs, occ: s[k].results.map(r => r.occupancy)};
        return out; }""")


def check_shows(p: Page, result) -> None:
    """The page shows ``result`` (an occupancy() result): numbers, table, curves and the SM."""
    state = p.state()
    assert not state["stale"]
    assert state["config"] == config_of(result)
    assert state["result"] == answer(result)
    shown = _shown(p)
    assert shown["headline"] == {"activeBlocks": str(result.active_blocks),
                                 "activeWarps": str(result.active_warps),
                                 "occupancy": f"{result.occupancy_pct:.1f}%",
                                 "limiters": limiter_label(result)}
    for row in utilization_rows(result):
        cells = shown["table"][row["resource"]]
        unit = " B" if row["unit"] == "B" else ""
        assert cells["used"] == f"{row['used']:,}{unit} ({100 * row['utilization']:.1f}%)"
        assert cells["capacity"] == f"{row['capacity']:,}{unit}"
        assert cells["left"] == f"{row['capacity'] - row['used']:,}{unit}"
        limit = result.block_limits[row["resource"]]
        assert cells["allows"] == ("no limit" if limit == UNLIMITED else
                                   f"{limit} block" + ("" if limit == 1 else "s"))
        assert cells["limiting"] == row["limiter"]
    for resource, panel in shown["panels"].items():
        assert panel["capacity"] > 0 or result.shared_memory_per_sm == 0
        drawn = panel["fill"] / panel["capacity"] if panel["capacity"] else 0.0
        assert math.isclose(drawn, result.utilization[resource], abs_tol=1e-6), resource
        assert panel["limiter"] == (resource in result.limiters), resource
    series = _series(p)
    want = impact_series(result.gpu, result.threads_per_block, result.registers_per_thread,
                         result.shared_memory_per_block, result.carveout, result.shared_memory_limit)
    for what, (xs, results) in want.items():
        assert series[what]["xs"] == xs, what
        assert series[what]["occ"] == [r.occupancy for r in results], what
        assert shown["curves"][what] == len(xs), what


def test_it_shows_what_helpers_occupancy_says(open_page):
    p = open_page()
    rng = random.Random(5)
    configs = [("H200", 384, 168, 134144, None, "opt-in"), ("9.0", 128, 255, 49152, None, "opt-in"),
               ("T4", 1024, 64, 0, None, "opt-in"), ("7.5", 128, 0, 0, None, "opt-in"),
               ("8.0", 128, 0, 0, 0, "opt-in"), ("H200", 128, 32, 60000, None, "default"),
               ("9.0", 1024, 255, 0, None, "opt-in")]
    for _ in range(14):
        gpu = rng.choice(cs.GPUS)
        spec = gpu_spec(gpu)
        percents = [None] + [c for c in range(0, 101, 7)]
        configs.append((gpu, rng.randint(1, spec.max_threads_per_block), rng.randint(0, 255),
                        rng.randint(0, spec.shared_memory_per_block_optin), rng.choice(percents),
                        rng.choice(cs.LIMITS)))
    for gpu, t, r, s, c, m in configs:
        result = occupancy(gpu, t, r, s, carveout=c, shared_memory_limit=m)
        p.load(**config_of(result))
        check_shows(p, result)
    assert not p.problems, p.problems


def test_hovering_a_curve_reads_out_its_point(open_page):
    p = open_page()
    result = occupancy("A100", 256, 64, 30000)
    p.load(**config_of(result))
    xs, results = impact_series("A100", 256, 64, 30000)["threads"]
    figure = p.page.locator('.apo-curve[data-curve="threads"]')
    figure.scroll_into_view_if_needed()
    box = figure.locator(".apo-hit").bounding_box()
    for i in (1, len(xs) // 2, len(xs) - 3):
        # the pointer over the i-th point: the readout speaks for it
        p.page.mouse.move(box["x"] + xs[i] / xs[-1] * box["width"], box["y"] + box["height"] / 2)
        r = results[i]
        assert figure.locator(".apo-readout").inner_text() == (
            f"{xs[i]}: {r.occupancy_pct:.1f}%, {r.active_blocks} block{'' if r.active_blocks == 1 else 's'}, "
            f"{r.active_warps} warps · {limiter_label(r)}")
    p.page.mouse.move(0, 0)
    assert figure.locator(".apo-readout").inner_text().startswith("◆ now 256: ")
    assert not p.problems, p.problems


def test_presets_load_each_traced_kernel(open_page, kernels):
    p = open_page()
    buttons = p.page.locator(".apo-preset")
    assert buttons.count() == len(kernels) > 0
    for i, row in enumerate(kernels.itertuples()):
        button = p.page.locator(f'.apo-preset[data-preset="k{i}"]')
        button.click()
        spec = gpu_spec(row.gpu)
        result = occupancy(spec, row.threads, row.registers, row.shared_memory)
        check_shows(p, result)
        assert button.get_attribute("aria-pressed") == "true"
        assert row.name in button.get_attribute("title") and row.label in button.inner_text()
    assert not p.problems, p.problems


# ---------------------------------------------------------------------------------- bad input

def _field_cases():
    h200 = gpu_spec("H200")
    return [("threads", t) for t in ("0", "1025", "-5", "12.5", "abc", "", "1e21", "2048")] + \
           [("registers", t) for t in ("256", "-1", "3.5", "x32")] + \
           [("shared_memory", t) for t in ("-1", str(h200.shared_memory_per_block_optin + 1),
                                           "1e6", "1.5", "48K")]


def test_a_refused_field_shows_the_message_and_the_results_go_stale(open_page):
    p = open_page()
    start = occupancy("H200", 256, 64, 20000)
    p.load(**config_of(start))
    check_shows(p, start)
    valid = {"threads": "256", "registers": "64", "shared_memory": "20000"}
    for key, text in _field_cases():
        p.type(key, text)
        args = {"threads": 256, "registers": 64, "shared_memory": 20000, key: cs.as_typed(text)}
        with pytest.raises(ValueError) as err:
            occupancy("H200", args["threads"], args["registers"], args["shared_memory"])
        message = p.field(key).locator(".apo-error")
        assert message.is_visible() and message.inner_text() == str(err.value), (key, text)
        assert p.field(key).locator('input[type="text"]').get_attribute("aria-invalid") == "true"
        state = p.state()
        assert state["stale"] and state["result"] == answer(start), (key, text)
        assert p.page.locator(".apo-stale-note").is_visible()
        assert _shown(p)["headline"]["activeBlocks"] == str(start.active_blocks)
        p.type(key, valid[key])
        assert not p.field(key).locator(".apo-error").is_visible()
        check_shows(p, start)
    # two bad fields at once: each says its own; fixing one leaves the results stale
    p.type("threads", "0")
    p.type("registers", "300")
    assert p.field("threads").locator(".apo-error").is_visible()
    assert p.field("registers").locator(".apo-error").is_visible()
    p.type("threads", "256")
    assert p.state()["stale"]
    p.type("registers", "64")
    check_shows(p, start)
    assert not p.problems, p.problems


def test_another_gpu_can_refuse_a_value_and_a_preset_recovers(open_page):
    p = open_page()
    big = occupancy("H200", 128, 32, 200_000)
    p.load(**config_of(big))
    p.page.select_option(".apo-field-gpu select", "T4")
    with pytest.raises(ValueError) as err:
        occupancy("T4", 128, 32, 200_000)
    assert p.field("shared_memory").locator(".apo-error").inner_text() == str(err.value)
    assert p.state()["stale"] and p.state()["result"] == answer(big)
    p.type("shared_memory", "1000")
    check_shows(p, occupancy("T4", 128, 32, 1000))
    p.page.locator(".apo-preset").first.click()
    assert not p.state()["stale"]
    assert not p.problems, p.problems


def test_the_sliders_and_selects_drive_the_same_numbers(open_page):
    p = open_page()
    p.load(**config_of(occupancy("L4", 128, 32, 0)))
    slider = p.field("registers").locator('input[type="range"]')
    slider.fill("200")   # sets the range input's value and fires input, as dragging does
    assert p.field("registers").locator('input[type="text"]').input_value() == "200"
    check_shows(p, occupancy("L4", 128, 200, 0))
    carveouts = p.page.locator(f'select[id$="-carveout"] option')
    values = [v for v in carveouts.evaluate_all("os => os.map(o => o.value)") if v]
    assert [int(v) for v in values] == [c["percent"] for c in carveout_percentages(gpu_spec("L4"))]
    for v in values:
        p.page.select_option('select[id$="-carveout"]', v)
        check_shows(p, occupancy("L4", 128, 200, 0, carveout=int(v)))
    p.page.locator('input[type="radio"][value="default"]').check()
    check_shows(p, occupancy("L4", 128, 200, 0, carveout=int(values[-1]), shared_memory_limit="default"))
    assert not p.problems, p.problems


# ------------------------------------------------------------------------------------- the URL

def test_a_link_reproduces_its_configuration_and_the_page_keeps_its_link(open_page, kernels):
    rng = random.Random(8)
    configs = [(r.gpu, r.threads, r.registers, r.shared_memory, None, "opt-in") for r in kernels.itertuples()][:4]
    for _ in range(6):
        gpu = rng.choice(cs.GPUS)
        spec = gpu_spec(gpu)
        configs.append((gpu, rng.randint(1, 1024), rng.randint(0, 255),
                        rng.randint(0, spec.shared_memory_per_block_optin),
                        rng.choice([None, rng.randint(0, 100)]), rng.choice(cs.LIMITS)))
    for gpu, t, r, s, c, m in configs:
        result = occupancy(gpu, t, r, s, carveout=c, shared_memory_limit=m)
        url = calculator_url(gpu, t, r, s, carveout=c, shared_memory_limit=m)
        p = open_page("?" + url.split("?", 1)[1])
        check_shows(p, result)
        assert not p.page.locator(".apo-notice").is_visible()
        # change it as a reader does: the address follows, and opening it again gives the same
        p.type("threads", "96")
        changed = occupancy(gpu, 96, r, s, carveout=c, shared_memory_limit=m)
        expected = calculator_query(gpu, 96, r, s, carveout=c, shared_memory_limit=m)
        p.wait_for_query(expected)
        assert p.page.locator(".apo-share-link").get_attribute("href") == "?" + expected
        again = open_page("?" + expected)
        check_shows(again, changed)
        assert not p.problems and not again.problems, p.problems + again.problems


def test_the_address_keeps_other_parameters_and_a_section(open_page):
    p = open_page("?highlight=occupancy#the-calculator")
    assert not p.page.locator(".apo-notice").is_visible()
    p.type("registers", "40")
    p.page.wait_for_function("() => location.search.includes('registers=40')")
    assert p.query()["highlight"] == "occupancy"
    assert urlsplit(p.page.url).fragment == "the-calculator"
    assert not p.problems, p.problems


BAD_LINKS = [
    {"gpu": "XYZ"}, {"gpu": ""}, {"gpu": "sm_99"}, {"threads": "abc"}, {"threads": "2000"},
    {"threads": "0"}, {"registers": "12.5"}, {"registers": "-3"}, {"smem": "999999999"},
    {"gpu": "T4", "smem": "200000"}, {"carveout": "150"}, {"carveout": "half"}, {"limit": "max"},
    {"gpu": "XYZ", "threads": "abc", "limit": ""},
]


@pytest.mark.parametrize("params", BAD_LINKS, ids=lambda d: "&".join(f"{k}={v}" for k, v in d.items()))
def test_a_bad_link_says_so_and_falls_back_to_the_defaults(open_page, params, page_html):
    from urllib.parse import urlencode
    p = open_page("?" + urlencode(params))
    notice = p.page.locator(".apo-notice")
    assert notice.is_visible()
    text = notice.inner_text()
    # each refused value is named, with the words helpers.occupancy uses for it; no other
    refused = {}
    gpu = "H200"
    if "gpu" in params:
        try:
            gpu = gpu_spec(params["gpu"])
        except ValueError as err:
            refused["gpu"] = str(err)
            gpu = "H200"
    fields = {"threads": "threads_per_block", "registers": "registers_per_thread",
              "smem": "shared_memory_per_block"}
    for key, value in params.items():
        args = {"threads_per_block": 128, "registers_per_thread": 0, "shared_memory_per_block": 0}
        if key in fields:
            args[fields[key]] = cs.as_typed(value)
        elif key == "carveout":
            args["carveout"] = cs.as_typed(value)
        elif key == "limit":
            args["shared_memory_limit"] = value
        else:
            continue
        try:
            occupancy(gpu, **args)
        except ValueError as err:
            refused[key] = str(err)
    assert refused, "every link here has a refused value"
    for key, value in params.items():
        assert (f"{key}={value}" in text) == (key in refused), key
        if key in refused:
            assert refused[key] in text, key
    # the defaults: the calculator's initial configuration, computed and shown
    initial = p.page.evaluate("() => JSON.parse(document.querySelector('.apo-data').textContent).initial")
    state = p.state()
    assert state["config"] == initial and not state["stale"]
    check_shows(p, occupancy(initial["gpu"], initial["threads"], initial["registers"], initial["smem"],
                             carveout=initial["carveout"], shared_memory_limit=initial["limit"]))
    assert not p.problems, p.problems


def test_a_huge_field_is_refused_at_once_with_a_short_message(open_page):
    """A link or a field with 50,000 digits and an x (the number pattern was once quadratic: such a
    link froze the tab): the page answers, with helpers.occupancy's message for the field's text
    shortened, and the results of the last valid configuration marked stale."""
    digits = "1" * 50_000 + "x"
    with pytest.raises(ValueError) as refused:
        occupancy("H200", cs.as_typed(digits), 0, 0)
    message = str(refused.value)
    assert len(message) < 200
    p = open_page("?threads=" + digits)
    notice = p.page.locator(".apo-notice")
    assert notice.is_visible() and message in notice.inner_text() and len(notice.inner_text()) < 2000
    p.type("threads", digits)
    error = p.field("threads").locator(".apo-error")
    assert error.inner_text() == message and p.state()["stale"]
    # a number of ordinary length still reads as one, with spaces, sign, point and exponent
    for text in (" +128 ", "1.28e2", "128.", ".5e3"):
        p.type("threads", text)
        assert p.state()["config"]["threads"] == float(text) and not p.state()["stale"]
    assert not p.problems, p.problems


def test_outside_the_book_the_address_is_left_alone(browser, page_html):
    """In JupyterLab or Colab the page is not a Sphinx page: the URL is not the calculator's."""
    html = page_html.replace(' data-content_root="../"', "")
    p = Page(browser, html).open("?gpu=T4")
    try:
        initial = p.page.evaluate("() => JSON.parse(document.querySelector('.apo-data').textContent).initial")
        assert p.state()["config"] == initial
        p.type("threads", "64")
        p.page.wait_for_timeout(400)
        assert urlsplit(p.page.url).query == "gpu=T4"
        assert not p.page.locator(".apo-share").is_visible()
        assert not p.problems, p.problems
    finally:
        p.close()


def test_the_output_is_self_contained(kernels):
    """No src or href that leaves the output, and nothing that loads widgets: nothing to fetch."""
    output = calculator(presets_from=kernels).to_html()
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=""", output)
    assert "require(" not in output and "import(" not in output and "fetch(" not in output
    assert "needs a kernel" not in output and "needs a running" not in output
