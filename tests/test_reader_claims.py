"""Issue 29's claims, read from the built book (conftest's one build, or ATTN_PROFILED_BOOK_HTML)
and held to the raw recordings with plain code: math against in-place, the closing table's lessons
and the article's figures, GPU events against kernels, in-place's peak, the hub page's provenance
and its one speed definition, chapter 10's sentences, cuDNN's CPU split, the intro's chapter list,
and no maintainer command or Python repr on a reader's page."""
from __future__ import annotations

import gzip
import html as htmllib
import json
import re
from pathlib import Path

import pytest

from conftest import BOOK_GROUP, ROOT, raw_last_step, raw_per_step

pytestmark = BOOK_GROUP
BUILD = Path()
TRACES = ROOT / "notebooks" / "traces" / "h200"
SHAPE = "b8_h16_s1024_d64_bfloat16_causal"


@pytest.fixture(autouse=True, scope="module")
def _built(book_build):
    global BUILD
    BUILD = book_build / "html"


def page(name: str, folder: str = "notebooks") -> str:
    return (BUILD / folder / f"{name}.html").read_text(encoding="utf-8")


def text(markup: str) -> str:
    """The article's text as a reader sees it (code listings left out), one space between words."""
    body = markup[markup.index("<main"):markup.index("</main>")]
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", body, flags=re.S)
    body = re.sub(r'<div class="cell_input.*?</pre></div>\s*</div>', " ", body, flags=re.S)
    body = htmllib.unescape(re.sub(r"<[^>]+>", " ", body.replace("<wbr>", "")))
    body = re.sub(r"\s+", " ", body).replace("\u2019", "'").replace("\u2018", "'")  # Sphinx's smart quotes
    return re.sub(r"\s+([),.;:])", r"\1", re.sub(r"\(\s+", "(", body))  # no space a tag left inside brackets


def recording(stage: str) -> dict:
    with gzip.open(TRACES / f"{stage}__{SHAPE}.json.gz", "rt") as f:
        return json.load(f)


def last(stage: str) -> tuple[float, float]:
    """(GPU µs, CPU µs) of the forward the pages show: the last profiled step, raw."""
    return raw_per_step(recording(stage)["traceEvents"])[-1]


def events(stage: str) -> list[dict]:
    return [e for e, _ in raw_last_step(recording(stage)["traceEvents"])[0]]


def test_math_is_set_against_in_place_as_the_article_sets_it():
    words = text(page("03_sdpa_math"))
    ratio = last("sdpa_math")[0] / last("inplace")[0]
    naive_ratio = last("sdpa_math")[0] / last("naive")[0]
    verdict = re.search(r"the math backend is slower than the in-place three lines (.*?) (holds|differs)", words)
    assert verdict, "03 has no verdict on math against in-place"
    assert f"{ratio:.2f}×" in verdict.group(1)
    assert f"{naive_ratio:.2f}×" not in words  # the old math-over-naive ratio is gone from the page
    assert "3.7× slower (7.239 / 1.955 ms)" in words


def closing_rows() -> dict[str, str]:
    """The closing table's rows, by stage: the row's HTML."""
    table = re.search(r"<table class='dataframe ap-table.*?</table>", page("08_at_a_glance"), flags=re.S).group(0)
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
        head = re.search(r"<th scope=row[^>]*>(.*?)</th>", tr, flags=re.S)
        if head:
            rows[htmllib.unescape(re.sub(r"<[^>]+>", "", head.group(1))).strip()] = tr
    return rows


def test_the_closing_table_says_what_math_runs_and_shows_every_verdict():
    rows = closing_rows()
    math = text(f"<main>{rows['sdpa_math']}</main>")
    assert "the same unfused kernels" not in math
    n_math, n_naive = len(events("sdpa_math")), len(events("naive"))
    assert f"sdpa_math: {n_math} GPU events" in math and f"naive: {n_naive} (" in math
    for stage, row in rows.items():
        details = re.search(r"<details class='ap-expand'>(.*?)</details>", row, flags=re.S)
        if not details:
            continue
        shown = len(re.findall(r"<li>", details.group(1)))
        held = len(re.findall(r"<span class='ap-verdict holds'>", details.group(1)))
        tally = re.search(r"open for all (\d+) verdicts?: ([^)]*)\)", text(f"<main>{details.group(1)}</main>"))
        assert tally and int(tally.group(1)) == shown, stage  # the summary says how many it folds
        if held:
            assert f"{held} hold" in tally.group(2), stage


