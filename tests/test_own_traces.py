"""Your own code and your own traces: load_trace, profile_code, the per-step GPU breakdown, and the
views of the book on such a Profile.

Expected values come from the raw trace events (the JSON), recomputed here with plain loops, or
from the numbers a test writes into the events it makes; none is typed in.
"""
from __future__ import annotations

import gzip
import json
import math
import re
import threading
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from conftest import ROOT, TRACES, raw_document, raw_forward_ops, raw_per_step
from helpers import Profile, TraceError, breakdown, charts, load_trace, profile_code, tables
from helpers.core import trace

OWN = sorted((ROOT / "notebooks" / "traces").glob("*/own_model/*.json.gz"))
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH = re.compile(r"^(cuda|cu)(LaunchKernel|LaunchCooperativeKernel|Memcpy|Memset|GraphLaunch)")
FRAMES = ("gpu_events", "cpu_ops", "launches", "kernels")


def write(path: Path, document, gz: bool = True) -> Path:
    text = json.dumps(document)
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def quiet_load(path, **kwargs) -> Profile:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return load_trace(path, quiet=True, **kwargs)


def assert_same_tables(a: Profile, b: Profile) -> None:
    pd.testing.assert_frame_equal(a.per_step, b.per_step)
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(a, name)("all"), getattr(b, name)("all"), check_exact=True)


# --- load_trace ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path", TRACES[::6], ids=lambda p: p.name)
def test_a_stage_trace_through_load_trace_is_the_replayed_profile(path):
    loaded, replayed = quiet_load(path), Profile.load(path)
    assert loaded.annotation == trace.ANNOTATION  # found: the one annotation of every step
    assert_same_tables(loaded, replayed)
    assert loaded.provenance.gpu == raw_document(path)["provenance"]["gpu"]


def test_plain_json_and_gzip_load_the_same(tmp_path):
    document = raw_document(TRACES[0])
    a = quiet_load(write(tmp_path / "t.json.gz", document))
    b = quiet_load(write(tmp_path / "t.json", document, gz=False))
    assert_same_tables(a, b)


def test_a_gzip_named_json_and_a_json_named_gz_are_read_by_their_bytes(tmp_path):
    document = raw_document(TRACES[0])
    a = quiet_load(write(tmp_path / "t.json", document, gz=True))
    b = quiet_load(write(tmp_path / "u.json.gz", document, gz=False))
    assert_same_tables(a, b)


def test_without_profiler_steps_the_whole_trace_is_one_step(tmp_path):
    document = raw_document(TRACES[0])
    document["traceEvents"] = [e for e in document["traceEvents"]
                               if not str(e.get("name", "")).startswith("ProfilerStep#")]
    prof = quiet_load(write(tmp_path / "nosteps.json.gz", document), annotation=None)
    assert not prof.profiler_steps and prof.steps == [trace.WHOLE_TRACE_STEP]
    events = document["traceEvents"]
    launched = {e["args"]["correlation"] for e in events
                if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and LAUNCH.match(e["name"])}
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    row = prof.per_step.iloc[0]
    assert row["gpu_events"] == sum(e["args"]["correlation"] in launched for e in gpu)
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") in
            ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")]
    hosts = [e for e in host if e.get("cat") in ("cpu_op", "user_annotation") or LAUNCH.match(e["name"])]
    span = max(e["ts"] + e["dur"] for e in hosts) - min(e["ts"] for e in hosts)
    assert row["cpu_time_us"] == pytest.approx(span)
    assert row["aten_ops"] == sum(e["cat"] == "cpu_op" and e["name"].startswith("aten::") for e in host)


def test_without_provenance_the_gpu_facts_come_from_device_properties(tmp_path):
    document = raw_document(TRACES[0])
    recorded = document.pop("provenance")
    # the facts a Kineto trace carries, written in Kineto's own keys, from the recorded provenance
    major, minor = recorded["capability"].split(".")
    document["deviceProperties"] = [{"id": 0, "name": recorded["gpu"], "computeMajor": int(major),
                                     "computeMinor": int(minor), "numSms": recorded["sm_count"]}]
    document["baseTimeNanoseconds"] = 1_700_000_000_000_000_000
    prof = quiet_load(write(tmp_path / "bare.json.gz", document))
    p = prof.provenance
    assert (p.gpu, p.capability, p.sm_count) == (recorded["gpu"], recorded["capability"], recorded["sm_count"])
    assert p.torch == "unknown" and "torch" not in p.description
    first = min(e["ts"] for e in document["traceEvents"] if e.get("ph") == "X")
    assert p.date[:10] == pd.Timestamp(document["baseTimeNanoseconds"] + first * 1000, unit="ns").strftime("%Y-%m-%d")
    assert prof.annotation == trace.ANNOTATION and recorded["gpu"] in prof.banner()
    assert_same_tables(prof, Profile.load(TRACES[0]))


def _bad(tmp_path: Path, kind: str) -> tuple[Path, str]:
    good = TRACES[0]
    path = tmp_path / f"{kind}.json.gz"
    if kind == "truncated-gzip":
        path.write_bytes(good.read_bytes()[:300])
        return path, "truncated"
    if kind == "corrupt-gzip":
        data = bytearray(good.read_bytes())
        data[40:80] = bytes(40)
        path.write_bytes(bytes(data))
        return path, "corrupt|truncated|not valid JSON"
    if kind == "empty-file":
        path.write_bytes(b"")
        return path, "empty"
    if kind == "not-json":
        path = tmp_path / "notes.json"
        path.write_text("ProfilerStep#2 took 3 ms\n")
        return path, "not valid JSON"
    if kind == "truncated-json":
        path = tmp_path / "cut.json"
        path.write_text(json.dumps(raw_document(good))[:5000])
        return path, "truncated"
    if kind == "no-trace-events":
        return write(path, {"schemaVersion": 1, "deviceProperties": []}), "no 'traceEvents' list"
    if kind == "bare-list":
        return write(path, raw_document(good)["traceEvents"]), "bare JSON list"
    if kind == "empty-trace":
        return write(path, {"traceEvents": [], "schemaVersion": 1}), "no events"
    if kind == "not-kineto":
        events = [{"ph": "X", "cat": "blink", "name": "Paint", "ts": i, "dur": 1, "pid": 1, "tid": 1}
                  for i in range(10)]
        return write(path, {"traceEvents": events}), "not one torch.profiler wrote"
    if kind == "malformed-event":
        document = raw_document(good)
        op = next(e for e in document["traceEvents"] if e.get("cat") == "cpu_op")
        del op["dur"]
        return write(path, document), "no number for 'dur'"
    if kind == "missing":
        return tmp_path / "nope.json.gz", "no such file"
    if kind == "folder":
        return tmp_path, "is a folder"
    raise ValueError(kind)


