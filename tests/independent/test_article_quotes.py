"""Every figure of the source article that a verdict quotes, against the article's own table
(issue 38).

The article's A100 figures are kept here as data (`data/article_a100.json`: its math section's
`*_fwd CUDA time avg`, its cuDNN section's CUDA and CPU averages, its "3.7x slower"), never read
from helpers/core/article.py. Each verdict that carries an article figure, and each cell of the
built pages' "the article's A100" columns, must quote exactly those numbers, for the stage it
names, from the column its claim is about (CPU time for a CPU claim, GPU time otherwise).
"""
from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import pytest

from . import raw

ARTICLE = json.loads((Path(__file__).parent / "data" / "article_a100.json").read_text())
GPU_US = {s: 1000 * ms for s, ms in ARTICLE["gpu_ms"].items()} | ARTICLE["gpu_us"]
CPU_US = ARTICLE["cpu_us"]
RATIO = float(re.match(r"([\d.]+)x", ARTICLE["math_over_inplace_words"]).group(1))
PAIR = re.compile(r"(\w+) ([\d.]+) µs")
MATH = re.compile(r"([\d.]+)× slower \(([\d.]+) / ([\d.]+) ms\)")


def same(shown: str, value: float) -> bool:
    """A figure as printed equals the article's, to the printed digits."""
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    return abs(float(shown) - value) <= 0.5 * 10 ** -decimals + 1e-9


def check_quote(text: str, cpu: bool) -> list[str]:
    """What is wrong with one quoted article figure (empty: it quotes the article's table)."""
    bad = []
    m = MATH.fullmatch(text.strip())
    if m:
        ratio, math_ms, inplace_ms = m.groups()
        if not same(math_ms, ARTICLE["gpu_ms"]["sdpa_math"]):
            bad.append(f"math {math_ms} ms, the article's {ARTICLE['gpu_ms']['sdpa_math']}")
        if not same(inplace_ms, ARTICLE["gpu_ms"]["inplace"]):
            bad.append(f"in-place {inplace_ms} ms, the article's {ARTICLE['gpu_ms']['inplace']}")
        if not same(ratio, RATIO):
            bad.append(f"{ratio}×, the article's {ARTICLE['math_over_inplace_words']}")
        return bad
    pairs = PAIR.findall(text)
    if not pairs:
        return [f"no article figure recognised in {text!r}"]
    table = CPU_US if cpu else GPU_US
    for stage, shown in pairs:
        if stage not in table:
            bad.append(f"{stage}: the article gives no {'CPU' if cpu else 'GPU'} time for it")
        elif not same(shown, table[stage]):
            bad.append(f"{stage} {shown} µs, the article's {'CPU' if cpu else 'GPU'} time is {table[stage]}")
    return bad


def test_the_article_table_is_the_one_the_book_cites():
    bib = (raw.ROOT / "book" / "references.bib").read_text()
    assert "Attention is all you profile" in bib and "A100" in bib
    assert RATIO == round(ARTICLE["gpu_ms"]["sdpa_math"] / ARTICLE["gpu_ms"]["inplace"], 1)


@pytest.fixture(scope="module")
def quoted():
    """Every verdict of every stage that carries an article figure: (stage, claim, figure)."""
    from helpers import profile_stage
    from helpers.chapters import claims
    from helpers.core.stages import STAGES
    profiles = {s: profile_stage(s, mode="replay", quiet=True) for s in STAGES}
    return [(stage, v.claim, v.article) for stage, vs in claims.revealed(profiles).items() for v in vs if v.article]


def test_every_verdict_quotes_the_articles_own_figures(quoted):
    claims_quoted = {claim for _, claim, _ in quoted}
    # the three claims the article puts a number on: the fastest backend, math's 3.7×, cuDNN's CPU
    assert len(quoted) >= 3 and any("fastest" in c for c in claims_quoted) and any("CPU" in c for c in claims_quoted)
    assert any(MATH.fullmatch(a.strip()) for _, _, a in quoted)
    for stage, claim, article in quoted:
        assert not check_quote(article, cpu="CPU" in claim), (stage, claim, article, check_quote(article, "CPU" in claim))


def test_the_fastest_backend_quotes_every_backend_the_article_timed_fastest_first(quoted):
    (article,) = [a for _, c, a in quoted if "fastest backend" in c and "picks" not in c]
    stages = [s for s, _ in PAIR.findall(article)]
    assert sorted(stages) == sorted(ARTICLE["gpu_us"])
    assert stages == sorted(stages, key=GPU_US.get)


