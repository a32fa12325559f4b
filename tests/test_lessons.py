"""Tables, guesses and claims, against the raw trace events of the replay set."""
import re

import pytest

from helpers import guesses, profile_stage, tables, claims
from helpers.pages.guesses import Guess
from conftest import raw_document

STAGES = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "hub_flash", "sdpa_cudnn", "sdpa_auto",
          "naive_compiled", "flex", "flex_sliding"]


@pytest.fixture(scope="module")
def profiles():
    return {s: profile_stage(s, mode="replay", quiet=True) for s in STAGES}


def raw_forward(prof):
    """The last step's GPU events, from the raw JSON: (name, cat, launching op names)."""
    events = raw_document(prof.trace_path)["traceEvents"]
    steps = [e for e in events if re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")) and e["ph"] == "X"]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and e.get("ph") == "X" and lo <= e["ts"] <= hi}
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    out = []
    for e in sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                     and e["args"].get("correlation") in calls), key=lambda e: e["ts"]):
        call = calls[e["args"]["correlation"]]
        holders = {o["name"] for o in ops if o["ts"] <= call["ts"] and o["ts"] + o["dur"] >= call["ts"] + call["dur"]}
        out.append((e["name"], e["cat"], holders))
    return out


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


def test_at_a_glance_labels_the_a100_columns(profiles):
    table = tables.at_a_glance(profiles, claims.revealed(profiles))
    article = [c for c in table.columns if "A100" in c]
    assert article and all(c.startswith("the article's A100") for c in article)
    assert list(table["GPU events per forward"]) == [len(raw_forward(p)) for p in profiles.values()]
