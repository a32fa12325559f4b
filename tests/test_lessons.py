"""Tables, guesses and claims, against the raw trace events of the replay set."""
import re
import statistics

import pytest

from helpers import guesses, profile_stage, tables, claims
from helpers.views.guesses import Guess
from conftest import TRACES, raw_document, raw_last_step

STAGES = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "hub_flash", "sdpa_cudnn", "sdpa_auto",
          "naive_compiled", "flex", "flex_sliding"]


@pytest.fixture(scope="module")
def profiles():
    return {s: profile_stage(s, mode="replay", quiet=True) for s in STAGES}


def raw_forward(prof):
    """The last step's GPU events, from the raw JSON: (name, cat, launching op names)."""
    return [(e["name"], e["cat"], holders) for e, holders in raw_last_step(prof.trace_path)[0]]


@pytest.mark.parametrize("stage", STAGES)
def test_kernel_table_lists_the_forward_in_launch_order(profiles, stage):
    table = tables.kernel_table(profiles[stage])
    assert list(table["kernel"]) == [name for name, _, _ in raw_forward(profiles[stage])]
    assert table["kind"].notna().all() and list(table.index) == list(range(1, len(table) + 1))


def test_a_guess_equal_to_the_trace_matches_everywhere(profiles):
    prof = profiles["naive"]
    exact = Guess(tuple(prof.kernels()["kind"]))
    assert guesses.mismatches(exact, prof) == []


def test_the_naive_guess_misses_what_the_trace_shows(profiles):
    prof = profiles["naive"]
    found = guesses.mismatches(guesses.default_guess("naive"), prof)
    raw = raw_forward(prof)
    memcpys_in_masked_fill = [h for _, cat, h in raw if cat == "gpu_memcpy" and "aten::masked_fill" in h]
    assert bool(memcpys_in_masked_fill) == any("memcpy you did not guess, launched by aten::masked_fill" in m for m in found)
    memsets = [1 for _, cat, _ in raw if cat == "gpu_memset"]
    assert bool(memsets) == any("a memset you did not guess" in m for m in found)
    assert any("GPU events" in row for row in guesses.compare(guesses.default_guess("naive"), prof)["item"])


def test_speed_guess_is_judged_from_gpu_time(profiles):
    slow = Guess(("attention",), faster_than_previous=False)
    table = guesses.compare(slow, profiles["sdpa_flash"], profiles["sdpa_math"])
    faster = profiles["sdpa_flash"].summary()["gpu_time_us"] < profiles["sdpa_math"].summary()["gpu_time_us"]
    assert table["verdict"].iloc[-1].startswith("mismatch" if faster else "match")


def test_unknown_kind_in_a_guess_is_refused():
    with pytest.raises(ValueError, match="Unknown kernel kind"):
        Guess(("gemmm",))


def test_hidden_memcpy_is_the_size_of_the_scores(profiles):
    prof = profiles["naive"]
    verdict = claims.hidden_memcpy(prof)
    raw = raw_document(prof.trace_path)["traceEvents"]
    memcpy_bytes = {e["args"]["bytes"] for e in raw if e.get("cat") == "gpu_memcpy"}
    s = prof.provenance.shape
    assert verdict.holds == bool(memcpy_bytes)
    assert memcpy_bytes == {s["batch"] * s["heads"] * s["seq"] ** 2 * 2}  # bf16 scores


def test_inplace_drops_the_memcpy(profiles):
    raw = raw_document(profiles["inplace"].trace_path)["traceEvents"]
    has_memcpy = any(e.get("cat") == "gpu_memcpy" for e in raw)
    assert claims.memcpy_gone(profiles["inplace"], profiles["naive"]).holds == (not has_memcpy)


def test_every_claim_has_a_verdict(profiles):
    for stage in claims.CHECKS:
        table = claims.check(stage, profiles)
        assert len(table) and table["verdict"].str.match(r"^(holds|differs: .+)$").all()


def test_flash_moves_only_q_k_v_and_out(profiles):
    traffic = claims.hbm_traffic({k: profiles[k] for k in ("naive", "sdpa_flash")})
    s = profiles["sdpa_flash"].shape
    assert traffic.loc["sdpa_flash", "score bytes"] == 0
    assert traffic.loc["sdpa_flash", "q, k, v, out bytes"] == 4 * s.batch * s.heads * s.seq * s.head_dim * 2
    assert traffic.loc["naive", "score bytes"] > 10 * traffic.loc["naive", "q, k, v, out bytes"]


def test_fully_masked_row_shows_the_nan():
    frame = claims.fully_masked_row()
    assert frame["torch.softmax"].isna().all() and (frame["torch._safe_softmax"] == 0).all()


def test_timer_agreement_ratio(profiles):
    table = tables.timer_agreement(profiles)
    for stage, prof in profiles.items():
        s = prof.summary()
        assert table.loc[stage, "do_bench / profiler"] == pytest.approx(s["do_bench_us"] / s["gpu_time_us"], abs=1e-3)


