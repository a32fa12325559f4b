"""The pages that draw "bound by" verdicts, executed on a set without timers.json and on one with a
fake timers.json (tests/timer_fakes.py): every glued value exists, none reads "nan" or "None",
and without the caller's timer the page says so in its one line and names no stage bound by
either side. By default chapter 8 without a timer (each page costs a kernel's run, about 30 s;
the functions behind every page are checked on both in tests/independent/test_timer_verdicts.py);
TIMER_PAGES=all runs 06c, 08 and 09, each with and without."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import ROOT, executed_glue
from timer_fakes import TRACES, fake_timers, linked_set

NO_TIMER = "this recording has no caller's timer"
ALL = os.environ.get("TIMER_PAGES") == "all"
CASES = ([(p, t) for p in ("06c_flex", "08_at_a_glance", "09_roofline") for t in ("none", "fake")] if ALL
         else [("08_at_a_glance", "none")])


def glued(name: str) -> dict[str, str]:
    out = executed_glue(name)
    markdown = out.pop("__markdown__")
    keys = [k.split(":")[0] for k in re.findall(r"\{glue:text\}`([^`]+)`", markdown)]
    missing = [k for k in keys if k not in out]
    assert not missing, f"{name}: glued nowhere: {missing}"
    return {k: out[k] for k in keys}


@pytest.mark.parametrize("page, timers", CASES)
def test_a_verdict_page_reads_whole_with_and_without_the_callers_timer(page, timers, tmp_path, monkeypatch):
    folder = linked_set(TRACES / "h200", tmp_path, fake_timers(TRACES / "h200") if timers == "fake" else None)
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_DIR", str(folder.parent))
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_GPU", folder.name)
    monkeypatch.setenv("ATTN_PROFILED_MODE", "replay")
    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    values = glued(page)
    for key, value in values.items():
        assert not re.search(r"\bnan\b|\bNone\b|\bnone\b", value), (key, value)
    text = " ".join(values.values())
    if timers == "none":
        assert NO_TIMER in text.lower()
        assert not re.search(r"bound by the (CPU|GPU): \w", text), text
    else:
        assert NO_TIMER not in text.lower() or "No verdict for" in text
        assert re.search(r"bound by the (CPU|GPU)", text)
