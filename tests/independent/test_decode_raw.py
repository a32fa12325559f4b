"""The decode chapter (08b) recomputed from its raw recording in plain code: decode.json, the
Kineto traces (gzip + json) and ncu's CSVs (the csv module), never `helpers.decode`.

The book's definitions, written out:
* a call's kernels are the `kernel` events whose launch call (same correlation id) started inside
  the last `ProfilerStep#<n>` (largest n);
* the GPU's busy time per call is the union of the intervals of the GPU events launched inside a
  ProfilerStep (by correlation id), divided by the number of ProfilerStep events;
* the time per token is the median of the caller's timer's repeats (`loop_us`);
* a call's KV bytes are 2 × batch × 32 heads × KV × 128 × 2 bytes (K and V, bf16); its achieved
  bandwidth is those bytes over its busy time (GB/s = bytes / µs / 1e3);
* ncu's bytes are the sums of `dram__bytes_read.sum` and `dram__bytes_write.sum` over a job's rows,
  each scaled by the unit in the row under the header, its time the sum of `gpu__time_duration.sum`;
* a step's launch calls are its `cudaLaunchKernel`/`cuLaunchKernel*` runtime or driver calls, its
  graph launches its `cudaGraphLaunch` calls (last step).

Run on every real set that has a decode/ folder, and on fake recordings (tests/decode_fake.py):
as made, another winner, a tie."""
from __future__ import annotations

import csv
import gzip
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import decode_fake  # noqa: E402

REAL = [p.parent.parent.name for p in sorted((ROOT / "notebooks" / "traces").glob("*/decode/decode.json"))]
STEP = re.compile(r"ProfilerStep#(\d+)")
GPU = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
# ncu names a column's unit in full or short as it chooses per column (an H100's decode tables,
# 2026-12-07: 'Gbyte', 'Mbyte', 'ms')
SCALE = {"": 1, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3, "msecond": 1e6,
         "ns": 1, "us": 1e3, "ms": 1e6}


def median(xs):
    v = sorted(float(x) for x in xs)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def events(folder: Path, rel: str) -> list[dict]:
    with gzip.open(folder / rel, "rt") as f:
        return json.load(f)["traceEvents"]


def is_step(e: dict) -> bool:
    """A profiler step on the CPU lane. Kineto writes each step twice: the CPU's range
    (user_annotation) and the same name on the GPU lane (gpu_user_annotation), which starts at the
    step's first kernel, after its first launch call."""
    return e.get("ph") == "X" and e.get("cat") != "gpu_user_annotation" and bool(STEP.fullmatch(str(e.get("name", ""))))


def last_step(evs: list[dict]) -> tuple[float, float]:
    steps = [(int(STEP.fullmatch(e["name"]).group(1)), e["ts"], e["ts"] + e["dur"]) for e in evs
             if is_step(e)]
    _, a, b = max(steps)
    return a, b


def calls_in_last_step(evs: list[dict]) -> list[dict]:
    a, b = last_step(evs)
    return [e for e in evs if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and a <= e["ts"] <= b]


def kernels_of_last_step(evs: list[dict]) -> list[str]:
    ids = {e["args"]["correlation"] for e in calls_in_last_step(evs) if "correlation" in e.get("args", {})}
    return [e["name"] for e in evs if e.get("ph") == "X" and e.get("cat") == "kernel"
            and e.get("args", {}).get("correlation") in ids]


def busy_per_step(evs: list[dict]) -> float:
    # only the GPU work the steps launched: a warm-up call's kernel can still run inside the window
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in evs if is_step(e)]
    ids = {e["args"]["correlation"] for e in evs if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
           and "correlation" in e.get("args", {}) and any(a <= e["ts"] <= b for a, b in steps)}
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("ph") == "X" and e.get("cat") in GPU
                   and e.get("args", {}).get("correlation") in ids)
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b > end:
            total += b - max(a, end)
            end = b
    steps = sum(1 for e in evs if is_step(e))
    return total / steps


def kv_bytes(batch: int, kv: int) -> int:
    return 2 * batch * 32 * kv * 128 * 2


def ncu_job(path: Path) -> dict:
    rows = list(csv.reader(path.read_text().splitlines()))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    header, units, data = rows[start], rows[start + 1], [r for r in rows[start + 2:] if len(r) == len(rows[start])]

    def total(metric):
        i = header.index(metric)
        return sum(float(r[i].replace(",", "")) * SCALE[units[i]] for r in data)
    return {"kernels": len(data), "read": total("dram__bytes_read.sum"), "write": total("dram__bytes_write.sum"),
            "ns": total("gpu__time_duration.sum")}


