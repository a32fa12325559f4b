"""The verdicts of the hub_flash, naive_compiled and flex pages against the raw trace events, on
both sides of each line.

As in test_claims_raw.py: each expectation is read from the raw JSON with plain loops, and the side
of a line the replay set lacks is reached by editing the recorded events (durations scaled, a
launch's registers or grid changed, a host op added) and reading the edited events the same way."""
import re

import pytest
from timer_fakes import loop_around, median

from helpers import profile_stage
from helpers.chapters import compiled, flex
from helpers.chapters import hub_flash as hub
from test_claims_raw import GPU_CATS, edited, forward, gpu_last, ops_of, scaled_gpu

STAGES = ["naive", "sdpa_math", "sdpa_flash", "sdpa_efficient", "hub_flash", "naive_compiled", "flex",
          "flex_sliding"]


@pytest.fixture(scope="module")
def profiles():
    return {s: profile_stage(s, mode="replay", quiet=True) for s in STAGES}


def by_claim(verdicts, start: str):
    found = [v for v in verdicts if v.claim.startswith(start)]
    assert len(found) == 1, [v.claim for v in verdicts]
    return found[0]


def kernels(prof):
    return [e for e, _ in forward(prof) if e["cat"] == "kernel"]


def gemms(prof):
    return [e for e, holders in forward(prof) if e["cat"] == "kernel" and holders & {"aten::bmm", "aten::mm"}]


def with_kernel_args(prof, name_part: str, **args):
    """The recording with the args of every kernel whose name holds `name_part` changed."""
    def change(e):
        if e.get("cat") == "kernel" and name_part in e.get("name", ""):
            e["args"] = e["args"] | args
        return e
    return edited(prof, change=change)


def within_ten_percent(a: float, b: float) -> bool:
    return abs(a / b - 1) <= 0.10


# --- hub_flash against sdpa_flash ----------------------------------------------------------------

TEMPLATE = re.compile(r"(?:void )?(\w+)::flash_fwd_kernel<(.*)>\((\w+)::Flash_fwd_params\)")


def template_of(prof):
    (k,) = kernels(prof)
    m = TEMPLATE.fullmatch(k["name"])
    return m.group(1), m.group(2)


def test_hub_same_template_and_another_namespace(profiles):
    h, s = profiles["hub_flash"], profiles["sdpa_flash"]
    (ns_h, args_h), (ns_s, args_s) = template_of(h), template_of(s)
    verdicts = hub.verdict_list(h, s)
    assert by_claim(verdicts, "same algorithm family").holds == (args_h == args_s)
    assert by_claim(verdicts, "a different binary").holds == (ns_h != ns_s)
    # the other sides: sdpa_flash against itself is the same binary; against CUTLASS, another family
    assert not by_claim(hub.verdict_list(s, s), "a different binary").holds
    assert not by_claim(hub.verdict_list(profiles["sdpa_efficient"], s), "same algorithm family").holds


def test_hub_no_transposes_both_sides(profiles):
    h, s = profiles["hub_flash"], profiles["sdpa_flash"]
    count = lambda p: ops_of(p).count("aten::transpose")  # noqa: E731
    for a, b in ((h, s), (s, h)):
        v = by_claim(hub.verdict_list(a, b), "no layout transposes")
        assert v.holds == (count(a) == 0 and count(b) > 0)
        assert f"{a.stage}: {count(a)}; {b.stage}: {count(b)}" in v.evidence


def test_hub_launched_the_same_way_both_sides(profiles):
    h, s = profiles["hub_flash"], profiles["sdpa_flash"]
    launch = lambda p: [(k["launched_by"], k["args"]["registers per thread"], k["args"]["shared memory"])  # noqa: E731
                        for k in kernels(p)]
    more = with_kernel_args(h, "flash_fwd_kernel", **{"registers per thread": launch(h)[0][1] + 8})
    for a in (h, more):
        v = by_claim(hub.verdict_list(a, s), "launched the same way")
        assert v.holds == (launch(a) == launch(s))
    assert by_claim(hub.verdict_list(h, s), "launched the same way").holds != \
        by_claim(hub.verdict_list(more, s), "launched the same way").holds


@pytest.mark.parametrize("factor", [1.0, 1.05, 0.95, 1.2, 0.8])
def test_hub_gpu_time_within_ten_percent(profiles, factor):
    s = profiles["sdpa_flash"]
    # the hub kernel scaled to `factor` times sdpa_flash's GPU time
    h = profiles["hub_flash"]
    h = scaled_gpu(h, factor * gpu_last(s) / gpu_last(h))
    v = by_claim(hub.verdict_list(h, s), "the same kernel takes about the same GPU time")
    assert v.holds == within_ten_percent(gpu_last(h), gpu_last(s))
    assert v.holds == (factor in (1.0, 1.05, 0.95))
    assert f"({gpu_last(h) / gpu_last(s):.2f}×)" in v.evidence


# --- naive_compiled against naive ------------------------------------------------------------------

