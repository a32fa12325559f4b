"""The guess-first questions (helpers/views/guess.py, js/guess.js) in headless Chromium.

The page holds the questions' own notebook outputs (what the book, JupyterLab and Colab show),
served from memory at http://book.test/notebooks/questions.html; every other request is aborted
and reported. The JavaScript judge is held to the Python one on a sweep of inputs (every verdict
and every message the same), the questions are answered as a reader answers them (mouse and
keyboard alone, at 1400×900 and 390×844), and the same output works in a sandboxed frame as Colab
shows outputs (no same-origin: no localStorage). Every expected verdict comes from
``guess.judge`` on keys computed from the replay set's traces; none is typed in.
"""
from __future__ import annotations

import html
import itertools
import random

import pytest

from helpers import profile_stage
from helpers.views import guess

pytestmark = pytest.mark.browser

BASE = "http://book.test"
PATH = "/notebooks/questions.html"
STAGES = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "naive_compiled", "flex"]

# The book's own words for the kernels of a stage's forward, as its prose names them, each with the
# verdict the book's reading implies: typed here from the chapters' text ("the fused kernel",
# "FlashAttention-2's forward", "a kernel that cuDNN generates", "xformers' CUTLASS kernel",
# "attention code written in Triton"), never read from guess.WORDS
BOOK_PHRASES = {
    "naive_compiled": {"right": ["memset, gemm, fused, gemm", "memset, matmul, fused kernel, matmul", "memset, cuBLAS, Triton, cuBLAS",
                                 "memset, nvjet, triton kernel, nvjet", "memset → gemm → fusion → gemm",
                                 "memset, gemm, Inductor, gemm"],
                       "wrong": ["memset, gemm, softmax, gemm", "memset, gemm, attention, gemm", "memset, gemm, flash, gemm"]},
    "sdpa_flash": {"right": ["fused", "flash", "FlashAttention-2", "FlashAttention", "flash attention", "attention",
                             "Fused", "SDPA"],
                   "wrong": ["triton", "cudnn", "memset, fused", "fused, fused", "gemm, softmax, gemm"]},
    "sdpa_cudnn": {"right": ["memset, cuDNN", "memset, fused", "memset, attention"],
                   "wrong": ["cuDNN", "memset, triton", "memset, CUTLASS"]},
    "sdpa_efficient": {"right": ["CUTLASS", "fused", "xformers", "memory-efficient", "fmha"],
                       "wrong": ["flash", "triton", "cuDNN"]},
    "flex": {"right": ["triton", "Triton", "fused", "attention", "FlexAttention", "flex attention"],
             "wrong": ["flash", "cuDNN", "CUTLASS", "gemm, softmax, gemm"]},
}

# the units a reader types, each with its size in the key's unit: typed here (both µ: U+00B5 and
# U+03BC), never read from guess.UNITS
READER_UNITS = {
    " GiB": [("GiB", 1), (" gib", 1), ("MiB", 2 ** -10), (" KiB", 2 ** -20), ("GB", 1e9 / 2 ** 30),
             (" MB", 1e6 / 2 ** 30), (" bytes", 2 ** -30)],
    " µs": [("\u00b5s", 1), (" \u00b5s", 1), ("\u03bcs", 1), (" \u03bcs", 1), ("us", 1), (" ms", 1e3),
            ("ns", 1e-3), (" s", 1e6)],
    " warps": [(" warps", 1), ("warps", 1), (" warp", 1), (" Warps", 1)],
    " kernels": [(" kernels", 1), (" kernel", 1)],
    "%": [("%", 1), (" %", 1), (" percent", 1)],
    "×": [("×", 1), (" ×", 1), ("x", 1), (" X", 1), (" times", 1)],
    " stages": [(" stages", 1)],
    " events": [(" events", 1), (" GPU events", 1)],
}
FOREIGN_UNITS = [" warps", " GiB", " µs", " kernels", "%", " furlongs", " stages"]


@pytest.fixture(scope="module")
def profiles():
    return {s: profile_stage(s, mode="replay", quiet=True) for s in STAGES}


