"""Chapter 7b holds for any recording: its glue, its guesses and its chart over variants of the
recording (as recorded, a set with no hopper/ folder, a stage missing, no warp-specialised kernel,
every or no stage on wgmma, a FAKE set in the recorder's format). No glued value may read "none",
"nan", nothing, or compare a stage with itself (test_glue_variants' rules); every question's
answer is one of its options; the chart draws only positive counts on its log axis."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import hopper_fakes  # noqa: E402
from test_glue_variants import fault  # noqa: E402

TRACES = ROOT / "notebooks" / "traces"
SETS = [p.name for p in sorted(TRACES.iterdir()) if p.is_dir() and not p.name.startswith("synthetic")]


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """name -> Recording: each real set as it is, and a FAKE hopper recording of each."""
    import os
    from helpers.hopper import sources
    out = {}
    for gpu in SETS:
        out[f"real-{gpu}"] = sources.load(gpu)
    root = tmp_path_factory.mktemp("hopper_page")
    saved = os.environ.get("ATTN_PROFILED_REPLAY_DIR")
    for gpu in SETS:
        hopper_fakes.linked_set(TRACES / gpu, root)
        os.environ["ATTN_PROFILED_REPLAY_DIR"] = str(root)
        try:
            out[f"fake-{gpu}"] = sources.load(gpu)
        finally:
            if saved is None:
                os.environ.pop("ATTN_PROFILED_REPLAY_DIR", None)
            else:
                os.environ["ATTN_PROFILED_REPLAY_DIR"] = saved
    return out


def variants(rec):
    import copy
    t = rec.table
    yield "as recorded", rec
    for stage in ("sdpa_flash", "sdpa_cudnn", "sdpa_math", "flex"):
        r = copy.copy(rec)
        r.table = t[t["stage"] != stage].reset_index(drop=True)
        yield f"without {stage}", r
    r = copy.copy(rec)
    r.table = t[~t["stage"].isin(["sdpa_flash", "sdpa_cudnn"])].reset_index(drop=True)
    yield "without flash and cudnn", r
    if "consumer_registers" in t:
        r = copy.copy(rec)
        r.table = t.assign(consumer_registers=float("nan"), producer_registers=float("nan"), USETMAXREG=0)
        yield "no setmaxnreg", r
    for name, change in (("every stage on wgmma", {"HGMMA": 1000.0}), ("no stage on wgmma", {"HGMMA": 0.0})):
        r = copy.copy(rec)
        r.table = t.assign(**change)
        yield name, r


@pytest.fixture
def caught(monkeypatch):
    from helpers.hopper import chapter
    got = {}
    monkeypatch.setattr(chapter, "glue", lambda name, value: got.__setitem__(name, value))
    return got


def test_every_glued_value_and_question_reads_in_every_variant(recordings, caught):
    from IPython.display import Markdown
    from helpers import hopper
    checked = 0
    for name, rec in recordings.items():
        for label, r in variants(rec):
            caught.clear()
            main = hopper.main_kernels(r.table)
            hopper.glue_hopper(main, r)
            assert caught, (name, label)
            for key, value in caught.items():
                assert fault(value) is None, f"{name} / {label}: {key} = {getattr(value, 'data', value)!r}: {fault(value)}"
            for ask in (hopper.guess_flash_path(main), hopper.guess_wgmma_count(main), hopper.guess_math_path(main),
                        hopper.guess_flex_path(main), hopper.guess_cudnn_loads(main, r.missing),
                        hopper.guess_consumer_registers(main, r.missing)):
                if isinstance(ask, Markdown):
                    assert fault(ask.data) is None, (name, label, ask.data)
                else:
                    key = ask.key
                    assert fault(key["question"]) is None, (name, label, key["question"])
                    if key["type"] == "choice":
                        assert key["answer"] in key["options"]
                checked += 1
            table = hopper.families_table(main)
            assert len(table) == main["stage"].nunique()
            assert fault(hopper.banner(r).data) is None
            fig = hopper.chart(main, "GPU")
            for trace in fig.data:
                assert all(x is None or x > 0 for x in trace.x), (name, label, trace.name)
    assert checked > 100


def test_a_set_without_hopper_recording_says_so_in_one_line(recordings):
    from helpers import hopper
    for name, rec in recordings.items():
        if rec.provenance:
            continue   # a set with its hopper/ folder
        assert rec.missing and rec.missing.count(". ") <= 1 and "tools/record_hopper.py" in rec.missing
        main = hopper.main_kernels(rec.table)
        assert not hopper.has_opcodes(main)
        assert "loads" not in hopper.families_table(main)
        assert hopper.guess_cudnn_loads(main, rec.missing).data == hopper.NEEDS_OPCODES
        assert hopper.register_table(main) is None


def test_the_chapter_is_in_the_book_after_occupancy():
    toc = (ROOT / "_toc.yml").read_text()
    assert toc.index("notebooks/07_occupancy") < toc.index("notebooks/07b_hopper") < toc.index("notebooks/08_at_a_glance")