def test_the_article_columns_are_never_blank():
    rows = closing_rows()
    for stage, row in rows.items():
        cells = dict(re.findall(r'data-label="the article&#x27;s A100: (GPU|CPU) µs">(.*?)</td>', row))
        assert set(cells) == {"GPU", "CPU"} and all(c.strip() for c in cells.values()), stage
    # the article's figures for the stages it timed (its math section and its cuDNN section)
    article = {"inplace": ("1955", "not given"), "sdpa_math": ("7239", "not given"), "naive": ("not given", "not given"),
               "sdpa_flash": ("146.8", "138"), "sdpa_cudnn": ("186.3", "214"), "sdpa_efficient": ("277.9", "117")}
    for stage, (gpu, cpu) in article.items():
        cells = dict(re.findall(r'data-label="the article&#x27;s A100: (GPU|CPU) µs">(.*?)</td>', rows[stage]))
        assert cells["GPU"].strip() == gpu and cells["CPU"].strip() == cpu, stage


def test_gpu_events_are_not_called_kernels():
    from helpers import charts, profile_stages
    profiles = profile_stages(["naive", "inplace", "sdpa_math"], mode="replay")
    fig = charts.gpu_events_per_forward(list(profiles.values()))
    assert "GPU events per forward" in fig.layout.title.text and "Kernels" not in fig.layout.title.text
    assert list(fig.data[0].y) == [len(events(s)) for s in profiles]
    # 07: naive's GPU events and the time they took, one statistic
    words = text(page("07_occupancy"))
    gpu = last("naive")[0]
    assert f"naive's {len(events('naive'))} GPU events took {gpu:.1f} µs" in words
    kernels = sum(e["dur"] for e in events("naive") if e["cat"] == "kernel")
    assert f"kernels took {gpu:.1f}" not in words and f"{kernels:.1f}" not in words


def test_in_place_says_why_its_peak_is_naives():
    words = text(page("02_inplace"))
    prov = recording("inplace")["provenance"]
    s = prov["shape"]
    scores = s["batch"] * s["heads"] * s["seq"] ** 2 * 2
    out = s["batch"] * s["heads"] * s["seq"] * s["head_dim"] * 2
    used = prov["peak_memory_bytes"] - prov["memory_before_bytes"]
    assert used == 2 * scores + out
    assert (f"softmax's output (another {scores / 2**20:,.0f} MiB) and the result ({out / 2**20:,.0f} MiB), "
            f"{used / 2**20:,.0f} MiB in all: exactly the peak measured") in words
    # chapter 11 no longer says chapter 2 saved a buffer
    assert "to save one S × S buffer" not in text(page("11_training"))


def test_the_hub_page_says_what_it_profiled_and_has_one_name():
    prov = recording("hub_flash")["provenance"]
    words = text(page("05b_hub_flash"))
    assert prov["extra"]["build"]["not"].startswith("not the Hugging Face Hub")
    assert "This trace is not of the Hub's kernel." in words
    assert "5b. FlashAttention from the Hub" in words
    assert not (BUILD / "notebooks" / "04d_hub_flash.html").exists()
    everything = " ".join(text(m) for p in BUILD.glob("*/*.html") if "<main" in (m := p.read_text(encoding="utf-8")))
    assert "chapter 4d" not in everything and "(chapter 5b)" in text(page("11_training"))
    # one definition of "about the same": the speed question's answer is the verdict's word
    hub_gpu, flash_gpu = last("hub_flash")[0], last("sdpa_flash")[0]
    ratio = hub_gpu / flash_gpu
    word = "about the same (within 10%)" if abs(ratio - 1) <= 0.10 else "faster" if ratio < 1 else "slower"
    assert f"({ratio:.2f}×): {word}" in words
    assert f"{word}: {hub_gpu:,.1f} µs of GPU time against {flash_gpu:,.1f} µs" in page("05b_hub_flash")