@pytest.fixture(scope="module")
def keys(profiles) -> list[dict]:
    out = [guess.kernels_key(p) for p in profiles.values()]
    out.append(guess.speed_key(profiles["inplace"], profiles["naive"]))
    flash_us = profiles["sdpa_flash"].summary()["gpu_time_us"]
    out += [guess.number_key("n-rel", "How many µs?", flash_us, tolerance=0.25, unit=" µs"),
            guess.number_key("n-exact", "How many events?", len(profiles["naive"].kernels())),
            guess.number_key("n-neg", "A negative number?", -12.5, tolerance=0.1),
            guess.choice_key("c", "Which?", ["left", "right", "nowhere: it stays"], "right")]
    # a number in each unit the book's fields show, and a choice whose page names a tie
    naive_events = len(profiles["naive"].kernels())
    out += [guess.number_key("u-gib", "How many GiB?", 4.06, tolerance=0.25, unit=" GiB", decimals=2),
            guess.number_key("u-warps", "How many warps?", 8, unit=" warps"),
            guess.number_key("u-kernels", "How many kernels?", naive_events, unit=" kernels"),
            guess.number_key("u-pct", "What share?", 41.3, tolerance=0.2, unit="%"),
            guess.number_key("u-times", "How many times?", 37.5, tolerance=0.25, unit="×"),
            guess.number_key("u-stages", "How many stages?", 3, unit=" stages"),
            guess.number_key("u-events", "How many events?", naive_events, tolerance=0.1, unit=" events"),
            guess.choice_key("c-tie", "Which runs out first?", STAGES[:5], "sdpa_math",
                             accepted=["naive", "inplace", "sdpa_math"])]
    return out


def page_html(body: str) -> str:
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>questions</title>'
            f'</head><body><main><h1>Questions</h1>{body}</main></body></html>')


