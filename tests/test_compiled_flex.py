"""The naive_compiled and flex pages: their tables and verdicts against the raw trace events and
the recorded generated code, the block masks against the mask evaluated element by element, and
the clear refusals on GPUs that can't run them."""
import re

import numpy as np
import pandas as pd
import pytest
from timer_fakes import later_calls_raw, raw_call
import torch

import helpers
from helpers import Shape, StageUnavailable, get_stage, profile_stage
from helpers.chapters import claims, compiled, flex
from helpers.core import inductor
from helpers.sources.replay import recorded_shapes
from helpers.core.stages import SLIDING_WINDOW
from conftest import BOOK_GROUP, built_glue, raw_document, raw_last_step, require

STAGES = ("naive", "naive_compiled", "sdpa_flash", "flex", "flex_sliding")


@pytest.fixture(scope="module")
def profiles():
    return {s: profile_stage(s, mode="replay", quiet=True) for s in STAGES}


def raw_forward(prof):
    """The last step's GPU events from the raw JSON: ((event, holders), ...), the step's span, all events."""
    return raw_last_step(prof.trace_path)


def raw_cpu_names(prof):
    """Names of the host events inside the last step's attn_fwd annotation."""
    _, (lo, hi), events = raw_forward(prof)
    fwd = next(e for e in events if e.get("name") == "attn_fwd" and e.get("cat") == "user_annotation"
               and lo <= e["ts"] <= hi)
    return [e["name"] for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
            and fwd["ts"] <= e["ts"] and e["ts"] + e["dur"] <= fwd["ts"] + fwd["dur"] + 1e-3]


def gemm_names(prof):
    return [e["name"] for e, holders in raw_forward(prof)[0] if e["cat"] == "kernel" and "aten::bmm" in holders]


def raw_median_gpu_us(prof):
    """GPU time per forward as the pages give it: the sum over the last profiled step's events."""
    from test_trace import independent_view
    steps, gpu, *_ = independent_view(prof.trace_path)
    return float(sum(e["dur"] for e in gpu[max(steps)]))


def by_claim(verdicts, start):
    return next(v for v in verdicts if v.claim.startswith(start))


# --- Inductor's generated code ------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["naive_compiled", "flex", "flex_sliding"])
def test_generated_code_defines_the_traced_triton_kernels(profiles, stage):
    prof = profiles[stage]
    code = compiled.generated_code(prof)
    assert code, f"the {stage} recording holds no generated code"
    triton = [e["name"] for e, _ in raw_forward(prof)[0] if e["name"].startswith("triton_")]
    defined = {k.name for k in inductor.kernels(code)}
    assert triton and set(triton) <= defined
    for k in inductor.kernels(code):
        assert k.source.lstrip().startswith("import triton") and f"def {k.name}(" in k.source


def test_call_launches_in_the_order_the_trace_shows(profiles):
    prof = profiles["naive_compiled"]
    launched = inductor.launched_in_call(compiled.generated_code(prof))
    traced = []
    for e, holders in raw_forward(prof)[0]:
        if e["cat"] != "kernel":
            continue
        traced.append(e["name"] if e["name"].startswith("triton_") else
                      next(f"extern_kernels.{h.split('::')[1]}" for h in holders if h.startswith("aten::")))
    assert launched == traced


def test_fused_nodes_come_from_the_kernels_comment(profiles):
    prof = profiles["naive_compiled"]
    code = "\n".join(compiled.generated_code(prof))
    name = compiled.fused_kernel(prof)["name"]
    block = code[:code.index(f"{name} = async_compile.triton(")].rsplit("# kernel path:", 1)[1]
    mapped = re.findall(r"^#   (\S+) => ", block, re.M)
    order = [n.strip() for n in re.search(r"Source Nodes: \[([^\]]*)\]", block).group(1).split(",")]
    nodes = list(compiled.fused_nodes(prof).index)
    assert mapped and sorted(nodes) == sorted(mapped)
    assert nodes == sorted(nodes, key=lambda n: order.index(n) if n in order else len(order))