def test_cudnns_cpu_verdict_quotes_the_article_cpu_times_of_the_stages_it_compares(quoted):
    (article,) = [a for _, c, a in quoted if "CPU" in c and "cuDNN" in c]
    stages = [s for s, _ in PAIR.findall(article)]
    assert stages[0] == "sdpa_cudnn" and set(stages) == set(CPU_US)


def test_the_closing_tables_article_columns_are_the_articles_table():
    from helpers.core.article import reference_columns
    from helpers.core.stages import STAGES
    frame = reference_columns(list(STAGES))
    gpu, cpu = (next(c for c in frame.columns if c.endswith(unit)) for unit in ("GPU µs", "CPU µs"))
    for stage in STAGES:
        g, c = frame.loc[stage, gpu], frame.loc[stage, cpu]
        assert (isinstance(g, str)) == (stage not in GPU_US), stage
        assert (isinstance(c, str)) == (stage not in CPU_US), stage
        if stage in GPU_US:
            assert g == pytest.approx(GPU_US[stage], abs=1e-9), stage
        if stage in CPU_US:
            assert c == pytest.approx(CPU_US[stage], abs=1e-9), stage


# --- the built pages: what a reader reads in the article's column --------------------------------



def article_cells(markup: str) -> list[tuple[str, str]]:
    """(column label, text) of every table cell in a column labelled as the article's A100."""
    cells = re.findall(r'<td[^>]*data-label="the article&#x27;s A100([^"]*)"[^>]*>(.*?)</td>', markup, flags=re.S)
    return [(htmllib.unescape(label), re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", "", cell))).strip())
            for label, cell in cells]


def test_the_built_pages_quote_the_articles_figures(book_build):
    """Every non-empty cell of a verdict table's article column, on every page, quotes the
    article's table; the closing table's GPU and CPU columns hold its figures for each stage."""
    seen = 0
    for path in sorted((book_build / "html" / "notebooks").glob("*.html")):
        markup = path.read_text(encoding="utf-8")
        rows = re.findall(r"<tr>(.*?)</tr>", markup, flags=re.S)
        for row in rows:
            for label, text in article_cells(row):
                if not text or text in ("None", "not given", "not in the article") or "registers" in label:
                    continue
                if label in (": GPU µs", ": CPU µs"):   # the closing table: one stage a row
                    head = re.search(r"<th scope=row[^>]*>(.*?)</th>", row, flags=re.S)
                    stage = re.sub(r"<[^>]+>", "", head.group(1)).strip()
                    table = CPU_US if "CPU" in label else GPU_US
                    assert stage in table and same(text, table[stage]), (path.name, stage, label, text)
                else:
                    claim = re.sub(r"<[^>]+>", " ", row)
                    cpu = "CPU time" in claim or "more CPU" in claim
                    assert not check_quote(text, cpu), (path.name, text, check_quote(text, cpu))
                seen += 1
    assert seen >= 3 + len(GPU_US) + len(CPU_US)


# --- chapter 7: the article's A100 occupancy, worked from its two launch figures ---------------------

# the A100 (sm 8.0), from CUDA's occupancy rules: a 64K-register file in four sub-partitions,
# registers given to a warp in units of 256, 64 warp slots and 32 block slots per SM
A100 = {"regs": 65536, "subs": 4, "warps": 64, "unit": 256, "smem": 167936, "reserve": 1024, "smem_unit": 128,
        "blocks": 32}


def test_chapter_7s_article_column_is_the_articles_launch_worked_out():
    from helpers.chapters import occupancy_lessons as lessons
    launch = ARTICLE["cudnn_kernel_launch"]
    regs, threads = launch["registers"], launch["threads"]
    occ = raw.occupancy(threads, regs, 0, A100)
    table = lessons.article_a100()
    label = table.index.name
    assert f"{regs} registers × {threads} threads" in label and "A100" in label
    rows = dict(zip(table.index, table["value"].astype(str)))
    assert rows["registers per warp"] == f"{regs} × 32 → {occ['regs_per_warp']:,}"
    assert rows["warps per sub-partition"].endswith(f"/ {occ['regs_per_warp']:,}⌋ = {occ['warps_per_sub']}")
    assert rows["warps per block"] == str(occ["warps_per_block"])
    assert rows["active blocks"] == str(occ["active_blocks"])
    assert rows["occupancy"] == f"{occ['active_warps']} / {A100['warps']} warps = {occ['pct']:.1f}%"
    glued = lessons.glue_article()
    assert (glued["registers"], glued["threads"]) == (regs, threads)
    assert (glued["warps"], glued["max_warps"]) == (occ["active_warps"], A100["warps"])
    assert glued["occupancy_pct"] == f"{occ['pct']:.1f}"