BAD = ["truncated-gzip", "corrupt-gzip", "empty-file", "not-json", "truncated-json", "no-trace-events",
       "bare-list", "empty-trace", "not-kineto", "malformed-event", "missing", "folder"]


@pytest.mark.parametrize("kind", BAD)
def test_bad_input_is_a_trace_error_that_names_the_file(tmp_path, kind):
    path, why = _bad(tmp_path, kind)
    with pytest.raises(TraceError, match=why) as err:
        load_trace(path, quiet=True)
    assert str(path) in str(err.value)


def test_an_annotation_the_trace_lacks_is_named_with_the_ones_it_has():
    with pytest.raises(TraceError, match=r"no annotation 'encoder'.*attn_fwd"):
        load_trace(TRACES[0], annotation="encoder", quiet=True)


@pytest.fixture(scope="module")
def cpu_only(tmp_path_factory) -> Path:
    """A trace without GPU events: a stage trace with its GPU events taken out."""
    document = raw_document(TRACES[0])
    document["traceEvents"] = [e for e in document["traceEvents"] if e.get("cat") not in GPU_CATS]
    document.pop("provenance")
    return write(tmp_path_factory.mktemp("cpu") / "cpu_only.json.gz", document)


def test_a_trace_without_gpu_events_loads_with_a_warning_and_the_gpu_views_say_why(cpu_only):
    with pytest.warns(RuntimeWarning, match=re.escape(str(cpu_only)) + ".*no GPU events"):
        prof = load_trace(cpu_only, quiet=True)
    assert prof.gpu_events("all").empty and len(prof.cpu_ops("all"))
    for view in (breakdown.step_table, breakdown.top_kernels, breakdown.kernels_per_op, breakdown.verdict):
        with pytest.raises(TraceError, match=f"{cpu_only.name} holds no GPU events"):
            view(prof)
    # the book's other views show what there is: the host ops, read from the raw events, and no GPU
    raw_ops = raw_forward_ops(cpu_only)
    assert tables.kernel_table(prof).empty and len(tables.op_tree(prof)) == len(raw_ops) + 1  # + attn_fwd
    bars = {d.name: d for d in charts.timeline(prof).data}
    assert len(bars["CPU ops"].x) == len(raw_ops) + 1 and len(bars["GPU events"].x) == 0
    times = {d.name: list(d.y) for d in charts.gpu_and_cpu_time([prof]).data}
    cpu = raw_per_step(raw_document(cpu_only)["traceEvents"])[-1][1]  # the step the tables show
    assert times["GPU time"] == [0] and times["CPU time"] == [pytest.approx(cpu)]
    assert len(charts.kernel_durations(prof).data) == 0


# --- profile_code, on this machine's CPU --------------------------------------------------------

def test_profile_code_runs_the_warm_up_calls_and_the_schedule(tmp_path):
    calls, grad = [], []
    a = torch.randn(64, 64, requires_grad=True)

    def step(x, scale=1.0):
        calls.append(scale)
        grad.append(torch.is_grad_enabled())
        return (x @ x * scale).sum()

    warm_up, active = 2, 4
    prof = profile_code(step, a, annotation="my_step", steps=active, no_grad=True, quiet=True, scale=2.0,
                        warmup_calls=warm_up)
    raw = raw_document(prof.save(tmp_path / "mine.json.gz"))["traceEvents"]
    spans = {int(m.group(1)): (e["ts"], e["ts"] + e["dur"]) for e in raw
             if (m := re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", "")))}
    # the profiler numbers every scheduled step from 0 (its wait and warm-up steps too) and records
    # only the active ones: the calls are the warm-up calls, then one per scheduled step
    assert len(spans) == active and len(calls) == warm_up + max(spans) + 1
    assert set(calls) == {2.0} and not any(grad)
    assert len(prof.steps) == active and prof.annotation == "my_step" and prof.provenance.source == "code"
    assert sorted(spans) == prof.steps
    mine = [e for e in raw if e.get("name") == "my_step" and e.get("cat") == "user_annotation"]
    per_step = prof.per_step.set_index("step")
    for step_number, (lo, hi) in spans.items():
        inside = [e for e in mine if lo <= e["ts"] <= hi]
        assert len(inside) == 1
        assert per_step.loc[step_number, "cpu_time_us"] == pytest.approx(inside[0]["dur"])
        ann = inside[0]
        aten = [e for e in raw if e.get("cat") == "cpu_op" and e["name"].startswith("aten::")
                and ann["ts"] <= e["ts"] and e["ts"] + e["dur"] <= ann["ts"] + ann["dur"] + 1e-3]
        assert per_step.loc[step_number, "aten_ops"] == len(aten)
    with pytest.warns(RuntimeWarning, match="no GPU events"):
        loaded = load_trace(tmp_path / "mine.json.gz", quiet=True)
    assert loaded.annotation == "my_step"
    assert_same_tables(loaded, prof)


def test_profile_code_with_grad_by_default_and_clear_errors():
    seen = []
    profile_code(lambda: seen.append(torch.is_grad_enabled()), steps=1, quiet=True)
    assert seen and all(seen)
    with pytest.raises(TypeError, match="needs a callable.*not its result"):
        profile_code(torch.randn(3), quiet=True)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        profile_code(lambda: None, steps=0, quiet=True)


def test_ops_another_thread_runs_inside_the_annotation_are_one_level_below_it(tmp_path):
    """Like autograd's backward thread: work on a second thread inside the step's annotation."""
    def step():
        worker = threading.Thread(target=lambda: torch.randn(32, 32) @ torch.randn(32, 32))
        torch.ones(4).sum()
        worker.start()
        worker.join()

    from torch._C._profiler import _ExperimentalConfig
    # torch.profiler follows new Python threads only when told to (autograd's thread it follows)
    prof = profile_code(step, annotation="threaded", steps=2, quiet=True,
                        profiler_options={"experimental_config": _ExperimentalConfig(profile_all_threads=True)})
    raw = raw_document(prof.save(tmp_path / "threads.json.gz"))["traceEvents"]
    ops = prof.cpu_ops("all")
    for root in (e for e in raw if e.get("name") == "threaded" and e.get("cat") == "user_annotation"):
        inside = [e for e in raw if e.get("cat") in ("cpu_op", "user_annotation") and e is not root
                  and root["ts"] <= e["ts"] and e["ts"] + e["dur"] <= root["ts"] + root["dur"] + 1e-3
                  and not e["name"].startswith("ProfilerStep#")]
        other = [e for e in inside if e["tid"] != root["tid"]]
        assert other, "the worker's ops are in the trace, on their own thread"
        step_rows = ops[(ops["start_us"] >= root["ts"]) & (ops["start_us"] <= root["ts"] + root["dur"])]
        mine = step_rows[step_rows["tid"] != root["tid"]]
        assert len(mine) == len(other)
        assert (mine["depth"] >= 1).all()
        assert set(mine.loc[mine["depth"] == 1, "parent"]) == {"threaded"}
    assert charts.timeline(prof).data  # a lane per thread


# --- the per-step GPU breakdown -----------------------------------------------------------------

def _synthetic(tmp_path: Path) -> tuple[Path, dict]:
    """A step whose GPU gaps are known by construction: numbers written here, then read back."""
    t = {"step": (0.0, 100.0), "k1": (10.0, 20.0), "k2": (25.0, 40.0), "k3": (38.0, 45.0),
         "k4": (60.0, 70.0), "launch1": 5.0, "launch2": 12.0, "launch3": 13.0, "launch4": 50.0}
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0.0, "dur": 100.0, "pid": 1, "tid": 1},
          {"ph": "X", "cat": "user_annotation", "name": "work", "ts": 1.0, "dur": 98.0, "pid": 1, "tid": 1}]
    for i, stream in ((1, 7), (2, 7), (3, 8), (4, 7)):
        ev.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "ts": t[f"launch{i}"] - 0.5, "dur": 3.0,
                   "pid": 1, "tid": 1})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t[f"launch{i}"], "dur": 2.0,
                   "pid": 1, "tid": 1, "args": {"correlation": i}})
        start, end = t[f"k{i}"]
        ev.append({"ph": "X", "cat": "kernel", "name": f"kernel_{i}", "ts": start, "dur": end - start, "pid": 0,
                   "tid": stream, "args": {"correlation": i, "stream": stream, "grid": [1, 1, 1], "block": [32, 1, 1],
                                           "registers per thread": 32, "shared memory": 0}})
    return write(tmp_path / "synthetic.json.gz", {"traceEvents": ev}), t


