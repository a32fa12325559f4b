"""Record the training chapter's replay set live on a GPU:  python tools/record_training.py

Writes under notebooks/traces/<gpu>/training/:
- <stage>__<shape>.json.gz: one profiled training step per stage (capture(..., step=TRAINING_STEP):
  3 warm-up steps, schedule(wait=1, warmup=1, active=3); forward in attn_fwd, backward in
  attn_bwd), provenance inside, with what autograd kept between forward and backward;
- memory.json: per stage the peak memory of one training step at seq 512, 1024, ... until the
  GPU runs out of memory (the largest seq that fits is the last that ran), the in-place masking
  experiment, the snapshots' marks, and the run's provenance;
- snapshot__<stage>__<shape>.pickle.gz: the allocator's history of one step (naive, flash) at a
  modest shape, as torch.cuda.memory._dump_snapshot writes it (gzipped);
- ncu/backward__<shape>.csv: Nsight Compute's counters of each stage's backward, all stages in
  one ncu process, a marker kernel (torch.cuda._sleep's spin_kernel) before each; the stages in
  order in ncu/backward__<shape>.json.
and benchmarks/results/training_step_<gpu>.csv: the profiler's GPU time of one step against
triton's do_bench.

Every phase writes as it goes and checks `--budget` (seconds), so a run cut short keeps what
it did. Each stage runs in its own try: one failing stage does not lose the others.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import shlex
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.training import sources_step as training  # noqa: E402
from helpers.core.replay_set import ReplaySet  # noqa: E402
from helpers.core.stages import DEFAULT_SHAPE, STAGES, Shape, stages_where  # noqa: E402
sys.path.insert(0, str(ROOT / "tools"))
from validate_recordings import refuse_invalid  # noqa: E402 - the raw checks of a saved trace

SNAPSHOT_SHAPE = training.SNAPSHOT_SHAPE
SNAPSHOT_STAGES = stages_where(snapshot=True)   # the registry's facts (Stage.snapshot)
NCU_STAGES = stages_where(training_ncu=True)   # the registry's facts (Stage.training_ncu)
LADDER_CAP = 65536


class Run:
    def __init__(self, budget: float, out: Path, command: str):
        self.started = time.perf_counter()
        self.budget = budget
        self.out = out
        self.memory: dict = {"command": command, "phases": {}}

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.started)

    def save(self) -> None:
        (self.out / "memory.json").write_text(json.dumps(self.memory, indent=1, default=str))

    def phase(self, name: str, seconds: float) -> None:
        self.memory["phases"][name] = round(seconds, 1)
        print(f"== {name} done in {seconds:.1f} s, {self.left():.0f} s left", flush=True)
        self.save()


def record_traces(run: Run, stages, bench_csv: Path) -> None:
    import pandas as pd

    from helpers.sources.capture import capture
    from helpers.training.sources_step import TRAINING_STEP
    rows = []
    for name in stages:
        if run.left() < 60:
            print(f"skip trace {name}: out of time", flush=True)
            break
        started = time.perf_counter()
        try:
            prof = capture(name, DEFAULT_SHAPE, step=TRAINING_STEP, command=run.memory["command"])
            path = refuse_invalid(prof.save(run.out / f"{name}__{DEFAULT_SHAPE.key}.json.gz"), prof)
            s = prof.summary()
            held = prof.provenance.extra["training"]
            rows.append({"stage": name, "shape": DEFAULT_SHAPE.key, "gpu": prof.provenance.gpu,
                         "gpu_events": s["gpu_events"], "profiler_gpu_us": s["gpu_time_us"],
                         "do_bench_us": prof.provenance.do_bench_us,
                         "cuda_event_us": prof.provenance.cuda_event_time_us,
                         "peak_step_mb": (prof.provenance.peak_memory_bytes - prof.provenance.memory_before_bytes) / 2**20,
                         "held_mb": held["held_bytes"] / 2**20, "trace_kb": round(path.stat().st_size / 1024, 1),
                         "first_call_s": prof.provenance.first_call_seconds})
            print(f"{name:16s} {s['gpu_events']:4d} GPU events {s['gpu_time_us']:9.1f} us profiler "
                  f"{prof.provenance.do_bench_us or float('nan'):9.1f} us do_bench, held {held['held_bytes'] / 2**20:.0f} MiB "
                  f"({time.perf_counter() - started:.1f} s)", flush=True)
        except Exception as err:  # noqa: BLE001
            traceback.print_exc()
            rows.append({"stage": name, "shape": DEFAULT_SHAPE.key, "error": repr(err)[:300]})
        training.free_memory()
        bench_csv.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(bench_csv, index=False)


def record_ladders(run: Run, stages, reserve: float) -> None:
    ladders = run.memory.setdefault("ladder", [])
    for i, name in enumerate(stages):
        left = run.left() - reserve
        if left < 10:
            print(f"skip ladder {name}: out of time", flush=True)
            run.memory.setdefault("ladder_skipped", []).append(name)
            continue
        # an even share of what is left for the stages still to go, more for the compiled ones
        share = left / (len(stages) - i) * (2 if STAGES[name].compiled else 1)
        started = time.perf_counter()
        try:
            rows = training.seq_ladder(name, DEFAULT_SHAPE, cap=LADDER_CAP, budget_s=min(share, left),
                                       slow_s=min(12.0, share / 3))
        except Exception as err:  # noqa: BLE001
            traceback.print_exc()
            rows = [{"stage": name, "status": "error", "error": repr(err)[:300]}]
        ladders.extend(rows)
        last = rows[-1]
        print(f"ladder {name:16s} " + " ".join(f"{r['seq']}:{r.get('peak_bytes', 0) / 2**30:.2f}G:{r['status']}"
                                                   for r in rows if "seq" in r)
              + f" stopped={last.get('stopped', last['status'])} ({time.perf_counter() - started:.1f} s)", flush=True)
        training.free_memory()
        run.save()


def record_snapshots(run: Run) -> None:
    marks = run.memory.setdefault("snapshots", {})
    for name in SNAPSHOT_STAGES:
        try:
            data, mark = training.memory_snapshot(name, SNAPSHOT_SHAPE)
            path = run.out / f"snapshot__{name}__{SNAPSHOT_SHAPE.key}.pickle.gz"
            path.write_bytes(gzip.compress(data, 9))
            marks[name] = mark | {"shape": SNAPSHOT_SHAPE.key, "pickle_bytes": len(data),
                                  "gzip_bytes": path.stat().st_size}
            print(f"snapshot {name}: {len(data) / 1024:.0f} KiB, {path.stat().st_size / 1024:.0f} KiB gzipped", flush=True)
        except Exception as err:  # noqa: BLE001
            traceback.print_exc()
            marks[name] = {"error": repr(err)[:300]}
        training.free_memory()


def record_ncu(run: Run, timeout: float) -> None:
    from helpers.sources import ncu
    exe = ncu.find_ncu()
    if exe is None:
        run.memory["ncu"] = {"error": "ncu not found"}
        return
    metrics = json.loads((run.out.parent / "ncu" / "provenance.json").read_text())["metrics"]
    out = run.out / "ncu"
    out.mkdir(exist_ok=True)
    name = f"backward__{DEFAULT_SHAPE.key}"
    log = out / f"{name}.json"
    rep = out / f"{name}.ncu-rep"
    call = f"from helpers.training import sources_step as training; training.profile_backwards({','.join(NCU_STAGES)!r}, {DEFAULT_SHAPE.key!r}, {str(log)!r})"
    command = [exe, "--profile-from-start", "off", "--clock-control", "none", "--metrics", ",".join(metrics),
               "-f", "-o", str(rep.with_suffix("")), sys.executable, "-c", call]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=ncu._env(), check=False)
        exported = subprocess.run([exe, "--import", str(rep), "--csv", "--page", "raw"], capture_output=True,
                                  text=True, check=False, timeout=60)
        (out / f"{name}.csv").write_text(exported.stdout)
        stages = json.loads(log.read_text()) if log.exists() else []
        run.memory["ncu"] = {"returncode": done.returncode, "stages": stages, "ncu": ncu.version(exe),
                             "seconds": round(time.perf_counter() - started, 1),
                             "command": shlex.join([*command[:6], "<metrics>", *command[7:]]),
                             "export_command": f"{exe} --import {rep.name} --csv --page raw",
                             "tail": (done.stdout + done.stderr)[-1500:]}
        if rep.exists() and rep.stat().st_size > 2 * 2**20:
            rep.unlink()  # the report embeds every kernel's module: tens of MB; the CSV keeps the counters
        print(f"ncu backward: {stages}, rc {done.returncode}, {time.perf_counter() - started:.0f} s", flush=True)
    except Exception as err:  # noqa: BLE001
        traceback.print_exc()
        run.memory["ncu"] = {"error": repr(err)[:500]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", nargs="+", default=list(training.TRAINING_STAGES))
    parser.add_argument("--budget", type=float, default=420.0, help="seconds for the whole run")
    parser.add_argument("--skip", nargs="*", default=[], choices=["traces", "ladder", "snapshots", "ncu", "inplace"])
    args = parser.parse_args(argv)

    import torch
    if not torch.cuda.is_available():
        print("tools/record_training.py profiles live and needs a CUDA GPU; this machine has none.", file=sys.stderr)
        return 2
    from helpers.sources.capture import device_provenance
    command = "python tools/record_training.py " + " ".join(argv if argv is not None else sys.argv[1:])
    replay_set = ReplaySet.of_device(torch.cuda.get_device_name(0))
    slug, out = replay_set.gpu, replay_set.dir("training")
    out.mkdir(parents=True, exist_ok=True)
    run = Run(args.budget, out, command)
    run.memory["provenance"] = device_provenance("training", DEFAULT_SHAPE, command) | {
        "total_memory_bytes": torch.cuda.get_device_properties(0).total_memory}
    run.save()

    t = time.perf_counter()
    if "inplace" not in args.skip:
        run.memory["inplace"] = {"cpu": training.inplace_under_autograd(device="cpu"),
                                 "cuda": training.inplace_under_autograd(
                                     Shape(batch=1, heads=2, seq=256, head_dim=64), device="cuda")}
        run.phase("inplace", time.perf_counter() - t)
    t = time.perf_counter()
    if "snapshots" not in args.skip:
        record_snapshots(run)
        run.phase("snapshots", time.perf_counter() - t)
    t = time.perf_counter()
    if "traces" not in args.skip:
        record_traces(run, args.stages, ROOT / "benchmarks" / "results" / f"training_step_{slug}.csv")
        run.phase("traces", time.perf_counter() - t)
    t = time.perf_counter()
    if "ladder" not in args.skip:
        # the sdpa stages first (fast), the compiled ones last (each new seq may recompile);
        # what ncu needs is kept back
        order = sorted(args.stages, key=lambda s: STAGES[s].compiled)
        record_ladders(run, order, reserve=0 if "ncu" in args.skip else 75)
        run.phase("ladder", time.perf_counter() - t)
    t = time.perf_counter()
    if "ncu" not in args.skip and run.left() > 30:
        record_ncu(run, timeout=max(30, run.left() - 5))
        run.phase("ncu", time.perf_counter() - t)
    run.memory["date_end"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    run.save()
    print(f"wrote {out} in {time.perf_counter() - run.started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