def test_triton_source_is_the_recorded_source(profiles):
    prof = profiles["naive_compiled"]
    name = compiled.fused_kernel(prof)["name"]
    text = compiled.triton_source(prof).data
    assert f"def {name}(" in text and "@triton.jit" in text


# --- the compiled page ---------------------------------------------------------------------------

def test_compiled_verdicts_follow_the_raw_events(profiles):
    c, n = profiles["naive_compiled"], profiles["naive"]
    verdicts = compiled.verdict_list(c, n)
    forward = raw_forward(c)[0]
    kernels = [e for e, _ in forward if e["cat"] == "kernel"]
    gemm_at = [i for i, e in enumerate(kernels) if not e["name"].startswith("triton_")]
    between = kernels[gemm_at[0] + 1:gemm_at[-1]]
    one_fused = (len(between) == 1 and between[0]["name"].startswith("triton_")
                 and all(op in between[0]["name"] for op in ("mul", "masked_fill", "softmax")))
    assert by_claim(verdicts, "scale, mask and softmax fuse").holds == one_fused
    assert by_claim(verdicts, "the matmuls stay cuBLAS").holds == (gemm_names(c) == gemm_names(n) != [])
    memcpys = lambda p: sum(e["cat"] == "gpu_memcpy" for e, _ in raw_forward(p)[0])  # noqa: E731
    masking = any(name.startswith("aten::masked_fill") for name in raw_cpu_names(c))
    assert by_claim(verdicts, "the Memcpy is gone").holds == (memcpys(c) == 0 < memcpys(n) and not masking)
    s = c.provenance.shape
    fused = next(e for e in kernels if e["name"].startswith("triton_"))
    assert by_claim(verdicts, "the fused kernel gives each row").holds == (
        int(np.prod(fused["args"]["grid"])) == s["batch"] * s["heads"] * s["seq"])
    assert by_claim(verdicts, "faster on the GPU").holds == (raw_median_gpu_us(c) < raw_median_gpu_us(n))


def test_gemm_table_says_same_where_the_raw_names_agree(profiles):
    c, n = profiles["naive_compiled"], profiles["naive"]
    table = compiled.gemms(c, n)
    assert list(table["kernel in naive"]) == gemm_names(n) and list(table["kernel in naive_compiled"]) == gemm_names(c)
    assert list(table["same kernel?"] == "same") == [a == b for a, b in zip(gemm_names(n), gemm_names(c))]
    launch = ("grid", "block", "registers per thread", "shared memory")
    raw = lambda p: [e for e, h in raw_forward(p)[0] if e["cat"] == "kernel" and "aten::bmm" in h]  # noqa: E731
    assert list(table["same launch?"] == "same") == [
        all(x["args"][k] == y["args"][k] for k in launch) and x["launched_by"] == y["launched_by"]
        for x, y in zip(raw(n), raw(c))]


def test_every_op_of_a_compiled_call_is_explained(profiles):
    for stage in ("naive_compiled", "flex"):
        layers = compiled.cpu_layers(profiles[stage])
        assert len(layers) == len(raw_cpu_names(profiles[stage]))
        assert (layers["what it is"] != "").all(), layers[layers["what it is"] == ""]


def test_first_call_and_memory_are_the_recorded_provenance(profiles):
    c, n = profiles["naive_compiled"], profiles["naive"]
    raw = {p.stage: raw_document(p.trace_path)["provenance"] for p in (c, n)}
    # a later call: the caller's loop where both have one (timers.json, read raw), else do_bench
    (later_n, later_c), _ = later_calls_raw([n.trace_path, c.trace_path])
    later = {"naive": later_n, "naive_compiled": later_c}
    table = compiled.first_call(c, n)
    for stage, prov in raw.items():
        assert table.loc[stage, "first call (s)"] == round(prov["first_call_seconds"], 2)
        assert table.loc[stage, "first call / later call"] == round(prov["first_call_seconds"] * 1e6 / later[stage])
    memory = compiled.forward_memory({"naive": n, "naive_compiled": c})
    for stage, prov in raw.items():
        # MiB, the unit the in-place chapter gives the same quantity in
        assert memory.loc[stage, "the forward needed (MiB)"] == round(
            (prov["peak_memory_bytes"] - prov["memory_before_bytes"]) / 2**20, 1)
    extra = raw["naive_compiled"]["first_call_seconds"] - raw["naive"]["first_call_seconds"]
    saved = later["naive"] - later["naive_compiled"]
    calls = compiled.payoff_calls(c, n)
    assert (calls is None) == (saved <= 0)
    if calls is not None:
        assert (calls - 1) * saved < max(extra, 0) * 1e6 <= calls * saved


