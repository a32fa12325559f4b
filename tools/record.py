"""Record the replay set live on a GPU:  python tools/record.py [--stages ...] [--sweep]

Writes notebooks/traces/<gpu>/<stage>__<shape>.json.gz (gzipped chrome traces that Perfetto
opens, provenance inside) and a CSV comparing the profiler's GPU time per forward with
triton.testing.do_bench, the independent timer.
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

import pandas as pd

# run as a file: the repository root first on sys.path, so `helpers` is this checkout's
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.sources.replay import REPLAY_DIR, trace_path
from helpers.core.replay_set import gpu_slug  # the one spelling of a GPU's folder
from helpers.core.stages import DEFAULT_SHAPE, STAGES, Shape, StageUnavailable, stages_where
from validate_recordings import InvalidRecording, refuse_invalid  # tools/: the raw checks of a saved trace

BENCHMARK_DIR = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
# the shapes a reader can pick in replay: the article's, plus a sequence and head_dim sweep
SWEEP = [DEFAULT_SHAPE] + [Shape(seq=s) for s in (512, 2048, 4096)] + [Shape(head_dim=128)]
SWEEP_STAGES = stages_where(swept=True)   # the registry's facts (Stage.swept)


def record(stages, shapes_for, root: Path = REPLAY_DIR, command: str = "") -> pd.DataFrame:
    import torch

    from helpers.sources.capture import capture
    slug = gpu_slug(torch.cuda.get_device_name(0))
    rows = []
    for name in stages:
        for shape in shapes_for(name):
            started = time.perf_counter()
            try:
                prof = capture(name, shape, independent_timer=True, command=command)
            except StageUnavailable as err:
                print(f"skip {name} {shape.key}: {err}", flush=True)
                rows.append({"stage": name, "shape": shape.key, "error": str(err)})
                continue
            except Exception as err:  # one broken stage must not lose the others
                traceback.print_exc()
                rows.append({"stage": name, "shape": shape.key, "error": repr(err)})
                continue
            try:  # a trace that fails the raw checks is moved aside, never kept under its name
                path = refuse_invalid(prof.save(trace_path(name, shape, slug, root)), prof)
            except InvalidRecording as err:
                print(err, file=sys.stderr, flush=True)
                rows.append({"stage": name, "shape": shape.key, "error": str(err)})
                continue
            summary = prof.summary()
            row = {"stage": name, "shape": shape.key, "gpu": prof.provenance.gpu,
                   "gpu_events": summary["gpu_events"], "profiler_gpu_us": summary["gpu_time_us"],
                   "cpu_us": summary["cpu_time_us"], "do_bench_us": prof.provenance.do_bench_us,
                   "cuda_event_us": prof.provenance.cuda_event_time_us,
                   "trace_kb": round(path.stat().st_size / 1024, 1),
                   "peak_memory_mb": prof.provenance.peak_memory_bytes / 2**20,
                   "forward_memory_mb": (prof.provenance.peak_memory_bytes - prof.provenance.memory_before_bytes) / 2**20,
                   "first_call_s": prof.provenance.first_call_seconds, "error": None}
            if row["do_bench_us"]:
                row["do_bench_over_profiler"] = row["do_bench_us"] / row["profiler_gpu_us"]
            rows.append(row)
            print(f"{name:16s} {shape.key:34s} {summary['gpu_events']:3d} GPU events "
                  f"{summary['gpu_time_us']:9.1f} us profiler, {row['do_bench_us'] or float('nan'):9.1f} us do_bench "
                  f"({time.perf_counter() - started:.1f} s)", flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", nargs="+", default=list(STAGES), choices=list(STAGES))
    parser.add_argument("--sweep", action="store_true", help="also record the replay shape sweep")
    parser.add_argument("--out", type=Path, default=REPLAY_DIR)
    parser.add_argument("--benchmark", type=Path, default=None,
                        help="CSV of profiler vs do_bench (default benchmarks/results/profiler_vs_do_bench_<gpu>.csv)")
    args = parser.parse_args(argv)

    import torch
    if not torch.cuda.is_available():
        print("tools/record.py profiles live and needs a CUDA GPU; this machine has none.", file=sys.stderr)
        return 2
    command = "python tools/record.py " + " ".join(argv if argv is not None else sys.argv[1:])

    def shapes_for(stage: str) -> list[Shape]:
        return SWEEP if args.sweep and stage in SWEEP_STAGES else [DEFAULT_SHAPE]

    table = record(args.stages, shapes_for, args.out, command)
    slug = gpu_slug(torch.cuda.get_device_name(0))
    out = args.benchmark or BENCHMARK_DIR / f"profiler_vs_do_bench_{slug}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
