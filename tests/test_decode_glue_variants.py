"""The decode page's glued sentences hold for any recording (issue 39): each real set as recorded
(a set without decode/ included: its one reader-facing line), and fake recordings in the recorder's
format (tests/decode_fake.py): as made, another backend fastest, a tie, each part missing, nothing
recorded. No glued value may read "none", "nan", "[]", nothing at all, or compare a stage with itself
(tests/test_glue_variants.py's `fault`); the questions are at least ten where the recording answers them."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from test_glue_variants import fault

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import decode_fake  # noqa: E402

SETS = [p.name for p in sorted((ROOT / "notebooks" / "traces").iterdir())
        if p.is_dir() and not p.name.startswith("synthetic")]
CEILINGS = ROOT / "notebooks" / "traces" / "h200" / "ceilings.json"
FAKES = {"as made": {}, "flash fastest": {"winner": "sdpa_flash"}, "a tie": {"tie": True},
         "flash always splits": {"split_below": 10_000}, "flash never splits": {"split_below": 1},
         **{f"without {p}": {"without": (p,)} for p in ("sweep", "split", "flex", "trap", "step", "ncu", "compiled")},
         "nothing recorded": {"without": ("all",)}}


def glued(d, line, ceilings):
    from helpers.decode import chapter
    caught = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chapter.prose, "glue", lambda name, value: caught.__setitem__(name, value))
        page = chapter.page(d, line, ceilings)
        page.glue()
    return page, caught


@pytest.mark.parametrize("gpu", SETS)
def test_each_real_set_reads_as_sentences(gpu):
    from helpers import Session
    s = Session(gpu)
    d, line = s.decode()
    page, caught = glued(d, line, s.ceilings()[0])
    assert fault(line) is None and caught
    for name, value in caught.items():
        assert fault(value) is None, f"{gpu}: {name} = {value!r}"
    if d is None:   # one reader-facing line, and nothing below it
        assert "not recorded" in line and page.questions() is None and page.bandwidth_chart() is None
        assert set(caught.values()) == {"not recorded in this set"}


@pytest.mark.parametrize("variant", list(FAKES))
def test_every_variant_reads_as_sentences(variant, tmp_path):
    from helpers.decode.core import DecodeSet
    folder = decode_fake.make(tmp_path, **FAKES[variant])
    d = DecodeSet.load(folder)
    import json
    page, caught = glued(d, "a line", pd.DataFrame(json.loads(CEILINGS.read_text())["ceilings"]))
    for name, value in caught.items():
        assert fault(value) is None, f"{variant}: {name} = {value!r}"
    qs = page.questions()
    if variant == "as made":
        assert len(qs.questions) >= 10
    for q in (qs.questions if qs else []):
        assert fault(q.key["question"]) is None and fault(q.key["answerText"]) is None, q.key["id"]
    if variant == "a tie":
        assert "about the same" in caught["dec_bandwidth_sentence"]
    if variant == "flash fastest":
        assert "flash backend" in caught["dec_pick_sentence"]


@pytest.mark.parametrize("gpu", SETS)
def test_a_sets_decode_recording_stays_small(gpu):
    folder = ROOT / "notebooks" / "traces" / gpu / "decode"
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
    assert size < 8 * 2**20, f"{gpu}: decode/ holds {size / 2**20:.1f} MiB"
