"""Live, a page asks ncu for the metrics the pages read (`ncu.page_metrics`: about 20), not every
work counter (56 on the H200), so that ncu replays each kernel fewer passes. That is safe only if
everything a page draws from a live ncu table comes out the same from the smaller table.

The proof, on the recorded H200 set: the raw CSVs are cut down with the csv module to the columns
an ncu export of the reduced metric list would hold (every column that is not one of the recorded
metrics, plus the reduced metrics), into a copy of the replay set; then every table, chart and
verdict of 05, 07 and 09 that reads the counters is computed from both sets and compared.

And the cache is keyed by metric set: a table of the smaller set is never read by a page that asks
for more, and the roofline's sequence sweep comes from this GPU's own replay set, labelled so."""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT
import helpers
from helpers import DEFAULT_SHAPE, Session
from helpers.chapters import occupancy_truth as truth
from helpers.chapters.occupancy_lessons import STAGES as OCCUPANCY_STAGES
from helpers.core.stages import stages_where
from helpers.sources import ncu

counters, roofline = helpers.counters, helpers.roofline
SET = ROOT / "notebooks" / "traces" / "h200"
RECORDED_METRICS = json.loads((SET / "ncu" / "provenance.json").read_text())["metrics"]
PAGE = [m for m in RECORDED_METRICS if ncu.is_page_metric(m)]
ROOFLINE_STAGES = list(stages_where(has_ncu=True, variant_of=None, dispatched=False))   # 09's
ARTICLE = list(helpers.ARTICLE_STAGES)                                                   # 05's


