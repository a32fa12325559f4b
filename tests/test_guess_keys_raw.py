"""Every guess's answer key in the built book, checked against the raw recordings.

Each key is read from the built page (what the reader's browser judges against), and its answer
is recomputed here in plain code from the raw recordings: the chrome traces' events (kernel names,
launch parameters, durations), the training memory ladder (memory.json) and the occupancy limits
of the GPU that recorded them. Nothing here imports the helpers that compute the keys (chapters,
views, core): the kernel kinds come from a plain name classifier written here, the occupancy from
the CUDA occupancy rules written out here. Where a key is not recomputed, the test says why.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest

from conftest import BOOK_GROUP, ROOT, raw_document, raw_last_step, raw_per_step

pytestmark = BOOK_GROUP

TRACES = ROOT / "notebooks" / "traces" / "h200"
SHAPE = "b8_h16_s1024_d64_bfloat16_causal"
GIB = 2 ** 30

# H200 (sm_90): the per-SM limits (CUDA C++ Programming Guide, compute capability 9.0); the register
# file is split among the SM's four sub-partitions, each warp living in one
SM = {"warps": 64, "blocks": 32, "registers": 65536, "register_unit": 256, "smem": 228 * 1024,
      "smem_reserved": 1024, "warp_size": 32, "subpartitions": 4}

# why a key is not recomputed here
NOT_RECOMPUTED = {
    "hbm-ratio": "Nsight Compute's DRAM bytes: the independent layer of ncu's CSV covers it (issue 28, helper indep)",
    "cudnn-achieved": "ncu's achieved occupancy: the independent layer of ncu's CSV covers it",
    "roof-best": "ncu's FLOP and byte counters: the independent layer of ncu's CSV covers it",
    "roof-pct": "ncu's FLOP and byte counters: the independent layer of ncu's CSV covers it",
    "roof-memory": "ncu's FLOP and byte counters: the independent layer of ncu's CSV covers it",
    "roof-seq": "ncu's sweep across seq: the independent layer of ncu's CSV covers it",
}


def classify(name: str) -> str:
    """A GPU event's kind from its name, with plain rules (not helpers.core.names)."""
    n = name.lower()
    rules = [("memset", r"^memset"), ("memcpy", r"^memcpy"), ("attention", r"flash_fwd|fmha|sdpa|flex_attention"),
             ("fused", r"^triton_.*fused"), ("gemm", r"nvjet|gemm"), ("softmax", r"softmax"),
             ("masked_fill", r"masked_fill"), ("copy", r"copy_kernel"), ("fill", r"fillfunctor"),
             ("mask", r"triu_tril"), ("reduce", r"reduce_kernel"), ("elementwise", r"elementwise")]
    return next((kind for kind, pattern in rules if re.search(pattern, n)), "unknown")


def book_words(name: str, kind: str) -> set[str]:
    """The words the book's prose uses for a kernel, beyond its kind."""
    n, words = name.lower(), set()
    if kind in ("attention", "fused"):
        words.add("fused")
    if n.startswith("triton_"):
        words.add("triton")
    for word, pattern in (("flash", r"flash"), ("cudnn", r"^cudnn"), ("cutlass", r"^fmha_cutlass"), ("cublas", r"nvjet|xmma")):
        if re.search(pattern, n):
            words.add(word)
    return words


@pytest.fixture(scope="module")
def keys(book_build) -> dict[str, tuple[str, dict]]:
    out = {}
    for page in sorted((book_build / "html" / "notebooks").glob("*.html")):
        for text in re.findall(r'<script type="application/json" class="apq-data">(.*?)</script>', page.read_text(), re.S):
            key = json.loads(text)
            if "type" in key:
                assert key["id"] not in out, f"two questions share the id {key['id']}"
                out[key["id"]] = (page.stem, key)
    assert len(out) >= 25, sorted(out)
    return out


