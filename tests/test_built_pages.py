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

from conftest import BOOK_GROUP, ROOT, says_unrecorded
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
    if name not in ("calculator", "09_roofline", "07_occupancy", "07b_hopper", "10_your_model", "05b_hub_flash") \
            and not says_unrecorded(name, main_text(markup)):
        assert checked, f"{name}: no glued figure met a table (is the page's glue read?)"


# a stage's glued figure of one forward (prose.glue_summary), and the same figure read from the raw
# trace events: the test above holds prose and tables to each other, this one holds both to the
# recording (a bug in summary() would move prose and tables together and pass the test above)
RAW_FIGURES = {"gpu_events": lambda f, p: f.count(), "kernels": lambda f, p: f.count("kernel"),
               "memcpys": lambda f, p: f.count("memcpy"), "memsets": lambda f, p: f.count("memset"),
               "aten_ops": lambda f, p: f.aten_ops, "gpu_us": lambda f, p: f.gpu_us,
               "cpu_us": lambda f, p: f.cpu_us, "do_bench_us": lambda f, p: p["do_bench_us"]}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_glued_stage_figure_is_the_raw_forward(name):
    from independent import raw
    stages = sorted((p.name.split("__")[0] for p in raw.TRACES.glob(f"*__{raw.DEFAULT}.json.gz")), key=len, reverse=True)
    glue, checked = glued(name), 0
    for key, shown in glue.items():
        stage = next((s for s in stages if key.startswith(f"{s}_") and key[len(s) + 1:] in RAW_FIGURES), None)
        if stage is None or number(shown) is None:
            continue
        path = raw.stage_path(stage)
        want = RAW_FIGURES[key[len(stage) + 1:]](raw.forward(path), raw.provenance(path))
        assert abs(number(shown) - want) <= 0.051, f"{name}: {key} reads {shown}, the trace gives {want:.3f}"
        checked += 1
    if name in ("01_naive", "02_inplace", "03_sdpa_math", "04_sdpa_efficient", "05_sdpa_flash", "06_sdpa_cudnn",
                "06b_naive_compiled", "06c_flex", "08_at_a_glance"):
        assert checked >= 3, f"{name}: only {checked} glued stage figures found"


def wired_glue(name: str) -> dict[str, object]:
    """What each page's glue calls give when wired as the page means them (its own stage first,
    the stage it is compared with second, ...), called here on the replayed Profiles. Each of
    these calls is held to the raw recordings by tests/independent/; this test holds the page's
    own wiring (which profile a notebook hands to which argument, which key its prose names) to
    them: a notebook that swaps two profiles glues numbers that differ from these."""
    from helpers import Session, compiled, counters, flex, occupancy_lessons as lessons, \
        occupancy_truth as truth, own_model, profile_stages, prose
    s = Session(mode="replay")
    out: dict[str, object] = {}
    def add(prefix, values):
        out.update({f"{prefix}{k}": v for k, v in values.items()})
    if name == "01_naive":
        add("naive_", prose.glue_async(profile_stages(["naive"], mode="replay")["naive"]))
    elif name == "05_sdpa_flash":
        p = profile_stages(["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash"], mode="replay")
        hbm = s.counters(["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"])
        add("hbm_", counters.glue_hbm(counters.hbm_measured(hbm, s.forwards(hbm, p))))
    elif name == "06b_naive_compiled":
        p = profile_stages(["naive", "naive_compiled"], mode="replay")
        add("", compiled.glue_page(p["naive_compiled"], p["naive"]))
        add("", compiled.glue_first_call(p["naive_compiled"], p["naive"]))
    elif name == "06c_flex":
        p = profile_stages(["sdpa_flash", "flex", "flex_sliding"], mode="replay")
        add("", flex.glue_page(p["flex"], p["sdpa_flash"], p["flex_sliding"]))
        runs = s.grid(flex.GAP_STAGES, flex.gap_shapes(), known=p)
        sweep = flex.gap_sweep(runs)
        for stage, values in flex.glue_sweep(sweep).items():
            add(f"{stage}_sweep_", values)
        add("flex_", flex.glue_widest(flex.widest(runs, sweep)))
    elif name == "07_occupancy":
        p = s.load_stages(lessons.STAGES)
        hw = s.counters(lessons.STAGES, quiet=True)   # the page's: the driver's configured shared memory
        add("flash_", lessons.glue_kernel("flash", p["sdpa_flash"], hw))
        add("cudnn_", lessons.glue_kernel("cudnn", p["sdpa_cudnn"], hw))
        add("low_", lessons.glue_low_occupancy(p))
        add("zero_", lessons.glue_cupti_zero(lessons.cupti_zero(p), lessons.spec_of(p["sdpa_cudnn"])))
        events, provenance, _ = s.smem_cliff()
        add("cliff_", lessons.glue_smem_cliff(lessons.smem_cliff(events, provenance)))
        add("truth_", truth.glue_truth(truth.occupancy_truth(hw, s.forwards(hw, p))))
    elif name == "08_at_a_glance":
        add("timer_", prose.glue_timer(s.stages(s.closing_stages())))
    elif name == "10_your_model":
        for experiment, prefix in (("encoder_forward", "fwd"), ("encoder_forward_slow", "slow"),
                                   ("encoder_train_step", "train"), ("encoder_train_step_big", "big")):
            add(f"{prefix}_", own_model.glue_step(s.own_model(experiment), prefix))
    return out