def raw_per_step(prof):
    """Per profiler step, from the raw JSON: GPU time (the events whose launch, tied by
    correlation id, lies in the step) and CPU time (the step's attn_fwd annotation), in µs."""
    events = raw_document(prof.trace_path)["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X"]
    steps = [e for e in complete if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    rows = []
    for step in steps:
        lo, hi = step["ts"], step["ts"] + step["dur"]
        calls = {e["args"]["correlation"] for e in complete if e.get("cat") in ("cuda_runtime", "cuda_driver")
                 and lo <= e["ts"] <= hi and "correlation" in e.get("args", {})}
        gpu = sum(e["dur"] for e in complete if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                  and e["args"].get("correlation") in calls)
        cpu = sum(e["dur"] for e in complete if e.get("name") == "attn_fwd" and e.get("cat") == "user_annotation"
                  and lo <= e["ts"] <= hi)
        rows.append((gpu, cpu))
    return rows


def raw_median(prof, which: int) -> float:
    return statistics.median(r[which] for r in raw_per_step(prof))


def test_math_against_naive_is_judged_from_the_gpu_time_of_the_raw_events(profiles):
    ratio = raw_median(profiles["sdpa_math"], 0) / raw_median(profiles["naive"], 0)
    verdict = claims.math_slower_than_naive(profiles["sdpa_math"], profiles["naive"])
    assert verdict.holds == (ratio > 1)
    assert f"{ratio:.2f}×" in verdict.evidence
    assert verdict in claims.verdicts("sdpa_math", profiles)


def test_cudnn_cpu_time_is_judged_from_the_attn_fwd_annotations(profiles):
    cpu = {s: raw_median(profiles[s], 1) for s in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient")}
    verdict = claims.cudnn_cpu_heavier(profiles["sdpa_cudnn"], [profiles["sdpa_flash"], profiles["sdpa_efficient"]])
    assert verdict.holds == (cpu["sdpa_cudnn"] > max(cpu["sdpa_flash"], cpu["sdpa_efficient"]))
    for stage, us in cpu.items():
        assert f"{stage} {us:.1f} µs" in verdict.evidence
    # the article's own figures only in the column labelled as the article's
    table = claims.check("sdpa_cudnn", profiles)
    article = [c for c in table.columns if "A100" in c]
    assert article == ["the article's A100"]
    assert all("A100" not in text for text in table["this trace"])


def test_inplace_memory_saving_comes_from_the_recorded_provenance(profiles):
    def forward_bytes(stage):
        p = raw_document(profiles[stage].trace_path)["provenance"]
        return p["peak_memory_bytes"] - p["memory_before_bytes"]
    saved = forward_bytes("naive") - forward_bytes("inplace")
    verdict = claims.inplace_saves_memory(profiles["inplace"], profiles["naive"])
    assert verdict is not None and verdict.holds == (saved > 0)
    assert f"{saved / 2**20:,.0f} MiB saved" in verdict.evidence
    assert f"{forward_bytes('inplace') / 2**20:,.0f} MiB" in verdict.evidence
    assert verdict in claims.verdicts("inplace", profiles)


def test_the_closing_table_has_a_row_per_stage_and_its_lesson(profiles):
    revealed = claims.revealed(profiles)
    table = tables.at_a_glance(profiles, revealed)
    assert list(table.index) == list(profiles)
    assert list(table["GPU events"]) == [len(raw_forward(p)) for p in profiles.values()]
    for stage, row in table.iterrows():
        verdicts = claims.verdicts(stage, profiles) if stage in revealed else []
        assert row["every verdict"] == verdicts
        differing = [v for v in verdicts if not v.holds]
        taught = (differing or verdicts or [None])[0]
        if taught is None:
            assert row["what the trace revealed"] == "no claim of the article to check"
        else:
            assert row["what the trace revealed"] == f"{taught.claim} — {taught.verdict}"
    article = [c for c in table.columns if "A100" in c]
    assert article and all(c.startswith("the article's A100") for c in article)


def test_the_closing_table_covers_every_recorded_stage():
    import helpers
    stages = tables.closing_stages(mode="replay")
    # the replay set's files at the default shape, read from the folder itself
    key = helpers.DEFAULT_SHAPE.key
    recorded = {p.name.split("__")[0] for p in TRACES if p.parent.name == "h200" and p.name.endswith(f"__{key}.json.gz")}
    assert stages == [s for s in helpers.STAGES if s in recorded]
    assert set(STAGES) <= set(stages)  # every stage this module replays has its row


def test_the_kernel_table_leads_with_kernel_launch_and_op(profiles):
    table = tables.kernel_table(profiles["naive"])
    assert list(table.columns[:3]) == ["kernel", "launched by", "aten op"]
    raw = raw_forward(profiles["naive"])
    # the Memcpy's row names the op the raw trace puts around its launch
    for (name, cat, holders), (_, row) in zip(raw, table.iterrows()):
        assert row["kernel"] == name
        assert row["aten op"].split(" → ")[0] in holders and row["aten op"].split(" → ")[-1] in holders


def test_the_decoded_table_keeps_each_name_whole(profiles):
    fields = tables.decoded_fields(profiles["sdpa_flash"])
    names = [n for n, _, _ in raw_forward(profiles["sdpa_flash"]) if n]
    assert list(fields.xs("name", level="field")["value"]) == names