def trace_of(stage: str) -> Path:
    path = TRACES / f"{stage}__{SHAPE}.json.gz"
    assert path.exists(), path
    return path


def test_every_key_is_checked_or_says_why(keys):
    checked = re.compile(r".+-kernels$|.+-speed$|^flash-warps$|^granularity$|^cudnn-limit$|^low-occupancy$|^cupti-zero$"
                         r"|^tr-(flash-kernels|naive-held|first-oom)$|.+-events$|.+-bound$|^hopper-")
    unchecked = [k for k in keys if not checked.match(k) and k not in NOT_RECOMPUTED]
    assert not unchecked, f"keys with no independent check and no reason: {unchecked}"


def test_each_stages_kernels_key_is_the_traces_forward(keys):
    asked = [(qid, key) for qid, (_, key) in keys.items() if key["type"] == "kernels"]
    assert len(asked) >= 9, [q for q, _ in asked]
    for qid, key in asked:
        stage = qid.removesuffix("-kernels")
        events, _, _ = raw_last_step(trace_of(stage))
        names = [e["name"] for e, _ in events]
        assert [a["kind"] for a in key["answer"]] == [classify(n) for n in names], qid
        for a, n in zip(key["answer"], names):
            assert a["kind"] in a["words"], (qid, a)
            assert book_words(n, a["kind"]) <= set(a["words"]), (qid, n, a["words"])
        assert key["answerText"].endswith(f"({len(names)} GPU event{'' if len(names) == 1 else 's'})"), qid


def test_each_speed_key_compares_the_two_traces_gpu_time(keys):
    asked = [(qid, key) for qid, (_, key) in keys.items() if qid.endswith("-speed")]
    assert len(asked) >= 8, [q for q, _ in asked]
    for qid, key in asked:
        stage = qid.removesuffix("-speed")
        previous = re.search(r"(?:than|as) (\S+)\?$", key["question"]).group(1)
        now = raw_per_step(raw_document(trace_of(stage))["traceEvents"])[-1][0]
        before = raw_per_step(raw_document(trace_of(previous))["traceEvents"])[-1][0]
        # the glossary's "about the same": within 10 % of the stage before, else faster or slower
        expected = ("about the same (within 10%)" if abs(now / before - 1) <= 0.10
                    else "faster" if now < before else "slower")
        assert key["answer"] == expected, (qid, key["answer"], now, before)
        # the answer's two numbers, in µs (the chrome trace's own unit), in their order
        shown = [float(x.replace(",", "")) for x in re.findall(r"([\d,]+\.\d) µs", key["answerText"])]
        assert shown == pytest.approx([now, before], abs=0.051), (qid, key["answerText"], now, before)


