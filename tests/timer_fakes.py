"""A replay set with a FAKE caller's timer, for tests: the real set's files linked one by one into a
temporary folder, and a timers.json written beside them whose figures are made up from each trace's
raw GPU time so that every verdict occurs: bound by the GPU, bound by the CPU, about even, and a
forward the timers.json has no record of. Never written under notebooks/traces.

Plain code: nothing here imports `helpers`."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "notebooks" / "traces"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")

# the loop's seven repeats as multiples of the busy time, per verdict (the line is 1.10 × busy)
SCENARIOS = {
    "gpu": [1.00, 1.01, 1.02, 1.03, 1.04, 1.05, 1.07],        # max 1.07 < 1.10: bound by the GPU
    "cpu": [1.52, 1.50, 1.55, 1.49, 1.60, 1.51, 1.53],        # min 1.49 > 1.10: bound by the CPU
    "even": [1.06, 1.08, 1.09, 1.12, 1.05, 1.14, 1.10],       # 1.10 inside [1.05, 1.14]: about even
    "cpu_close": [1.20, 1.11, 1.15, 1.40, 1.13, 1.12, 1.16],  # min 1.11: bound by the CPU, min ≠ median
}
# a stage's scenario by its position among the recorded ones; the last recorded stage of the
# default shape gets no record at all (as if its timing had failed)
ORDER = ["cpu", "gpu", "even", "gpu", "cpu_close", "gpu", "even", "cpu", "gpu", "cpu", "gpu", "even"]
BUSY_FACTOR = 1.013   # the busy time beside the loop: a little off the trace's, as another process's is


def raw_gpu_us(path: Path) -> float:
    """The summed durations of the GPU events launched in the trace's last ProfilerStep (µs)."""
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    calls = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and lo <= e["ts"] <= hi and "correlation" in e.get("args", {})}
    return sum(e["dur"] for e in events if e.get("cat") in GPU_CATS and e["args"].get("correlation") in calls)


def fake_timers(folder: Path, only_default: bool = False) -> dict:
    """A timers.json document for the traces in `folder` (forwards) and folder/training (steps)."""
    forwards, steps = {}, {}
    traces = sorted(folder.glob("*__*.json.gz"))
    default = [p for p in traces if "_s1024_d64_" in p.name]
    missing = default[-1].name.split(".")[0] if default else None
    for i, path in enumerate(traces):
        key = path.name.split(".")[0]
        if key == missing or (only_default and path not in default):
            continue
        busy = raw_gpu_us(path) * BUSY_FACTOR
        loop = [busy * f for f in SCENARIOS[ORDER[i % len(ORDER)]]]
        forwards[key] = {"loop_calls": 50, "loop_us": loop, "do_bench_us": [busy * 1.2, busy * 1.25, busy * 1.3],
                         "busy_us": busy}
    for i, path in enumerate(sorted((folder / "training").glob("*__*.json.gz"))):
        busy = raw_gpu_us(path) * BUSY_FACTOR
        steps[path.name.split(".")[0]] = {"loop_calls": 20, "loop_us": [busy * f for f in SCENARIOS[ORDER[i % len(ORDER)]]],
                                          "do_bench_us": None, "busy_us": busy}
    return {"provenance": {"gpu": "FAKE", "date": "2026-12-07T00:00:00", "command": "tests/timer_fakes.py"},
            "method": {"note": "made up by tests/timer_fakes.py"}, "forwards": forwards,
            "training_steps": steps, "failed": {missing: "fake failure"} if missing else {}}


def linked_set(source: Path, root: Path, timers: dict | None) -> Path:
    """`source`'s files linked into root/<source.name>/, with `timers` as its timers.json (none
    where None). Returns the new folder."""
    target = root / source.name
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name == "timers.json":
            continue
        (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    if timers is not None:
        # training/ is a link into the real set: its steps' timers live in the top-level file
        (target / "timers.json").write_text(json.dumps(timers, indent=1))
    return target


def timer_record(trace_path: Path) -> dict | None:
    """The trace's record in its set's timers.json (forwards, or training_steps for a trace under
    training/), read raw; None where the set has no timers.json or no record of it."""
    trace_path = Path(trace_path)
    training = trace_path.parent.name == "training"
    folder = trace_path.parent.parent if training else trace_path.parent
    if not (folder / "timers.json").is_file():
        return None
    doc = json.loads((folder / "timers.json").read_text())
    rec = doc.get("training_steps" if training else "forwards", {}).get(trace_path.name.split(".")[0])
    return rec if rec and rec.get("loop_us") else None


def median(xs) -> float:
    v = sorted(float(x) for x in xs)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def later_calls_raw(trace_paths) -> tuple[list, str]:
    """What a later call costs per trace, all timed alike: the loop's median where every one has a
    timers.json record, else each provenance's do_bench_us; and the timer's words."""
    recs = [timer_record(p) for p in trace_paths]
    if all(recs):
        return [median(r["loop_us"]) for r in recs], "the caller's loop"
    out = []
    for p in trace_paths:
        with gzip.open(p, "rt") as f:
            out.append(json.load(f)["provenance"].get("do_bench_us"))
    return out, "do_bench (cold call)"


NO_TIMER_WORDS = "no caller's timer recorded"


def raw_call(trace_path: Path, trace_gpu_us: float) -> dict | None:
    """The book's bound of one call in plain code: the loop's repeats (timers.json's record, else
    a live recording's own provenance), their median against the busy time beside them (timers.json's
    busy_us; else the trace's GPU time, `trace_gpu_us`). The line is 1.1 × busy: about even when it
    lies within [min, max] of the repeats, else bound by the GPU when the median is at most the line,
    else by the CPU. None where there is no loop."""
    rec = timer_record(trace_path)
    if rec is not None:
        loop, busy = rec["loop_us"], rec["busy_us"]
    else:
        with gzip.open(trace_path, "rt") as f:
            loop = json.load(f)["provenance"].get("loop_us")
        busy = trace_gpu_us
    if not loop:
        return None
    wall, line = median(loop), 1.1 * busy
    verdict = ("about even" if min(loop) <= line <= max(loop) else
               "bound by the GPU" if wall <= line else "bound by the CPU")
    return {"wall": wall, "lo": min(loop), "hi": max(loop), "busy": busy, "verdict": verdict}


def loop_around(wall: float, spread: float = 0.01) -> list[float]:
    """Seven made-up repeats whose median is `wall`, within ±`spread` of it (tests edit them in)."""
    return [wall * (1 + spread * f) for f in (-1.0, -0.5, -0.2, 0.0, 0.2, 0.5, 1.0)]
