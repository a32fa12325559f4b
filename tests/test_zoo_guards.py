"""Guards written to kill the bug zoo's survivors (benchmarks/bug_zoo, issue 28).

Each test recomputes what a reader is shown from the raw recordings (the chrome traces, ncu's
rows, the memory ladder of training/memory.json) with plain loops, and compares it with what the
chapter's code returns. The expected values never come from the helper under test; where a
figure cannot be recomputed cheaply, the test checks a relation the figure must obey (a peak is
at least every other point, a ratio is its two columns divided), and says so.
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from conftest import ROOT

H200 = ROOT / "notebooks" / "traces" / "h200"
TRAINING = H200 / "training"
KEY = "b8_h16_s1024_d64_bfloat16_causal"
MIB, GIB = 2**20, 2**30


def raw(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def step_phases(path: Path) -> dict:
    """The last profiler step's GPU events (kernels, memcpys, memsets) of a training trace, summed
    per phase: forward where the launch call lies in attn_fwd, backward where it lies in attn_bwd.
    {phase: {"us": summed duration, "events": n, "kernels": n}}"""
    events = raw(path)["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    regions = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
               and e["name"] in ("attn_fwd", "attn_bwd") and lo <= e["ts"] <= hi]
    calls = {e["args"]["correlation"]: e for e in events if e.get("ph") == "X"
             and e.get("cat") in ("cuda_runtime", "cuda_driver") and lo <= e["ts"] <= hi}
    out = {p: {"us": 0.0, "events": 0, "kernels": 0} for p in ("forward", "backward")}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        call = calls.get(e["args"].get("correlation"))
        if call is None:
            continue
        for r in regions:
            if r["ts"] <= call["ts"] <= r["ts"] + r["dur"]:
                phase = "forward" if r["name"] == "attn_fwd" else "backward"
                out[phase]["us"] += e["dur"]
                out[phase]["events"] += 1
                out[phase]["kernels"] += e["cat"] == "kernel"
    return out


# --- chapter 11: training -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def memory() -> dict:
    return json.loads((TRAINING / "memory.json").read_text())


@pytest.fixture(scope="module")
def trainings():
    from helpers import profile_trainings, training
    return profile_trainings(training.STAGES)


def ladder_by_stage(memory: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in memory["ladder"]:
        if "seq" in r:
            out.setdefault(r["stage"], []).append(r)
    return out


def largest_seq(memory: dict) -> dict[str, tuple[int, int, bool]]:
    """{stage: (largest seq whose step ran, its peak bytes, whether the next doubling ran out of memory)}"""
    out = {}
    for stage, rows in ladder_by_stage(memory).items():
        ok = [r for r in rows if r["status"] == "ok"]
        best = max(ok, key=lambda r: r["seq"])
        out[stage] = (best["seq"], best["peak_bytes"], rows[-1]["status"] == "oom")
    return out


def test_chapter_11_largest_seq_table_and_the_first_to_run_out(memory, trainings):
    from helpers.training import chapter as training
    want = largest_seq(memory)
    table = training.max_seq_table(memory).set_index("stage")
    for stage, (seq, peak, _) in want.items():
        assert table.loc[stage, "largest seq that ran"] == seq, stage
        # the column says GiB: bytes / 2**30
        assert table.loc[stage, "peak at max GiB"] == pytest.approx(peak / GIB, abs=0.006), stage
    oom = {s: v for s, v in want.items() if v[2]}
    first = min(v[0] for v in oom.values())
    tied = sorted(s for s, v in oom.items() if v[0] == first)
    answers = training.answers(trainings, memory)
    assert sorted(answers["first_oom_doubling"].split(", ")) == tied
    assert answers["first_oom_seq"] == f"{2 * first:,}"  # the doubling that failed, not the last that ran
    glued = training.glue_training(trainings, memory)
    assert glued["tr_cap_seq"] == f"{max(v[0] for v in want.values()):,}"
    for stage, (seq, _, _) in want.items():
        assert glued[f"tr_{stage}_max_seq"] == f"{seq:,}"


def test_chapter_11_first_to_run_out_is_the_tied_stage_whose_peak_grows_fastest(memory, trainings):
    """Among the stages that ran out at the same doubling, the guess's answer is the one whose
    model fills the GPU first. Independent of the fit: at the last seq that ran, the tied stages
    all hold a peak below the GPU's memory; the one that runs out first at a continuous seq is the
    one with the largest peak there (the models are a·S² + b·S, the same S for all)."""
    from helpers.training import chapter as training
    want = largest_seq(memory)
    oom = {s: v for s, v in want.items() if v[2]}
    first = min(v[0] for v in oom.values())
    tied = {s: v[1] for s, v in oom.items() if v[0] == first}
    answer = training.answers(trainings, memory)["first_oom"]
    assert answer in tied
    assert tied[answer] == max(tied.values()), (answer, tied)


def test_chapter_11_peak_chart_points_are_the_ladders_bytes_in_gib(memory):
    from helpers.training import chapter as training
    fig = training.peak_chart(memory)
    ladders = ladder_by_stage(memory)
    named = [t for t in fig.data if t.name in ladders]
    assert named
    for t in named:
        ok = sorted((r["seq"], r["peak_bytes"]) for r in ladders[t.name] if r["status"] == "ok")
        assert list(t.x) == [s for s, _ in ok], t.name
        assert list(t.y) == pytest.approx([b / GIB for _, b in ok], rel=1e-9), t.name
    total = memory["provenance"]["total_memory_bytes"]
    lines = [s for s in fig.layout.shapes if s.y0 == s.y1]
    assert lines and lines[0].y0 == pytest.approx(total / GIB)
    texts = " ".join(a.text for a in fig.layout.annotations)
    assert f"{total / GIB:.0f} GiB" in texts


def test_chapter_11_phases_table_from_the_raw_events(trainings):
    from helpers.training import chapter as training
    table = training.phases_table(trainings).set_index("stage")
    for stage in trainings:
        raw_phases = step_phases(TRAINING / f"{stage}__{KEY}.json.gz")
        f, b = raw_phases["forward"], raw_phases["backward"]
        r = table.loc[stage]
        assert r["forward GPU µs (training step)"] == pytest.approx(f["us"], abs=0.06), stage
        assert r["backward GPU µs (training step)"] == pytest.approx(b["us"], abs=0.06), stage
        assert r["backward / forward"] == pytest.approx(b["us"] / f["us"], abs=0.006), stage
        assert r["backward kernels"] == b["kernels"] and r["forward kernels"] == f["kernels"], stage


def test_chapter_11_held_table_in_mib_from_the_recorded_provenance(trainings):
    from helpers.training import chapter as training
    table = training.held_table(trainings).set_index("stage")
    for stage in trainings:
        p = raw(TRAINING / f"{stage}__{KEY}.json.gz")["provenance"]
        t, s = p["extra"]["training"], p["shape"]
        r = table.loc[stage]
        assert r["held MiB"] == pytest.approx(t["held_bytes"] / MIB, abs=0.06), stage
        assert r["output MiB"] == pytest.approx(t["output_bytes"] / MIB, abs=0.06), stage
        assert r["one S×S bf16 MiB"] == pytest.approx(s["batch"] * s["heads"] * s["seq"] ** 2 * 2 / MIB, abs=0.06)
        assert r["logsumexp fp32 MiB"] == pytest.approx(s["batch"] * s["heads"] * s["seq"] * 4 / MIB, abs=0.006)


def test_chapter_11_timer_table_ratio_from_the_recorded_provenance(trainings):
    from helpers.training import chapter as training
    table = training.timer_table(trainings).set_index("stage")
    for stage in trainings:
        p = raw(TRAINING / f"{stage}__{KEY}.json.gz")["provenance"]
        gpu = sum(step_phases(TRAINING / f"{stage}__{KEY}.json.gz")[k]["us"] for k in ("forward", "backward"))
        r = table.loc[stage]
        if p.get("do_bench_us"):
            assert r["step do_bench µs"] == pytest.approx(p["do_bench_us"], abs=0.06), stage
            # do_bench over the profiler's GPU time (the step's GPU events, either phase or none)
            assert r["step do_bench / profiler"] == pytest.approx(p["do_bench_us"] / r["step profiler GPU µs"], abs=0.006), stage
            assert r["step profiler GPU µs"] >= gpu - 0.1, stage


def test_chapter_11_memory_timeline_marks_in_ms_and_its_peak(memory):
    from helpers import snapshots
    from helpers.training import chapter as training
    snaps = snapshots(("naive", "sdpa_flash"), memory=memory)
    given = {s: (data, marks) for s, (data, marks, _) in snaps.items()}
    fig = training.timeline_chart(given, "")
    marks = memory["snapshots"]
    xs = sorted(s.x0 for s in fig.layout.shapes)
    assert xs == pytest.approx(sorted((marks[s]["backward_us"] - marks[s]["forward_us"]) / 1e3 for s in given))
    # the chart's x runs in ms from the forward's start: the step's end lies within its range
    for t in fig.data:
        end = (marks[t.name]["end_us"] - marks[t.name]["forward_us"]) / 1e3
        assert max(t.x) <= end * 1.5 + 0.5, t.name
    peaks = training.timeline_peaks(given).set_index("stage")
    for stage, r in peaks.iterrows():
        y = [t for t in fig.data if t.name == stage][0].y
        # the peak is the highest point of the drawn line, and no column of the row exceeds it
        assert r["peak MiB"] == pytest.approx(max(y), abs=0.06), stage
        assert r["peak MiB"] >= max(r["at start MiB"], r["end of forward MiB"], r["largest block MiB"]), stage


def quotient(shown: float, num: float, num_half: float, den: float, den_half: float, shown_half: float = 0.05) -> bool:
    """Whether `shown` (rounded to ±shown_half) can be num / den, each of them rounded (± its half step)."""
    lo = (num - num_half) / (den + den_half)
    hi = (num + num_half) / (den - den_half) if den > den_half else float("inf")
    return lo - shown_half <= shown <= hi + shown_half


@pytest.fixture(scope="module")
def work():
    from helpers.training import chapter as training
    from helpers.training import sources_modes as training_modes
    return training.ncu_work(training_modes.training_counters())


def test_chapter_11_work_table_units_and_ratios(work):
    """The backward's bytes from ncu's rows of each stage (the sources layer splits the one
    recording per stage; its split is tested in test_training), in GB = bytes / 1e9; each
    FLOP/byte is its GFLOP over its GB; the ratio is backward over forward."""
    from helpers.training import sources_modes as training_modes
    parts = training_modes.ncu_backward()
    w = work.set_index("stage")
    for stage, rows in parts.items():
        if stage not in w.index:
            continue
        r = w.loc[stage]
        assert r["backward GB (ncu)"] == pytest.approx(float(rows["dram_bytes"].sum()) / 1e9, abs=0.006), stage
        assert quotient(r["backward FLOP/byte"], r["backward GFLOP (ncu)"], 0.05, r["backward GB (ncu)"], 0.005), stage
        if r.get("forward GB (ncu)"):
            assert quotient(r["forward FLOP/byte"], r["forward GFLOP (ncu)"], 0.05, r["forward GB (ncu)"], 0.005), stage
            assert quotient(r["backward / forward FLOPs"], r["backward GFLOP (ncu)"], 0.05, r["forward GFLOP (ncu)"], 0.05)
        # the backward does more work than the forward (2 to 5 products against 2)
        assert r["backward GFLOP (ncu)"] > r["forward GFLOP (ncu)"], stage


def test_chapter_11_roofline_points_and_the_ridge_sentence(work):
    from helpers.training import chapter as training
    fig = training.roofline_chart(work)
    w = work.set_index("stage")
    for t in fig.data:
        labels = list(t.text)
        fwd, bwd = labels.index("fwd"), labels.index("bwd")
        assert t.x[fwd] == w.loc[t.name, "forward FLOP/byte"] and t.x[bwd] == w.loc[t.name, "backward FLOP/byte"]
        assert t.y[fwd] == w.loc[t.name, "forward GFLOP (ncu)"] and t.y[bwd] == w.loc[t.name, "backward GFLOP (ncu)"]
    ridge = work.attrs["ridge"]
    matmul, copy = recorded_roofs()
    assert ridge == pytest.approx(matmul / copy)  # FLOP per byte: the matmul roof over the copy roof
    fp32, _ = recorded_roofs("float32")
    assert work.attrs["fp32 ridge"] == pytest.approx(fp32 / copy)
    # both ridges drawn, each at its value (vertical lines: x0 == x1)
    drawn = sorted(s.x0 for s in fig.layout.shapes if s.x0 == s.x1)
    assert drawn == pytest.approx(sorted([matmul / copy, fp32 / copy]))
    glued = training.glue_work(work)
    right = [s for s, r in w.iterrows() if r["backward FLOP/byte"] > ridge and s in training.TRAINING_FUSED]
    sentence = glued["tr_ridge_sentence"]
    for stage in training.TRAINING_FUSED:
        at = sentence.index(f"{stage} (")
        side = "right of it" if stage in right else "left of it"
        assert side in sentence[at:], (stage, side, sentence)   # its group's place follows it
        other = "left of it" if stage in right else "right of it"
        assert other not in sentence[at:sentence.index(side, at)], (stage, sentence)


# --- the closing table's verdicts (chapters 02–06c): each wired to the right profiles ------------

CLAIM_STAGES = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_auto",
                "naive_compiled", "flex", "flex_sliding"]


@pytest.fixture(scope="module")
def stage_profiles():
    from helpers import profile_stage
    return {s: profile_stage(s, mode="replay", quiet=True) for s in CLAIM_STAGES}


def last_step_gpu_cpu(prof) -> tuple[float, float]:
    from conftest import raw_per_step
    return raw_per_step(prof.events)[-1]


def memcpys(prof) -> int:
    from conftest import raw_last_step
    return sum(e["cat"] == "gpu_memcpy" for e, _ in raw_last_step(prof.events)[0])


def ops_under(prof, root: str) -> int:
    """Host ops inside the first top-level `root` op under the last step's attn_fwd (root included)."""
    from conftest import raw_last_step
    events = prof.events
    _, (lo, hi), _ = raw_last_step(events)
    attn = next(e for e in events if e.get("name") == "attn_fwd" and e.get("cat") == "user_annotation"
                and e.get("ph") == "X" and lo <= e["ts"] <= hi)
    inside = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"
              and attn["ts"] <= e["ts"] and e["ts"] + e["dur"] <= attn["ts"] + attn["dur"]]
    roots = [e for e in inside if e["name"] == root and not any(
        o is not e and o["ts"] <= e["ts"] and o["ts"] + o["dur"] >= e["ts"] + e["dur"] for o in inside)]
    if not roots:
        return 0
    r = min(roots, key=lambda e: e["ts"])
    return sum(r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"] for e in inside)


def test_closing_table_verdicts_are_wired_to_their_stages(stage_profiles):
    """claims.revealed, the closing table's source: each stage's verdicts speak of that stage
    against the right reference, with the raw trace's numbers in their evidence."""
    from helpers.chapters import claims
    p = stage_profiles
    rev = claims.revealed(p)
    by = {stage: {v.claim: v for v in vs} for stage, vs in rev.items()}
    # 02: in place against naive
    v = by["inplace"]["masked_fill_ writes in place: the Memcpy is gone"]
    now, was = memcpys(p["inplace"]), memcpys(p["naive"])
    assert f"{now} memcpy per forward here, {was} in naive" in v.evidence and v.holds == (now == 0 and was > 0)
    v = by["inplace"]["fewer CPU ops in the masking step"]
    now, was = ops_under(p["inplace"], "aten::masked_fill_"), ops_under(p["naive"], "aten::masked_fill")
    assert f"is {now} CPU ops" in v.evidence and f"here, {was} in naive" in v.evidence and v.holds == (now < was)
    memory = [v for v in rev["inplace"] if v.claim.startswith("in-place masking saves memory")]
    if memory:
        fwd = {s: raw(p[s].trace_path)["provenance"] for s in ("inplace", "naive")}
        need = {s: f["peak_memory_bytes"] - f["memory_before_bytes"] for s, f in fwd.items()}
        assert (f"inplace {need['inplace'] / MIB:,.0f} MiB, naive {need['naive'] / MIB:,.0f} MiB"
                in memory[0].evidence)
        assert memory[0].holds == (need["naive"] > need["inplace"])
    # 03: math against in-place (the article's 3.7× is math over in-place)
    v = by["sdpa_math"]["the math backend is slower than the in-place three lines"]
    gm, gn = last_step_gpu_cpu(p["sdpa_math"])[0], last_step_gpu_cpu(p["inplace"])[0]
    assert f"sdpa_math {gm:.1f} µs, inplace {gn:.1f} µs: {gm / gn:.2f}×" in v.evidence and v.holds == (gm > gn)
    # 06: cuDNN's CPU time in µs, the backends by GPU time, fastest first
    cudnn = {v.claim: v for v in rev["sdpa_cudnn"]}
    heavier = next(v for c, v in cudnn.items() if c.startswith("cuDNN spends more CPU"))
    cpu = {s: last_step_gpu_cpu(p[s])[1] for s in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient")}
    assert heavier.evidence.startswith("CPU time in attn_fwd per forward: " +
                                       ", ".join(f"{s} {t:.1f} µs" for s, t in cpu.items()))
    fastest = cudnn["flash is the fastest backend"]
    gpu = {s: last_step_gpu_cpu(p[s])[0] for s in ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn")}
    assert fastest.evidence.startswith(", ".join(f"{s} {t:.1f} µs" for s, t in sorted(gpu.items(), key=lambda kv: kv[1])))
    assert fastest.holds == (min(gpu, key=gpu.get) == "sdpa_flash")
    if not fastest.holds:
        assert fastest.difference.startswith(f"{min(gpu, key=gpu.get)} is the fastest")
    # SDPA's own pick: the pinned stage whose kernel names the unpinned call ran, from the raw events
    def names(s):
        from conftest import raw_last_step
        return {e["name"] for e, _ in raw_last_step(p[s].events)[0] if e["cat"] == "kernel"}
    picked = [s for s in gpu if names(s) == names("sdpa_auto")]
    auto = next(v for v in rev["sdpa_cudnn"] + rev.get("sdpa_auto", []) if v.claim.startswith("with no backend pinned"))
    assert f"SDPA ran {', '.join(picked)}" in auto.evidence and auto.holds == (picked == [min(gpu, key=gpu.get)])
    # 06b, 06c: their pages' verdicts, on their own stage against its reference
    from helpers.chapters import compiled, flex
    assert rev["naive_compiled"] == compiled.verdict_list(p["naive_compiled"], p["naive"])
    assert rev["flex"] == flex.verdict_list(p["flex"], p["sdpa_flash"])
    assert rev["flex_sliding"] == flex.sliding_verdict_list(p["flex_sliding"], p["flex"])


def test_hbm_model_total_is_megabytes_of_its_own_columns(stage_profiles):
    from helpers.chapters import claims
    t = claims.hbm_traffic({s: stage_profiles[s] for s in ("naive", "inplace", "sdpa_math", "sdpa_flash")})
    for stage, r in t.iterrows():
        shape = raw(stage_profiles[stage].trace_path)["provenance"]["shape"]
        qkvo = 4 * shape["batch"] * shape["heads"] * shape["seq"] * shape["head_dim"] * 2
        assert r["q, k, v, out bytes"] == qkvo
        assert r["total MB"] == pytest.approx((r["score bytes"] + qkvo) / 1e6, abs=0.051), stage


# --- chapter 09: the roofline, from ncu's raw CSV and the recorded ceilings ---------------------

NCU = H200 / "ncu"
SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "ns": 1e-3, "nsecond": 1e-3, "us": 1.0,
         "usecond": 1.0, "ms": 1e3, "msecond": 1e3}  # bytes, and µs


def ncu_rows(stage: str, key: str = KEY) -> list[dict]:
    """Per kernel of ncu's raw CSV: DRAM bytes (read + written) and duration in µs, with plain csv."""
    import csv
    with open(NCU / f"{stage}__{key}.csv", newline="") as f:
        rows = list(csv.reader(f))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    header, units, data = rows[start], rows[start + 1], rows[start + 2:]
    col = {c: i for i, c in enumerate(header)}
    out = []
    for r in data:
        if not r or not r[0].strip().isdigit():
            continue
        value = lambda c: float(r[col[c]].replace(",", "")) * SCALE[units[col[c]]]  # noqa: E731
        out.append({"kernel": r[col["Kernel Name"]],
                    "bytes": value("dram__bytes_read.sum") + value("dram__bytes_write.sum"),
                    "us": value("gpu__time_duration.sum")})
    return out


@pytest.fixture(scope="module")
def roofline_run():
    from helpers import Session, counters, roofline
    stages = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "naive_compiled", "flex"]
    s = Session()   # as 09 has it
    sweep = s.ncu_shapes("sdpa_flash")
    c = s.counters(stages, sweep=sweep, sweep_stages=roofline.SWEEP_STAGES)
    roof = roofline.load_ceilings(c, *s.ceilings(), quiet=True)
    times = roofline.timings(s.timed(c, quiet=True))
    return c, roof, times


def recorded_roofs(dtype: str = "bfloat16") -> tuple[float, float]:
    """The compute roof of a pipe (its ncu calibration matmul, 2·m·n·k over its ncu time, as the
    points are timed: bf16 for the tensor cores, float32 for the FMA units) and the recorded
    device-to-device copy roof, in TFLOP/s and TB/s (tests/independent/_raw.py reads them)."""
    from independent import _raw
    cal = _raw.calibration()
    return cal["bf16_tflops" if dtype == "bfloat16" else "fp32_tflops"], _raw.copy_tbps()


def test_chapter_09_ceilings_and_their_sentence(roofline_run):
    from helpers.chapters import roofline
    _, roof, _ = roofline_run
    matmul, copy = recorded_roofs()
    assert roof["ridge FLOP/B"] == pytest.approx(matmul / copy)  # FLOP/s over bytes/s: FLOP per byte
    fp32, _ = recorded_roofs("float32")
    assert roof["fp32 ridge FLOP/B"] == pytest.approx(fp32 / copy)  # the FMA units' ridge
    g = roofline.glue_ceilings(roof)
    sheet = roof["datasheet"]
    assert g["matmul_of_sheet"] == f"{100 * matmul / sheet['bf16 TFLOP/s']:.0f}"
    assert g["copy_of_sheet"] == f"{100 * copy / sheet['TB/s']:.0f}"


def test_chapter_09_points_units_from_the_raw_csv(roofline_run):
    from helpers.chapters import roofline
    c, roof, times = roofline_run
    pts = roofline.points(c, roof, times, shapes=[c.default_shape]).set_index("stage")
    matmul, copy = recorded_roofs()
    fp32, _ = recorded_roofs("float32")
    for stage, r in pts.iterrows():
        rows = ncu_rows(stage)
        kb, kus = sum(x["bytes"] for x in rows), sum(x["us"] for x in rows)
        copies = [e for e in raw(next(H200.glob(f"{stage}__{KEY}.json.gz")))["traceEvents"]
                  if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
        if not copies:
            assert r["DRAM MB"] == pytest.approx(kb / 1e6, rel=1e-3), stage
            assert r["ncu µs"] == pytest.approx(kus, rel=1e-3), stage
        else:  # the copies' bytes and time (from the trace) come on top of the kernels'
            assert kb / 1e6 <= r["DRAM MB"] < 2 * kb / 1e6 + 1e3, stage
            assert kus <= r["ncu µs"] < 2 * kus, stage
        # each derived column from the row's own figures, in the units its name says
        assert r["FLOP/B"] == pytest.approx(r["GFLOP"] * 1e9 / (r["DRAM MB"] * 1e6), rel=1e-6)
        assert r["TFLOP/s"] == pytest.approx(r["GFLOP"] * 1e9 / (r["ncu µs"] * 1e-6) / 1e12, rel=1e-6)
        # the roof of the pipe that did most of its FLOPs (sdpa_math: fp32 FFMA)
        compute = fp32 if r["pipe"] == "fp32 FFMA" else matmul
        roof_there = min(compute, r["FLOP/B"] * copy)
        assert r["roof TFLOP/s"] == pytest.approx(roof_there, rel=1e-6)
        assert r["roof"] == ("memory" if r["FLOP/B"] < compute / copy else "compute"), stage


def test_chapter_09_kernel_rows_from_the_raw_csv(roofline_run):
    from helpers.chapters import roofline
    c, roof, _ = roofline_run
    k = roofline.kernel_points(c, roof)
    for stage, g in k.groupby("stage"):
        rows = ncu_rows(stage)
        assert len(g) == len(rows), stage
        for (_, r), x in zip(g.iterrows(), rows):
            assert r["ncu µs"] == pytest.approx(x["us"], rel=1e-3), (stage, r["kernel"])
            assert r["DRAM MB"] == pytest.approx(x["bytes"] / 1e6, rel=1e-3), (stage, r["kernel"])


def test_chapter_09_the_sentences_name_the_right_stages(roofline_run):
    from helpers.chapters import roofline
    c, roof, times = roofline_run
    pts = roofline.points(c, roof, times, shapes=[c.default_shape])
    g = roofline.glue_roofline(pts, roof)
    pct = dict(zip(pts["stage"], pts["% of roof"]))
    tflops = dict(zip(pts["stage"], pts["TFLOP/s"]))
    assert g["closest"] == max(pct, key=pct.get) and g["best"] == max(tflops, key=tflops.get)
    matmul, copy = recorded_roofs()
    fp32, _ = recorded_roofs("float32")
    assert g["memory_count"] == sum(ai < (fp32 if pipe == "fp32 FFMA" else matmul) / copy
                                    for ai, pipe in zip(pts["FLOP/B"], pts["pipe"]))
    sweep = roofline.points(c, roof, times)
    s = roofline.glue_sweep(sweep)
    for stage, short in (("sdpa_flash", "flash"), ("naive", "naive")):
        rows = sorted(zip(sweep[sweep["stage"] == stage]["seq"], sweep[sweep["stage"] == stage]["FLOP/B"]))
        if len(rows) < 2:
            continue
        first, last = rows[0][1], rows[-1][1]
        assert s[f"{short}_ai_first"] == f"{first:.0f}" and s[f"{short}_ai_last"] == f"{last:.0f}"
        want = 0 if last > 1.1 * first else 1 if last < first / 1.1 else 2
        assert s[f"{short}_direction"] == roofline.SEQ_OPTIONS[want]


# --- chapter 05: the bytes each forward moves, from ncu's raw CSV ---------------------------------

def ncu_read_written(stage: str) -> tuple[float, float]:
    import csv
    with open(NCU / f"{stage}__{KEY}.csv", newline="") as f:
        rows = list(csv.reader(f))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    header, units = rows[start], rows[start + 1]
    col = {c: i for i, c in enumerate(header)}
    read = written = 0.0
    for r in rows[start + 2:]:
        if r and r[0].strip().isdigit():
            read += float(r[col["dram__bytes_read.sum"]]) * SCALE[units[col["dram__bytes_read.sum"]]]
            written += float(r[col["dram__bytes_write.sum"]]) * SCALE[units[col["dram__bytes_write.sum"]]]
    return read, written


def test_chapter_05_measured_bytes_and_the_ratio_a_reader_guesses():
    from helpers import Session, counters
    stages = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn"]
    s = Session()   # as 05 has it
    profiles = s.stages(stages[:5])
    hbm = s.counters(stages)
    m = counters.hbm_measured(hbm, s.forwards(hbm, profiles))
    for stage, r in m.iterrows():
        read, written = ncu_read_written(stage)
        assert r["read MB"] == pytest.approx(read / 1e6, abs=0.051), stage
        assert r["written MB"] == pytest.approx(written / 1e6, abs=0.051), stage
        assert (r["read MB"] + r["written MB"]) - 0.11 <= r["forward MB"], stage
        assert r["forward / model"] == pytest.approx(r["forward MB"] / r["model MB"], abs=0.006 + 0.05 / r["model MB"])
    g = counters.glue_hbm(m)
    assert g["ratio"] == f"{m.loc['naive', 'forward MB'] / m.loc['sdpa_flash', 'forward MB']:.0f}"
    assert float(g["min_over_model"]) == pytest.approx(min(m["forward / model"]), abs=0.006)
    assert float(g["max_over_model"]) == pytest.approx(max(m["forward / model"]), abs=0.006)
    assert float(g["min_over_model"]) <= float(g["max_over_model"])


def test_chapter_09_work_table_gflop_is_its_ratio_times_the_model():
    from helpers import Session, counters, roofline
    session = Session()
    c = session.counters(["sdpa_flash", "naive"], sweep=session.ncu_shapes("sdpa_flash"),
                         sweep_stages=roofline.SWEEP_STAGES)
    w = counters.work(c)
    for _, r in w.iterrows():
        s = re.search(r"_s(\d+)_d(\d+)", KEY)
        # 4·B·H·S²·D/2 FLOPs, causal: the model column, in GFLOP = FLOP / 1e9
        seq = int(r["seq"]) if "seq" in r else int(s.group(1))
        assert r["model GFLOP (4·B·H·S²·D/2)"] == pytest.approx(4 * 8 * 16 * seq**2 * 64 / 2 / 1e9, abs=0.006)
        assert r["executed GFLOP"] == pytest.approx(r["executed / model"] * r["model GFLOP (4·B·H·S²·D/2)"],
                                                     rel=0.01, abs=0.01)
        # the executed FLOPs are the tensor pipe's plus the FMA pipe's (FFMA, FADD + FMUL), each its own ratio
        assert r["executed GFLOP"] == pytest.approx(r["of which tensor pipe"] + r["of which FFMA"]
                                                    + r["of which FADD + FMUL"], abs=0.016)
        assert r["FFMA / model"] == pytest.approx(r["of which FFMA"] / r["model GFLOP (4·B·H·S²·D/2)"], abs=0.001)


# --- chapters 08 and 10: a step's breakdown, from the raw events ------------------------------------

OWN = H200 / "own_model"


def raw_step(name: str) -> dict:
    """The last profiler step of an own-model trace, from the raw events with plain loops: its GPU
    events (with the outermost host op on the launching thread that holds each launch call), and
    the kernels' durations."""
    events = raw(OWN / f"{name}.json.gz")["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("ph") == "X"
             and e.get("cat") in ("cuda_runtime", "cuda_driver") and lo <= e["ts"] <= hi}
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    gpu = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            call = calls.get(e["args"].get("correlation"))
            if call is None:
                continue
            holders = [o for o in ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"]
                       and o["ts"] + o["dur"] >= call["ts"] + call["dur"]]
            top = max(holders, key=lambda o: o["dur"])["name"] if holders else None
            gpu.append({"cat": e["cat"], "dur": e["dur"], "top": top, "name": e["name"]})
    return {"gpu": gpu}


@pytest.fixture(scope="module")
def own():
    from helpers.own_model import sources as own_model
    return {n: own_model.profile(n) for n in ("encoder_forward", "encoder_train_step")}


@pytest.mark.parametrize("name", ["encoder_forward", "encoder_train_step"])
def test_chapter_10_glued_step_and_the_guess_key_from_the_raw_events(own, name):
    import statistics
    from helpers.own_model import chapter as own_model
    from helpers.breakdown import views as breakdown
    prof = own[name]
    step = raw_step(name)
    values = own_model.glue_step(prof, "zoo")
    kernels = [g["dur"] for g in step["gpu"] if g["cat"] == "kernel"]
    assert values["gpu_events"] == len(step["gpu"]) and values["kernels"] == len(kernels)
    assert values["median_kernel_us"] == pytest.approx(statistics.median(kernels), abs=0.051)
    per_op: dict = {}
    for g in step["gpu"]:
        per_op[g["top"]] = per_op.get(g["top"], 0.0) + g["dur"]
    assert values["top_op"] == max(per_op, key=per_op.get) and values["launching_ops"] == len(per_op)
    # the step table's row in its own units: idle % of the span, the host's share in µs and %
    row = breakdown.step_table(prof).loc[prof.forward_step]
    assert values["idle_pct"] == pytest.approx(100 * row["idle µs"] / row["GPU span µs"], abs=0.06)
    assert values["idle_pct"] >= values["host_wait_pct"] - 0.1  # the host's wait is a share of the idle time
    assert values["host_wait_pct"] == pytest.approx(row["waiting for the host %"], abs=0.06)
    assert row["waiting for the host µs"] == pytest.approx(row["waiting for the host %"] * row["GPU span µs"] / 100,
                                                            abs=0.2 + 0.0006 * row["GPU span µs"])  # % to 0.1
    assert row["idle µs"] >= row["waiting for the host µs"] + row["waiting on other GPU work µs"] - 0.2
    # the guess: how many GPU events one step launches (kernels, memcpys and memsets)
    key = own_model.questions(name, prof).questions[0].key
    assert key["answer"] == len(step["gpu"])


@pytest.mark.parametrize("name", ["encoder_forward", "encoder_train_step"])
def test_chapter_10_top_kernels_and_kernels_per_op_from_the_raw_events(own, name):
    from helpers.breakdown import views as breakdown
    prof = own[name]
    step = raw_step(name)
    total = sum(g["dur"] for g in step["gpu"])
    by_name: dict = {}
    for g in step["gpu"]:
        by_name[g["name"]] = by_name.get(g["name"], 0.0) + g["dur"]
    top = breakdown.top_kernels(prof, n=3)
    want = sorted(by_name.values(), reverse=True)[:3]
    assert list(top["total µs"]) == pytest.approx(want, abs=0.051)
    assert list(top["% of GPU time"]) == pytest.approx([100 * t / total for t in want], abs=0.051)
    per = breakdown.kernels_per_op(prof, n=None)
    assert list(per["GPU µs"]) == sorted(per["GPU µs"], reverse=True)
    chart = breakdown.breakdown_chart([prof], step="last")
    table = breakdown.step_table(prof).loc[prof.forward_step]
    shown = {t.name: t.x[0] for t in chart.data}
    assert shown["waiting for the host"] == pytest.approx(table["waiting for the host %"], abs=0.051)
    assert shown["waiting on other GPU work"] == pytest.approx(table["waiting on other GPU work %"], abs=0.051)


def test_chapter_10_the_verdict_names_the_op_before_the_longest_wait(own):
    from helpers.breakdown import views as breakdown
    for prof in own.values():
        gaps = breakdown.idle_gaps(prof)
        host = gaps[gaps["cause"] == "host"]
        text = breakdown.verdict(prof)
        if "comes before work launched by" not in text:
            continue
        per: dict = {}
        for op, us in zip(host["top_aten_op"], host["idle_us"]):
            per[op] = per.get(op, 0.0) + us
        op = max(per, key=per.get)
        assert text.endswith(f"{per[op]:.0f} µs, comes before work launched by "
                             + (op if isinstance(op, str) else "an op the trace does not name"))


# --- the in-browser judge (every chapter's guesses), run in Node: what a reader is told ------------

GUESS_JS = ROOT / "helpers" / "views" / "js" / "guess.js"


def judge_in_node(cases: list[tuple[dict, str]]) -> list[dict]:
    """guess.js's judge(key, text) on each case, in Node (no browser: the page's DOM stubbed out)."""
    import shutil
    import subprocess
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is missing: apt-get install nodejs")
    script = ("globalThis.window = globalThis; globalThis.document = {currentScript: null, querySelectorAll: () => []};"
              f"require('vm').runInThisContext(require('fs').readFileSync({json.dumps(str(GUESS_JS))}, 'utf8'));"
              "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "process.stdout.write(JSON.stringify(cases.map(([k, t]) => window.attentionProfiled.guess.judge(k, t))));")
    out = subprocess.run([node, "-e", script], input=json.dumps(cases), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_browser_judge_reads_units_and_tolerance_as_a_reader_writes_them():
    from helpers.views import guess
    exact = guess.number_key("z-us", "How long?", 12, unit=" µs")
    near = guess.number_key("z-near", "How many?", 10, tolerance=0.1)
    cases = [(exact, "12 µs"), (exact, "12 μs"), (exact, "12us"), (exact, "13 µs"),
             (near, "10.9"), (near, "9.05"), (near, "11.05"), (near, "8.9")]
    got = judge_in_node(cases)
    assert [g.get("verdict", g.get("message")) for g in got] == [
        "right", "right", "right", "wrong",  # the micro sign (U+00B5) and the Greek mu (U+03BC) both read as µ
        "right", "right", "wrong", "wrong"]  # within 10 % of the answer (10), not of the guess


def test_the_browser_judge_of_a_kernel_list_needs_every_kernel():
    from helpers import profile_stage
    from helpers.views import guess
    key = guess.kernels_key(profile_stage("naive", mode="replay", quiet=True))
    kinds = [a["kind"] for a in key["answer"]]
    assert len(kinds) > 2
    (one, whole, extra) = judge_in_node([(key, kinds[0]), (key, ", ".join(kinds)), (key, ", ".join(kinds + [kinds[0]]))])
    assert one["verdict"] == "wrong" and [i["status"] for i in one["items"]] == ["matched"] + ["missing"] * (len(kinds) - 1)
    assert whole["verdict"] == "right"
    # one more of a kind the trace launches: "surplus"; a kind it does not launch: "extra"
    assert extra["verdict"] == "wrong" and extra["items"][-1]["status"] == "surplus"
    (foreign,) = judge_in_node([(key, ", ".join(kinds + ["flash"]))])
    assert foreign["verdict"] == "wrong" and foreign["items"][-1]["status"] == "extra"


def test_the_status_words_say_who_has_what():
    """What the table beside a judged kernel list says of each row: a kernel the reader left out is
    "missing from your guess"; one the reader named that the trace lacks is "not in the trace"."""
    # the words live once, in Python (helpers/views/guess.py); the page's script reads them off the key
    text = (ROOT / "helpers" / "views" / "guess.py").read_text()
    words = dict(re.findall(r'"(\w+)": "([^"]*)"', re.search(r"STATUSES = \{(.*?)\}", text, re.S).group(1)))
    assert "key.statuses[item.status]" in GUESS_JS.read_text()
    assert "guess" in words["missing"] and "trace" not in words["missing"]
    assert "trace" in words["extra"] and "guess" not in words["extra"]
    assert words["matched"].startswith("match") and words["differs"].startswith("differ")


# --- chapter 07: occupancy, from the raw trace and ncu's rows ----------------------------------------

@pytest.fixture(scope="module")
def occ_profiles():
    from helpers import Session, occupancy_lessons
    return Session().load_stages(occupancy_lessons.STAGES)


def test_chapter_07_longest_kernel_gpu_time_and_tflops_from_the_raw_events(occ_profiles):
    from conftest import raw_last_step, raw_per_step
    from helpers.chapters import occupancy_lessons as lessons
    for stage in ("sdpa_flash", "sdpa_cudnn", "naive"):
        prof = occ_profiles[stage]
        kernels = [e for e, _ in raw_last_step(prof.events)[0] if e["cat"] == "kernel"]
        assert lessons.main_kernel(prof)["name"] == max(kernels, key=lambda e: e["dur"])["name"], stage
    table = lessons.low_occupancy(occ_profiles)
    gpu = {}
    for stage, r in table.iterrows():
        s = raw(occ_profiles[stage].trace_path)["provenance"]["shape"]
        gpu[stage] = raw_per_step(occ_profiles[stage].events)[-1][0]
        flops = 4 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"] / 2  # causal: half the products
        assert r["GPU µs per forward"] == pytest.approx(gpu[stage], abs=0.051), stage
        assert r["model TFLOP/s"] == pytest.approx(flops / (gpu[stage] * 1e-6) / 1e12, abs=0.051), stage
    g = lessons.glue_low_occupancy(occ_profiles)
    assert g["speedup"] == f"{gpu['naive'] / gpu['sdpa_flash']:.1f}"


def test_chapter_07_achieved_over_theoretical_is_its_two_columns(occ_profiles):
    from helpers import Session
    from helpers.chapters import occupancy_lessons as lessons, occupancy_truth as truth
    s = Session()
    hw = s.counters(lessons.STAGES)
    t = truth.occupancy_truth(hw, s.forwards(hw, occ_profiles))
    assert len(t)
    for _, r in t.iterrows():
        if r["calculator %"]:
            assert r["achieved / theoretical"] == pytest.approx(r["ncu achieved %"] / r["calculator %"], abs=0.011)
    # ncu measures achieved below theoretical for a kernel whose blocks do not fill the SMs forever
    assert (t["ncu achieved %"] <= t["ncu theoretical %"] + 0.5).all()


# --- chapters 06b (torch.compile), 06c (Flex), 04d (a Hub kernel): from the raw events ---------------

def raw_gpu_us(prof) -> float:
    from conftest import raw_per_step
    return raw_per_step(prof.events)[-1][0]


def test_chapter_06b_fused_kernel_first_call_and_speed_from_the_recording(stage_profiles):
    from conftest import raw_last_step
    from helpers.chapters import compiled
    comp, naive = stage_profiles["naive_compiled"], stage_profiles["naive"]
    triton = [e for e, _ in raw_last_step(comp.events)[0] if e["cat"] == "kernel" and e["name"].startswith("triton")]
    longest = max(triton, key=lambda e: e["dur"])
    k = compiled.fused_kernel(comp)
    assert k["name"] == longest["name"] and float(k["dur_us"]) == pytest.approx(longest["dur"], abs=1e-6)
    pc, pn = raw(comp.trace_path)["provenance"], raw(naive.trace_path)["provenance"]
    g = compiled.glue_first_call(comp, naive)
    if pn.get("first_call_seconds") is not None:
        assert g["naive_first_call_ms"] == f"{pn['first_call_seconds'] * 1e3:.1f}"  # seconds → ms
    # a later call: the caller's loop where both have one (timers.json read raw), else do_bench
    from timer_fakes import later_calls_raw
    (_later_n, later_c), _ = later_calls_raw([naive.trace_path, comp.trace_path])
    if pc.get("first_call_seconds") is not None and later_c:
        assert g["compiled_first_over_call"] == f"{pc['first_call_seconds'] * 1e6 / later_c:,.0f}"
    gc, gn = raw_gpu_us(comp), raw_gpu_us(naive)
    faster = next(v for v in compiled.verdict_list(comp, naive) if v.claim.startswith("faster on the GPU"))
    assert f"({gn / gc:.2f}× faster)" in faster.evidence and faster.holds == (gc < gn)


def test_chapter_06c_call_gap_and_sweep_from_the_recording(stage_profiles):
    from helpers import Session
    from helpers.chapters import flex
    named = {s: stage_profiles[s] for s in ("sdpa_flash", "flex", "flex_sliding")}
    from timer_fakes import raw_call   # the caller's loop read raw (timers.json, or none)
    gap = flex.call_gap(named)
    for stage, r in gap.iterrows():
        call = raw_call(named[stage].trace_path, raw_gpu_us(named[stage]))
        if call:
            assert r["GPU busy %"] == pytest.approx(min(100, 100 * call["busy"] / call["wall"]), abs=0.051), stage
    sweep = flex.gap_sweep(Session(mode="replay").grid(flex.GAP_STAGES, flex.gap_shapes()))
    ratio = {}
    for _, r in sweep.iterrows():
        path = next(H200.glob(f"{r['stage']}__b8_h16_s{r['seq']}_d64_*.json.gz"))
        p = raw(path)["provenance"]
        if p.get("setup_seconds") is not None:
            assert r["mask set-up ms"] == pytest.approx(p["setup_seconds"] * 1e3, abs=0.051)  # seconds → ms
        call = raw_call(path, 0.0) if r["stage"] == "flex" else None
        if call and call["busy"]:
            ratio[r["seq"]] = call["wall"] / call["busy"]
    if ratio:
        assert flex.widest_gap(sweep, "flex") == max(ratio, key=ratio.get)


def test_chapter_04d_hub_kernel_time_against_sdpa_from_the_raw_events():
    from helpers import profile_stage
    from helpers.chapters import hub_flash
    hub, sdpa = (profile_stage(s, mode="replay", quiet=True) for s in ("hub_flash", "sdpa_flash"))
    gh, gs = raw_gpu_us(hub), raw_gpu_us(sdpa)
    v = next(v for v in hub_flash.verdict_list(hub, sdpa) if v.claim.startswith("the same kernel takes about"))
    assert f"hub_flash {gh:.1f} µs, sdpa_flash {gs:.1f} µs per forward ({gh / gs:.2f}×)" in v.evidence


# --- the calculator's JavaScript (occupancy.js) against ncu's own limits, in Node --------------------

OCC_JS = ROOT / "helpers" / "occupancy" / "js" / "occupancy.js"


def ncu_launches() -> list[dict]:
    """Every kernel ncu recorded for the forwards: its launch (threads, registers, shared memory in
    bytes) and ncu's own occupancy limits in blocks per SM, from the raw CSVs with plain csv."""
    import csv
    out, seen = [], set()
    for path in sorted(NCU.glob(f"*__{KEY}.csv")):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
        header, units = rows[start], rows[start + 1]
        col = {c: i for i, c in enumerate(header)}
        for r in rows[start + 2:]:
            if not (r and r[0].strip().isdigit()):
                continue
            num = lambda c: float(r[col[c]].replace(",", ""))  # noqa: E731
            smem = 0.0
            for c in ("launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static"):
                smem += num(c) * {"byte/block": 1, "Kbyte/block": 1e3, "Mbyte/block": 1e6}[units[col[c]]]
            launch = (int(num("launch__block_size")), int(num("launch__registers_per_thread")), int(round(smem)))
            if launch in seen:
                continue
            seen.add(launch)
            out.append({"launch": launch, "limits": {
                "warps": num("launch__occupancy_limit_warps"), "registers": num("launch__occupancy_limit_registers"),
                "shared_memory": num("launch__occupancy_limit_shared_mem"), "blocks": num("launch__occupancy_limit_blocks")}})
    return out


def test_the_browser_calculator_gives_ncus_limits_for_every_recorded_kernel():
    import shutil
    import subprocess
    from helpers.occupancy.browser import calculator_data
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is missing: apt-get install nodejs")
    launches = ncu_launches()
    assert launches
    script = ("globalThis.window = globalThis;"
              f"require('vm').runInThisContext(require('fs').readFileSync({json.dumps(str(OCC_JS))}, 'utf8'));"
              "const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "const calc = window.attentionProfiled.createOccupancyCalculator(input.data);"
              "process.stdout.write(JSON.stringify(input.launches.map(([t, r, s]) => {"
              " const d = calc.detail('9.0', t, r, s); return {blocks: d.activeBlocks, limits: d.blockLimits,"
              " warps: d.activeWarps, max: d.maxWarps, util: d.utilization, rpb: d.registersPerBlock}; })));")
    from helpers import Session
    from helpers.occupancy.charts import traced_kernels
    data = calculator_data(traced_kernels(Session(mode="replay").recorded()))
    out = subprocess.run([node, "-e", script], input=json.dumps({"data": data, "launches": [k["launch"] for k in launches]}),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    for k, got in zip(launches, json.loads(out.stdout)):
        want = min(k["limits"].values())
        assert got["blocks"] == want, (k, got)
        for what in ("warps", "registers", "blocks"):
            assert got["limits"][what] == k["limits"][what], (what, k, got)
        threads, regs, _ = k["launch"]
        assert got["warps"] == want * -(-threads // 32)
        # the register file in use: every active block's registers, over the SM's 65,536
        assert got["util"]["registers"] == pytest.approx(want * got["rpb"] / 65536)
        assert got["rpb"] >= threads * regs


def test_chapter_06b_the_fused_kernel_is_the_longest_of_several(stage_profiles):
    """The recordings hold one Triton kernel per forward, so 'the longest' is only tested on an
    edited copy: a second, shorter Triton kernel (its launch call copied) added to the last step."""
    import copy
    from conftest import raw_last_step
    from helpers.chapters import compiled
    from helpers.core.profile import Profile
    comp = stage_profiles["naive_compiled"]
    events = copy.deepcopy(comp.events)
    gpu, _, _ = raw_last_step(events)
    tk = next(e for e, _ in gpu if e["cat"] == "kernel" and e["name"].startswith("triton"))
    call = next(e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"
                and e.get("args", {}).get("correlation") == tk["args"]["correlation"])
    new = 1 + max(int(e["args"]["correlation"]) for e in events if isinstance(e.get("args"), dict)
                  and isinstance(e["args"].get("correlation"), int))
    short, launch = copy.deepcopy(tk), copy.deepcopy(call)
    short.update(name="triton_poi_fused_add_0", dur=tk["dur"] / 10, ts=tk["ts"] + tk["dur"] + 1.0)
    short["args"]["correlation"] = launch["args"]["correlation"] = new
    launch["ts"] = call["ts"] + call["dur"] / 2
    launch["dur"] = call["dur"] / 4
    prof = Profile(events + [short, launch], comp.provenance, comp.trace_path)
    triton = prof.kernels()
    assert (triton["library"] == "Triton").sum() == 2  # the edit took: two Triton kernels in the step
    assert compiled.fused_kernel(prof)["name"] == tk["name"]
