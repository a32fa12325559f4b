"""One truth per page (issue 21), read from the built book (conftest's one build per run, or the
`_build/html` that ATTN_PROFILED_BOOK_HTML names):

- a number glued into the prose that a table on the same page also shows is the same number there
  (the figures of one forward: GPU and CPU time, do_bench, GPU events, per stage);
- no page prints an exception's text (a measurement that could not run is a folded note in the
  reader's terms);
- every page that replays says, in one line, what it replays and the GPU it was recorded on.

The glued values and the tables are both read from the pages' HTML (a glue role's value is matched
to its name by order).
"""
from __future__ import annotations

import html as htmllib
import json
import re
from pathlib import Path

import pytest

from conftest import BOOK_GROUP, ROOT
from helpers import DEFAULT_SHAPE

BUILD = Path()  # the built book's html folder, set from the run's one build below
pytestmark = BOOK_GROUP


@pytest.fixture(autouse=True, scope="module")
def _built(book_build):
    global BUILD
    BUILD = book_build / "html"

NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


def page(name: str) -> str:
    return (BUILD / "notebooks" / f"{name}.html").read_text(encoding="utf-8")


def main_text(markup: str) -> str:
    """What a reader sees in the page's article: tags stripped, code listings left out."""
    body = markup[markup.index("<main"):markup.index("</main>")]
    body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", body, flags=re.S)
    body = re.sub(r'<div class="cell_input.*?</pre></div>\s*</div>', " ", body, flags=re.S)
    body = re.sub(r"<wbr>", "", body)
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", body))


def glued(name: str) -> dict[str, str]:
    """Every value glued into the page's prose, by name, as the built page shows it: the page's
    pasted values (myst-nb's `pasted-text` spans) in the order of the notebook's glue roles."""
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8"))
    keys = [k for c in nb["cells"] if c["cell_type"] == "markdown"
            for k in re.findall(r"\{glue:text\}`([^`]+)`", "".join(c["source"]))]
    values = [clean(v) for v in re.findall(r'<span class="pasted-text">(.*?)</span>', page(name), flags=re.S)]
    assert len(values) == len(keys), f"{name}: {len(keys)} glue roles, {len(values)} pasted values"
    out = {}
    for key, value in zip(keys, values):
        out.setdefault(key.split(":")[0], value)
    return out


def tables(markup: str) -> list[list[dict[str, str]]]:
    """Each rendered table (helpers.views.render: a header cell per row, data-label per cell) as
    rows of {column: text}; the row's header under the key '' ."""
    out = []
    for table in re.findall(r"<table class='dataframe ap-table.*?</table>", markup, flags=re.S):
        body = table.split("<tbody>", 1)[-1]
        rows, group = [], None
        for attrs, tr in re.findall(r"<tr([^>]*)>(.*?)</tr>", body, flags=re.S):
            if "ap-group" in attrs:  # a group of rows (a MultiIndex's first level: a seq, say)
                group = clean(re.sub(r"<th[^>]*>", "", tr))
                continue
            row = {"__group": group} if group is not None else {}
            head = re.search(r"<th[^>]*>(.*?)</th>", tr, flags=re.S)
            if head:
                row[""] = clean(head.group(1))
            for label, cell in re.findall(r'<td[^>]*data-label="([^"]*)"[^>]*>(.*?)</td>', tr, flags=re.S):
                row[htmllib.unescape(label)] = clean(cell)
            rows.append(row)
        out.append(rows)
    return out


def clean(cell: str) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", cell.replace("<wbr>", ""))).strip()


def number(text: str) -> float | None:
    m = re.fullmatch(r"-?[\d,]*\.?\d+", text.strip())
    return float(m.group(0).replace(",", "")) if m else None


# a glued figure of one stage's forward, and the columns that show the same figure in a table
SAME = {"gpu_us": ("GPU µs", "profiler GPU µs"), "cpu_us": ("CPU µs (profiled)", "CPU µs", "attn_fwd µs"),
        "do_bench_us": ("do_bench µs",), "gpu_events": ("GPU events",)}
# chapter 11 glues a training step's figures as tr_<stage>_<suffix>, beside its phase and held tables
TRAINING_SAME = {"fwd_kernels": ("forward kernels",), "bwd_kernels": ("backward kernels",),
                 "bwd_over_fwd": ("backward / forward",), "bwd_driver": ("backward driver launches",),
                 "held_mib": ("held MiB",)}
GLUE_KEYS = {"11_training": ("tr_", TRAINING_SAME)}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_glued_figure_is_the_figure_its_tables_show(name):
    glue, markup = glued(name), page(name)
    checked = 0
    for rows in tables(markup):
        for row in rows:
            stage = row.get("") or row.get("stage", "")  # the row's header, or a stage column
            # a row of a sweep at another seq is another forward: it names its shape
            if row.get("__group") not in (None, str(DEFAULT_SHAPE.seq)):
                continue
            prefix, same = GLUE_KEYS.get(name, ("", SAME))
            for suffix, columns in same.items():
                value = number(glue.get(f"{prefix}{stage}_{suffix}", ""))
                if value is None:
                    continue
                for column in columns:
                    shown = number(row.get(column, ""))
                    if shown is None:
                        continue
                    checked += 1
                    # both rounded to 0.1 from the same number
                    assert abs(shown - value) <= 0.051, (f"{name}: {stage}_{suffix} is {value} in the prose, "
                                                         f"{shown} in the table's '{column}'")
    # a stage page's kernel table is the forward its prose gives: their µs add up to the glued time
    code = "\n".join("".join(c["source"]) for c in json.loads(
        (ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"] if c["cell_type"] == "code")
    stage = re.search(r'^prof = profiles\["(\w+)"\]', code, re.M)
    if stage and f"{stage.group(1)}_gpu_us" in glue:
        kernel_tables = [rows for rows in tables(markup) if rows and "launched by" in rows[0] and "µs" in rows[0]]
        assert kernel_tables, f"{name}: no kernel table"
        times = [number(r["µs"]) for r in kernel_tables[0]]
        total = float(glue[f"{stage.group(1)}_gpu_us"])
        assert abs(sum(times) - total) <= 0.05 * len(times) + 0.051, \
            f"{name}: the kernel table adds up to {sum(times):.1f} µs, the prose says {total}"
        checked += 1
    if name not in ("calculator", "09_roofline", "07_occupancy", "10_your_model", "05b_hub_flash"):
        assert checked, f"{name}: no glued figure met a table (is the page's glue read?)"


EXCEPTION = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b(?=:| \()|"
                       r"==ERROR==|\(exit \d+\)|not on PATH|Errno \d+")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_page_prints_an_exception(name):
    text = main_text(page(name))
    found = EXCEPTION.findall(text)
    assert not found, f"{name} shows an exception's text: {found[:3]}"


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n != "calculator"])
def test_every_page_says_where_its_recording_comes_from(name):
    text = " ".join(main_text(page(name)).split())
    lines = re.findall(r"(?:Replaying|Loaded|Profiled).{0,200}?(?:recorded on|live on) ([^,(]+)", text)
    assert lines, f"{name}: no line says what it replays and where it was recorded"
    if "Replaying" in text:
        # the GPU, the date and torch, in the line itself
        replay = re.search(r"Replaying.{0,200}?recorded on ([^(]+)\([^)]*\) on (\d{4}-\d\d-\d\d) with (?:\S+ \S+ and )?torch (\S+)", text)
        assert replay, f"{name}: the replay line names no GPU, date and torch"