def test_the_idle_split_on_a_step_built_by_hand(tmp_path):
    path, t = _synthetic(tmp_path)
    prof = quiet_load(path)
    row = breakdown.gpu_breakdown(prof).iloc[0]
    (s1, e1), (s2, e2), (s3, e3), (s4, e4) = t["k1"], t["k2"], t["k3"], t["k4"]
    # k2 and k3 (two streams) overlap: busy counts the overlap once
    busy = (e1 - s1) + (max(e2, e3) - s2) + (e4 - s4)
    assert row["span_us"] == pytest.approx(e4 - s1) and row["busy_us"] == pytest.approx(busy)
    # gap 1 (k1 end → k2 start): k2's launch came before k1 ended: other GPU work
    # gap 2 (k3 end → k4 start): k4's launch came after the GPU went idle: the host
    assert t["launch2"] < e1 and t["launch4"] > max(e2, e3)
    assert row["other_wait_us"] == pytest.approx(s2 - e1)
    assert row["host_wait_us"] == pytest.approx(s4 - max(e2, e3))
    assert row["idle_us"] == pytest.approx(row["host_wait_us"] + row["other_wait_us"])
    gaps = breakdown.idle_gaps(prof)
    assert list(gaps["cause"]) == ["gpu", "host"] and list(gaps["top_aten_op"]) == ["aten::op2", "aten::op4"]
    assert f"{row['busy_pct']:.0f}%" in breakdown.verdict(prof)


