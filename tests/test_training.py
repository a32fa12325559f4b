"""The training chapter: one training step per stage, recorded on a GPU (tools/record_training.py).

What the chapter shows is checked against the raw recordings with plain loops: the backward's
kernels and the autograd node of each (by correlation id, autograd's thread, driver launches
included), the kernel-name decoder on the backward's real names, the peak-memory model and its
growth per doubling of seq, the memory snapshot's timeline, ncu's backward table against the
trace, and the in-place experiment, run here."""
from __future__ import annotations

import gzip
import json
import pickle
import re
from pathlib import Path

import pytest

from conftest import ROOT, raw_document

TRAINING = ROOT / "notebooks" / "traces" / "h200" / "training"
TRACES = sorted(TRAINING.glob("*__*.json.gz"))
NODE = re.compile(r"^autograd::engine::evaluate_function: (.+)$")


def test_the_replay_set_has_a_training_step_per_stage():
    from helpers.training.core import TRAINING_STAGES
    assert {p.name.split("__")[0] for p in TRACES} == set(TRAINING_STAGES)
    # the replay set stays small: a few MB with the snapshots and ncu's table
    assert sum(p.stat().st_size for p in TRAINING.rglob("*") if p.is_file()) < 4 * 2**20


def raw_backward(path: Path) -> dict:
    """The last profiler step's GPU events, from the raw JSON with plain loops, each with its phase
    (which annotation's span holds its launch call), its launch call's name and thread, and the
    autograd node whose evaluate_function op on that thread holds the call."""
    events = raw_document(path)["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    regions = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
               and e["name"] in ("attn_fwd", "attn_bwd") and lo <= e["ts"] <= hi]
    calls = {e["args"]["correlation"]: e for e in events if e.get("ph") == "X"
             and e.get("cat") in ("cuda_runtime", "cuda_driver") and lo <= e["ts"] <= hi}
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    out = {"forward": [], "backward": [], "forward_tids": {r["tid"] for r in regions if r["name"] == "attn_fwd"}}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        call = calls.get(e["args"].get("correlation"))
        if call is None:
            continue
        phase = None
        for r in regions:
            if r["ts"] <= call["ts"] <= r["ts"] + r["dur"]:
                phase = "forward" if r["name"] == "attn_fwd" else "backward"
        if phase is None:
            continue
        node = None
        for o in ops:
            m = NODE.match(o["name"])
            if m and o["tid"] == call["tid"] and o["ts"] <= call["ts"] and o["ts"] + o["dur"] >= call["ts"] + call["dur"]:
                node = m.group(1)
        out[phase].append({"name": e["name"], "cat": e["cat"], "call": call["name"], "tid": call["tid"], "node": node})
    return out


@pytest.mark.parametrize("path", TRACES, ids=[p.name.split("__")[0] for p in TRACES])
def test_backward_kernels_and_their_autograd_nodes_from_the_raw_events(path):
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    from helpers.core.profile import Profile
    raw = raw_backward(path)
    prof = Profile.load(path)
    table = bw.step_events(prof)
    counts = bw.phase_counts(prof)
    for phase in ("forward", "backward"):
        kernels = [e for e in raw[phase] if e["cat"] == "kernel"]
        assert counts[phase]["kernels"] == len(kernels), phase
        assert counts[phase]["gpu_events"] == len(raw[phase]), phase
    back = table[table["phase"] == "backward"]
    assert list(back["node"].fillna("")) == [e["node"] or "" for e in raw["backward"]]
    assert list(back["launched_by"]) == [e["call"] for e in raw["backward"]]
    driver = sum(e["call"].startswith("cu") and not e["call"].startswith("cuda") for e in raw["backward"])
    assert counts["backward"]["driver_launches"] == driver
    # every backward launch came from autograd's thread, none from the one that ran the forward,
    # and every one inside an autograd node
    assert raw["backward"] and all(e["tid"] not in raw["forward_tids"] for e in raw["backward"])
    assert all(e["node"] for e in raw["backward"])
    assert all(t.startswith("another thread") for t in back["thread"])


def test_some_backward_launches_are_driver_calls():
    calls = {e["call"] for p in TRACES for e in raw_backward(p)["backward"]}
    assert "cuLaunchKernelEx" in calls  # cuBLAS's and cuDNN's launches: what a runtime-only reader misses