@pytest.fixture(scope="module", params=["fake", "fake_flash_wins", "fake_tie"] + REAL)
def recording(request, tmp_path_factory):
    """(the decode folder, its decode.json, the set's ceilings.json or None, the DecodeSet the page reads)."""
    from helpers.decode.core import DecodeSet
    if request.param.startswith("fake"):
        root = tmp_path_factory.mktemp(request.param)
        folder = decode_fake.make(root, winner="sdpa_flash" if "flash" in request.param else "sdpa_cudnn",
                                  tie="tie" in request.param,
                                  with_ceilings_from=ROOT / "notebooks" / "traces" / "h200" / "ceilings.json")
    else:
        folder = ROOT / "notebooks" / "traces" / request.param / "decode"
    ceilings = folder.parent / "ceilings.json"
    return folder, json.loads((folder / "decode.json").read_text()), \
        json.loads(ceilings.read_text()) if ceilings.is_file() else None, DecodeSet.load(folder)


def test_kernels_per_call_and_busy_time_from_the_raw_trace(recording):
    folder, doc, _, d = recording
    page = d.points(("sweep", "flex", "split"))
    assert len(page) == sum(len(doc[p]) for p in ("sweep", "flex", "split"))
    for part in ("sweep", "flex", "split"):
        for rec in doc[part]:
            evs = events(folder, rec["trace"])
            row = page[(page["backend"] == rec["backend"]) & (page["batch"] == rec["batch"]) & (page["kv"] == rec["kv"])
                       & (page["part"] == part)].iloc[0]
            names = kernels_of_last_step(evs)
            assert row["kernels"] == len(names), rec["name"]
            busy = busy_per_step(evs)
            assert row["busy_us"] == pytest.approx(busy, rel=0.02), rec["name"]
            assert row["gbps"] == pytest.approx(kv_bytes(rec["batch"], rec["kv"]) / busy / 1e3, rel=0.02), rec["name"]
            combine = [n for n in names if re.search(r"combine|lean_reduction", n) or n.startswith("triton_per_")]
            assert bool(row["split"]) == bool(combine), rec["name"]
            if rec.get("loop_us"):
                assert row["loop_us"] == pytest.approx(median(rec["loop_us"])), rec["name"]


def test_time_per_token_launches_and_busy_share_of_the_step(recording):
    folder, doc, _, d = recording
    steps = d.steps().set_index("mode")
    assert set(steps.index) == {r["mode"] for r in doc["step"]}
    for rec in doc["step"]:
        evs = events(folder, rec["trace"])
        row = steps.loc[rec["mode"]]
        calls = [e["name"] for e in calls_in_last_step(evs)]
        assert row["us_per_token"] == pytest.approx(median(rec["loop_us"]))
        assert row["kernels"] == len(kernels_of_last_step(evs))
        assert row["kernel_launches"] == sum(c in LAUNCH for c in calls)
        assert row["graph_launches"] == calls.count("cudaGraphLaunch")
        busy = busy_per_step(evs)
        assert row["busy_us"] == pytest.approx(busy, rel=0.02)
        assert row["busy_pct"] == pytest.approx(min(100.0, 100 * busy / median(rec["loop_us"])), rel=0.02)


def test_ncu_bytes_and_bandwidth_from_the_csv(recording):
    folder, doc, _, d = recording
    table = d.ncu()
    tables = (doc.get("ncu") or {}).get("tables", {})
    assert len(table) == len(tables)
    for name, rel in tables.items():
        raw = ncu_job(folder / rel)
        backend, point = name.split("__")
        batch, kv = (int(x) for x in re.fullmatch(r"b(\d+)_kv(\d+)", point).groups())
        row = table[(table["backend"] == backend) & (table["batch"] == batch) & (table["kv"] == kv)].iloc[0]
        assert row["kernels"] == raw["kernels"]
        assert row["read_bytes"] == pytest.approx(raw["read"], rel=1e-6)
        assert row["write_bytes"] == pytest.approx(raw["write"], rel=1e-6)
        assert row["gbps"] == pytest.approx((raw["read"] + raw["write"]) / raw["ns"], rel=1e-6)   # bytes/ns = GB/s


def test_a_share_of_the_copy_roof_past_100_is_explained_beside_it(recording):
    """The ncu table's '% of copy roof' passes 100 on a real H100 (cuDNN, 107 %): where the raw CSVs
    give any call more than the set's copy roof, the table's caption says why that can be."""
    import pandas as pd

    from helpers.decode import chapter
    folder, doc, ceilings, d = recording
    tables = (doc.get("ncu") or {}).get("tables", {})
    if ceilings is None or not tables:
        pytest.skip("no copy roof or no ncu tables in this recording")
    roof = next(r for r in ceilings["ceilings"] if "copy" in r["ceiling"])["value"] * 1e3   # TB/s -> GB/s
    over = [n for n, rel in tables.items() if (lambda j: (j["read"] + j["write"]) / j["ns"])(ncu_job(folder / rel)) > roof]
    shown = chapter.ncu_table(d, pd.DataFrame(ceilings["ceilings"])).data
    explained = "<caption>" in shown and "can pass 100" in shown
    assert explained or not over, f"{over} pass the copy roof ({roof:.0f} GB/s) with no word why"