def restrict(text: str, keep: set[str], metrics: set[str]) -> str:
    """A raw ncu CSV as ncu would export it had it read only `keep` of the recorded `metrics`:
    the columns that are not metrics (ID, Kernel Name, device attributes...) stay."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    cols = [i for i, name in enumerate(rows[start]) if name not in metrics or name in keep]
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in rows[:start]:
        writer.writerow(r)
    for r in rows[start:]:
        writer.writerow([r[i] for i in cols] if len(r) == len(rows[start]) else r)
    return out.getvalue()


def reduced_set(root: Path, keep: list[str]) -> Path:
    """A copy of the H200 replay set under `root` whose ncu tables hold only `keep`."""
    copy = root / "h200"
    copy.mkdir(parents=True)
    for entry in SET.iterdir():
        if entry.name != "ncu":
            os.symlink(entry, copy / entry.name)
    (copy / "ncu").mkdir()
    for entry in (SET / "ncu").iterdir():
        if entry.suffix == ".csv":
            (copy / "ncu" / entry.name).write_text(restrict(entry.read_text(), set(keep), set(RECORDED_METRICS)))
        else:
            os.symlink(entry, copy / "ncu" / entry.name)
    return root


def page_outputs() -> dict:
    """Everything 05, 07 and 09 draw from the counters, from the replay set configured now."""
    s = Session(mode="replay")
    out = {}
    # 05: the measured HBM bytes
    hbm = s.counters(ARTICLE)
    out["05 hbm_measured"] = measured = counters.hbm_measured(hbm, s.forwards(hbm))
    out["05 glue_hbm"] = counters.glue_hbm(measured)
    out["05 dram_bytes"] = counters.dram_bytes(hbm)
    # 07: the occupancy ncu measured
    hw = s.counters(OCCUPANCY_STAGES)
    out["07 truth"] = t = truth.occupancy_truth(hw, s.forwards(hw))
    out["07 truth_table"] = truth.truth_table(t)
    out["07 glue_truth"] = truth.glue_truth(t)
    out["07 chart"] = truth.chart(t).to_json()
    out["07 executed"] = truth.glue_executed(hw)
    out["07 achieved"] = truth.achieved_answer(t)
    # 09: the calibration, the work, the roofline at the article's shape, per kernel and the sweep
    c = s.counters(ROOFLINE_STAGES, sweep=s.ncu_shapes("sdpa_flash"), sweep_stages=roofline.SWEEP_STAGES)
    roof = roofline.load_ceilings(c, *s.ceilings(), quiet=True)
    out["09 calibration"] = counters.calibration(c)
    out["09 glue_calibration"] = counters.glue_calibration(c)
    out["09 work"] = counters.work(c)
    out["09 work, every shape"] = counters.work(c, None)
    out["09 roof"] = {k: v for k, v in roof.items() if not isinstance(v, pd.DataFrame)}
    times = roofline.timings(s.timed(c, quiet=True))
    pts = roofline.points(c, roof, times, shapes=[c.default_shape])
    out["09 points"] = pts
    out["09 table"] = roofline.table(pts)
    out["09 glue_roofline"] = roofline.glue_roofline(pts, roof)
    kernels = roofline.kernel_points(c, roof)
    out["09 kernel_points"] = kernels
    out["09 kernel_table"] = roofline.kernel_table(kernels)
    out["09 glue_kernels"] = roofline.glue_kernels(kernels)
    out["09 chart"] = roofline.chart(pts, roof, kernels).to_json()
    sweep = roofline.points(c, roof, times)
    out["09 sweep"] = sweep
    out["09 glue_sweep"] = roofline.glue_sweep(sweep)
    out["09 sweep_chart"] = roofline.sweep_chart(sweep, roof).to_json()
    return out


def same(a, b) -> bool:
    if isinstance(a, pd.DataFrame):
        return a.equals(b) and list(a.columns) == list(b.columns)
    return a == b


@pytest.fixture(scope="module")
def full():
    return page_outputs()


def outputs_with(keep: list[str], tmp_path_factory) -> dict:
    root = reduced_set(tmp_path_factory.mktemp("reduced"), keep)
    before = os.environ.get("ATTN_PROFILED_REPLAY_DIR")
    os.environ["ATTN_PROFILED_REPLAY_DIR"] = str(root)
    try:
        return page_outputs()
    finally:
        if before is None:
            del os.environ["ATTN_PROFILED_REPLAY_DIR"]
        else:
            os.environ["ATTN_PROFILED_REPLAY_DIR"] = before


def test_the_page_metric_set_is_small_and_has_what_every_live_table_needs():
    assert len(PAGE) <= 24 < len(RECORDED_METRICS)            # 56 recorded; far fewer passes
    assert set(ncu.BASE_METRICS) <= set(PAGE)                 # launch, occupancy, DRAM bytes, time
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" in PAGE
    assert {m for m in RECORDED_METRICS if m.startswith("sm__ops_path_tensor_src_")} <= set(PAGE)


def test_every_page_output_is_the_same_from_the_reduced_tables(full, tmp_path_factory):
    reduced = outputs_with(PAGE, tmp_path_factory)
    assert set(reduced) == set(full)
    differ = [name for name in full if not same(full[name], reduced[name])]
    assert not differ, differ


def test_the_proof_can_fail_a_set_without_ffma_changes_the_pages(full, tmp_path_factory):
    """The same comparison, with one counter the pages read left out, does see the difference."""
    without = [m for m in PAGE if m != "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]
    try:
        reduced = outputs_with(without, tmp_path_factory)
    except ZeroDivisionError:
        return   # the roofline of an fp32 stage with no FLOPs: the pages break outright
    differ = [name for name in full if not same(full[name], reduced[name])]
    assert "09 work" in differ and "09 calibration" in differ


def test_the_reduced_copy_drops_the_other_counters(tmp_path):
    root = reduced_set(tmp_path, PAGE)
    text = (root / "h200" / "ncu" / f"naive__{DEFAULT_SHAPE.key}.csv").read_text()
    header = next(r for r in csv.reader(io.StringIO(text)) if r and r[0] == "ID")
    assert set(header) & set(RECORDED_METRICS) == set(PAGE)
    assert "sm__inst_executed_pipe_tensor_op_hmma.sum" not in header