# --- the flex page -------------------------------------------------------------------------------

def test_flex_verdicts_follow_the_raw_events(profiles):
    f, a = profiles["flex"], profiles["sdpa_flash"]
    verdicts = flex.verdict_list(f, a)
    forward = raw_forward(f)[0]
    one = len(forward) == 1 and forward[0][0]["name"].startswith("triton_tem_") and "flex_attention" in forward[0][0]["name"]
    assert by_claim(verdicts, "one Triton template kernel").holds == one
    names = raw_cpu_names(f)
    builds = any(m in n for n in names for m in ("create_block_mask", "vmap", "tril", "triu", "arange", "where", "ones"))
    assert by_claim(verdicts, "the block mask is built once").holds == (not builds and len(forward) == 1)
    s = f.provenance.shape
    grid = forward[0][0]["args"]["grid"]
    code = "\n".join(raw_document(f.trace_path)["provenance"]["extra"]["generated_code"])
    block_m = int(re.search(r"BLOCK_M\s*:\s*tl\.constexpr\s*=\s*(\d+)", code).group(1))
    assert by_claim(verdicts, "one block of the grid").holds == (
        grid == [-(-s["seq"] // block_m), s["batch"], s["heads"]])
    ratio = raw_median_gpu_us(f) / raw_median_gpu_us(a)
    assert by_claim(verdicts, "as fast as flash").holds == (abs(ratio - 1) <= 0.10)
    # the book's one line (helpers.core.bound): the caller's loop against the GPU's busy time; no
    # verdict without the caller's timer
    call = raw_call(f.trace_path, raw_median_gpu_us(f))
    said = [v for v in verdicts if v.claim.startswith("a call takes as long")]
    assert (not said) if call is None else said[0].holds == (call["verdict"] == "bound by the GPU")


def test_the_grid_matches_block_m_of_the_generated_code(profiles):
    prof = profiles["flex"]
    e = raw_forward(prof)[0][0][0]
    k = inductor.kernel(compiled.generated_code(prof), e["name"])
    assert k is not None and "BLOCK_M" in k.constants
    assert e["args"]["grid"][0] == -(-prof.provenance.shape["seq"] // k.constants["BLOCK_M"])
    assert np.prod(e["args"]["block"]) == 32 * k.launch["num_warps"]


def brute_force_blocks(mask, seq: int, block: int) -> np.ndarray:
    """0 skipped, 1 partial, 2 full: the mask evaluated on every (query, key) pair."""
    q, kv = np.meshgrid(np.arange(seq), np.arange(seq), indexing="ij")
    dense = mask(q, kv)
    n = -(-seq // block)
    out = np.zeros((n, n), dtype=int)
    for i in range(n):
        for j in range(n):
            tile = dense[i * block:(i + 1) * block, j * block:(j + 1) * block]
            out[i, j] = 2 if tile.all() else 1 if tile.any() else 0
    return out


@pytest.mark.parametrize("stage, mask", [
    ("flex", lambda q, kv: q >= kv),
    ("flex_sliding", lambda q, kv: (q >= kv) & (q - kv < SLIDING_WINDOW)),
])
@pytest.mark.parametrize("seq", [1024, 2048])
def test_block_states_match_the_mask_element_by_element(stage, mask, seq):
    grid, size = flex.block_states(stage, Shape(seq=seq))
    assert size[0] == size[1]
    assert (grid == brute_force_blocks(mask, seq, size[0])).all()


def test_sliding_verdicts_follow_the_raw_events(profiles):
    s, c = profiles["flex_sliding"], profiles["flex"]
    verdicts = flex.sliding_verdict_list(s, c)
    es, ec = raw_forward(s)[0][0][0], raw_forward(c)[0][0][0]
    same = all(es["args"][k] == ec["args"][k] for k in ("grid", "block", "registers per thread", "shared memory"))
    assert by_claim(verdicts, "the same Triton template").holds == (
        same and "flex_attention" in es["name"] and "flex_attention" in ec["name"])
    gs, _ = flex.block_states("flex_sliding", s.shape)
    gc, _ = flex.block_states("flex", c.shape)
    assert by_claim(verdicts, "its cost follows").holds == (
        (raw_median_gpu_us(s) < raw_median_gpu_us(c)) == ((gs > 0).sum() < (gc > 0).sum()))


def test_gap_sweep_is_the_recorded_loop_over_the_raw_busy_time():
    seqs = sorted({sh.seq for sh in recorded_shapes("flex") if sh.head_dim == 64})
    assert len(seqs) > 1, "the flex seq sweep is not recorded"
    sweep = helpers.flex.gap_sweep(helpers.Session(mode="replay").grid(["flex"], flex.gap_shapes(tuple(seqs))))
    calls = []
    for _, row in sweep.sort_values("seq").iterrows():
        prof = profile_stage("flex", Shape(seq=int(row["seq"])), "replay", quiet=True)
        bench = raw_document(prof.trace_path)["provenance"]["do_bench_us"]
        assert row["do_bench µs"] == pytest.approx(bench, abs=0.051)
        call = raw_call(prof.trace_path, raw_median_gpu_us(prof))
        calls.append(call)
        if call is None:
            assert pd.isna(row["loop / busy"])
        else:
            assert row["loop / busy"] == pytest.approx(call["wall"] / call["busy"], abs=0.006)  # rounded to 0.01
    verdict = flex.gap_closes(sweep)
    timed = [c for c in calls if c is not None]
    if not timed:
        assert verdict is None
    else:
        ratios = [round(c["wall"] / c["busy"], 2) for c in timed]
        assert verdict.holds == (len(ratios) > 1 and ratios[0] == max(ratios) and timed[-1]["verdict"] == "bound by the GPU")


def test_sweep_glue_says_not_measured_where_do_bench_is_absent(monkeypatch):
    # live without Triton there is no do_bench: the page says so instead of failing (the H200
    # live run failed here before do_bench became part of every live capture)
    seqs = sorted({sh.seq for sh in recorded_shapes("flex") if sh.head_dim == 64})
    sweep = helpers.flex.gap_sweep(helpers.Session(mode="replay").grid(["flex"], flex.gap_shapes(tuple(seqs))))
    sweep["do_bench µs"] = None
    sweep["loop µs"] = sweep["loop / busy"] = sweep["busy µs"] = None
    sweep["bound"] = "no caller's timer recorded"
    monkeypatch.setattr(flex, "glue", lambda name, value: None)
    values = flex.glue_sweep(sweep)["flex"]
    assert values["ratio_lo"] == values["ratio_hi"] == "not measured"
    assert values["bench_lo"] is None and values["gpu_lo"] == float(sweep.sort_values("seq").iloc[0]["GPU µs"])
    assert values["summary"].startswith("this recording has no caller's timer") and "nan" not in values["summary"]
    assert "None" not in values["summary"] and "None" not in values["cpu_flat"]


def test_the_new_stages_join_the_closing_table(profiles):
    lines = claims.revealed(profiles)
    assert {"naive_compiled", "flex", "flex_sliding"} <= set(lines)
    for stage in ("naive_compiled", "flex", "flex_sliding"):
        table = claims.check(stage, profiles)
        assert len(table) and table["verdict"].str.match(r"^(holds|differs: .+)$").all()


# --- where they can't run -------------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["flex", "flex_sliding"])
def test_t4_is_told_flex_is_unavailable(monkeypatch, stage):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
    with pytest.raises(StageUnavailable, match=r"Tesla T4 is compute capability 7\.5.*8\.0.*mode='replay'"):
        get_stage(stage).check(Shape(), "cuda")


def test_compiled_naive_runs_on_a_t4_but_not_on_a_p100(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    get_stage("naive_compiled").check(Shape(), "cuda")  # Triton runs from sm 7.0
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (6, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla P100-PCIE-16GB")
    with pytest.raises(StageUnavailable, match=r"compute capability 6\.0.*7\.0.*Triton"):
        get_stage("naive_compiled").check(Shape(), "cuda")


# --- live, on a GPU --------------------------------------------------------------------------------

# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_recorded_compiled_capture_kept_the_generated_code_and_the_first_call
@pytest.mark.gpu
def test_live_compiled_capture_keeps_the_generated_code_and_the_first_call():
    prof = profile_stage("naive_compiled", Shape(batch=2, heads=4, seq=512), mode="live", quiet=True)
    name = compiled.fused_kernel(prof)["name"]
    assert inductor.kernel(compiled.generated_code(prof), name) is not None
    assert prof.provenance.first_call_seconds * 1e6 > prof.summary()["gpu_time_us"]


# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_recorded_flex_built_its_mask_outside_the_forward
@pytest.mark.gpu
def test_live_flex_records_the_mask_set_up_outside_the_forward():
    prof = profile_stage("flex", Shape(batch=2, heads=4, seq=512), mode="live", quiet=True)
    assert prof.provenance.setup_seconds is not None and prof.provenance.setup_seconds > 0
    assert by_claim(flex.verdict_list(prof, profile_stage("sdpa_flash", prof.shape, "live", quiet=True)),
                    "the block mask is built once").holds


# --- the pages' prose: every glued number, from the traces ----------------------------------------

def glued(build, name: str) -> dict:
    """What a notebook glued in the book build's execution (replay: no GPU here), by name, as the
    book shows it: the page's own values, not a second execution of the notebook."""
    require("myst_nb")  # without it glue is a no-op (the GPU machine has no book tools)
    out = built_glue(build, name)
    out.pop("__markdown__")
    return out


@BOOK_GROUP  # reads the build: with the other readers, after it (not in this module's group)
def test_compiled_page_glues_the_traces_figures(profiles, book_build):
    g = glued(book_build, "06b_naive_compiled")
    c, n = profiles["naive_compiled"], profiles["naive"]
    assert int(g["naive_compiled_gpu_events"]) == len(raw_forward(c)[0])
    assert int(g["naive_gpu_events"]) == len(raw_forward(n)[0])
    fused = next(e for e, _ in raw_forward(c)[0] if e["name"].startswith("triton_"))
    assert g["compiled_fused_name"] == fused["name"]
    assert int(g["compiled_fused_grid"]) == int(np.prod(fused["args"]["grid"]))
    prov = raw_document(c.trace_path)["provenance"]
    assert g["compiled_first_call_s"] == f"{prov['first_call_seconds']:.2f}"
    (_n, later_c), _ = later_calls_raw([n.trace_path, c.trace_path])
    assert g["compiled_first_over_call"] == f"{prov['first_call_seconds'] * 1e6 / later_c:,.0f}"


@BOOK_GROUP
def test_flex_page_glues_the_traces_figures(profiles, book_build):
    g = glued(book_build, "06c_flex")
    f, a = profiles["flex"], profiles["sdpa_flash"]
    e = raw_forward(f)[0][0][0]
    assert g["flex_kernel_name"] == e["name"] and g["flex_grid"] == str(tuple(e["args"]["grid"]))
    assert g["flex_over_flash_gpu"] == f"{raw_median_gpu_us(f) / raw_median_gpu_us(a):.2f}"
    lo = min(sh.seq for sh in recorded_shapes("flex") if sh.head_dim == 64)
    small = profile_stage("flex", Shape(seq=lo), "replay", quiet=True)
    call = raw_call(small.trace_path, raw_median_gpu_us(small))
    assert int(g["flex_sweep_seq_lo"]) == lo
    if call is None:
        assert g["flex_sweep_ratio_lo"] == "not measured"
    else:
        assert float(g["flex_sweep_ratio_lo"]) == pytest.approx(call["wall"] / call["busy"], abs=0.006)
    assert int(g["sliding_window"]) == SLIDING_WINDOW