@pytest.mark.parametrize("name", ["01_naive", "05_sdpa_flash", "06b_naive_compiled", "06c_flex", "07_occupancy",
                                  "08_at_a_glance", "10_your_model"])
def test_each_page_wires_its_glue_to_the_right_profiles(name):
    want, checked = wired_glue(name), 0
    for key, shown in glued(name).items():
        if key not in want or want[key] is None:
            continue
        value = want[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert number(shown) is not None and abs(number(shown) - value) <= 0.051, \
                f"{name}: {key} reads {shown!r}, wired as the page means it: {value!r}"
        else:
            assert shown.replace("\u2019", "'") == str(value), f"{name}: {key} reads {shown!r}, wired as the page means it: {value!r}"
        checked += 1
    assert checked >= 4, f"{name}: only {checked} glued values met"


EXCEPTION = re.compile(r"Traceback \(most recent call last\)|\b[A-Z]\w*(?:Error|Exception)\b(?=:| \()|"
                       r"==ERROR==|\(exit \d+\)|not on PATH|Errno \d+")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_page_prints_an_exception(name):
    text = main_text(page(name))
    found = EXCEPTION.findall(text)
    assert not found, f"{name} shows an exception's text: {found[:3]}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_code_in_the_prose_has_its_quotes_curled(name):
    """Code quoted in a sentence (a glued Markdown paragraph) keeps straight quotes: Sphinx's smart
    quotes turn `mode="reduce-overhead"` outside a code span into mode=”reduce-overhead”, which a
    reader cannot copy (08b's step sentence did, 2026-12-07)."""
    text = main_text(page(name))
    curled = re.findall(r".{0,40}[=(\[][“”‘’].{0,30}", text)
    assert not curled, f"{name}: code with curled quotes in the prose: {curled[:3]}"


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n != "calculator"])
def test_every_page_says_where_its_recording_comes_from(name):
    text = " ".join(main_text(page(name)).split())
    if says_unrecorded(name, text):
        return   # nothing replayed: the one line says what the set lacks (checked in says_unrecorded)
    lines = re.findall(r"(?:Replaying|Loaded|Profiled).{0,200}?(?:recorded on|live on) ([^,(]+)", text)
    assert lines, f"{name}: no line says what it replays and where it was recorded"
    if "Replaying" in text:
        # the GPU, the date and torch, in the line itself
        replay = re.search(r"Replaying.{0,200}?recorded on ([^(]+)\([^)]*\) on (\d{4}-\d\d-\d\d) with (?:\S+ \S+ and )?torch (\S+)", text)
        assert replay, f"{name}: the replay line names no GPU, date and torch"
