"""HTA's side of benchmarks/own_trace_benchmarks.py, run by HTA's own Python (a separate venv:
HolisticTraceAnalysis is not one of the book's requirements). Never imports helpers.

    /work/hta-venv/bin/python benchmarks/hta_side.py TRACE [--include-last]

Prints one JSON object: seconds (load + temporal breakdown + idle-time breakdown, imports
excluded), peak RSS, HTA's temporal breakdown and idle-time breakdown, or the error HTA raised.
"""
from __future__ import annotations

import argparse
import json
import logging
import resource
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path


def describe(err: Exception) -> str:
    """The error in one line; a bare `assert` says nothing, so its source line is named."""
    text = str(err)
    if not text:
        frames = traceback.extract_tb(err.__traceback__)
        text = frames[-1].line if frames else ""
    return f"{type(err).__name__}: {text}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--include-last", action="store_true",
                        help="HTA's include_last_profiler_step (default: HTA leaves the last step out)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # HTA logs every parse at WARNING
    import hta
    from hta.trace_analysis import TraceAnalysis

    out: dict = {"hta_version": getattr(hta, "__version__", None)}
    out["rss_before_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # imports done
    with tempfile.TemporaryDirectory() as tmp:
        # HTA reads a folder of rank files; one rank, this file
        path = Path(tmp) / ("rank-0." + "".join(Path(args.trace).suffixes).lstrip("."))
        shutil.copy(args.trace, path)
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            analysis = TraceAnalysis(trace_files={0: str(path)}, trace_dir=tmp,
                                     include_last_profiler_step=args.include_last)
            out["load_seconds"] = time.perf_counter() - started
        except Exception as err:  # noqa: BLE001 - the benchmark reports what HTA does
            out["error"] = f"load: {describe(err)}"
            out["traceback"] = traceback.format_exc()[-2000:]
            print(json.dumps(out))
            return 0
        try:
            temporal = analysis.get_temporal_breakdown(visualize=False)
            out["temporal"] = temporal.iloc[0].to_dict()
        except Exception as err:  # noqa: BLE001
            out["temporal_error"] = describe(err)
            out["temporal_traceback"] = traceback.format_exc()[-2000:]
        try:
            idle = analysis.get_idle_time_breakdown(visualize=False)[0]
            out["idle"] = idle.to_dict(orient="records")
        except Exception as err:  # noqa: BLE001
            out["idle_error"] = describe(err)
        out["seconds"] = time.perf_counter() - started
        out["cpu_seconds"] = time.process_time() - cpu_started
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
