"""Your own traces: our parse and per-step tables against Holistic Trace Analysis (HTA) on the
same files, and the time and memory to load and render a trace of about 100,000 events.
Numbers to report, not a test.

    python benchmarks/own_trace_benchmarks.py [--hta-python /work/hta-venv/bin/python] [--repeat 5]

HTA runs from its own venv (`python3.11 -m venv /work/hta-venv && /work/hta-venv/bin/pip install
HolisticTraceAnalysis==0.5.0`): it is not one of the book's requirements. Each run is a fresh
process (benchmarks/own_side.py, benchmarks/hta_side.py); the clock starts after the imports.

1. speed: ours = load_trace, then per_step, gpu_events/cpu_ops/launches/kernels of every step and
   the per-step GPU breakdown; HTA = TraceAnalysis (parse) + get_temporal_breakdown +
   get_idle_time_breakdown. Median of --repeat runs each, alternating, and peak RSS.
2. figures: HTA's temporal breakdown (idle, compute, span) against ours over the same events
   (every step but the last: HTA's default scope). HTA rounds each event inward to whole µs; it is
   run twice, as it is and with HTA_DISABLE_NS_ROUNDING=1, and ours is given HTA's rounding too.
3. the 100,000-event trace: load + tables, then the figures of one step (timeline, kernel
   durations, breakdown) built and written as HTML, and drawn in headless Chromium.

Writes benchmarks/results/own_trace_benchmarks.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
OWN = ROOT / "notebooks" / "traces" / "h200" / "own_model"
DATA = ROOT / "benchmarks" / "data"
BIG = DATA / "encoder_100k.json.gz"
# three transformer traces (a training step, a Hugging Face forward, a 12-layer training step),
# then the 100,000-event one
DEFAULT_TRACES = [OWN / "encoder_train_step.json.gz", OWN / "hf_gpt2_forward.json.gz",
                  DATA / "encoder12_train.json.gz", BIG]


def run_json(cmd: list[str], env: dict | None = None) -> dict:
    result = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if result.returncode != 0:
        return {"error": result.stderr[-3000:]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def ours(trace: Path, *extra: str) -> dict:
    env = {"PYTHONPATH": str(ROOT)}
    return run_json([sys.executable, str(ROOT / "benchmarks" / "own_side.py"), str(trace), *extra], env)


def hta(python: str, trace: Path, rounding: bool = True) -> dict:
    env = {} if rounding else {"HTA_DISABLE_NS_ROUNDING": "1"}
    return run_json([python, str(ROOT / "benchmarks" / "hta_side.py"), str(trace)], env)


def rel(a: float, b: float) -> float | None:
    return None if b in (0, None) or a is None else abs(a - b) / abs(b) * 100


def compare_figures(our: dict, theirs: dict) -> dict:
    """HTA's temporal breakdown against ours over HTA's scope."""
    if "temporal" not in theirs:
        return {"hta": theirs.get("temporal_error") or theirs.get("error", "no temporal breakdown")}
    t = theirs["temporal"]
    scope = "all_but_last" if "whole_trace" not in our else "whole_trace"
    o = our[scope]
    hta_busy = t["kernel_time(us)"] - t["idle_time(us)"]
    return {"scope": scope,
            "hta_span_us": t["kernel_time(us)"], "our_span_us": o["span_us"],
            "hta_busy_us": hta_busy, "our_busy_us": o["busy_us"],
            "busy_diff_pct": rel(o["busy_us"], hta_busy),
            "hta_idle_us": t["idle_time(us)"], "our_idle_us": o["idle_us"],
            "idle_diff_pct_of_span": abs(o["idle_us"] - t["idle_time(us)"]) / t["kernel_time(us)"] * 100,
            "hta_compute_us": t["compute_time(us)"], "our_compute_us": o["compute_us"],
            "compute_diff_pct": rel(o["compute_us"], t["compute_time(us)"])}


def host_wait(theirs: dict) -> float | None:
    if "idle" not in theirs:
        return None
    return sum(r["idle_time"] for r in theirs["idle"] if r["idle_category"] == "host_wait")


def browser_draw_seconds(html_path: Path) -> float | None:
    """Time from navigation until every figure of the page has drawn, in headless Chromium."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    import plotly
    (html_path.parent / "plotly.min.js").write_bytes(
        (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes())
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        started = time.perf_counter()
        page.goto(html_path.as_uri())
        page.wait_for_function("document.querySelectorAll('.plotly-graph-div').length > 0 && "
                               "[...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))",
                               timeout=120_000)
        seconds = time.perf_counter() - started
        browser.close()
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hta-python", default="/work/hta-venv/bin/python")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("traces", nargs="*", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args()
    report: dict = {"machine": f"{platform.node()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}",
                    "load_average_at_start": os.getloadavg(), "repeat": args.repeat, "traces": {}}
    for trace in args.traces:
        if not trace.exists():
            print(f"skip {trace}: missing", flush=True)
            continue
        runs_ours, runs_hta = [], []
        for _ in range(args.repeat):
            runs_ours.append(ours(trace))
            runs_hta.append(hta(args.hta_python, trace))
        exact = hta(args.hta_python, trace, rounding=False)
        first = runs_ours[0]
        if "error" in first:
            sys.exit(f"our side failed on {trace}:\n{first['error']}")
        ours_s = statistics.median(r["seconds"] for r in runs_ours)
        ours_cpu = statistics.median(r["cpu_seconds"] for r in runs_ours)
        hta_ok = [r for r in runs_hta if "seconds" in r]
        hta_s = statistics.median(r["seconds"] for r in hta_ok) if hta_ok else None
        hta_cpu = statistics.median(r["cpu_seconds"] for r in hta_ok) if hta_ok else None
        entry = {
            "events": first["events"], "steps": first["steps"], "rows": first["rows"],
            "ours_seconds": ours_s, "ours_seconds_all": [r["seconds"] for r in runs_ours],
            "ours_peak_rss_mb": max(r["peak_rss_mb"] for r in runs_ours),
            "ours_rss_growth_mb": max(r["peak_rss_mb"] - r["rss_before_mb"] for r in runs_ours),
            "hta_seconds": hta_s, "hta_seconds_all": [r.get("seconds") for r in runs_hta],
            "hta_peak_rss_mb": max((r["peak_rss_mb"] for r in hta_ok), default=None),
            "hta_rss_growth_mb": max((r["peak_rss_mb"] - r["rss_before_mb"] for r in hta_ok), default=None),
            "speedup": hta_s / ours_s if hta_s else None,
            "ours_cpu_seconds": ours_cpu, "hta_cpu_seconds": hta_cpu,
            "cpu_speedup": hta_cpu / ours_cpu if hta_cpu else None,
            "hta_errors": sorted({r.get("temporal_error") or r.get("error") for r in runs_hta} - {None}),
            "figures_vs_hta": compare_figures(first["scopes"], runs_hta[0]),
            "figures_vs_hta_with_its_rounding": compare_figures(first["scopes_hta_rounding"], runs_hta[0]),
            "figures_vs_hta_without_rounding": compare_figures(first["scopes"], exact),
            "host_wait_us": {"ours": first["scopes"].get("all_but_last", {}).get("host_wait_us"),
                             "hta_no_rounding": host_wait(exact), "hta": host_wait(runs_hta[0])},
            "verdicts": first["verdicts"],
        }
        report["traces"][trace.name] = entry
        print(f"{trace.name}: {first['events']} events, ours {ours_s:.2f} s ({ours_cpu:.2f} s CPU), HTA "
              f"{'failed' if hta_s is None else f'{hta_s:.2f} s ({hta_cpu:.2f} s CPU)'}"
              + (f", {entry['speedup']:.1f}x wall, {entry['cpu_speedup']:.1f}x CPU" if entry["speedup"] else ""),
              flush=True)
    if BIG.exists():
        with tempfile.TemporaryDirectory() as tmp:
            html = Path(tmp) / "figures.html"
            runs = [ours(BIG, "--render", "--html", str(html)) for _ in range(max(1, args.repeat // 2))]
            draw = browser_draw_seconds(html)
        report["big"] = {"file": BIG.name, "events": runs[0]["events"],
                         "file_mb": BIG.stat().st_size / 2**20,
                         "load_and_tables_seconds": statistics.median(r["seconds"] for r in runs),
                         "load_seconds": statistics.median(r["load_seconds"] for r in runs),
                         "figures_seconds": statistics.median(r["figure_seconds"] for r in runs),
                         "html_seconds": statistics.median(r["html_seconds"] for r in runs),
                         "html_mb": runs[0]["html_bytes"] / 2**20, "timeline_bars": runs[0]["timeline_bars"],
                         "timeline_subtitle": runs[0]["timeline_subtitle"],
                         "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
                         "rss_growth_mb": max(r["peak_rss_mb"] - r["rss_before_mb"] for r in runs),
                         "chromium_draw_seconds": draw, "rows": runs[0]["rows"]}
        print(f"{BIG.name}: {report['big']}", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "own_trace_benchmarks.json").write_text(json.dumps(report, indent=1, default=float))
    (RESULTS / "own_trace_benchmarks.md").write_text(markdown(report))
    print(markdown(report))
    return 0


def fmt(v, digits=2):
    return "—" if v is None else f"{v:,.{digits}f}" if isinstance(v, float) else str(v)


def markdown(report: dict) -> str:
    lines = [f"# Own traces: ours against HTA {report.get('hta_version', '0.5.0')}", "",
             f"{report['machine']}, shared with other work: load average at start "
             f"{', '.join(f'{x:.1f}' for x in report['load_average_at_start'])}. Median of {report['repeat']} fresh "
             f"processes each, alternating, imports excluded; wall seconds, and CPU seconds of the process "
             f"(less sensitive to the other work on the machine).", "",
             "Memory: peak RSS growth of the process from the end of its imports (ours imports torch through `helpers`; HTA does not).", "",
             "| trace | events | ours s | HTA s | HTA / ours | ours CPU s | HTA CPU s | HTA / ours (CPU) | ours RSS growth MB | HTA RSS growth MB | HTA errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, e in report["traces"].items():
        lines.append(f"| {name} | {e['events']:,} | {fmt(e['ours_seconds'])} | {fmt(e['hta_seconds'])} | "
                     f"{fmt(e['speedup'], 1)} | {fmt(e['ours_cpu_seconds'])} | {fmt(e['hta_cpu_seconds'])} | "
                     f"{fmt(e['cpu_speedup'], 1)} | {fmt(e['ours_rss_growth_mb'], 0)} | {fmt(e['hta_rss_growth_mb'], 0)} | "
                     f"{'; '.join(e['hta_errors']) or '—'} |")
    lines += ["", "Busy and idle over HTA's scope (every step but the last), ours at ns resolution:", "",
              "| trace | comparison | span µs (HTA / ours) | busy µs (HTA / ours) | busy diff % | idle µs (HTA / ours) | idle diff, % of span | compute diff % |",
              "|---|---|---|---|---|---|---|---|"]
    for name, e in report["traces"].items():
        for label, key in (("HTA as it is (µs rounding)", "figures_vs_hta"),
                           ("HTA as it is, ours with HTA's rounding", "figures_vs_hta_with_its_rounding"),
                           ("HTA_DISABLE_NS_ROUNDING=1", "figures_vs_hta_without_rounding")):
            f = e[key]
            if "hta_span_us" not in f:
                lines.append(f"| {name} | {label} | HTA: {f.get('hta')} | | | | | |")
                continue
            lines.append(f"| {name} | {label} | {fmt(f['hta_span_us'], 1)} / {fmt(f['our_span_us'], 1)} | "
                         f"{fmt(f['hta_busy_us'], 1)} / {fmt(f['our_busy_us'], 1)} | {fmt(f['busy_diff_pct'], 3)} | "
                         f"{fmt(f['hta_idle_us'], 1)} / {fmt(f['our_idle_us'], 1)} | {fmt(f['idle_diff_pct_of_span'], 3)} | "
                         f"{fmt(f['compute_diff_pct'], 3)} |")
    if "big" in report:
        b = report["big"]
        lines += ["", f"## {b['file']}: {b['events']:,} events, {b['file_mb']:.1f} MB gzipped", "",
                  f"- load (read, gunzip, JSON, one pass): {b['load_seconds']:.2f} s; with every table and the per-step breakdown: {b['load_and_tables_seconds']:.2f} s",
                  f"- figures of one step (timeline, kernel durations, breakdown): built in {b['figures_seconds']:.2f} s, "
                  f"HTML in {b['html_seconds']:.2f} s, {b['html_mb']:.2f} MB; the timeline draws {b['timeline_bars']:,} bars ({b['timeline_subtitle']})",
                  f"- drawn in headless Chromium (1400×900): {fmt(b['chromium_draw_seconds'])} s",
                  f"- memory: the process's peak RSS grew by {b['rss_growth_mb']:.0f} MB from the end of its imports "
                  f"(peak {b['peak_rss_mb']:.0f} MB with torch, pandas and plotly imported)"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
