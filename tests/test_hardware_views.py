"""The views built on Nsight Compute's counters, against the raw recordings: the measured HBM bytes
of chapter 5, the achieved occupancy of chapter 7, the roofline of chapter 9, and how each falls
back to the recordings with the reason. Expectations come from the raw ncu CSV files (csv module,
their own units row), the raw chrome traces and the raw ceilings.json; none is typed in."""
from __future__ import annotations

import ast
import csv
import io
import json
import math
import re

import numpy as np
import pytest

from conftest import ROOT, raw_document
from helpers import DEFAULT_SHAPE, Session, Shape, profile_stage
from helpers.chapters import occupancy_truth as truth
from helpers.chapters.occupancy_lessons import STAGES as OCCUPANCY_STAGES
import helpers
counters = helpers.counters   # the counters slice (its names the chapter module's): handed the counters, as a notebook has it
roofline = helpers.roofline   # handed the ceilings and the timed forwards, as a notebook has it
from helpers.sources import ncu
from helpers.counters.sources import collect   # what a Session's counters() calls

REPLAY = Session(mode="replay")   # a notebook's session, in replay
from test_ncu import NCU_DIR, PROVENANCE, base, number, raw
from helpers.core.stages import stages_where  # the stage lists: queries of the registry

ROOFLINE_STAGES = list(stages_where(has_ncu=True, variant_of=None, dispatched=False))   # 09's stages
CEILINGS = json.loads((ROOT / "notebooks" / "traces" / "h200" / "ceilings.json").read_text())
TENSOR = "sm__ops_path_tensor_src_bf16_dst_fp32.sum"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
# fp32 adds and multiplies: one FLOP each per thread-instruction
ADDMUL = ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum")


@pytest.fixture(scope="module")
def collected():
    return REPLAY.counters(ROOFLINE_STAGES, sweep=REPLAY.ncu_shapes("sdpa_flash"), sweep_stages=roofline.SWEEP_STAGES,
                           quiet=True)


@pytest.fixture(scope="module")
def roof(collected):
    return roofline.load_ceilings(collected, *REPLAY.ceilings(), quiet=True)


def raw_csv(stage: str, shape: Shape = DEFAULT_SHAPE):
    return raw(NCU_DIR / f"{stage}__{shape.key}.csv")


def raw_factor(counter: str) -> float:
    """FLOPs per unit of a counter: the calibration matmul's 2·m·n·k over what it read (raw)."""
    best = None
    for cal in PROVENANCE["calibration"]:
        rows, _ = raw(NCU_DIR / f"{cal['name']}.csv")
        reading = sum(number(r[counter]) for r in rows)
        if reading and (best is None or reading > best[0]):
            best = (reading, 2 * cal["m"] * cal["n"] * cal["k"] / reading)
    return best[1]


def raw_copies(stage: str, shape: Shape) -> tuple[float, float]:
    """(bytes, µs) of the last profiled step's memcpy and memset events, from the raw trace JSON:
    a device-to-device copy reads and writes its bytes, a memset writes them."""
    from conftest import raw_last_step
    from helpers.sources.replay import trace_path
    path = trace_path(stage, shape)
    if not path.exists():
        return 0.0, 0.0
    events, _, _ = raw_last_step(path)
    moved = us = 0.0
    for e, _holders in events:
        if e["cat"] in ("gpu_memcpy", "gpu_memset"):
            n = e["args"].get("bytes", 0)
            moved += n * (2 if e["cat"] == "gpu_memcpy" and "DtoD" in e["name"] else 1)
            us += e["dur"]
    return moved, us


def raw_point(stage: str, shape: Shape = DEFAULT_SHAPE, copies: bool = False) -> dict:
    rows, units = raw_csv(stage, shape)
    flops = sum(number(r[TENSOR]) * raw_factor(TENSOR) + number(r[FFMA]) * raw_factor(FFMA)
                + sum(number(r[c]) for c in ADDMUL) for r in rows)
    moved = sum(base(r, units, "dram__bytes_read.sum") + base(r, units, "dram__bytes_write.sum") for r in rows)
    ns = sum(base(r, units, "gpu__time_duration.sum") for r in rows)
    if copies:  # the forward as chapter 5 counts it: its copies' bytes and time on top of the kernels'
        b, us = raw_copies(stage, shape)
        moved, ns = moved + b, ns + us * 1e3
    return {"flops": flops, "bytes": moved, "seconds": ns / 1e9}


# --------------------------------------------------------------------------------------- work

def test_calibration_is_the_shape_over_the_counter(collected):
    factors = counters.flops_per_unit(collected)
    assert set(factors) == {TENSOR, FFMA}
    for counter, factor in factors.items():
        assert factor == pytest.approx(raw_factor(counter), rel=1e-12)


