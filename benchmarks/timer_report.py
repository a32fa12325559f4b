"""The timer comparison of one replay set, for a report (issue 38):

    python benchmarks/timer_report.py <gpu> [--root notebooks/traces]

Per stage and shape (forwards, then training steps): the caller's loop per call (median, and the
min–max of its repeats), do_bench's median (the trace's, as the book showed it, and timers.json's),
the GPU's busy time per call (the trace's profiler GPU time, and timers.json's, measured beside the
loop), the verdict before (do_bench against the trace's GPU time, the old rule: bound by the GPU when
do_bench ≤ 1.1 × the GPU time) and after (`helpers.core.bound.of_call`: the loop against the busy time
beside it, about even within the loop's spread), and whether it changed. Prints a Markdown table."""
from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.core import bound  # noqa: E402  (the "after" verdict: the book's one definition)

ROOT = Path(__file__).resolve().parent.parent / "notebooks" / "traces"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def trace_figures(path: Path) -> tuple[float, float | None]:
    """(GPU time of the last profiled step's events, µs; the provenance's do_bench median, µs)."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = [e for e in events if re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    last = max(steps, key=lambda e: int(e["name"].split("#")[1]))
    lo, hi = last["ts"], last["ts"] + last["dur"]
    calls = {e["args"]["correlation"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and lo <= e["ts"] <= hi and "correlation" in e.get("args", {})}
    gpu = sum(e["dur"] for e in events if e.get("cat") in GPU_CATS and e["args"].get("correlation") in calls)
    return gpu, doc["provenance"].get("do_bench_us")


def before(bench: float | None, gpu: float) -> str:
    if not bench:
        return "—"
    return "bound by the GPU" if bench <= (1 + bound.LINE) * gpu else "bound by the CPU"


def fmt(x, digits: int = 1) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def rows(folder: Path, section: str, doc: dict) -> list[str]:
    out = []
    traces = sorted((folder / "training" if section == "training_steps" else folder).glob("*__*.json.gz"))
    for path in traces:
        key = path.name.split(".")[0]
        rec = doc.get(section, {}).get(key)
        gpu, bench = trace_figures(path)
        after = bound.of_call({"loop_us": rec["loop_us"], "loop_busy_us": rec.get("busy_us"),
                               "gpu_time_us": gpu}) if rec and rec.get("loop_us") else None
        t_bench = (rec or {}).get("do_bench_us") or [None, None, None]
        stage, shape = key.split("__", 1)
        was, now = before(bench, gpu), bound.words(after)
        changed = "" if after is None or was == "—" else ("**changed**" if was != now else "same")
        loop = "—" if after is None else f"{after.wall_us:,.1f} ({after.spread[0]:,.1f}–{after.spread[1]:,.1f})"
        out.append(f"| {stage} | {shape} | {loop} | {fmt(bench)} | {fmt(t_bench[1])} | {fmt(gpu)} | "
                   f"{fmt((rec or {}).get('busy_us'))} | {was} | {now} | {changed} |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gpu", help="the replay set's folder name: h200, h100-80gb-hbm3, ...")
    ap.add_argument("--root", type=Path, default=ROOT)
    args = ap.parse_args(argv)
    folder = args.root / args.gpu
    path = folder / "timers.json"
    if not path.is_file():
        print(f"{path} does not exist: record it on the GPU with `python tools/record_timers.py`.", file=sys.stderr)
        return 2
    doc = json.loads(path.read_text())
    p = doc.get("provenance", {})
    print(f"## Timers of {args.gpu}: {p.get('gpu')} ({p.get('date', '')[:10]}, torch {p.get('torch')}, "
          f"triton {p.get('triton')})\n")
    head = ("| stage | shape | loop µs median (min–max) | do_bench µs (trace) | do_bench µs (timers.json) | "
            "busy µs (trace) | busy µs (timers.json) | before (do_bench) | after (loop) | |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    for title, section in (("Forwards", "forwards"), ("Training steps", "training_steps")):
        lines = rows(folder, section, doc)
        if lines:
            print(f"### {title}\n\n{head}\n" + "\n".join(lines) + "\n")
    if doc.get("failed"):
        print("### Not timed\n\n" + "\n".join(f"- {k}: {v}" for k, v in doc["failed"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
