"""Our side of benchmarks/own_trace_benchmarks.py: load a trace and build its per-step tables.

    python benchmarks/own_side.py TRACE [--render]

Prints one JSON object: seconds (load_trace, then per_step, gpu_events/cpu_ops/launches/kernels
of every step, and the per-step GPU breakdown; imports excluded), peak RSS, the breakdown over
HTA's two scopes (every step but the last, HTA's default; every step), and with --render the
time to build the figures of one step (timeline, kernel durations, breakdown chart) and the size
of their HTML.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--render", action="store_true")
    parser.add_argument("--html", help="write the rendered figures to this HTML file")
    args = parser.parse_args()
    import numpy as np
    import pandas as pd  # noqa: F401 - imported before the clock starts, as HTA's side does

    from helpers import load_trace
    from helpers.breakdown import views as breakdown
    from helpers.breakdown.core import window_breakdown

    out: dict = {"rss_before_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # imports done
    started, cpu_started = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prof = load_trace(args.trace, progress=False, quiet=True)
    out["load_seconds"] = time.perf_counter() - started
    tables = {"per_step": prof.per_step, "gpu_events": prof.gpu_events("all"), "cpu_ops": prof.cpu_ops("all"),
              "launches": prof.launches("all"), "kernels": prof.kernels("all"),
              "breakdown": breakdown.gpu_breakdown(prof)}
    out["seconds"] = time.perf_counter() - started
    out["cpu_seconds"] = time.process_time() - cpu_started
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["events"] = len(prof.events)
    out["rows"] = {k: len(v) for k, v in tables.items()}
    out["steps"] = prof.steps
    out["annotation"] = prof.annotation
    gpu = prof.gpu_events("all")
    scopes = {"all_steps": gpu[gpu["step"].notna()],
              "all_but_last": gpu[gpu["step"].notna() & (gpu["step"] != prof.steps[-1])]}
    if not prof.profiler_steps:
        scopes["whole_trace"] = gpu  # HTA filters nothing without ProfilerStep rows
    out["scopes"] = {k: window_breakdown(v) for k, v in scopes.items()}
    # HTA rounds every event inward to whole µs (start up, end down): the same figures that way
    rounded = {k: v.assign(start_us=np.ceil(v["start_us"]), end_us=np.floor(v["end_us"]))
               for k, v in scopes.items()}
    out["scopes_hta_rounding"] = {k: window_breakdown(v[v["end_us"] >= v["start_us"]])
                                  for k, v in rounded.items()}
    out["per_step"] = tables["breakdown"].to_dict(orient="records")
    out["verdicts"] = {int(s): breakdown.verdict(prof, s) for s in prof.steps}
    if args.render:
        from helpers import charts
        started = time.perf_counter()
        figures = [charts.timeline(prof), charts.kernel_durations(prof), breakdown.breakdown_chart(prof)]
        out["figure_seconds"] = time.perf_counter() - started
        started = time.perf_counter()
        html = "".join(f.to_html(include_plotlyjs=False, full_html=False) for f in figures)
        out["html_seconds"] = time.perf_counter() - started
        out["html_bytes"] = len(html.encode())
        out["timeline_bars"] = sum(len(t.x) if t.x is not None else 0 for t in figures[0].data
                                   if t.type == "bar")
        out["timeline_subtitle"] = figures[0].layout.title.text.split("<sup>")[-1].rstrip("</sup>")
        if args.html:
            Path(args.html).write_text(
                "<html><head><meta charset='utf-8'><script src='plotly.min.js'></script></head><body>"
                + html + "</body></html>")
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