def test_measured_flops_lie_where_the_masking_puts_them(collected):
    """A fused kernel skips the masked tiles but computes the diagonal ones in full: between the
    causal FLOPs and the full square. An unfused stage computes every score: the full square at
    least (its softmax's FFMAs on top)."""
    work = counters.work(collected, None)
    for row in work.to_dict("records"):
        ratio = row["executed / model"]
        if row["kernels"] == 1:
            assert 1 <= ratio < 2, row
        else:
            assert ratio >= 2, row


# -------------------------------------------------------------------------------------- bytes

def test_hbm_measured_is_the_raw_counters_plus_the_traces_copies(collected):
    stages = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"]
    c = REPLAY.counters(stages, quiet=True)
    table = counters.hbm_measured(c, REPLAY.forwards(c))
    for stage in stages:
        rows, units = raw_csv(stage)
        kernels = sum(base(r, units, "dram__bytes_read.sum") + base(r, units, "dram__bytes_write.sum") for r in rows)
        # one forward's copies, from the raw trace: the events launched by that step's runtime calls
        prof = profile_stage(stage, mode="replay", quiet=True)
        events = raw_document(prof.trace_path)["traceEvents"]
        ids = set(prof.launches()["correlation"])
        copies = sum(e["args"]["bytes"] * (2 if "DtoD" in e["name"] else 1) for e in events
                     if e.get("cat") in ("gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in ids)
        assert table.loc[stage, "read MB"] + table.loc[stage, "written MB"] == pytest.approx(kernels / 1e6, abs=0.1)
        assert table.loc[stage, counters.COPIES] == pytest.approx(copies / 1e6, abs=0.05), stage
        assert table.loc[stage, "forward MB"] == pytest.approx((kernels + copies) / 1e6, abs=0.05), stage
    g = counters.glue_hbm(table)
    assert float(g["ratio"]) == pytest.approx(table.loc["naive", "forward MB"] / table.loc["sdpa_flash", "forward MB"], abs=0.5)


# ---------------------------------------------------------------------------------- occupancy

@pytest.fixture(scope="module")
def occupancy_table():
    c = REPLAY.counters(OCCUPANCY_STAGES, quiet=True)
    return truth.occupancy_truth(c, REPLAY.forwards(c))


def test_occupancy_truth_is_the_raw_csv_and_the_raw_trace(occupancy_table):
    for stage, rows in occupancy_table.groupby("stage", sort=False):
        csv_rows, _ = raw_csv(stage)
        assert len(rows) == len(csv_rows)
        # CUPTI's estimate, from the raw trace: the kernel events of the last step, in launch order
        prof = profile_stage(stage, mode="replay", quiet=True)
        events = raw_document(prof.trace_path)["traceEvents"]
        ids = set(prof.kernels()["correlation"])
        kernel_events = sorted((e for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in ids),
                               key=lambda e: e["ts"])
        for got, r, e in zip(rows.to_dict("records"), csv_rows, kernel_events):
            assert got["ncu theoretical %"] == pytest.approx(number(r["sm__maximum_warps_per_active_cycle_pct"]), abs=0.005)
            assert got["ncu achieved %"] == pytest.approx(number(r["sm__warps_active.avg.pct_of_peak_sustained_active"]), abs=0.005)
            assert got["registers"] == e["args"]["registers per thread"] == number(r["launch__registers_per_thread"])
            assert got["CUPTI est. %"] == e["args"]["est. achieved occupancy %"]
            assert got["calculator %"] == pytest.approx(got["ncu theoretical %"], abs=0.005)


def test_occupancy_truth_glue_counts_the_table(occupancy_table):
    g = truth.glue_truth(occupancy_table)
    # the counts count the rows the page's table shows: each kernel and launch configuration once
    # (issue 29: "12 kernels read as zero" stood above a table with 5 zero rows)
    shown = truth.truth_table(occupancy_table)
    seen, once = set(), []
    for row in occupancy_table.to_dict("records"):
        launch = (row["kernel"], row["threads"], row["registers"], row["shared memory (B)"], row["grid blocks"])
        if launch not in seen:
            seen.add(launch)
            once.append(row)
    assert g["kernels"] == len(once) == len(shown) and g["agree"] == len(once)
    assert g["stages"] == len({row["stage"] for row in occupancy_table.to_dict("records")})
    zero = [r for r in once if r["CUPTI est. %"] == 0]
    assert g["cupti_zero"] == len(zero) == int((shown["CUPTI est. %"] == 0).sum())
    assert g["cupti_zero_ran"] == sum(r["ncu achieved %"] > 0 for r in zero)
    zero = occupancy_table[occupancy_table["CUPTI est. %"] == 0]
    cudnn = occupancy_table[occupancy_table["stage"] == "sdpa_cudnn"].iloc[0]
    assert g["cudnn_achieved"] == f"{cudnn['ncu achieved %']:.1f}"
    answer = truth.achieved_answer(occupancy_table)
    assert answer in truth.ACHIEVED_OPTIONS
    assert (answer == truth.ACHIEVED_OPTIONS[1]) == (cudnn["ncu achieved %"] < cudnn["calculator %"])


def test_occupancy_chart_has_the_three_figures_per_kernel(occupancy_table):
    stages = ["sdpa_flash", "sdpa_cudnn"]
    fig = truth.chart(occupancy_table, stages)
    rows = occupancy_table[occupancy_table["stage"].isin(stages)].iloc[::-1]
    by_name = {t.name: t for t in fig.data}
    assert list(np.asarray(by_name["achieved (ncu, measured)"].x, dtype=float)) == list(rows["ncu achieved %"])
    assert list(np.asarray(by_name["theoretical (helpers.occupancy)"].x, dtype=float)) == list(rows["calculator %"])
    cupti = by_name["CUPTI est. (at launch)"]
    assert list(np.asarray(cupti.x, dtype=float)) == list(rows["CUPTI est. %"].fillna(0))
    # a zero is written out, not left as a missing bar
    assert [bool(t) for t in cupti.text] == list(rows["CUPTI est. %"] == 0)


# ----------------------------------------------------------------------------------- roofline

def test_ceilings_are_the_recording(roof):
    by = {c["ceiling"]: c["value"] for c in CEILINGS["ceilings"]}
    matmul = next(v for k, v in by.items() if "matmul" in k)
    copy = next(v for k, v in by.items() if "copy" in k)
    assert roof["do_bench matmul TFLOP/s"] == matmul and roof["copy TB/s"] == copy
    assert roof["gpu"] == CEILINGS["provenance"]["gpu"]
    # the compute roofs are the calibration matmuls' 2·m·n·k over their ncu time (raw), as the points are timed
    pipes = {}
    for cal in PROVENANCE["calibration"]:
        rows, units = raw(NCU_DIR / f"{cal['name']}.csv")
        ns = sum(base(r, units, "gpu__time_duration.sum") for r in rows)
        pipes[cal["dtype"]] = 2 * cal["m"] * cal["n"] * cal["k"] / ns / 1e3
    tensor, fp32 = pipes["bfloat16"], pipes["float32"]
    assert roof["matmul TFLOP/s"] == pytest.approx(tensor, rel=1e-12)
    assert roof["fp32 TFLOP/s"] == pytest.approx(fp32, rel=1e-12)
    assert roof["ridge FLOP/B"] == pytest.approx(tensor / copy, rel=1e-12)
    xs = np.array([1.0, roof["ridge FLOP/B"], 1e4])
    assert list(roofline.roof_at(xs, roof) / 1e12) == pytest.approx([copy, tensor, tensor])
    assert list(roofline.roof_at(xs, roof, "fp32 FFMA") / 1e12) == pytest.approx([copy, fp32, fp32])
    table = roofline.ceilings_table(roof)
    assert table["datasheet"].str.contains("datasheet").all()


def test_points_are_the_raw_sums(collected, roof):
    times = roofline.timings(REPLAY.timed(collected, quiet=True))
    pts = roofline.points(collected, roof, times)
    assert len(pts) == len(collected.kernels)
    for p in pts.to_dict("records"):
        r = raw_point(p["stage"], Shape.from_key(p["shape"]), copies=True)
        assert p["GFLOP"] == pytest.approx(r["flops"] / 1e9, rel=1e-9)
        assert p["DRAM MB"] == pytest.approx(r["bytes"] / 1e6, rel=1e-9)
        assert p["FLOP/B"] == pytest.approx(r["flops"] / r["bytes"], rel=1e-9)
        assert p["TFLOP/s"] == pytest.approx(r["flops"] / r["seconds"] / 1e12, rel=1e-9)
        roof_here = min(roof["matmul TFLOP/s"], p["FLOP/B"] * roof["copy TB/s"])
        assert p["% of roof"] == pytest.approx(100 * p["TFLOP/s"] / roof_here, rel=1e-9)
        assert p["roof"] == ("memory" if p["FLOP/B"] < roof["ridge FLOP/B"] else "compute")


def test_bound_by_the_cpu_is_the_callers_loop_against_the_busy_time(collected, roof):
    # the caller's loop read raw (timers.json, or none: tests/timer_fakes.py); about even and no
    # timer leave "bound by the CPU" None, and the table shows "about even" or a dash
    from timer_fakes import raw_call
    times = roofline.timings(REPLAY.timed(collected, quiet=True))
    pts = roofline.points(collected, roof, times)
    for p in pts.to_dict("records"):
        prof = profile_stage(p["stage"], Shape.from_key(p["shape"]), mode="replay", quiet=True)
        bench = raw_document(prof.trace_path)["provenance"]["do_bench_us"]
        assert p["do_bench µs"] == bench
        call = raw_call(prof.trace_path, prof.summary()["gpu_time_us"])
        if call is None:
            assert p["bound by the CPU"] is None and p["bound"] == "no caller's timer recorded"
        else:
            assert p["loop µs"] == pytest.approx(call["wall"]) and p["bound"] == call["verdict"]
            assert p["bound by the CPU"] == {"bound by the CPU": True, "bound by the GPU": False}.get(call["verdict"])


def test_naive_and_inplace_are_two_points_as_chapter_2_teaches(collected, roof):
    # the hidden Memcpy is naive's alone: with it, naive moves more bytes in more time than inplace,
    # and its DRAM per forward is chapter 5's "forward MB" (kernels plus copies), the same number
    pts = roofline.points(collected, roof, roofline.timings(REPLAY.timed(collected, quiet=True)), shapes=[DEFAULT_SHAPE])
    at = pts.set_index("stage")
    assert at.loc["naive", "DRAM MB"] > at.loc["inplace", "DRAM MB"]
    assert at.loc["naive", "TFLOP/s"] < at.loc["inplace", "TFLOP/s"]
    forward = counters.hbm_measured(collected, REPLAY.forwards(collected), shape=DEFAULT_SHAPE)["forward MB"]
    assert at.loc["naive", "DRAM MB"] == pytest.approx(forward["naive"], abs=0.06)


def test_glue_names_the_best_stage_and_its_distance_to_the_roof(collected, roof):
    pts = roofline.points(collected, roof, roofline.timings(REPLAY.timed(collected, quiet=True)), shapes=[DEFAULT_SHAPE])
    g = roofline.glue_roofline(pts, roof)
    best = pts.loc[pts["TFLOP/s"].idxmax()]
    assert g["best"] == best["stage"] and g["best_pct"] == f"{best['% of roof']:.0f}"
    assert g["closest"] == pts.loc[pts["% of roof"].idxmax(), "stage"]
    assert g["memory_count"] == int((pts["FLOP/B"] < roof["ridge FLOP/B"]).sum())
    sweep = roofline.points(collected, roof)
    s = roofline.glue_sweep(sweep)
    flash = sweep.query("stage == 'sdpa_flash'").sort_values("seq")["FLOP/B"]
    assert (s["flash_direction"] == roofline.SEQ_OPTIONS[0]) == (flash.iloc[-1] > 1.1 * flash.iloc[0])


def test_roofline_chart_draws_each_stage_under_both_roofs(collected, roof):
    pts = roofline.points(collected, roof, roofline.timings(REPLAY.timed(collected, quiet=True)), shapes=[DEFAULT_SHAPE])
    kernels = roofline.kernel_points(collected, roof)
    fig = roofline.chart(pts, roof, kernels)
    by_name = {t.name: t for t in fig.data if t.name}
    for p in pts.to_dict("records"):
        t = by_name[p["stage"]]
        assert np.asarray(t.x, dtype=float)[0] == pytest.approx(p["FLOP/B"])
        assert np.asarray(t.y, dtype=float)[0] == pytest.approx(p["TFLOP/s"])
    assert any("datasheet" in n for n in by_name)
    assert any(n.startswith("roof measured") for n in by_name)
    per_kernel = next(t for t in fig.data if (t.name or "").startswith("each kernel"))
    assert per_kernel.visible == "legendonly"
    shown = kernels[np.isfinite(kernels["FLOP/B"]) & (kernels["GFLOP"] > 0)]
    assert len(per_kernel.x) == len(shown)
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"


# ---------------------------------------------------------------------------------- fallbacks

def test_without_ncu_the_counters_are_replayed_with_the_reason(monkeypatch, capsys):
    import helpers.counters.sources as module
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    monkeypatch.setattr(module, "resolve_mode", lambda mode="auto": "live")
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    c = collect(["sdpa_flash"])
    line = c.banner()  # shown as the summary line of the folded note
    assert c.mode == "replay" and "Replaying Nsight Compute's counters" in line
    # the reason is folded, in the reader's words: no "PATH", no exception text
    assert "not installed here" in c.why_not_live() and "PATH" not in c.why_not_live()
    assert PROVENANCE["gpu"] in line and PROVENANCE["date"][:10] in line


def test_counters_not_permitted_fall_back_to_the_recording(monkeypatch, capsys, tmp_path):
    import helpers.counters.sources as module
    monkeypatch.setattr(module, "resolve_mode", lambda mode="auto": "live")
    monkeypatch.setattr(ncu, "unavailable_reason", lambda: None)
    monkeypatch.setattr(ncu, "find_ncu", lambda: "/usr/local/cuda/bin/ncu")

    def refused(*args, **kwargs):
        raise RuntimeError("ncu failed on x (exit 1): ==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                           "permission to access NVIDIA GPU Performance Counters")
    monkeypatch.setattr(ncu, "run_page", refused)
    monkeypatch.setattr(ncu, "live_metrics", lambda exe, cache=None: list(ncu.BASE_METRICS))
    monkeypatch.setattr("torch.cuda.get_device_properties", lambda i: _Props())
    monkeypatch.setattr(module, "cache_dir", lambda gpu, torch_version: tmp_path)
    c = collect(["sdpa_flash"])
    why = c.why_not_live()  # the folded note under the replay line: the reader's terms, no exit code
    assert c.mode == "replay" and ncu.PERMISSION_ERROR in why and "performance counters" in why
    assert "exit 1" not in why and "==ERROR==" not in why


# ---------------------------------------------------------------------------------- the pages

NOTEBOOKS = {name: json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
             for name in ("05_sdpa_flash", "07_occupancy", "09_roofline")}


def test_roofline_prose_types_no_numbers():
    """Every figure in the chapter's prose is a glue role or code, none typed in."""
    for cell in NOTEBOOKS["09_roofline"]["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        text = re.sub(r"\{(glue:text|doc|download)\}`[^`]+`", "", text)
        text = re.sub(r"`[^`]*`", "", text)
        text = re.sub(r"^# \d+\.", "#", text)
        assert not re.search(r"(?<![\w-])\d", text), text[:200]


def test_new_prose_in_the_flash_and_occupancy_chapters_types_no_numbers():
    for name, prefix in (("05_sdpa_flash", "hbm-measured"), ("07_occupancy", "truth-")):
        for cell in NOTEBOOKS[name]["cells"]:
            if cell["cell_type"] == "markdown" and cell["id"].startswith(prefix):
                text = re.sub(r"\{(glue:text|doc|download)\}`[^`]+`", "", "".join(cell["source"]))
                text = re.sub(r"`[^`]*`", "", text)
                assert not re.search(r"(?<![\w-])\d", text), (name, text[:200])


def test_every_look_follows_its_guess():
    # each question names the output that explains its answer (explained_by=("id", ...)); that
    # output (guess.anchored(..., "id")) comes after the question, never before it
    for name in NOTEBOOKS:
        asked: dict[str, int] = {}
        shown: dict[str, int] = {}
        for i, cell in enumerate(NOTEBOOKS[name]["cells"]):
            source = "".join(cell["source"])
            if cell["cell_type"] != "code":
                continue
            for anchor in re.findall(r'explained_by=\("([\w-]+)"', source):
                asked.setdefault(anchor, i)
            for anchor in re.findall(r'guess\.anchored\(.*?"([\w-]+)"\)\s*$', source, re.S):
                shown[anchor] = i
            assert not re.search(r"\b(questions|lessons)\.ask\(|show_verdict", source), (name, source[:80])
        for anchor, at in asked.items():
            assert anchor in shown and shown[anchor] > at, (name, anchor)
        assert asked, name


def test_every_download_link_is_a_recorded_report():
    # a page names no report's path: it glues the links of the counters it collected
    # (counters.glue_reports), so another GPU's set shows its own; each link is a kept report
    kept = {r["name"] for r in PROVENANCE["recorded"] if r.get("report_kept")}
    for name, nb in NOTEBOOKS.items():
        text = "".join("".join(c["source"]) for c in nb["cells"])
        assert not re.findall(r"\{download\}`[^<`]*<traces/", text), name   # no literal replay-set path
        keys = re.findall(r"\{glue:md\}`(\w+):myst`|\{glue:md\} (\w+)\n:format: myst", text)
        assert keys, name
        pasted = {a or b for a, b in keys}
        glued = re.findall(r"counters\.glue_reports\(\w+, (\[[^]]*\]|\{.*?\}|stages_where\([^)]*\))"
                           r"(?:, key=\"(\w+)\")?(?:, bullets=True)?\)", text, re.S)
        assert {key or "ncu_reports" for _, key in glued} == pasted, name
        c = REPLAY.counters(sorted(helpers.STAGES.keys() - {"hub_flash"}), quiet=True)
        for names, key in glued:
            if names.startswith("stages_where("):   # a query of the registry, its facts literal
                call = ast.parse(names, mode="eval").body
                wanted = list(stages_where(**{k.arg: ast.literal_eval(k.value) for k in call.keywords}))
            else:
                wanted = re.findall(r'"(\w+)"(?=\s*[,:\]}])(?!\s*:\s*"\S)', names) if names.startswith("[") else \
                    re.findall(r'"(\w+)":', names)
            links = re.findall(r"<([^>]+)>`", counters.report_links(c, wanted))
            assert len(links) == len(wanted), (name, wanted, links)
            for link in links:
                path = (ROOT / "notebooks" / link).resolve()
                assert path.exists() and path.suffix == ".ncu-rep" and path.stem.startswith(tuple(wanted)), (name, link)
                assert path.stem in kept, (name, link)


# ------------------------------------------------------------------ the live path, with fakes
# No GPU here: ncu and torch.cuda are stood in for by the recordings, so that the live code path
# (progress bar, cache, provenance, one GPU per page) runs as it would; the GPU session runs it
# for real (`python -m pytest -m gpu tests/test_ncu.py` and the notebooks, with ncu on PATH).

class _Props:
    name, major, minor, multi_processor_count = PROVENANCE["gpu"], 9, 0, PROVENANCE["sm_count"]


def recorded_csv(name: str) -> Path:
    return NCU_DIR / f"{name}.csv"


def page_exports(names: list[str]) -> tuple[str, str]:
    """What ncu's two exports of one page's report read, made of the recorded one-forward tables:
    the raw page with the kernels numbered on, and the same with each kernel renamed by its job."""
    raw, renamed, next_id = [], [], 0
    for name in names:
        rows = [r for r in csv.reader(io.StringIO(recorded_csv(name).read_text())) if r]
        start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
        header, units, data = rows[start], rows[start + 1], rows[start + 2:]
        if not raw:
            raw, renamed = [header, units], [header, units]
        for row in data:
            row = [str(next_id)] + row[1:]
            next_id += 1
            raw.append(row)
            # as ncu 2025.3 renames it: "<range>/<kernel>" (benchmarks/results/gpu_live_19)
            renamed.append([f"{name}/{v}" if h == "Kernel Name" else v for h, v in zip(header, row)])
    out = []
    for rows in (raw, renamed):
        buffer = io.StringIO()
        csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
        out.append("==PROF== Disconnected\n" + buffer.getvalue())
    return out[0], out[1]


@pytest.fixture
def fake_live(monkeypatch, tmp_path):
    import helpers.counters.sources as module
    import helpers.sources.provenance as provenance
    pages = []   # one entry per ncu process: the jobs it ran

    def run_page(jobs, out_dir, metrics, exe, on_done=None):
        pages.append([j["name"] for j in jobs])
        for j in jobs:
            on_done and on_done(j["name"])
        raw, renamed = page_exports([j["name"] for j in jobs])
        return out_dir / "page.ncu-rep", raw, renamed

    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(tmp_path))
    monkeypatch.setattr(module, "resolve_mode", lambda mode="auto": "live")
    monkeypatch.setattr(ncu, "unavailable_reason", lambda: None)
    monkeypatch.setattr(ncu, "find_ncu", lambda: "/usr/local/cuda/bin/ncu")
    monkeypatch.setattr(ncu, "version", lambda exe: PROVENANCE["ncu"])
    monkeypatch.setattr(ncu, "live_metrics", lambda exe, cache=None: list(ncu.BASE_METRICS))
    monkeypatch.setattr(ncu, "run_page", run_page)
    monkeypatch.setattr(provenance, "device_facts", lambda: {
        "gpu": _Props.name, "capability": "9.0", "sm_count": _Props.multi_processor_count,
        "driver": PROVENANCE["driver"], "torch": PROVENANCE["torch"], "cuda": "?", "cudnn": "?"})
    monkeypatch.setattr("torch.cuda.get_device_properties", lambda i: _Props())
    monkeypatch.setattr(module, "cache_dir", lambda gpu, torch_version: tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    return pages


def stage_name(stage: str) -> str:
    return ncu.recording_name(stage, DEFAULT_SHAPE)


def test_live_counters_run_one_ncu_process_per_page_and_reuse_the_cache(fake_live, capsys):
    first = collect(["sdpa_flash", "sdpa_cudnn"])
    assert first.mode == "live" and first.gpu == PROVENANCE["gpu"]
    assert fake_live == [[c["name"] for c in PROVENANCE["calibration"]] + [stage_name("sdpa_flash"), stage_name("sdpa_cudnn")]]
    assert "Measured live with ncu" in capsys.readouterr().out
    fake_live.clear()
    again = collect(["sdpa_flash", "sdpa_cudnn", "naive"])
    assert fake_live == [[stage_name("naive")]]   # the rest came from this session's earlier page
    assert "earlier run" in capsys.readouterr().out
    for key, table in first.kernels.items():
        assert list(table["dram_bytes"]) == list(again.kernels[key]["dram_bytes"])


def test_a_page_report_split_by_range_is_each_forward_recorded_alone(fake_live):
    # the split tables read as the one-forward recordings they were made of, row for row
    c = collect(["naive", "sdpa_flash", "sdpa_math"])
    for stage in ("naive", "sdpa_flash", "sdpa_math"):
        alone = ncu.kernels(ncu.read_csv(recorded_csv(stage_name(stage))))
        split = c.stage(stage)
        assert list(split["kernel"]) == list(alone["kernel"]) and len(split) > 0
        assert list(split["dram_bytes"]) == list(alone["dram_bytes"])


def test_a_kernel_outside_every_range_is_refused():
    raw, renamed = page_exports([stage_name("naive")])
    with pytest.raises(RuntimeError, match="in no job's NVTX range"):
        ncu.split_by_range(raw, renamed.replace(stage_name("naive"), "somewhere else"), [stage_name("naive")])
    with pytest.raises(RuntimeError, match="no kernel of"):
        ncu.split_by_range(raw, renamed, [stage_name("naive"), stage_name("sdpa_flash")])


def test_a_stage_that_fails_live_sends_the_page_to_the_recording(fake_live, monkeypatch, capsys):
    def fails(jobs, out_dir, metrics, exe, on_done=None):
        raise RuntimeError("ncu failed on 3 jobs (exit 1): No available kernel")
    monkeypatch.setattr(ncu, "run_page", fails)
    c = collect(["sdpa_flash"])
    assert c.mode == "replay" and "did not run under ncu" in c.reason
    assert c.why_not_live().startswith("The page's forwards could not run under Nsight Compute")
    assert "exit 1" not in c.why_not_live()


def test_live_ceilings_of_another_gpu_ride_along_but_do_not_roof_the_recording(monkeypatch, tmp_path):
    from helpers.sources import ceilings
    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(tmp_path))   # measured once, then kept for the session
    c = REPLAY.counters(["sdpa_flash"], quiet=True)
    recorded = ceilings.load()
    mine = recorded.copy()
    mine["value"] = mine["value"] / 4
    import helpers.sources.modes as modes
    monkeypatch.setattr(modes, "resolve_mode", lambda mode="auto": "live")
    monkeypatch.setattr(ceilings, "measure", lambda: mine)
    monkeypatch.setattr("torch.cuda.get_device_name", lambda *a: "NVIDIA L4")
    roof = roofline.load_ceilings(c, *Session().ceilings(), quiet=True)
    assert roof["gpu"] == PROVENANCE["gpu"] and roof["mode"] == "replay"
    # the L4 has no calibration matmul of its own under ncu: its compute roof is do_bench's matmul
    assert roof["live"]["gpu"] == "NVIDIA L4" and roof["live"]["matmul TFLOP/s"] == roof["do_bench matmul TFLOP/s"] / 4
    assert roof["live"]["compute roof from"] == "do_bench" and roof["compute roof from"] == "ncu calibration"
    table = roofline.ceilings_table(roof)
    assert set(table["measured on"]) == {f"{PROVENANCE['gpu']} (replay)", "NVIDIA L4 (live)"}
    # the next page of the session reuses the measurement: measure() is not called again
    monkeypatch.setattr(ceilings, "measure", lambda: pytest.fail("measured twice in one session"))
    again = roofline.load_ceilings(c, *Session().ceilings(), quiet=True)
    assert again["live"]["matmul TFLOP/s"] == roof["live"]["matmul TFLOP/s"]


# ------------------------------------------------------- live: the metric set and the recorded sweep

def _cut(text: str, keep: set[str]) -> str:
    """A raw ncu CSV as a page of only `keep` (of the recorded metrics) exports it (csv module)."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    cols = [i for i, n in enumerate(rows[start]) if n not in PROVENANCE["metrics"] or n in keep]
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows(rows[:start] + [[r[i] for i in cols] if len(r) == len(rows[start]) else r for r in rows[start:]])
    return buffer.getvalue()


@pytest.fixture
def fake_metrics(fake_live, monkeypatch):
    """fake_live, with this GPU's full metric list the recorded one and ncu exporting only the
    metrics it was asked for: returns [(jobs, metrics)] per ncu process."""
    runs = []

    def run_page(jobs, out_dir, metrics, exe, on_done=None):
        runs.append(([j["name"] for j in jobs], list(metrics)))
        raw, renamed = page_exports([j["name"] for j in jobs])
        return out_dir / "page.ncu-rep", _cut(raw, set(metrics)), _cut(renamed, set(metrics))

    monkeypatch.setattr(ncu, "live_metrics", lambda exe, cache=None: list(PROVENANCE["metrics"]))
    monkeypatch.setattr(ncu, "run_page", run_page)
    return runs


def test_live_pages_read_the_page_metrics_and_a_smaller_table_is_never_read_for_more(fake_metrics):
    page = [m for m in PROVENANCE["metrics"] if ncu.is_page_metric(m)]
    c = collect(["sdpa_flash"], quiet=True)
    [(jobs, metrics)] = fake_metrics
    assert metrics == page and len(page) < len(PROVENANCE["metrics"])
    assert c.provenance["metrics"] == page
    assert TENSOR in c.stage("sdpa_flash").columns and "sm__inst_executed_pipe_tensor_op_hmma.sum" not in c.stage("sdpa_flash").columns
    collect(["sdpa_flash"], quiet=True)
    assert len(fake_metrics) == 1                        # the same set: reused
    full = collect(["sdpa_flash"], quiet=True, metrics="full")
    assert len(fake_metrics) == 2 and fake_metrics[1][1] == PROVENANCE["metrics"]
    assert fake_metrics[1][0] == jobs                    # every table of the smaller set measured again
    assert "sm__inst_executed_pipe_tensor_op_hmma.sum" in full.stage("sdpa_flash").columns
    collect(["sdpa_flash"], quiet=True)
    assert len(fake_metrics) == 2                        # the full tables serve the page set


def test_live_roofline_takes_the_sweep_from_this_gpus_own_replay_set(fake_metrics, monkeypatch):
    import helpers.sources.capture as capturing
    sweep = [s for s in REPLAY.ncu_shapes("sdpa_flash") if s != DEFAULT_SHAPE]
    c = collect(ROOFLINE_STAGES, sweep=REPLAY.ncu_shapes("sdpa_flash"), sweep_stages=roofline.SWEEP_STAGES, quiet=True)
    [(jobs, _)] = fake_metrics
    assert all(j.startswith("calibration__") or j.endswith(DEFAULT_SHAPE.key) for j in jobs)   # the article's shape only
    expected = {(s, sh.key) for sh in sweep for s in roofline.SWEEP_STAGES}
    assert set(c.recorded) == expected and set(c.recorded.values()) == {"h200"}
    for stage, key in expected:
        raw_rows, _ = raw(NCU_DIR / f"{stage}__{key}.csv")
        assert list(c.kernels[(stage, key)]["kernel"]) == [r["Kernel Name"] for r in raw_rows]
    assert c.mode == "live" and f"and {len(expected)} recorded earlier on this GPU" in c.banner()
    assert any("not measured now" in n and "h200" in n for n in c.notes)
    shown = counters.provenance_table(c)["value"]
    assert shown["mode"] == "live" and shown["sequence sweep"].startswith(f"{len(expected)} forwards")
    assert shown["metrics"] == len([m for m in PROVENANCE["metrics"] if ncu.is_page_metric(m)])
    # their times are the same set's recordings; only the article's shape is timed now
    timed = []
    monkeypatch.setattr(capturing, "capture_cached", lambda stage, shape: timed.append((stage, shape)) or
                        helpers.Profile.load(REPLAY.replay_set.trace(stage, shape)))
    profiles = REPLAY.timed(c, quiet=True)
    assert all(shape == DEFAULT_SHAPE for _, shape in timed) and len(timed) == len(ROOFLINE_STAGES)
    assert {(p.stage, p.shape.key) for p in profiles} >= expected


def test_a_gpu_without_a_replay_set_measures_the_sweep_live(fake_metrics, monkeypatch):
    monkeypatch.setattr(_Props, "name", "NVIDIA A100-SXM4-80GB")   # no notebooks/traces/a100-sxm4-80gb
    shapes = REPLAY.ncu_shapes("sdpa_flash")
    c = collect(["sdpa_flash"], sweep=shapes, quiet=True)
    [(jobs, _)] = fake_metrics
    assert {ncu.recording_name("sdpa_flash", s) for s in shapes} <= set(jobs)
    assert c.recorded == {} and "recorded earlier" not in c.banner()


def test_the_h100_reads_its_own_sweep_not_the_h200s(fake_metrics, monkeypatch):
    """The second real replay set: live on an H100, the sweep's tables are the H100's recordings."""
    monkeypatch.setattr(_Props, "name", "NVIDIA H100 80GB HBM3")
    h100 = NCU_DIR.parent.parent / "h100-80gb-hbm3" / "ncu"
    sweep = [s for s in REPLAY.ncu_shapes("sdpa_flash") if s != DEFAULT_SHAPE]
    c = collect(["sdpa_flash"], sweep=sweep, quiet=True)
    expected = {("sdpa_flash", sh.key) for sh in sweep}
    assert set(c.recorded) == expected and set(c.recorded.values()) == {"h100-80gb-hbm3"}
    for stage, key in expected:
        raw_rows, _ = raw(h100 / f"{stage}__{key}.csv")
        assert list(c.kernels[(stage, key)]["kernel"]) == [r["Kernel Name"] for r in raw_rows]