def between_gemms(prof):
    events = [e for e, _ in forward(prof)]
    idx = [i for i, (e, holders) in enumerate(forward(prof)) if e["cat"] == "kernel"
           and holders & {"aten::bmm", "aten::mm"}]
    return [e for e in events[idx[0] + 1:idx[-1]] if e["cat"] == "kernel"] if len(idx) >= 2 else []


def test_compiled_fusion_both_sides(profiles):
    for prof in (profiles["naive_compiled"], profiles["naive"]):
        between = between_gemms(prof)
        fused = len(between) == 1 and between[0]["name"].startswith("triton_") and all(
            f"_{op}_" in between[0]["name"] or between[0]["name"].startswith(f"triton_per_fused_{op}")
            for op in ("mul", "masked_fill", "_softmax"))
        v = by_claim(compiled.verdict_list(prof, profiles["naive"]), "scale, mask and softmax fuse")
        assert v.holds == fused
        assert v.evidence.startswith(f"{len(between)} kernel{'' if len(between) == 1 else 's'} between the gemms")
    assert by_claim(compiled.verdict_list(profiles["naive_compiled"], profiles["naive"]), "scale, mask").holds


def test_compiled_gemms_are_naives_both_sides(profiles):
    c = profiles["naive_compiled"]
    for other in ("naive", "sdpa_math"):
        names = [e["name"] for e in gemms(c)]
        expected = names == [e["name"] for e in gemms(profiles[other])] and names and not any(
            n.startswith("triton_") for n in names)
        v = by_claim(compiled.verdict_list(c, profiles[other]), "the matmuls stay cuBLAS gemms")
        assert v.holds == bool(expected)
    assert by_claim(compiled.verdict_list(c, profiles["naive"]), "the matmuls").holds != \
        by_claim(compiled.verdict_list(c, profiles["sdpa_math"]), "the matmuls").holds


def test_compiled_memcpy_gone_both_sides(profiles):
    count = lambda p: sum(e["cat"] == "gpu_memcpy" for e, _ in forward(p))  # noqa: E731
    masking = lambda p: [o for o in ops_of(p) if o.startswith("aten::masked_fill")]  # noqa: E731
    seen = set()
    for a, b in ((profiles["naive_compiled"], profiles["naive"]), (profiles["naive"], profiles["naive"]),
                 (profiles["naive_compiled"], profiles["naive_compiled"])):
        expected = count(a) == 0 and count(b) > 0 and not masking(a)
        v = by_claim(compiled.verdict_list(a, b), "the Memcpy is gone")
        assert v.holds == expected
        seen.add(expected)
    assert seen == {True, False}