@pytest.mark.parametrize("path", TRACES, ids=[p.name.split("__")[0] for p in TRACES])
def test_the_decoder_reads_the_backwards_real_names(path):
    """Every backward kernel's name is recognised, and what a name says about the shape agrees with
    the recording's shape (a decoder reading the backward's template arguments with the forward's
    layout gives the wrong head_dim or causal flag)."""
    from helpers.core.names import decode
    from helpers.core.profile import Profile
    shape = Profile.load(path).shape
    for e in raw_backward(path)["backward"]:
        k = decode(e["name"])
        assert k.kind != "unknown" and k.library != "unknown", e["name"]
        d = k.details
        if k.library == "FlashAttention-2":
            assert d["head_dim"] == shape.head_dim and d["element"] == "cutlass::bfloat16_t", e["name"]
            assert d["direction"] == "backward"
            if "Is_causal" in d:
                assert d["Is_causal"] == shape.causal
        if "cutlassB" in e["name"]:
            assert k.op == "attention backward" and k.dtype == "bf16"
        if "cudnn_generated" in e["name"]:
            assert d.get("direction_words") == "backward"
        if "cudnn::fusion" in e["name"]:
            assert k.kind in ("reduce", "copy") and k.op


def test_flash_backward_is_three_kernels_of_its_family():
    """The FA2 backward: dot(dO, O), then dQ/dK/dV, then dQ converted; by their names, in launch order."""
    from helpers.core.names import decode
    path = next(p for p in TRACES if p.name.startswith("sdpa_flash__"))
    family = [decode(e["name"]) for e in raw_backward(path)["backward"] if "flash_bwd" in e["name"]]
    assert [k.kind for k in family] == ["reduce", "attention", "copy"]


# --- memory ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def memory() -> dict:
    return json.loads((TRAINING / "memory.json").read_text())


def ok_rows(memory: dict) -> dict:
    out: dict = {}
    for r in memory["ladder"]:
        if r.get("status") == "ok":
            out.setdefault(r["stage"], []).append(r)
    return out


def test_the_peak_memory_model_matches_the_recordings(memory):
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    fits = bw.fit(bw.ladder(memory)).set_index("stage")
    for stage, rows in ok_rows(memory).items():
        assert len(rows) >= 4, stage
        f = fits.loc[stage]
        for r in rows:
            model = float(bw.model_peak(f, r["batch"], r["heads"], r["seq"], r["head_dim"]))
            assert abs(model - r["peak_bytes"]) <= 0.05 * r["peak_bytes"], (stage, r["seq"])


def test_peak_grows_4x_per_doubling_where_a_seq_by_seq_tensor_is_kept_else_2x(memory):
    """Which stages keep an S×S tensor is read from the recorded training step (held between forward
    and backward at least one bf16 S×S matrix), the growth from the recorded peaks."""
    from helpers.core.profile import Profile
    keeps = {}
    for path in TRACES:
        prof = Profile.load(path)
        s = prof.shape
        keeps[prof.stage] = prof.provenance.extra["training"]["held_bytes"] >= s.batch * s.heads * s.seq**2 * 2
    assert any(keeps.values()) and not all(keeps.values())
    # the chapter's growth() and its models_table, against the recorded peaks
    from helpers.training import core_backward as bw
    from helpers.training import chapter as view
    last = bw.growth(bw.ladder(memory)).groupby("stage").last()
    table = view.models_table(memory).set_index("stage")
    assert set(last.index) == set(ok_rows(memory))
    for stage, rows in ok_rows(memory).items():
        rows = sorted(rows, key=lambda r: r["seq"])
        a, b = rows[-2], rows[-1]
        assert b["seq"] == 2 * a["seq"]
        ratio = b["peak_bytes"] / a["peak_bytes"]
        assert last.loc[stage, "seq"] == b["seq"] and last.loc[stage, "ratio"] == pytest.approx(ratio, rel=1e-12)
        assert table.loc[stage, "last doubling ×"] == round(ratio, 2)
        if keeps[stage]:
            assert 3.6 <= last.loc[stage, "ratio"] <= 4.4, (stage, ratio)
        else:
            assert 1.8 <= last.loc[stage, "ratio"] <= 2.2, (stage, ratio)