def warps_by_registers(registers: int) -> int:
    """Warps whose registers fit one SM: per warp rounded up to 256 registers, per sub-partition."""
    per_warp = math.ceil(registers * SM["warp_size"] / SM["register_unit"]) * SM["register_unit"]
    return (SM["registers"] // SM["subpartitions"]) // per_warp * SM["subpartitions"]


def active_warps(threads: int, registers: int, smem: int) -> int:
    """Resident warps per SM from the four limits."""
    warps_per_block = math.ceil(threads / SM["warp_size"])
    by_registers = warps_by_registers(registers) // warps_per_block
    by_smem = SM["smem"] // (smem + SM["smem_reserved"]) if smem else SM["blocks"]
    blocks = min(SM["warps"] // warps_per_block, by_registers, by_smem, SM["blocks"])
    return blocks * warps_per_block


def test_the_flash_kernels_warps_come_from_its_launch(keys):
    _, key = keys["flash-warps"]
    events, _, _ = raw_last_step(trace_of("sdpa_flash"))
    (flash,) = [e for e, _ in events if "flash_fwd" in e["name"]]
    a = flash["args"]
    threads = a["block"][0] * a["block"][1] * a["block"][2]
    assert key["answer"] == active_warps(threads, a["registers per thread"], a["shared memory"])
    assert key["unit"].strip() == "warps"
    # the question's figures are the launch's
    assert f"{threads} threads × {a['registers per thread']} registers" in key["question"]
    assert f"{a['shared memory']:,} B of shared memory" in key["question"]


def test_the_granularity_key_rounds_registers_per_warp_up_to_256(keys):
    _, key = keys["granularity"]
    regs = int(re.search(r"With (\d+) registers per thread", key["question"]).group(1))
    assert key["answer"] == min(SM["warps"], warps_by_registers(regs))
    exact = SM["registers"] / (regs * 32)
    assert key["answer"] < exact or exact.is_integer()  # the lesson: rounding costs warps


def memory_ladder() -> list[dict]:
    return json.loads((TRACES / "training" / "memory.json").read_text())["ladder"]


def test_the_first_oom_key_accepts_every_stage_that_ran_out_together(keys):
    page, key = keys["tr-first-oom"]
    first_oom = {}
    for row in memory_ladder():
        if row["status"] == "oom":
            first_oom[row["stage"]] = min(row["seq"], first_oom.get(row["stage"], math.inf))
    seq = min(first_oom.values())
    tied = sorted(s for s, q in first_oom.items() if q == seq)
    assert len(tied) >= 1
    assert sorted(key["accepted"]) == tied, (key["accepted"], tied)
    assert key["answer"] in tied
    for stage in tied:
        assert stage in key["answerText"], (stage, key["answerText"])
    assert f"{seq:,}" in key["answerText"]


def test_the_held_memory_key_is_the_ladders_bytes_in_gib(keys):
    _, key = keys["tr-naive-held"]
    (row,) = [r for r in memory_ladder() if r["stage"] == "naive" and r["seq"] == 4096 and r["status"] == "ok"]
    assert key["unit"].strip() == "GiB"
    assert key["answer"] == pytest.approx(row["held_bytes"] / GIB, abs=0.005)


def test_the_flash_backward_kernel_count_is_the_traces(keys):
    _, key = keys["tr-flash-kernels"]
    events, (lo, hi), everything = raw_last_step(TRACES / "training" / f"sdpa_flash__{SHAPE}.json.gz")
    (bwd,) = [e for e in everything if e.get("name") == "attn_bwd" and e.get("cat") == "user_annotation"
              and e.get("ph") == "X" and lo <= e["ts"] <= hi]
    calls = {e["args"]["correlation"]: e for e in everything if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and e.get("ph") == "X" and "correlation" in e.get("args", {})}
    count = 0
    for e, _ in events:
        call = calls[e["args"]["correlation"]]
        if e["cat"] == "kernel" and bwd["ts"] <= call["ts"] <= bwd["ts"] + bwd["dur"]:
            count += 1
    assert key["answer"] == count
    assert key["unit"].strip() == "kernels"


def test_your_models_event_counts_are_the_traces(keys):
    asked = [(qid, key) for qid, (page, key) in keys.items() if qid.endswith("-events") and page.startswith("10_")]
    assert asked, "no event-count question on chapter 10"
    for qid, key in asked:
        name = qid.removesuffix("-events")
        path = TRACES / "own_model" / f"{name}.json.gz"
        assert path.exists(), (qid, path)
        events, _, _ = raw_last_step(path)
        assert key["answer"] == len(events), qid


def limits(threads: int, registers: int, smem: int) -> dict[str, int]:
    """Blocks per SM each resource allows."""
    warps_per_block = math.ceil(threads / SM["warp_size"])
    return {"warp slots": SM["warps"] // warps_per_block,
            "registers": warps_by_registers(registers) // warps_per_block,
            "shared memory": SM["smem"] // (smem + SM["smem_reserved"]) if smem else SM["blocks"],
            "block slots": SM["blocks"]}


def launch(e: dict) -> tuple[int, int, int]:
    a = e["args"]
    return a["block"][0] * a["block"][1] * a["block"][2], a["registers per thread"], a["shared memory"]


def test_the_cudnn_limit_is_the_resource_that_allows_fewest_blocks(keys):
    _, key = keys["cudnn-limit"]
    events, _, _ = raw_last_step(trace_of("sdpa_cudnn"))
    (cudnn,) = [e for e, _ in events if e["name"].startswith("cudnn")]
    threads, registers, smem = launch(cudnn)
    allowed = limits(threads, registers, smem)
    fewest = [name for name, n in allowed.items() if n == min(allowed.values())]
    assert key["answer"] == " + ".join(fewest), (key["answer"], allowed)
    assert f"{threads} threads × {registers} registers, {smem:,} B" in key["question"]


def test_the_low_occupancy_key_is_the_faster_of_the_two_forwards(keys):
    _, key = keys["low-occupancy"]
    gpu = {s: raw_per_step(raw_document(trace_of(s))["traceEvents"])[-1][0] for s in ("naive", "sdpa_flash")}
    faster = min(gpu, key=gpu.get)
    assert key["answer"].split(" ")[0] == faster
    # the occupancies the question states: resident warps over the SM's 64, from each launch
    occ = {}
    for stage in gpu:
        events, _, _ = raw_last_step(trace_of(stage))
        occ[stage] = max(100 * active_warps(*launch(e)) / SM["warps"] for e, _ in events
                         if e["cat"] == "kernel" and "block" in e["args"])
    assert f"up to {occ['naive']:g}% occupancy" in key["question"], (occ, key["question"])
    assert f"sdpa_flash's at {occ['sdpa_flash']:g}%" in key["question"], (occ, key["question"])


def test_cuptis_zero_goes_with_more_than_48_kib_of_shared_memory(keys):
    _, key = keys["cupti-zero"]
    kernels = []
    for path in sorted(TRACES.glob(f"*__{SHAPE}.json.gz")):
        events, _, _ = raw_last_step(path)
        kernels += [(e, path.name) for e, _ in events if e["cat"] == "kernel"]
    big = [(e, where) for e, where in kernels if e["args"]["shared memory"] > 48 * 1024]
    assert big and all(e["args"]["est. achieved occupancy %"] == 0 for e, _ in big)
    # and not the launch call: a kernel of more than 48 KiB launched another way reads 0 too
    assert any(e["launched_by"] != "cuLaunchKernelEx" for e, _ in big)
    assert "48 KiB of shared memory" in key["answer"]


def gpu_busy_and_span(events: list[dict]) -> tuple[float, float]:
    """The union of the GPU events' intervals, and first start to last end, in µs."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events)
    busy, end = 0.0, -math.inf
    for lo, hi in spans:
        if hi > end:
            busy += hi - max(lo, end)
            end = hi
    return busy, max(h for _, h in spans) - spans[0][0]


def test_your_models_bound_keys_state_the_traces_busy_time(keys):
    asked = [(qid, key) for qid, (page, key) in keys.items() if qid.endswith("-bound") and page.startswith("10_")]
    assert asked
    for qid, key in asked:
        events, _, _ = raw_last_step(TRACES / "own_model" / f"{qid.removesuffix('-bound')}.json.gz")
        busy, span = gpu_busy_and_span([e for e, _ in events])
        m = re.search(r"busy ([\d,.]+) µs of ([\d,.]+) µs \((\d+)%", key["answerText"])
        shown_busy, shown_span, pct = (float(m.group(i).replace(",", "")) for i in (1, 2, 3))
        assert shown_busy == pytest.approx(busy, abs=0.051) and shown_span == pytest.approx(span, abs=0.051), (qid, busy, span)
        assert pct == round(100 * busy / span), qid
        wait = re.search(r"waits ([\d,.]+) µs \((\d+)%\) for the host", key["answerText"])
        if wait:
            w = float(wait.group(1).replace(",", ""))
            # the wait is part of the idle time; its share of the span, give or take the rounding of µs
            assert w <= span - busy + 0.1 and abs(int(wait.group(2)) - 100 * w / span) <= 1, (qid, w, span, busy)
        # the verdict follows the numbers: "CPU" where the GPU idled a tenth of the span or more
        assert key["answer"] in ("CPU", "GPU")
        assert busy / span < 0.9 if key["answer"] == "CPU" else busy / span >= 0.5, (qid, key["answer"], busy / span)


def hopper_paths() -> dict[str, dict]:
    """Chapter 7b's main kernel of each forward, in plain code: from the set's hopper/ recording
    where it has one (tests/independent/test_hopper_raw.py reads it), else from its ncu tables as
    the page then reads them: warpgroup MMAs from the gmma counter, warp-level ones from the hmma
    counter less it where the pipe did warp-level MMA operations; the kernel with the most of
    both, else the longest."""
    from independent.test_hopper_raw import expected, loads_of, main_of, path_of
    folder = TRACES / "hopper"
    if (folder / "provenance.json").exists():
        want = expected(folder)
        stages = {v["stage"] for v in want.values() if v["direction"] == "forward"}
        return {s: {"path": path_of(main_of(want, "forward", s)), "loads": loads_of(main_of(want, "forward", s)),
                    "consumer": main_of(want, "forward", s)["consumer"]} for s in stages}
    out = {}
    num = lambda v: float(str(v).replace(",", "") or 0)  # noqa: E731
    for path in sorted((TRACES / "ncu").glob(f"*__{SHAPE}.csv")):
        rows = list(csv.reader(io.StringIO(path.read_text())))
        start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
        kernels = []
        for r in rows[start + 2:]:
            d = dict(zip(rows[start], r))
            gmma, hmma = num(d["sm__inst_executed_pipe_tensor_op_gmma.sum"]), num(d["sm__inst_executed_pipe_tensor_op_hmma.sum"])
            ops = sum(num(v) for k, v in d.items() if k.startswith("sm__ops_path_tensor_op_hmma_src_")
                      and k.endswith(".sum") and "sparsity" not in k)
            kernels.append((gmma, hmma - gmma if ops else 0.0, num(d["gpu__time_duration.sum"])))
        best = max(kernels, key=lambda k: k[0] + k[1])
        if best[0] + best[1] <= 0:
            best = max(kernels, key=lambda k: k[2])
        out[path.name.split("__")[0]] = {"path": "wgmma" if best[0] > 0 else "mma.sync" if best[1] > 0 else "none"}
    return out


def test_the_hopper_keys_are_the_recordings_main_kernels(keys):
    asked = {qid: key for qid, (_, key) in keys.items() if qid.startswith("hopper-")}
    assert {"hopper-flash-path", "hopper-wgmma-count", "hopper-math-path", "hopper-flex-path"} <= set(asked)
    paths = hopper_paths()
    first = {"wgmma": "wgmma", "mma.sync": "mma.sync", "none": "neither"}
    for qid, stage in (("hopper-flash-path", "sdpa_flash"), ("hopper-math-path", "sdpa_math"), ("hopper-flex-path", "flex")):
        assert asked[qid]["answer"].startswith(first[paths[stage]["path"]]), (qid, asked[qid]["answer"], paths[stage])
    named = re.search(r"these \d+ stages \((.+?)\), how many", asked["hopper-wgmma-count"]["question"]).group(1)
    stages = re.split(r", | and ", named)
    assert asked["hopper-wgmma-count"]["answer"] == sum(paths[s]["path"] == "wgmma" for s in stages)
    if "hopper-cudnn-loads" in asked:
        assert asked["hopper-cudnn-loads"]["answer"].startswith(paths["sdpa_cudnn"]["loads"])
    if "hopper-consumer-registers" in asked:
        assert asked["hopper-consumer-registers"]["answer"] == paths["sdpa_cudnn"]["consumer"]