def test_compiled_grid_is_one_block_per_row_both_sides(profiles):
    c = profiles["naive_compiled"]
    shape = c.provenance.shape
    rows = shape["batch"] * shape["heads"] * shape["seq"]
    (fused,) = between_gemms(c)
    grid = fused["args"]["grid"]
    blocks = grid[0] * grid[1] * grid[2]
    v = by_claim(compiled.verdict_list(c, profiles["naive"]), "the fused kernel gives each row")
    assert v.holds == (blocks == rows) and f"= {blocks} blocks" in v.evidence
    halved = with_kernel_args(c, "triton_per_fused", grid=[grid[0] // 2, grid[1], grid[2]])
    other = by_claim(compiled.verdict_list(halved, profiles["naive"]), "the fused kernel gives each row")
    assert other.holds == ((grid[0] // 2) * grid[1] * grid[2] == rows) and other.holds != v.holds


@pytest.mark.parametrize("factor", [0.5, 0.99, 1.01, 2.0])
def test_compiled_faster_than_naive(profiles, factor):
    n = profiles["naive"]
    c = profiles["naive_compiled"]
    c = scaled_gpu(c, factor * gpu_last(n) / gpu_last(c))
    v = by_claim(compiled.verdict_list(c, n), "faster on the GPU")
    assert v.holds == (gpu_last(c) < gpu_last(n)) == (factor < 1)


# --- flex against sdpa_flash, flex_sliding against flex ---------------------------------------------

def test_flex_one_template_kernel_both_sides(profiles):
    for stage in ("flex", "sdpa_flash", "naive_compiled"):
        events = [e for e, _ in forward(profiles[stage])]
        expected = len(events) == 1 and re.fullmatch(r"triton_tem_fused_\w*flex_attention\w*", events[0]["name"])
        v = by_claim(flex.verdict_list(profiles[stage], profiles["sdpa_flash"]), "one Triton template kernel")
        assert v.holds == bool(expected), stage
    assert by_claim(flex.verdict_list(profiles["flex"], profiles["sdpa_flash"]), "one Triton").holds


def test_flex_mask_built_outside_the_forward_both_sides(profiles):
    f = profiles["flex"]
    # the other side: an aten::tril inside the last step's attn_fwd annotation (the forward shown)
    attn = max((e for e in f.events if e.get("name") == "attn_fwd" and e.get("ph") == "X"), key=lambda e: e["ts"])
    tril = {"ph": "X", "cat": "cpu_op", "name": "aten::tril", "pid": attn["pid"], "tid": attn["tid"],
            "ts": attn["ts"] + 1, "dur": 1, "args": {}}
    built = edited(f)
    built.events.append(tril)
    for prof in (f, built):
        mask_ops = [o for o in ops_of(prof) if any(o.startswith(m) or m in o for m in flex.MASK_OPS)]
        expected = not mask_ops and len(forward(prof)) == 1
        v = by_claim(flex.verdict_list(prof, profiles["sdpa_flash"]), "the block mask is built once")
        assert v.holds == expected
    assert by_claim(flex.verdict_list(f, profiles["sdpa_flash"]), "the block mask").holds != \
        by_claim(flex.verdict_list(built, profiles["sdpa_flash"]), "the block mask").holds


def test_flex_grid_is_tiles_batch_heads_both_sides(profiles):
    f = profiles["flex"]
    (k,) = kernels(f)
    grid = k["args"]["grid"]
    shape = f.provenance.shape
    v = by_claim(flex.verdict_list(f, profiles["sdpa_flash"]), "one block of the grid per tile")
    # batch and heads are read from the recording; the tile count from the kernel's BLOCK_M
    assert v.holds == (grid[1:] == [shape["batch"], shape["heads"]] and shape["seq"] % grid[0] == 0)
    swapped = with_kernel_args(f, "triton_tem", grid=[grid[0], grid[2], grid[1]])
    other = by_claim(flex.verdict_list(swapped, profiles["sdpa_flash"]), "one block of the grid per tile")
    assert other.holds == (shape["batch"] == shape["heads"]) and f"grid {tuple([grid[0], grid[2], grid[1]])}" in other.evidence


@pytest.mark.parametrize("factor", [1.0, 1.08, 0.92, 1.15, 0.85])
def test_flex_as_fast_as_flash(profiles, factor):
    a = profiles["sdpa_flash"]
    f = scaled_gpu(profiles["flex"], factor * gpu_last(a) / gpu_last(profiles["flex"]))
    v = by_claim(flex.verdict_list(f, a), "as fast as flash")
    assert v.holds == within_ten_percent(gpu_last(f), gpu_last(a)) == (abs(factor - 1) < 0.1)


@pytest.mark.parametrize("factor", [1.0, 1.05, 1.09, 1.2, 3.0])
def test_flex_a_call_takes_as_long_as_its_kernel(profiles, factor):
    # a caller's loop edited in (7 repeats within ±1% of factor × the GPU time; no busy time beside
    # it, so the trace's GPU time is the busy time): the rule in plain code, each side and the spread
    f = profiles["flex"]
    loop = loop_around(factor * gpu_last(f))
    timed = edited(f, provenance={"loop_us": loop, "loop_busy_us": None})
    v = by_claim(flex.verdict_list(timed, profiles["sdpa_flash"]), "a call takes as long as its kernel")
    line = 1.1 * gpu_last(f)
    even = min(loop) <= line <= max(loop)
    assert v.holds == (not even and median(loop) <= line) == (factor < 1.08)
    if even:
        assert v.difference.startswith("about even") and f"{line:.1f} µs" in v.difference
    elif not v.holds:
        assert f"the GPU waits {median(loop) - gpu_last(f):.0f} µs per call" in v.difference
    # no caller's timer: no verdict on the call at all
    assert not [x for x in flex.verdict_list(edited(f, provenance={"loop_us": None}), profiles["sdpa_flash"])
                if x.claim.startswith("a call takes as long")]


def test_sliding_same_template_and_launch_both_sides(profiles):
    s, c = profiles["flex_sliding"], profiles["flex"]
    launch = lambda p: [(k["args"]["grid"], k["args"]["block"], k["args"]["registers per thread"],  # noqa: E731
                         k["args"]["shared memory"]) for k in kernels(p)]
    more = with_kernel_args(s, "triton_tem", **{"registers per thread": launch(s)[0][2] + 8})
    for prof in (s, more):
        v = by_claim(flex.sliding_verdict_list(prof, c), "the same Triton template")
        assert v.holds == (launch(prof) == launch(c))
    assert by_claim(flex.sliding_verdict_list(s, c), "the same Triton").holds != \
        by_claim(flex.sliding_verdict_list(more, c), "the same Triton").holds


@pytest.mark.parametrize("factor", [0.5, 1.5])
def test_sliding_cost_follows_the_blocks(profiles, factor):
    s, c = profiles["flex_sliding"], profiles["flex"]
    fewer_blocks = (flex.block_states(s.stage, s.shape)[0] > 0).sum() < (flex.block_states(c.stage, c.shape)[0] > 0).sum()
    assert fewer_blocks  # a sliding window visits fewer blocks than causal
    timed = scaled_gpu(s, factor * gpu_last(c) / gpu_last(s))
    v = by_claim(flex.sliding_verdict_list(timed, c), "its cost follows the blocks")
    assert v.holds == (gpu_last(timed) < gpu_last(c)) == (factor < 1)