def test_the_largest_seq_is_the_last_step_that_ran(memory):
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    table = bw.max_seq(memory).set_index("stage")
    for stage in table.index:
        rows = [r for r in memory["ladder"] if r.get("stage") == stage and "seq" in r]
        ran = [r["seq"] for r in rows if r["status"] == "ok"]
        assert table.loc[stage, "max_seq"] == max(ran)
        if rows[-1]["status"] == "oom":
            assert rows[-1]["seq"] == 2 * max(ran) and table.loc[stage, "bound"] == "largest that fits"
        else:
            assert table.loc[stage, "bound"].startswith("at least")


def test_the_saved_tensors_name_the_seq_by_seq_matrix_and_the_logsumexp():
    """Naive saves an S×S tensor and no per-row statistic; flash saves a [B, H, S] fp32 log-sum-exp
    and nothing S×S: as saved_tensors_hooks listed them live."""
    from helpers.core.profile import Profile
    for stage, sxs, lse in (("naive", True, False), ("sdpa_flash", False, True)):
        prof = Profile.load(TRAINING / f"{stage}__{prof_key()}.json.gz")
        s = prof.shape
        saved = [t for t in prof.provenance.extra["training"]["saved"] if not t["input"]]
        assert any(t["seq_by_seq"] for t in saved) == sxs
        assert any(t["shape"][:3] == [s.batch, s.heads, s.seq] and t["dtype"] == "float32" for t in saved) == lse


def prof_key() -> str:
    from helpers.core.stages import DEFAULT_SHAPE
    return DEFAULT_SHAPE.key


def test_the_memory_timeline_follows_the_snapshots_events(memory):
    """snapshot_timeline against a plain walk over the pickle: the same peak; naive's forward
    allocates one S×S bf16 block of the snapshot's shape, flash never does."""
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    from helpers.core.stages import Shape
    for stage in ("naive", "sdpa_flash"):
        path = next(TRAINING.glob(f"snapshot__{stage}__*.pickle.gz"))
        snap = pickle.loads(gzip.decompress(path.read_bytes()))
        marks = memory["snapshots"][stage]
        level = peak = 0
        for e in snap["device_traces"][0]:
            if e["action"] == "alloc":
                level += e["size"]
            elif e["action"] == "free_completed":
                level -= e["size"]
            peak = max(peak, level)
        t = bw.snapshot_timeline(gzip.decompress(path.read_bytes()), marks)
        start = t["allocated_bytes"].iloc[0] - (t["size_bytes"].iloc[0] if t["action"].iloc[0] == "alloc" else 0)
        assert t["allocated_bytes"].max() - start == peak
        s = Shape.from_key(marks["shape"])
        big = [e for e in snap["device_traces"][0] if e["action"] == "alloc" and e["size"] >= s.batch * s.heads * s.seq**2 * 2]
        assert bool(big) == (stage == "naive")


def test_ncu_backward_table_agrees_with_the_trace():
    """ncu's table of the backwards, split at its marker kernels, has per stage as many kernels as
    the trace's backward; and the FLOPs it measured are the model's multiple of the forward's:
    5 products against 2 where the scores are recomputed, 4 against 2 where P was kept."""
    from helpers.training import chapter as view
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    from helpers.core.stages import DEFAULT_SHAPE
    from helpers.training.core import FUSED, backward_flops, recompute_free_backward_flops
    parts = tm.ncu_backward()
    assert parts
    for stage, table in parts.items():
        raw = raw_backward(TRAINING / f"{stage}__{DEFAULT_SHAPE.key}.json.gz")
        assert len(table) == sum(e["cat"] == "kernel" for e in raw["backward"]), stage
    work = view.ncu_work(tm.training_counters()).set_index("stage")
    fused = backward_flops(DEFAULT_SHAPE) / DEFAULT_SHAPE.attention_flops
    kept = recompute_free_backward_flops(DEFAULT_SHAPE) / DEFAULT_SHAPE.attention_flops
    for stage, r in work.iterrows():
        expected = fused if stage in FUSED else kept
        assert abs(r["backward / forward FLOPs"] - expected) <= 0.1 * expected, stage