class Page:
    def __init__(self, browser, html: str, viewport=(1400, 900), color_scheme="light"):
        self.html, self.problems = html, []
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                           color_scheme=color_scheme)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type in ("error", "warning") and self.problems.append(
            f"console {m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"uncaught exception: {e}"))

    def _route(self, route):
        if route.request.url.split("?")[0] == BASE + PATH:
            route.fulfill(body=self.html, content_type="text/html; charset=utf-8")
        else:
            self.problems.append(f"request outside the page: {route.request.url}")
            route.abort()

    def open(self, wait: bool = True):
        self.page.goto(BASE + PATH, wait_until="load")
        if wait:
            self.page.wait_for_function("() => !!window.attentionProfiled?.guess")
        return self


@pytest.fixture
def open_page(browser):
    pages = []

    def open_(html: str, wait: bool = True, **kwargs) -> Page:
        p = Page(browser, html, **kwargs).open(wait)
        pages.append(p)
        return p

    yield open_
    for p in pages:
        p.context.close()


# --- the sweep: the JavaScript judge against the Python one ------------------------------------

def kernel_inputs(key: dict, rng: random.Random) -> list[str]:
    kinds = [a["kind"] for a in key["answer"]]
    vocabulary = list(key["kinds"]) + list(key["aliases"]) + [w for p in BOOK_PHRASES.values() for v in p.values()
                                                              for t in v for w in t.split(", ")]
    out = [", ".join(kinds), " , ".join(kinds) + " ,", "\n".join(kinds), " -> ".join(kinds), "→".join(kinds),
           ";".join(k.upper() for k in kinds), ", ".join(k.replace("_", " ") for k in kinds),
           ", ".join(reversed(kinds)), ", ".join(kinds[1:]), ", ".join(kinds + ["gemm"]),
           ", ".join(["gemm"] + kinds), "gemm, softmax, gemm", "matmul, masked fill, softmax, matmul",
           "", "   ", ",,,", "gemm, gemmm", "gemm, $&, {kinds}", "attention", "Memcpy , MEMSET",
           "masked-fill", "gemm\u00a0, softmax", "ｇｅｍｍ", "gemm, , softmax",
           # code as a reader pastes it: quotes, a namespace, a call, the in-place _
           "`masked_fill_`", "aten::masked_fill_", "torch.matmul(), F.softmax", "'copy_'", "\"gemm\"",
           "torch.nn.functional.scaled_dot_product_attention", "aten::", "`", "()", "_", "a.b::c_()",
           "x.\u2028gemm", "masked_fill__", "``gemm``", "matmul()()"]
    for _ in range(40):  # random lists over the vocabulary, of the answer's length and around it
        n = max(0, len(kinds) + rng.randint(-2, 2))
        out.append(", ".join(rng.choice(vocabulary + kinds * 3) for _ in range(n)))
    for _ in range(20):  # each kernel named by one of the words it answers to, in any case
        out.append(", ".join(rng.choice(a["words"] + [a["kind"]]).upper() if rng.random() < 0.2 else
                             rng.choice(a["words"] + [a["kind"]]) for a in key["answer"]))
    for phrases in BOOK_PHRASES.values():
        out += phrases["right"] + phrases["wrong"]
    return out


def number_inputs(key: dict) -> list[str]:
    a, t = key["answer"], key["tolerance"]
    values = [a, a * (1 + t), a * (1 - t), a * (1 + t) * 1.0000001, a * (1 - t) * 0.9999999, 0, -a, a * 10,
              a + 1, a - 1, round(a), round(a, 1)]
    out = [repr(v) for v in values] + [f"{v:.2f}" for v in values]
    out += [f"{a:,.1f}", f"{a}×", f"{a} x", f"{a}%", f" {a} µs ", f"{a}us", "1e3", "1e400", ".5", "5.",
            "+3", "--3", "3.4.5", "abc", "", " ", "12 warps", "twelve", "NaN", "Infinity", "0x10", "1_000",
            "\u0663", "\uff11\uff12", "12\u00a0GiB", "1e3 ms", "-4 GiB", "4 GiB 2", "GiB 4", "4 Gib", "4 gIB",
            "\u039cS", "4,096.5 MiB", "4 µ s", "1e400 GiB", "1e308 TB", "4 \u00b5", "4\nGiB", "4e", "4 e3"]
    # an estimate, hedged as a reader writes one (the words typed here, not read from guess.HEDGES)
    out += [f"{h}{v}" for h in ("about ", "About ", "around ", "~", "~ ", "≈", "≈ ", "roughly ", "approx. ",
                                "approximately ", "circa ", "about ~", "around", "aboutness ", "nearly ",
                                "close to ", "about", "ABOUT ", "İabout ", "about about ")
            for v in (f"{a:g}", f"{a * 3:g}")]
    out += [f"about {a:g}{u}" for u, _ in READER_UNITS.get(key["unit"], [])[:2]]
    # the answer in every unit a reader may type, on both sides of the tolerance, and in units of
    # other fields
    for spelling, factor in READER_UNITS.get(key["unit"], []):
        for v in (a, a * (1 + t), a * (1 - t) * 0.999, a * (1 + t) * 1.001, a * 2):
            out += [f"{v / factor!r}{spelling}", f"{v / factor:.3f}{spelling}"]
    out += [f"{a!r}{u}" for u in FOREIGN_UNITS]
    return out


def choice_inputs(key: dict) -> list[str]:
    return [*key["options"], *(f"  {o} " for o in key["options"]), *(o.upper() for o in key["options"]),
            "", "neither", "$&"]


def test_the_javascript_judge_agrees_with_python_on_a_sweep(open_page, keys):
    rng = random.Random(20)
    cases = []
    for key in keys:
        texts = (kernel_inputs(key, rng) if key["type"] == "kernels" else
                 number_inputs(key) if key["type"] == "number" else choice_inputs(key))
        cases += [(key, t) for t in texts]
    # the kernels keys judged against each other's answers too: every pair of stages
    kernel_keys = [k for k in keys if k["type"] == "kernels"]
    for a, b in itertools.product(kernel_keys, repeat=2):
        cases.append((a, ", ".join(x["kind"] for x in b["answer"])))
    page = open_page(page_html(guess.Question(keys[0]).to_html()))
    got = page.page.evaluate("(cases) => cases.map(([k, t]) => window.attentionProfiled.guess.judge(k, t))",
                             [[k, t] for k, t in cases])
    want = [guess.judge(k, t) for k, t in cases]
    mismatched = [(k["id"], t, g, w) for (k, t), g, w in zip(cases, got, want) if g != w]
    assert not mismatched, mismatched[:5]
    assert len(cases) > 1500
    # and the browser reads the book's words and units as the book does, whatever Python says
    js = {(k["id"], t): g.get("verdict") for (k, t), g in zip(cases, got)}
    for stage, phrases in BOOK_PHRASES.items():
        for verdict in ("right", "wrong"):
            for t in phrases[verdict]:
                assert js[(f"{stage}-kernels", t)] == verdict, (stage, t)
    for key in keys:
        for spelling, factor in READER_UNITS.get(key.get("unit"), []):
            assert js[(key["id"], f"{key['answer'] / factor!r}{spelling}")] == "right", (key["id"], spelling)
            assert js[(key["id"], f"{key['answer'] * 2 / factor!r}{spelling}")] == "wrong", (key["id"], spelling)
    assert [js[("c-tie", o)] for o in STAGES[:5]] == ["right", "right", "right", "wrong", "wrong"]
    # the sweep reaches every outcome: right, wrong, each kind of bad input
    outcomes = {w.get("verdict") or w["message"].split(" ")[0] for w in want}
    assert {"right", "wrong", "Type", "Not", "Pick"} <= outcomes, outcomes
    assert any(not w["valid"] and "is not a number" in w["message"] for w in want)
    assert any(not w["valid"] and "is not in GiB" in w["message"] for w in want)
    assert any(not w["valid"] and "is not one of the options" in w["message"] for w in want)
    statuses = {i["status"] for w in want if w["valid"] for i in w["items"]}
    assert statuses == {"matched", "missing", "extra", "misplaced", "moved", "surplus", "differs"}
    assert not page.problems, page.problems


# --- as a reader answers -----------------------------------------------------------------------

def right_text(key: dict) -> str:
    if key["type"] == "kernels":
        return ", ".join(a["kind"] for a in key["answer"])
    return repr(key["answer"]) if key["type"] == "number" else key["answer"]


def wrong_text(key: dict) -> str:
    if key["type"] == "kernels":
        kinds = [a["kind"] for a in key["answer"]]
        return ", ".join(kinds + ["softmax"])
    if key["type"] == "number":
        return repr(key["answer"] * 3 + 7)
    return next(o for o in key["options"] if o not in key["accepted"])  # a tie's answers are all right


def answer(page, key: dict, text: str, keyboard: bool = False) -> None:
    root = page.locator(f'[data-apq="{key["id"]}"]')
    if key["type"] == "choice":
        radio = root.locator(f'input[type=radio][value="{text}"]')
        if keyboard:
            radio.focus()
            page.keyboard.press("Space")
            page.keyboard.press("Tab")  # out of the radio group, onto Look at the trace
            page.keyboard.press("Enter")
        else:
            radio.check()
            root.locator("button.apq-look").click()
    else:
        field = root.locator("input.apq-input")
        if keyboard:
            field.focus()
            page.keyboard.press("Control+A")
            page.keyboard.type(text)
            page.keyboard.press("Enter")
        else:
            field.fill(text)
            root.locator("button.apq-look").click()


@pytest.mark.parametrize("viewport", [(1400, 900), (390, 844)], ids=["laptop", "phone"])
def test_a_reader_guesses_and_the_key_decides(open_page, keys, viewport):
    group = guess.Questions([guess.Question(k) for k in keys])
    p = open_page(page_html(group.to_html()), viewport=viewport)
    page = p.page
    for key in keys:
        root = page.locator(f'[data-apq="{key["id"]}"]')
        for text, keyboard in ((wrong_text(key), False), (right_text(key), True)):
            answer(page, key, text, keyboard)
            want = guess.judge(key, text)["verdict"]
            assert root.get_attribute("data-apq-verdict") == want, (key["id"], text)
            result = root.locator(".apq-result")
            assert result.is_visible()
            # the reader's own words, beside the trace's
            words = [t for t in (x.strip() for x in text.replace("→", ",").split(",")) if t]
            shown = result.inner_text()
            assert all(w in shown for w in words), (words, shown)
            assert key["answerText"] in shown
            # each row says its status in Python's words (guess.STATUSES), whatever the script holds
            rows = result.locator(".apq-items tbody tr")
            statuses = [i["status"] for i in guess.judge(key, text)["items"]]
            assert rows.count() == len(statuses)
            for i, status in enumerate(statuses):
                assert rows.nth(i).get_attribute("class") == f"apq-{status}"
                assert rows.nth(i).locator(".apq-status").inner_text() == guess.STATUSES[status], (key["id"], status)
        # bad input: a message, never a verdict
        if key["type"] != "choice":
            root.locator("input.apq-input").fill("")
            root.locator("button.apq-look").click()
            assert root.locator(".apq-message").inner_text() == key["messages"]["empty"]
            bad = "gemmm" if key["type"] == "kernels" else "twelve"
            root.locator("input.apq-input").fill(bad)
            root.locator("button.apq-look").click()
            assert root.locator(".apq-message").inner_text() == guess.judge(key, bad)["message"]
            assert root.locator(".apq-result").is_hidden()
            assert root.locator("input.apq-input").get_attribute("aria-invalid") == "true"
    # nothing wider than the screen
    assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport[0]
    page.screenshot(path=f"/tmp/apq-{viewport[0]}.png", full_page=True)
    assert not p.problems, p.problems


def test_reveal_without_a_guess_by_keyboard_and_links_to_what_explains(open_page, keys):
    key = keys[0]  # naive's kernels
    rows = "".join(f'<tr id="{a["href"][1:]}"><td>{a["label"]}</td></tr>' for a in key["answer"])
    table = f'<div id="{key["explainedBy"]["href"][1:]}"><table>{rows}</table></div>'
    p = open_page(page_html(guess.Question(key).to_html() + table))
    page = p.page
    page.locator("input.apq-input").focus()
    page.keyboard.press("Tab")  # Look at the trace
    page.keyboard.press("Tab")  # Just reveal
    assert page.evaluate("() => document.activeElement.className") == "apq-reveal"
    page.keyboard.press("Enter")
    root = page.locator(f'[data-apq="{key["id"]}"]')
    assert root.get_attribute("data-apq-verdict") == "revealed"
    assert root.locator(".apq-items tbody tr").count() == len(key["answer"])
    # a wrong guess: each missing event links to its row, which exists
    answer(page, key, "gemm, softmax, gemm")
    links = root.locator("tr.apq-missing a.apq-why")
    assert links.count() == len(key["answer"]) - 3
    links.first.click()
    target = links.first.get_attribute("href")[1:]
    assert page.evaluate("() => document.activeElement.id") == target
    assert not p.problems, p.problems


def test_a_return_visit_shows_the_kept_guess_and_the_scorecard_lists_it(browser, keys):
    p = Page(browser, page_html(guess.Question(keys[0]).to_html())).open()
    try:
        answer(p.page, keys[0], "gemm, softmax, gemm")
        stored = p.page.evaluate("(k) => JSON.parse(localStorage.getItem(k))", guess.STORAGE_KEY)
        assert stored[keys[0]["id"]]["guess"] == "gemm, softmax, gemm"
        assert stored[keys[0]["id"]]["verdict"] == guess.judge(keys[0], "gemm, softmax, gemm")["verdict"]
        p.page.reload()
        p.page.wait_for_function("() => !!window.attentionProfiled?.guess")
        root = p.page.locator(f'[data-apq="{keys[0]["id"]}"]')
        assert root.locator("input.apq-input").input_value() == "gemm, softmax, gemm"
        assert "earlier visit" in root.locator(".apq-result").inner_text()
        # the scorecard, on another page of the same book
        p.html = page_html(guess.scorecard().to_html())
        p.page.reload()
        p.page.wait_for_selector(".apq-score table")
        text = p.page.locator(".apq-score").inner_text()
        assert "gemm, softmax, gemm" in text and keys[0]["question"] in text and "Questions" in text
        p.page.locator("button.apq-clear").click()
        assert "No guesses kept" in p.page.locator(".apq-score").inner_text()
        assert p.page.evaluate("(k) => localStorage.getItem(k)", guess.STORAGE_KEY) is None
        assert not p.problems, p.problems
    finally:
        p.context.close()


def test_the_question_works_in_a_sandboxed_frame_as_colab_shows_outputs(open_page, keys):
    # Colab runs each output in its own sandboxed iframe; without allow-same-origin there is no
    # localStorage (it throws), and the question must work all the same
    key = keys[1]
    inner = page_html(guess.Question(key).to_html())
    frame = f'<iframe sandbox="allow-scripts" style="width:100%;height:700px" srcdoc="{html.escape(inner, quote=True)}"></iframe>'
    p = open_page(page_html(frame), wait=False)
    f = p.page.frame_locator("iframe")
    f.locator("[data-apq-mounted]").wait_for()
    f.locator("input.apq-input").fill(wrong_text(key))
    f.locator("button.apq-look").click()
    root = f.locator(f'[data-apq="{key["id"]}"]')
    assert root.get_attribute("data-apq-verdict") == guess.judge(key, wrong_text(key))["verdict"]
    assert "softmax" in root.locator(".apq-result").inner_text()
    assert not [x for x in p.problems if "localStorage" in x or "uncaught" in x], p.problems


def test_the_guesses_a_reader_wrote_are_judged_as_the_book_reads_them(open_page, profiles):
    """Guesses readers typed that were judged falsely, each judged again by Python and by the
    page's script: 03's first matmul (the trace has two gemms; the alignment placed the guess
    elsewhere) is "misplaced", never "not in the trace"; 01's "copy" is the memcpy the prose calls
    a copy; 02's `masked_fill_` is the op the page is about; 05's "about 40" is a number."""
    math_key, naive_key, inplace_key = (guess.kernels_key(profiles[s]) for s in ("sdpa_math", "naive", "inplace"))
    ratio = guess.number_key("hbm-ratio", "How many times more bytes?", 40.0, tolerance=0.25, unit="×")
    cases = [(math_key, "matmul, scale, where, softmax, matmul"),
             (naive_key, "memset, gemm, elementwise, copy, masked_fill, softmax, gemm"),
             (inplace_key, "memset, gemm, elementwise, `masked_fill_`, softmax, gemm"),
             (inplace_key, "memset, matmul, mul, aten::masked_fill_, torch.softmax(), torch.matmul"),
             (ratio, "about 40"), (ratio, "~40×"), (ratio, "roughly 45 times")]
    page = open_page(page_html(guess.Question(math_key).to_html()))
    got = page.page.evaluate("(cases) => cases.map(([k, t]) => window.attentionProfiled.guess.judge(k, t))",
                             [[k, t] for k, t in cases])
    for judged in (got, [guess.judge(k, t) for k, t in cases]):
        first = judged[0]
        assert first["valid"], first
        matmuls = [i["status"] for i in first["items"] if i["guess"] == "matmul"]
        assert sorted(matmuls) == ["matched", "misplaced"], first["items"]
        # the gemm the first matmul did not meet is "in your guess, at another place", not missing
        gemms = [i["status"] for i in first["items"] if i["trace"].startswith("gemm")]
        assert sorted(gemms) == ["matched", "moved"], first["items"]
        assert [j.get("verdict") for j in judged[1:]] == ["right"] * 6, judged[1:]
    assert not page.problems, page.problems


def test_the_result_names_its_source_and_says_nothing_for_it(open_page):
    """A figure computed from the counters is not what "the counters says": the result line reads
    "from the counters: 37.2×"."""
    key = guess.number_key("w", "How many times?", 37.2, tolerance=0.25, unit="×", source="the counters")
    p = open_page(page_html(guess.Question(key).to_html()))
    answer(p.page, key, "about 40")
    head = p.page.locator(".apq-verdict").inner_text()
    assert "from the counters: 37.2×" in head and "says" not in head, head
    p.page.locator("button.apq-reveal").click()
    head = p.page.locator(".apq-verdict").inner_text()
    assert "From the counters: 37.2×" in head and "says" not in head, head
    assert not p.problems, p.problems


# the width of the book's article at 1400 px (sphinx-book-theme), and a phone's
ARTICLE_PX = {1400: 760, 390: 358}
LINES_JS = """(sel) => [...document.querySelectorAll(sel)].map((td) => {
  const range = document.createRange(); range.selectNodeContents(td);
  const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
  return {text: td.textContent, lines: tops.size, width: td.getBoundingClientRect().width};
})"""


@pytest.mark.parametrize("width", [1400, 390])
def test_the_result_table_breaks_your_words_between_words(open_page, profiles, width):
    """The "you said" column beside long kernel names: each word the reader typed on one line (the
    column is never squeezed to a letter or two), at 1400 px (the book's article) and 390 px."""
    key = guess.kernels_key(profiles["sdpa_math"])
    body = f'<div style="max-width:{ARTICLE_PX[width]}px">{guess.Question(key).to_html()}</div>'
    p = open_page(page_html(body), viewport=(width, 900 if width > 500 else 844))
    text = "matmul, scale, masked_fill, softmax, elementwise, memory-efficient, matmul, flashattention-2"
    answer(p.page, key, text)
    cells = p.page.evaluate(LINES_JS, ".apq-result td.apq-guess")
    said = [c for c in cells if c["text"] != "—"]
    assert len(said) == len(text.split(", "))
    broken = [c for c in said if c["lines"] > 1]
    assert not broken, broken
    statuses = p.page.evaluate(LINES_JS, ".apq-result .apq-status")
    assert not [s for s in statuses if s["lines"] > len(s["text"].split())], statuses
    p.page.screenshot(path=f"/tmp/apq-result-{width}.png", full_page=True)
    assert p.page.evaluate("() => document.documentElement.scrollWidth") <= width
    assert not p.problems, p.problems