def test_chapter_10_says_what_its_own_verdict_calls_for():
    words = text(page("10_your_model"))
    assert "op(s)" not in words and "one step of A " not in words
    assert "the same code, the same kernels" not in words
    big = recording_own("encoder_train_step_big")
    small = recording_own("encoder_train_step")
    kernels = [sum(e["cat"] == "kernel" for e, _ in raw_last_step(r["traceEvents"])[0]) for r in (small, big)]
    gpu = [len(raw_last_step(r["traceEvents"])[0]) for r in (small, big)]
    assert (f"At 64 × 512 the step launched {gpu[1]} GPU events, {kernels[1]} of them kernels "
            f"(small batch: {gpu[0]} and {kernels[0]})") in words
    advice = re.search(r"What next, for this verdict: (.*?)\.(?: |$)", words).group(1)
    verdict = re.search(r"The verdict: (bound by the \w+)", words[words.index("At 64 × 512"):]).group(1)
    assert ("hide the CPU's issue time" in advice) == (verdict == "bound by the CPU")
    assert ("top kernel" in advice) == (verdict == "bound by the GPU")


def recording_own(name: str) -> dict:
    with gzip.open(TRACES / "own_model" / f"{name}.json.gz", "rt") as f:
        return json.load(f)


def test_cudnn_cpu_split_sums_and_the_article_is_not_misquoted():
    markup = page("06_sdpa_cudnn")
    words = text(markup)
    tables = re.findall(r"<table class='dataframe ap-table.*?</table>", markup, flags=re.S)
    split = next(t for t in tables if "total: attn_fwd" in t)
    columns = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", split.split("<tbody>", 1)[1], flags=re.S):
        label = htmllib.unescape(re.sub(r"<[^>]+>", "", re.search(r"<th[^>]*>(.*?)</th>", tr, flags=re.S).group(1))).strip()
        for stage, value in re.findall(r'data-label="(\w+) µs">([\d.]+)</td>', tr):
            columns.setdefault(stage, {})[label] = float(value)
    assert set(columns) == {"sdpa_efficient", "sdpa_flash", "sdpa_cudnn"}
    for stage, rows in columns.items():
        total = rows.pop("total: attn_fwd")
        assert total == round(last(stage)[1], 1)
        assert round(sum(rows.values()), 1) == total, stage  # every µs of attn_fwd in one row
    assert "cuDNN is not SDPA's automatic choice" not in words
    assert "with no backend pinned, SDPA picks the fastest backend" in words


def test_the_intro_lists_every_chapter_and_the_five_operations():
    words = text(page("intro", "book"))
    for title in ("Naive", "In-place", "SDPA, math", "FlashAttention from the Hub", "The naive code, compiled",
                  "FlexAttention", "At a glance", "Decode", "Roofline", "Your own model", "Training"):
        assert f"{title}" in words, title
    assert "five operations: a matmul, a scale, an out-of-place masked_fill, a softmax and a second matmul" in words
    assert "chapter 8, At a glance, lists them" in words


READER_PAGES = ["01_naive", "02_inplace", "03_sdpa_math", "04_sdpa_efficient", "05_sdpa_flash", "05b_hub_flash",
                "06_sdpa_cudnn", "06b_naive_compiled", "06c_flex", "08_at_a_glance", "08b_decode", "10_your_model"]


@pytest.mark.parametrize("name", READER_PAGES)
def test_no_maintainer_command_or_python_repr_on_a_reader_page(name):
    words = text(page(name))
    # in the open text; a folded "how this was recorded" note may name its tool in the reader's terms
    words = re.sub(r"How (this|the) (trace )?was recorded.*?(?= [A-Z][a-z]+ [a-z])", " ", words)
    assert "tools/record" not in words and "helpers.profiling" not in words, name
    assert not re.search(r"\{'[A-Za-z_]+': ", words), name
    assert not re.search(r"[a-z]\(s\)", words), name  # a template's "op(s)", "kernel(s)": count the words