def test_the_glued_figures_and_the_guess_answers(recording, monkeypatch):
    """The page's headline figures and its questions' answers, against the raw recording."""
    folder, doc, ceilings, d = recording
    import pandas as pd

    from helpers.decode import chapter
    table = None if ceilings is None else pd.DataFrame(ceilings["ceilings"])
    glued = chapter.glue_figures(d, table)
    steps = {r["mode"]: r for r in doc["step"]}
    if "eager" in steps and "graph" in steps:
        speedup = median(steps["eager"]["loop_us"]) / median(steps["graph"]["loop_us"])
        assert glued["graph_speedup"] == pytest.approx(speedup, abs=0.006)
        assert glued["eager_us_per_token"] == pytest.approx(median(steps["eager"]["loop_us"]), abs=0.06)
    roof = None
    if ceilings is not None:
        copy = next(r for r in ceilings["ceilings"] if "copy" in r["ceiling"])
        roof = copy["value"] * 1e3
    big = [r for r in doc["sweep"] + doc["flex"] if (r["batch"], r["kv"]) == (64, 32768) and r["backend"] != "sdpa_auto"]
    if big:
        best = max(kv_bytes(64, 32768) / busy_per_step(events(folder, r["trace"])) / 1e3 for r in big)
        assert glued["best_gbps"] == pytest.approx(best, abs=1)
        if roof:
            assert glued["best_roof_pct"] == round(100 * best / roof)
            if round(100 * best / roof) > 100:   # a share past 100 says why beside it
                said = chapter.bandwidth_sentence(d, chapter.figures(d, table))
                assert "past 100%" in said, said
    answers = {q.key["id"]: q.key for q in chapter.questions(d, table).questions}
    assert len(answers) >= 10 or not doc["sweep"]
    auto = {r["batch"]: r for r in doc["sweep"] if r["backend"] == "sdpa_auto" and r["kv"] == 4096}
    for batch in (1, 8):
        if batch in auto:
            assert answers[f"decode-kernels-b{batch}"]["answer"] == len(kernels_of_last_step(events(folder, auto[batch]["trace"])))
    if "graph" in steps:
        calls = [e["name"] for e in calls_in_last_step(events(folder, steps["graph"]["trace"]))]
        assert answers["decode-graph-launches"]["answer"] == sum(c in LAUNCH or c == "cudaGraphLaunch" for c in calls)
    if "eager" in steps:
        busy = busy_per_step(events(folder, steps["eager"]["trace"]))
        assert answers["decode-busy"]["answer"] == round(min(100.0, 100 * busy / median(steps["eager"]["loop_us"])))
    trap = [r for r in doc["trap"] if r["backend"] == "sdpa_auto"]
    if trap:
        t = trap[0]
        said = answers["decode-trap"]["answer"]
        if not t.get("ran"):
            assert said == "it raises an error"
        else:
            assert said == ("it runs and gives a wrong answer" if t["max_abs_error"] > 0.05 else "it runs and gives the right answer")


def test_sdpa_pick_and_the_split_switch_from_the_raw_traces(recording):
    """SDPA's pick: the pinned fused backend whose kernels (by name, as a multiset) SDPA's own call
    ran at the same batch and KV; the split switch: flash's calls with a combine kernel, by batch,
    and the rule's prediction (batch × 32 < 212)."""
    from helpers.decode import chapter
    folder, doc, _, d = recording
    names = {}
    for part in ("sweep", "split"):
        for r in doc[part]:
            names[(part, r["backend"], r["batch"], r["kv"])] = sorted(kernels_of_last_step(events(folder, r["trace"])))
    pinned = ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn")
    picks = chapter.picks(d).set_index(["batch", "kv"])
    autos = [(b, kv) for (part, be, b, kv) in names if part == "sweep" and be == "sdpa_auto"]
    assert len(picks) == len(autos)
    for b, kv in autos:
        same = [p for p in pinned if names.get(("sweep", p, b, kv)) == names[("sweep", "sdpa_auto", b, kv)]]
        assert picks.loc[(b, kv), "picked"] == (same[0] if same else None)
    switch = chapter.switch(d)
    flash = {(b, kv): n for (part, be, b, kv), n in names.items() if be == "sdpa_flash"}
    assert len(switch) == len(flash)
    for r in switch.itertuples():
        split = any(re.search(r"combine|lean_reduction", n) for n in flash[(r.batch, r.kv)])
        assert r.split == split and r.rule_says_split == (r.batch * 32 < 212), (r.batch, r.kv)