def independent_breakdown(events: list[dict]) -> dict:
    """Per step from the raw events, plain loops: span, busy, and the idle split by cause."""
    steps = {int(m.group(1)): (e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("ph") == "X" and (m := re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", "")))}
    if not steps:  # no ProfilerStep# rows: every launch of the trace is in its one step
        steps = {trace.WHOLE_TRACE_STEP: (-math.inf, math.inf)}
    launch = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and LAUNCH.match(e["name"]):
            for s, (lo, hi) in steps.items():
                if lo <= e["ts"] <= hi:
                    launch[e["args"]["correlation"]] = (s, e["ts"])
    by_step = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS and e["args"].get("correlation") in launch:
            s, ts = launch[e["args"]["correlation"]]
            by_step[s].append((e["ts"], e["ts"] + e["dur"], ts, e["cat"]))
    out = {}
    for s, intervals in by_step.items():
        intervals.sort(key=lambda x: (x[0], x[2]))
        busy = host = other = 0.0
        cur_start, cur_end = intervals[0][0], intervals[0][1]
        for start, end, launched, _ in intervals[1:]:
            if start > cur_end:
                busy += cur_end - cur_start
                if launched > cur_end:
                    host += start - cur_end
                else:
                    other += start - cur_end
                cur_start, cur_end = start, end
            else:
                cur_end = max(cur_end, end)
        busy += cur_end - cur_start
        span = max(i[1] for i in intervals) - min(i[0] for i in intervals)
        out[s] = {"span": span, "busy": busy, "host": host, "other": other,
                  "compute": union_length([(i[0], i[1]) for i in intervals if i[3] == "kernel"])}
    return out


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Time covered by at least one interval, by a sweep over the sorted intervals."""
    total, end = 0.0, -math.inf
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


@pytest.mark.parametrize("path", TRACES[::4] + OWN, ids=lambda p: p.name)
def test_the_breakdown_agrees_with_the_raw_events(path):
    expected = independent_breakdown(raw_document(path)["traceEvents"])
    table = breakdown.gpu_breakdown(quiet_load(path)).set_index("step")
    assert expected and set(expected) <= set(table.index)
    for s, want in expected.items():
        row = table.loc[s]
        assert row["span_us"] == pytest.approx(want["span"], abs=1e-3)
        assert row["busy_us"] == pytest.approx(want["busy"], abs=1e-3)
        assert row["host_wait_us"] == pytest.approx(want["host"], abs=1e-3)
        assert row["other_wait_us"] == pytest.approx(want["other"], abs=1e-3)
        assert row["compute_us"] == pytest.approx(want["compute"], abs=1e-3)
        # every GPU event of a step has its launch in the trace: nothing is left unknown
        assert row["unknown_wait_us"] == 0
        assert row["busy_us"] + row["idle_us"] == pytest.approx(row["span_us"])


def test_compute_is_the_kernels_alone_and_a_gap_without_its_launch_is_unknown():
    """naive's step holds a memset and a memcpy: compute (kernels alone) is less than busy. With the
    launch of the event that ends a gap unknown, that gap moves from its cause to "unknown"."""
    from helpers.breakdown import core as bd
    from conftest import raw_last_step
    path = next(p for p in TRACES if p.name.startswith("naive__"))
    gpu, _, _ = raw_last_step(path)
    events = raw_document(path)["traceEvents"]
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events if e.get("ph") == "X"
                 and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    rows = [{"start_us": float(e["ts"]), "end_us": float(e["ts"] + e["dur"]),
             "category": {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}[e["cat"]],
             "launch_start_us": float(launch_ts[e["args"]["correlation"]])} for e, _ in gpu]
    frame = pd.DataFrame(rows)
    busy = union_length([(r["start_us"], r["end_us"]) for r in rows])
    compute = union_length([(r["start_us"], r["end_us"]) for r in rows if r["category"] == "kernel"])
    assert compute < busy  # the memset and the memcpy are not kernels
    got = bd.window_breakdown(frame)
    assert got["busy_us"] == pytest.approx(busy) and got["compute_us"] == pytest.approx(compute)
    assert got["unknown_wait_us"] == 0
    # the gaps, by plain loops over the events in start order: (length, index of the event ending it)
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["start_us"], rows[i]["launch_start_us"]))
    gaps, reach = [], rows[order[0]]["end_us"]
    for i in order[1:]:
        if rows[i]["start_us"] > reach:
            gaps.append((rows[i]["start_us"] - reach, i))
        reach = max(reach, rows[i]["end_us"])
    assert gaps
    length, ender = max(gaps)
    frame.loc[ender, "launch_start_us"] = float("nan")
    unknown = bd.window_breakdown(frame)
    assert unknown["unknown_wait_us"] == pytest.approx(length)
    assert unknown["host_wait_us"] + unknown["other_wait_us"] == pytest.approx(
        got["host_wait_us"] + got["other_wait_us"] - length)
    assert unknown["idle_us"] == pytest.approx(
        unknown["host_wait_us"] + unknown["other_wait_us"] + unknown["unknown_wait_us"])


# --- the book's views on any Profile ------------------------------------------------------------

def test_the_timeline_merges_what_it_cannot_draw_and_counts_it():
    prof = Profile.load(TRACES[-1])  # the stage with the most GPU events
    k = prof.kernels()
    fig = charts.timeline(prof, max_bars=2)
    merged = next(t for t in fig.data if t.name == "GPU events (merged)")
    assert sum(c[0] for c in merged.customdata) == len(k) and len(merged.x) <= len(k)
    assert "merged into" in fig.layout.title.text
    # a window shows the events that overlap it, and only those
    t0 = prof.cpu_ops()["start_us"].min()
    lo, hi = float(k["start_us"].iloc[1] - t0), float(k["end_us"].iloc[2] - t0)
    windowed = charts.timeline(prof, window=(lo, hi))
    gpu = next(t for t in windowed.data if t.name == "GPU events")
    inside = k[(k["end_us"] - t0 >= lo) & (k["start_us"] - t0 <= hi)]
    assert len(gpu.x) == len(inside) and list(windowed.layout.xaxis.range) == [lo, hi]


def test_top_kernels_and_kernels_per_op_add_up_to_the_step():
    prof = Profile.load(TRACES[-1])
    k = prof.kernels()
    top = breakdown.top_kernels(prof, n=1000)
    assert top["calls"].sum() == len(k) and top["total µs"].sum() == pytest.approx(k["dur_us"].sum(), abs=0.1 * len(top))
    per_op = breakdown.kernels_per_op(prof, n=None)
    assert per_op["GPU events"].sum() == len(k)
    for op, group in k.groupby("top_aten_op"):
        assert per_op.loc[op, "GPU events"] == len(group)


# --- on the GPU ---------------------------------------------------------------------------------

# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_recorded_profile_code_matches_the_raw_events
@pytest.mark.gpu
def test_profile_code_on_the_gpu_matches_the_raw_events(tmp_path):
    from test_trace import independent_view
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, device="cuda", dtype=torch.bfloat16).eval()
    x = torch.randn(8, 128, 512, device="cuda", dtype=torch.bfloat16)
    prof = profile_code(layer, x, annotation="layer", no_grad=True, quiet=True)
    path = prof.save(tmp_path / "layer.json.gz")
    steps, gpu, *_ = independent_view(path)
    table = prof.per_step.set_index("step")
    assert sorted(steps) == prof.steps
    for step in steps:
        assert table.loc[step, "gpu_events"] == len(gpu[step]) > 0
    expected = independent_breakdown(raw_document(path)["traceEvents"])
    got = breakdown.gpu_breakdown(prof).set_index("step")
    for step, want in expected.items():
        assert got.loc[step, "busy_us"] == pytest.approx(want["busy"], abs=1e-3)
    assert_same_tables(quiet_load(path), prof)


# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_a_recorded_experiment_has_the_stage_tables_and_its_threads
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["encoder_forward", "encoder_train_step"])
def test_an_experiment_live_and_replayed_have_the_same_tables_and_threads(name):
    from helpers.own_model.sources import profile_experiment
    live, replayed = profile_experiment(name, mode="live", quiet=True), profile_experiment(name, mode="replay", quiet=True)
    assert live.annotation == replayed.annotation == name
    for table in FRAMES:
        assert list(getattr(live, table)().columns) == list(getattr(replayed, table)().columns)
    assert list(live.per_step.columns) == list(replayed.per_step.columns)
    assert len(live.gpu_events()) > 0


@pytest.mark.parametrize("path", OWN, ids=lambda p: p.name)
def test_every_kernel_of_the_own_model_traces_is_decoded(path):
    k = quiet_load(path).kernels("all")
    assert len(k) and not (k["kind"] == "unknown").any(), set(k.loc[k["kind"] == "unknown", "name"])
    # a foreach kernel reads as the _foreach_ op that launched it (AdamW's update, op by op)
    foreach = k[k["aten_op"].fillna("").str.startswith("aten::_foreach_")]
    for op, summary in zip(foreach["aten_op"], foreach["summary"]):
        name = op.removeprefix("aten::_foreach_").rstrip("_")
        assert summary.startswith(f"ATen foreach {name} "), (op, summary)


@pytest.mark.parametrize("path", [p for p in OWN if "train" in p.name], ids=lambda p: p.name)
def test_launches_on_autograds_thread_are_tied_to_that_threads_ops(path):
    """A training step launches from two threads; each launch's op comes from its own thread."""
    events = raw_document(path)["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    calls = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
             and LAUNCH.match(e["name"])]
    assert len({c["tid"] for c in calls}) > 1, "the backward thread launches too"
    table = quiet_load(path).launches("all").set_index("correlation")
    for call in calls:
        holding = sorted((o for o in ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"]
                          and o["ts"] + o["dur"] >= call["ts"] + call["dur"]), key=lambda o: (o["ts"], -o["dur"]))
        row = table.loc[call["args"]["correlation"]]
        assert row["tid"] == call["tid"]
        assert row["aten_op"] == (holding[-1]["name"] if holding else None)
        assert row["top_aten_op"] == (holding[0]["name"] if holding else None)


def test_a_slow_load_or_profile_shows_a_progress_bar_and_a_fast_one_none(monkeypatch, capsys, tmp_path):
    from helpers.core import progress as progress_module
    load_trace(TRACES[0], quiet=True, progress=True)  # fast: under the delay, nothing drawn
    assert "reading" not in capsys.readouterr().err
    monkeypatch.setattr(progress_module, "DELAY_S", 0)  # every load "takes more than a moment"
    load_trace(TRACES[0], quiet=True, progress=True)
    assert f"reading {TRACES[0].name}" in capsys.readouterr().err
    profile_code(lambda: None, steps=1, quiet=True, annotation="tick")
    assert "profiling tick" in capsys.readouterr().err
    load_trace(TRACES[0], quiet=True, progress=False)
    assert "reading" not in capsys.readouterr().err


@pytest.mark.parametrize("path", [p for p in OWN if p.name == "encoder_train_step.json.gz"], ids=lambda p: p.name)
def test_the_chapters_guess_and_explorer_work_on_a_recorded_step(path, monkeypatch):
    from helpers import own_model
    prof = quiet_load(path, annotation="encoder_train_step")
    from helpers.views.guess import judge
    from conftest import raw_last_step
    events, bound = (q.key for q in own_model.questions("encoder_train_step", prof).questions)
    # the events per step from the raw JSON: the last step's kernels, copies and fills
    assert events["answer"] == len(raw_last_step(path)[0])
    assert bound["answer"] == own_model.bound_of(prof) and bound["answer"] in bound["options"]
    assert judge(events, str(len(raw_last_step(path)[0])))["verdict"] == "right"
    assert judge(events, "0")["verdict"] == "wrong"
    drawn = []
    import helpers.own_model.chapter as chapter  # helpers.own_model's names are its
    monkeypatch.setattr(chapter, "display", lambda obj: drawn.append(obj))
    explorer = own_model.timeline_explorer(prof)
    slider = explorer.children[1]
    slider.value = (0.0, slider.max / 10)
    explorer.children[0].children[1].click()
    assert drawn and list(drawn[-1].layout.xaxis.range) == [0.0, slider.max / 10]


def test_each_gap_its_bounds_and_cause_from_the_raw_events():
    """idle_gaps row by row against plain loops over naive's last step: where each gap starts and
    ends, and its cause (the host, when the launch of the event ending it came after the GPU went
    idle; other GPU work, when it came before or at that instant; unknown without a launch)."""
    from helpers.breakdown import core as bd
    from conftest import raw_last_step
    path = next(p for p in TRACES if p.name.startswith("naive__"))
    gpu, _, _ = raw_last_step(path)
    events = raw_document(path)["traceEvents"]
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events if e.get("ph") == "X"
                 and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    rows = [{"step": 1, "start_us": float(e["ts"]), "end_us": float(e["ts"] + e["dur"]), "name": e["name"],
             "category": e["cat"], "stream": e["args"].get("stream"), "launched_by": e["launched_by"],
             "aten_op": None, "top_aten_op": None,
             "launch_start_us": float(launch_ts[e["args"]["correlation"]])} for e, _ in gpu]

    def expected(rows):
        order = sorted(range(len(rows)), key=lambda i: (rows[i]["start_us"], rows[i]["launch_start_us"]))
        out, reach = [], rows[order[0]]["end_us"]
        for i in order[1:]:
            r = rows[i]
            if r["start_us"] > reach:
                launch = r["launch_start_us"]
                cause = "unknown" if math.isnan(launch) else "host" if launch > reach else "gpu"
                out.append((reach, r["start_us"], r["start_us"] - reach, cause, r["name"]))
            reach = max(reach, r["end_us"])
        return out

    def got(rows):
        gaps = bd.idle_gaps(pd.DataFrame(rows))
        return list(zip(gaps["start_us"], gaps["end_us"], gaps["idle_us"], gaps["cause"], gaps["next_event"]))

    want = expected(rows)
    assert want and got(rows) == want
    # the other causes: the event ending the first gap launched exactly as the GPU went idle (other
    # GPU work, not the host), or with no launch in the trace (unknown); and two events that touch
    # leave no gap between them
    first_gap_end = next(i for i, r in enumerate(rows) if r["start_us"] == want[0][1])
    at_idle = [dict(r) for r in rows]
    at_idle[first_gap_end]["launch_start_us"] = want[0][0]
    unknown = [dict(r) for r in rows]
    unknown[first_gap_end]["launch_start_us"] = float("nan")
    touching = [dict(r) for r in rows]
    touching[first_gap_end]["start_us"] = want[0][0]
    for variant in (at_idle, unknown, touching):
        assert got(variant) == expected(variant)
    assert got(at_idle)[0][3] == "gpu" and got(unknown)[0][3] == "unknown" and len(got(touching)) == len(want) - 1
    assert list(bd.idle_gaps(pd.DataFrame(rows).iloc[0:0]).columns) == bd.GAP_COLUMNS


def test_the_union_of_one_interval_is_that_interval():
    # a step with a single GPU event is busy for that event's duration (a mutant that returned
    # nothing for one interval survived: no trace of the set has a one-event step window)
    from helpers.breakdown import core as bd
    starts, ends = bd.merged(np.array([2.0]), np.array([5.0]))
    assert list(starts) == [2.0] and list(ends) == [5.0]
    one = pd.DataFrame({"start_us": [2.0], "end_us": [5.0], "category": ["kernel"], "launch_start_us": [1.0]})
    assert bd.busy_us(one) == 3.0 and bd.window_breakdown(one)["busy_us"] == 3.0
    assert bd.window_breakdown(one)["compute_us"] == 3.0 and bd.window_breakdown(one)["idle_us"] == 0.0


def _naive_rows() -> list[dict]:
    """naive's last step, one row per GPU event, every field read from the raw JSON: its bounds, its
    category, stream and launch call, the launch's start, and the host ops holding that launch."""
    from conftest import raw_last_step
    path = next(p for p in TRACES if p.name.startswith("naive__"))
    gpu, _, events = raw_last_step(path)
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events if e.get("ph") == "X"
                 and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    return [{"step": 1, "start_us": float(e["ts"]), "end_us": float(e["ts"] + e["dur"]), "name": e["name"],
             "category": {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}[e["cat"]],
             "stream": e["args"].get("stream"), "launched_by": e["launched_by"],
             "aten_op": min(holders, default=None), "top_aten_op": ", ".join(sorted(holders)) or None,
             "launch_start_us": float(launch_ts[e["args"]["correlation"]])} for e, holders in gpu]


def _expected_row(rows: list[dict]) -> dict:
    """A window's breakdown by plain loops over its events (the definitions of helpers.breakdown.core):
    span from the first start to the last end, busy and compute as unions, each gap's cause read from
    the launch of the event that ends it (after the GPU went idle: the host; at or before: other GPU
    work; none in the trace: unknown); percentages of the span, none where the span is empty."""
    nan = float("nan")
    if not rows:
        return {"gpu_events": 0, "start_us": nan, "end_us": nan, "span_us": 0.0, "busy_us": 0.0,
                "compute_us": 0.0, "idle_us": 0.0, "host_wait_us": 0.0, "other_wait_us": 0.0,
                "unknown_wait_us": 0.0, "busy_pct": nan, "idle_pct": nan, "host_wait_pct": nan, "other_wait_pct": nan}
    lo, hi = min(r["start_us"] for r in rows), max(r["end_us"] for r in rows)
    waits = {"host": 0.0, "gpu": 0.0, "unknown": 0.0}
    order = sorted(rows, key=lambda r: (r["start_us"], math.inf if math.isnan(r["launch_start_us"]) else r["launch_start_us"]))
    reach = order[0]["end_us"]
    for r in order[1:]:
        if r["start_us"] > reach:
            launch = r["launch_start_us"]
            waits["unknown" if math.isnan(launch) else "host" if launch > reach else "gpu"] += r["start_us"] - reach
        reach = max(reach, r["end_us"])
    busy = union_length([(r["start_us"], r["end_us"]) for r in rows])
    out = {"gpu_events": len(rows), "start_us": lo, "end_us": hi, "span_us": hi - lo, "busy_us": busy,
           "compute_us": union_length([(r["start_us"], r["end_us"]) for r in rows if r["category"] == "kernel"]),
           "idle_us": hi - lo - busy, "host_wait_us": waits["host"], "other_wait_us": waits["gpu"],
           "unknown_wait_us": waits["unknown"]}
    for key in ("busy", "idle", "host_wait", "other_wait"):
        out[f"{key}_pct"] = 100 * out[f"{key}_us"] / (hi - lo) if hi > lo else nan
    return out


def _same(got, want: dict) -> None:
    for key, value in want.items():
        if isinstance(value, float) and math.isnan(value):
            assert isinstance(got[key], float) and math.isnan(got[key]), key
        else:
            assert got[key] == pytest.approx(value, abs=1e-6), key


def test_every_field_of_the_breakdown_row_from_the_raw_events():
    """Every column of a step's row (the GPU-events count and the window's bounds, which the other
    checks do not read; the percentages; each wait) against plain loops over naive's last step, and
    over variants the recordings lack: the event ending the first gap launched exactly as the GPU went
    idle (other GPU work, not the host) or with no launch in the trace (unknown), a step of one event
    shorter than a microsecond, one of zero duration (no span: no percentage), and a step with no GPU
    event at all (nothing to measure: zero time, no bounds, no percentage)."""
    from helpers.breakdown import core as bd
    rows = _naive_rows()
    want = _expected_row(rows)
    assert want["other_wait_us"] > 0 and want["compute_us"] < want["busy_us"]
    reach, first_gap_end = rows[0]["end_us"], None
    for i, r in sorted(enumerate(rows), key=lambda x: (x[1]["start_us"], x[1]["launch_start_us"]))[1:]:
        if r["start_us"] > reach and first_gap_end is None:
            first_gap_end, gap_start = i, reach
        reach = max(reach, r["end_us"])
    at_idle = [dict(r) for r in rows]
    at_idle[first_gap_end]["launch_start_us"] = gap_start
    late = [dict(r) for r in rows]  # launched just after the GPU went idle: the host
    late[first_gap_end]["launch_start_us"] = gap_start + 0.25
    no_launch = [dict(r) for r in rows]
    no_launch[first_gap_end]["launch_start_us"] = float("nan")
    short = [dict(rows[0], end_us=rows[0]["start_us"] + 0.5)]
    instant = [dict(rows[0], end_us=rows[0]["start_us"])]
    for variant in (rows, at_idle, late, no_launch, short, instant, []):
        frame = pd.DataFrame(variant, columns=list(rows[0]))
        _same(bd.window_breakdown(frame), _expected_row(variant))
    assert _expected_row(late)["host_wait_us"] > want["host_wait_us"]
    assert _expected_row(at_idle)["other_wait_us"] >= want["other_wait_us"]
    assert _expected_row(no_launch)["unknown_wait_us"] > 0 and _expected_row(short)["busy_pct"] == 100
    # per step: a step with events and one without, each its own row, in BREAKDOWN_COLUMNS' order
    two = pd.DataFrame([dict(r, step=1) for r in rows] + [dict(r, step=3) for r in short], columns=list(rows[0]))
    table = bd.step_breakdown(two, [1, 2, 3])
    assert list(table.columns) == bd.BREAKDOWN_COLUMNS and list(table["step"]) == [1, 2, 3]
    for (_, row), variant in zip(table.iterrows(), (rows, [], short)):
        _same(row, _expected_row(variant))


def test_each_gap_names_the_event_that_ends_it_from_the_raw_events():
    """idle_gaps' columns of the event ending each gap (its step, category, stream, launch call and its
    start, the ops holding the launch) are that event's own fields, read from the raw JSON."""
    from helpers.breakdown import core as bd
    rows = _naive_rows()
    gaps = bd.idle_gaps(pd.DataFrame(rows))
    assert len(gaps) and list(gaps.columns) == bd.GAP_COLUMNS
    for _, gap in gaps.iterrows():
        ender = min((r for r in rows if r["start_us"] == gap["end_us"]), key=lambda r: r["launch_start_us"])
        assert (gap["step"], gap["next_event"], gap["next_category"], gap["next_stream"], gap["launched_by"],
                gap["aten_op"], gap["top_aten_op"]) == (ender["step"], ender["name"], ender["category"],
                                                        ender["stream"], ender["launched_by"], ender["aten_op"],
                                                        ender["top_aten_op"])
        assert gap["launch_start_us"] == ender["launch_start_us"]
    assert gaps["aten_op"].notna().all() and gaps["next_stream"].notna().all()


@pytest.mark.parametrize("path", [next(p for p in TRACES if p.name.startswith("naive__")),
                                  *(p for p in OWN if p.name == "encoder_train_step.json.gz")], ids=lambda p: p.name)
def test_chapter_tens_step_table_and_top_kernels_from_the_raw_events(path):
    """The per-step table a reader sees (each column the right figure, rounded as shown) and the top
    kernels (ranked by total time, calls, total, mean and share of the step), against plain loops over
    the raw events (naive's steps; the training step, which waits on the host too); kernels per op
    against the step's kernel rows, op by op."""
    from conftest import raw_last_step
    events = raw_document(path)["traceEvents"]
    prof = quiet_load(path)
    want = independent_breakdown(events)
    table = breakdown.step_table(prof)
    counts = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")):
            lo, hi = e["ts"], e["ts"] + e["dur"]
            step = int(e["name"].split("#")[1])
            calls = {c["args"]["correlation"] for c in events if c.get("ph") == "X" and c.get("cat") in ("cuda_runtime", "cuda_driver")
                     and LAUNCH.match(c["name"]) and lo <= c["ts"] <= hi}
            counts[step] = sum(1 for g in events if g.get("ph") == "X" and g.get("cat") in GPU_CATS
                               and g["args"].get("correlation") in calls)
    assert set(want) == set(table.index)
    for s, w in want.items():
        row = table.loc[s]
        shown = {"GPU events": counts[s], "GPU span µs": w["span"], "busy µs": w["busy"],
                 "busy %": 100 * w["busy"] / w["span"], "idle µs": w["span"] - w["busy"],
                 "waiting for the host µs": w["host"], "waiting for the host %": 100 * w["host"] / w["span"],
                 "waiting on other GPU work µs": w["other"], "waiting on other GPU work %": 100 * w["other"] / w["span"]}
        for column, value in shown.items():  # as shown: to 0.1 µs and 0.1 %
            assert row[column] == pytest.approx(round(value, 1), abs=1e-9), (s, column)
        assert row["verdict"] == breakdown.verdict(prof, s)
    # the top kernels of the last step, by name, from the raw events
    gpu, _, _ = raw_last_step(path)
    by_name = defaultdict(list)
    for e, _ in gpu:
        by_name[e["name"]].append(e["dur"])
    total = sum(sum(d) for d in by_name.values())
    ranked = sorted(by_name, key=lambda n: -sum(by_name[n]))[:3]
    top = breakdown.top_kernels(prof, n=3)
    assert list(top["kernel"]) == ranked and list(top.index) == [1, 2, 3]
    for (_, row), name in zip(top.iterrows(), ranked):
        d = by_name[name]
        assert row["calls"] == len(d) and row["total µs"] == pytest.approx(sum(d), abs=0.05 + 1e-9)
        assert row["mean µs"] == pytest.approx(round(sum(d) / len(d), 2), abs=1e-9)  # shown to 0.01 µs
        assert row["% of GPU time"] == pytest.approx(100 * sum(d) / total, abs=0.05 + 1e-9)
    # kernels per op: each op's events, kernels among them, GPU time and share, largest first
    k = prof.kernels()
    per_op = breakdown.kernels_per_op(prof, n=None)
    assert list(per_op["GPU µs"]) == sorted(per_op["GPU µs"], reverse=True)
    for op, group in k.assign(op=k["top_aten_op"].fillna("(launched outside any op)")).groupby("op"):
        row = per_op.loc[op]
        assert (row["GPU events"], row["kernels"]) == (len(group), int((group["category"] == "kernel").sum()))
        assert row["GPU µs"] == pytest.approx(group["dur_us"].sum(), abs=0.05 + 1e-9)
        assert row["% of GPU time"] == pytest.approx(100 * group["dur_us"].sum() / k["dur_us"].sum(), abs=0.05 + 1e-9)
        assert row["kinds"] == ", ".join(f"{kind} ×{n}" for kind, n in group["kind"].value_counts().items())


@pytest.mark.parametrize("path", [p for p in OWN if p.name == "encoder_train_step.json.gz"], ids=lambda p: p.name)
def test_idle_by_op_from_the_gaps_found_by_plain_loops(path):
    """Chapter 10's idle-by-op table, for each step asked for: the gaps of that step found by a plain
    loop over its GPU events, grouped by cause (in words) and by the op that launched the work ending
    each gap; count, idle time and share of the step's span as shown (to 0.1), largest first."""
    from helpers.breakdown.core import CAUSES
    prof = quiet_load(path)
    shown = []
    for step in prof.steps:
        rows = prof.gpu_events(step).to_dict("records")
        order = sorted(rows, key=lambda r: (r["start_us"], math.inf if math.isnan(r["launch_start_us"]) else r["launch_start_us"]))
        groups, reach = defaultdict(list), order[0]["end_us"]
        for r in order[1:]:
            if r["start_us"] > reach:
                launch = r["launch_start_us"]
                cause = "unknown" if math.isnan(launch) else "host" if launch > reach else "gpu"
                op = r["top_aten_op"] if isinstance(r["top_aten_op"], str) else "(no op: launched outside any op)"
                groups[(CAUSES[cause], op)].append(r["start_us"] - reach)
            reach = max(reach, r["end_us"])
        span = max(r["end_us"] for r in rows) - min(r["start_us"] for r in rows)
        assert len({cause for cause, _ in groups}) >= 2
        table = breakdown.idle_by_op(prof, step, n=len(groups))
        assert sorted(table.index) == sorted(groups)
        assert list(table["idle µs"]) == sorted(table["idle µs"], reverse=True)
        for key, gaps in groups.items():
            row = table.loc[key]
            assert row["gaps"] == len(gaps) and row["idle µs"] == pytest.approx(round(sum(gaps), 1), abs=1e-9)
            assert row["% of the step"] == pytest.approx(round(100 * sum(gaps) / span, 1), abs=1e-9)
        shown.append(table)
    assert not shown[0].equals(shown[-1])  # the steps differ: the table of the wrong step would show
    assert breakdown.idle_by_op(prof, n=len(shown[-1])).equals(shown[-1]) and len(breakdown.idle_by_op(prof, n=1)) == 1


def test_the_gaps_of_any_step_asked_for():
    """idle_gaps(prof, step) is that step's gaps (not the last step's): each gap's bounds from a plain
    loop over the step's own GPU events, in the core table's columns and nothing more."""
    from helpers.breakdown.core import GAP_COLUMNS
    path = next(p for p in TRACES if p.name.startswith("naive__"))
    prof = Profile.load(path)
    assert len(prof.steps) > 1
    for step in prof.steps:
        rows = sorted(prof.gpu_events(step).to_dict("records"), key=lambda r: (r["start_us"], r["launch_start_us"]))
        want, reach = [], rows[0]["end_us"]
        for r in rows[1:]:
            if r["start_us"] > reach:
                want.append((reach, r["start_us"]))
            reach = max(reach, r["end_us"])
        gaps = breakdown.idle_gaps(prof, step)
        assert list(gaps.columns) == GAP_COLUMNS and list(gaps.index) == list(range(len(want)))
        assert list(zip(gaps["start_us"], gaps["end_us"])) == want and set(gaps["step"]) <= {step}


def _host_waits_by_op(prof: Profile, step: int) -> dict:
    """Per op, the host waits of one step: the gaps (plain loop over its GPU events) whose ending
    event's launch began after the GPU went idle."""
    rows = sorted(prof.gpu_events(step).to_dict("records"), key=lambda r: (r["start_us"], r["launch_start_us"]))
    waits, reach = defaultdict(float), rows[0]["end_us"]
    for r in rows[1:]:
        if r["start_us"] > reach and r["launch_start_us"] > reach:
            waits[r["top_aten_op"] if isinstance(r["top_aten_op"], str) else "an op the trace does not name"] += r["start_us"] - reach
        reach = max(reach, r["end_us"])
    return waits


def test_each_steps_verdict_and_views_are_of_that_step():
    """The verdict of a host-bound step names that step's longest host wait by op (plain loops); a
    GPU-bound step's does not; the views asked for a step give that step (its kernels and their totals),
    the default being the last step; kernels per op keeps the n largest."""
    from helpers.core.bound import CPU
    train = quiet_load(next(p for p in OWN if p.name == "encoder_train_step.json.gz"))
    naive = Profile.load(next(p for p in TRACES if p.name.startswith("naive__")))
    shown = set()
    for step in train.steps:
        assert breakdown.step_bound(train, step).by == CPU
        waits = _host_waits_by_op(train, step)
        op = max(waits, key=waits.get)
        text = breakdown.verdict(train, step)
        sentence = breakdown.step_bound(train, step).sentence()
        assert text.startswith(sentence) and sentence != breakdown.step_bound(train, train.steps[0] if step != train.steps[0] else train.steps[-1]).sentence()
        assert text.endswith(f"the longest share of that wait, {waits[op]:.0f} µs, comes before work launched by {op}")
        shown.add(text)
    assert len(shown) > 1  # the steps differ, so a verdict of the wrong step would show
    assert breakdown.verdict(train) == breakdown.verdict(train, train.forward_step)
    assert breakdown.step_bound(train) == breakdown.step_bound(train, train.forward_step)
    for step in naive.steps:
        assert breakdown.step_bound(naive, step).by != CPU and "longest share" not in breakdown.verdict(naive, step)
    for prof in (naive, train):
        for step in prof.steps:
            k = prof.kernels(step)
            top = breakdown.top_kernels(prof, step, n=len(k))
            for name, group in k.groupby("name"):
                row = top[top["kernel"] == name].iloc[0]
                assert row["total µs"] == pytest.approx(round(group["dur_us"].sum(), 1), abs=1e-9)
                assert row["% of GPU time"] == pytest.approx(round(100 * group["dur_us"].sum() / k["dur_us"].sum(), 1), abs=1e-9)
                assert row["launched by"] == ", ".join(dict.fromkeys(group["top_aten_op"].dropna()))
            per_op = breakdown.kernels_per_op(prof, step, n=None)
            for op, group in k.assign(op=k["top_aten_op"].fillna("(launched outside any op)")).groupby("op"):
                assert per_op.loc[op, "GPU µs"] == pytest.approx(round(group["dur_us"].sum(), 1), abs=1e-9)
                assert per_op.loc[op, "% of GPU time"] == pytest.approx(
                    round(100 * group["dur_us"].sum() / k["dur_us"].sum(), 1), abs=1e-9)
        per_op = breakdown.kernels_per_op(prof, n=None)
        assert len(per_op) > 2 and list(breakdown.kernels_per_op(prof, n=2).index) == list(per_op.index[:2])


def _gpu_events_in_steps(events: list[dict]) -> dict:
    """Per step, (GPU events, kernels among them) whose launch lies in the step, from the raw events."""
    out = {}
    for e in events:
        if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")):
            lo, hi = e["ts"], e["ts"] + e["dur"]
            calls = {c["args"]["correlation"] for c in events if c.get("ph") == "X" and c.get("cat") in ("cuda_runtime", "cuda_driver")
                     and LAUNCH.match(c["name"]) and lo <= c["ts"] <= hi}
            gpu = [g for g in events if g.get("ph") == "X" and g.get("cat") in GPU_CATS and g["args"].get("correlation") in calls]
            out[int(e["name"].split("#")[1])] = (len(gpu), sum(g["cat"] == "kernel" for g in gpu))
    return out


def test_chapter_tens_comparison_and_chart_from_the_raw_events():
    """breakdown.compare (one row per profile, its last step) and breakdown_chart (the stacked bars, per
    step or the last step of each profile) against plain loops over the raw events of the recorded
    forward and training step."""
    paths = [next(p for p in OWN if p.name == n) for n in ("encoder_forward.json.gz", "encoder_train_step.json.gz")]
    profs = [quiet_load(p) for p in paths]
    raw = [independent_breakdown(raw_document(p)["traceEvents"]) for p in paths]
    counts = [_gpu_events_in_steps(raw_document(p)["traceEvents"]) for p in paths]
    table = breakdown.compare(profs)
    assert list(table.index) == [p.stage for p in profs]
    for prof, want, n in zip(profs, raw, counts):
        last = max(want)
        assert prof.forward_step == last
        row, w = table.loc[prof.stage], want[last]
        assert (row["GPU events"], row["kernels"]) == n[last]
        assert row["GPU span µs"] == pytest.approx(round(w["span"], 1), abs=1e-9)
        assert row["busy %"] == pytest.approx(round(100 * w["busy"] / w["span"], 1), abs=1e-9)
        assert row["waiting for the host %"] == pytest.approx(round(100 * w["host"] / w["span"], 1), abs=1e-9)
        assert row["CPU µs"] == pytest.approx(round(float(prof.per_step.set_index("step").loc[last, "cpu_time_us"]), 1), abs=1e-9)
        assert row["verdict"] == breakdown.verdict(prof, last)
    for step in ("last", None):
        fig = breakdown.breakdown_chart(profs, step=step)
        bars = {t.name: t for t in fig.data}
        assert list(bars) == ["GPU busy", "waiting for the host", "waiting on other GPU work"]
        labels, want = [], []
        for prof, steps in zip(profs, raw):
            for s in ([max(steps)] if step == "last" else sorted(steps)):
                labels.append(prof.stage if step == "last" else f"{prof.stage} · step {s}")
                w = steps[s]
                want.append([100 * w["busy"] / w["span"], 100 * w["host"] / w["span"], 100 * w["other"] / w["span"]])
        for i, name in enumerate(bars):
            assert list(bars[name].y) == labels
            assert list(bars[name].x) == pytest.approx([w[i] for w in want], abs=1e-6)
        # the three parts of one span laid end to end, on a 0-100% axis, the first profile on top,
        # and the subtitle naming where each profile came from (its provenance)
        assert fig.layout.barmode == "stack" and {t.orientation for t in fig.data} == {"h"}
        assert tuple(fig.layout.xaxis.range) == (0, 100) and fig.layout.yaxis.autorange == "reversed"
        assert all(f"{p.mode} on {p.provenance.gpu}" in fig.layout.title.text for p in profs)
