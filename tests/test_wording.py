"""Words over computed values. A figure the book computes (a share of a roof, a verdict) is not
something "the trace says"; a share that can pass 100 says why where it is shown."""
from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from independent import _raw


def raw_pct_of_copy() -> list[float]:
    """Every kernel of the recorded forwards: (DRAM bytes read + written) / ncu time, of the copy
    roof's TB/s, from ncu's raw CSV (no helper)."""
    copy = _raw.copy_tbps()
    out = []
    for path in sorted((_raw.H200 / "ncu").glob("*__b8_h16_s1024_d64_bfloat16_causal.csv")):
        out += [100 * k["dram"] / k["ns"] / 1e3 / copy for k in _raw.kernels(path) if k["ns"]]
    return out


def test_a_share_of_the_copy_roof_above_100_says_why():
    from helpers.chapters import roofline
    shares = raw_pct_of_copy()
    assert shares
    table = roofline.kernel_table(pd.DataFrame([{"stage": "s", "#": 1, "% of copy roof": max(shares)}]))
    caption = table.attrs["caption"]
    if max(shares) > 100:   # the H200's sdpa_math reads 537 MB and writes 126 MB in one kernel: 103 %
        assert "can pass 100" in caption and "reads and writes" in caption, caption


def test_the_closing_tables_verdict_is_not_what_the_trace_says():
    from helpers import profile_stage
    from helpers.views import tables
    frame = tables.at_a_glance({"naive": profile_stage("naive", mode="replay", quiet=True)}, {})
    assert "the trace says" not in frame.columns
    assert "verdict from the trace" in frame.columns


def test_the_training_kernel_table_says_why_too():
    from helpers.training import chapter
    frame = pd.DataFrame([{c: 1 for c in ["stage", "#", "kernel", "pipe", "GFLOP", "DRAM MB", "ncu µs", "TFLOP/s",
                                          "% of compute roof", "% of copy roof", "bound by", "tensor instructions",
                                          "achieved occupancy %"]} | {"kernel": "k", "% of copy roof": 103.3}])
    caption = chapter.limits_kernel_table(frame).attrs["caption"]
    assert "can pass 100" in caption and "reads and writes" in caption, caption