def test_inplace_masking_under_autograd_runs_here():
    """Run on this machine's CPU: masking the scores in place runs and saves what naive saves;
    masking the softmax's output in place runs forward and fails backward, naming the softmax."""
    from helpers.training.sources_step import inplace_under_autograd
    rows = {r["variant"]: r for r in inplace_under_autograd(device="cpu")}
    assert rows["naive"]["backward_ran"] and rows["inplace"]["backward_ran"]
    assert rows["inplace"]["saved_seq_by_seq"] == rows["naive"]["saved_seq_by_seq"] >= 1
    bad = rows["after_softmax"]
    assert bad["forward_ran"] and not bad["backward_ran"]
    assert "inplace operation" in bad["error"] and "Softmax" in bad["error"]


def test_the_glued_answers_come_from_the_recordings(memory):
    from helpers.training import chapter as view
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    profiles = {p.name.split("__")[0]: tm.load_step(p.name.split("__")[0]) for p in TRACES}
    a = view.answers(profiles, memory)
    raw = raw_backward(TRAINING / f"sdpa_flash__{prof_key()}.json.gz")
    assert a["flash_backward_kernels"] == sum(e["cat"] == "kernel" for e in raw["backward"])
    naive = next(r for r in memory["ladder"] if r["stage"] == "naive" and r.get("seq") == 4096)
    assert a["naive_held_gib_4096"] == round(naive["held_bytes"] / 2**30, 2)
    # the stage that runs out first is one of those that ran out at the smallest doubling
    first = min((r["seq"], r["stage"]) for r in memory["ladder"] if r.get("status") == "oom")
    assert a["first_oom"] in {r["stage"] for r in memory["ladder"] if r.get("status") == "oom" and r["seq"] == first[0]}


# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_a_recorded_training_step_has_its_forward_and_backward
@pytest.mark.gpu
def test_a_training_step_profiles_live():
    from helpers.training.sources_modes import profile_training
    from helpers.training import core_backward as bw
    from helpers.training import sources_modes as tm
    from helpers.core.stages import Shape
    prof = profile_training("sdpa_flash", Shape(batch=2, heads=4, seq=512), mode="live", quiet=True)
    c = bw.phase_counts(prof)
    assert c["forward"]["kernels"] >= 1 and c["backward"]["kernels"] >= 3
    assert prof.provenance.extra["training"]["held_bytes"] > 0


def test_glued_values_read_as_numbers_not_reprs(memory):
    """glue shows a value's repr: a numpy scalar would read np.float64(2.5) in the prose."""
    from helpers.training import chapter as view
    from helpers.training import sources_modes as tm
    profiles = {p.name.split("__")[0]: tm.load_step(p.name.split("__")[0]) for p in TRACES}
    from helpers.sources.modes import profile_stage
    forwards = {st: profile_stage(st, mode="replay", quiet=True) for st in ("naive", "sdpa_flash")}
    recorded = tm.training_counters()
    values = view.glue_training(profiles, memory, forwards) | view.glue_work(view.ncu_work(recorded),
                                                                          view.backward_limits(recorded))
    assert values and all(type(v) in (int, float, str, bool) for v in values.values()), \
        {k: type(v) for k, v in values.items() if type(v) not in (int, float, str, bool)}


def test_the_models_memory_wall_falls_where_the_search_ran_out(memory):
    """For every stage that ran out of memory, the fitted model fills the GPU between the last
    seq that ran and the one that did not: the model and the search agree on where the wall is."""
    from helpers.training import core_backward as bw
    table = bw.limit_seq(memory).set_index("stage")
    ran_out = [r for r in memory["ladder"] if r.get("status") == "oom"]
    assert ran_out
    for column in ("model_limit_seq", "wall_seq"):      # above the inputs, and with q, k, v, dO counted
        limits = table[column]
        for r in ran_out:
            last_ok = max(x["seq"] for x in memory["ladder"] if x.get("stage") == r["stage"] and x.get("status") == "ok")
            assert last_ok < limits[r["stage"]] < r["seq"], (column, r["stage"], last_ok, limits[r["stage"]], r["seq"])
    # counting the inputs can only bring the wall nearer
    assert (table["wall_seq"] <= table["model_limit_seq"]).all()
