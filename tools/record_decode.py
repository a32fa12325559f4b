"""Record decode on a GPU (issue 39):  python tools/record_decode.py [--out DIR] [--quick]

One attention layer at decode (one new query per sequence, bf16, 32 heads of 128, against a KV
cache), recorded with torch.profiler into the replay set's decode/ folder:

* sweep     SDPA pinned to each backend, SDPA left to choose, the naive code: batch 1, 8, 64 ×
            KV 1k..32k; one Kineto trace per point (3 profiled steps of one call each) and the
            caller's timer (helpers.sources.timers.caller_loop); `split`: sdpa_flash at more
            batches, traces only, for the point where it stops splitting the KV;
* trap      is_causal=True at decode (seqlen_q 1 != seqlen_k): which backend runs, pinned and not,
            and its max abs error against the math backend's correct (is_causal=False) answer;
* step      a decode step of several small layers (RMSNorm, QKV, rotary, cache write, SDPA, out
            projection), batch 1: eager, one torch.cuda.CUDAGraph replay, and (part `compiled`)
            torch.compile(mode="reduce-overhead"); trace, caller's timer and GPU busy time;
* flex      torch.compile(flex_attention) at decode (its flex_decoding template);
* ncu       Nsight Compute's dram__bytes_read/write.sum and time of the attention kernels at a few
            (backend, batch, KV) points, one profiled process, split by NVTX range.

Writes <out>/decode/decode.json (what was run, every timer, every failure, the time per part) beside
the traces (<out>/decode/traces/*.json.gz) and ncu's CSVs (<out>/decode/ncu/*.csv). <out> is the
replay set (default notebooks/traces/<gpu_slug>). Each part runs in its own try, inside a time
budget (--budget s): a part that would overrun is skipped and said so.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import subprocess
import sys
import time
import traceback
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS.parent))   # run as a file: this checkout's helpers

from helpers.core.stages import PINNED_FUSED, get_stage, stages_where  # noqa: E402
from helpers.decode.sources import FLEX_BLOCKMASK  # noqa: E402

DECODE_DIR = "decode"                      # under the replay set (helpers.core.replay_set.KINDS["decode"])
BATCHES = (1, 8, 64)
KV_LENS = (1024, 4096, 16384, 32768)
# the registry's facts: every stage that `decodes`; the compiled ones (flex) have a part of their own
DECODES = stages_where(decodes=True)
SWEEP_BACKENDS = tuple(s for s in DECODES if not get_stage(s).compiled)
COMPILED_BACKENDS = tuple(s for s in DECODES if get_stage(s).compiled)
SDPA_CALLS = tuple(s for s in DECODES if get_stage(s).sdpa_backend or get_stage(s).dispatched)
SPLIT_BATCHES = (1, 2, 3, 4, 6, 8, 16)     # sdpa_flash: where split-KV stops
SPLIT_KV = (1024, 32768)
TRAP_POINTS = ((1, 4096), (8, 4096))
STEP_LAYERS, STEP_CACHE = 4, 1024
# flex compiles per shape (6.6 s on an H200, PROBE.md) until torch.compile turns the shape dynamic:
# the most telling points first, inside FLEX_SECONDS
FLEX_POINTS = ((1, 4096), (8, 4096), (64, 4096), (1, 32768), (8, 32768), (64, 32768), (1, 1024), (8, 1024),
               (64, 1024), (1, 16384), (8, 16384), (64, 16384))
FLEX_BLOCKMASK_POINTS = ((1, 4096), (1, 32768), (8, 32768))
FLEX_SECONDS = 35.0
SWEEP_SECONDS = 75.0
REFERENCE_BYTES = 4.5e9   # KV bytes up to which the float32 reference is computed (its copies are 2x)
NCU_POINTS = ((1, 4096), (1, 32768), (8, 32768), (64, 4096), (64, 32768))
# ncu: the fused kernels that read the KV once (SDPA's choice runs one of them), and the naive code
NCU_BACKENDS = tuple(s for s in DECODES if (get_stage(s).fused and not get_stage(s).dispatched)
                     or not (get_stage(s).fused or get_stage(s).sdpa_backend))
NCU_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
               "launch__grid_size", "launch__block_size")
PROFILED = dict(wait=1, warmup=1, active=3)   # as every stage of the book (helpers.sources.capture)
LOOP_REPEATS = 5
# (part, seconds it needs at least to start); parts run in this order
PARTS = ("sweep", "trap", "step", "split", "compiled", "flex", "ncu")
MIN_SECONDS = {"sweep": 20, "trap": 5, "step": 10, "split": 8, "flex": 20, "ncu": 25, "compiled": 25}
JOB_DONE = "record_decode job done: "
NCU_SECONDS = 60.0     # ncu's profiled process at most
# --cpu-smoke: the structure run on a machine without CUDA (CPU tensors, CPU activity only, the
# trace check and the CUDA-event timer left out); never a recording
SMOKE = {"on": False}


def point_name(backend: str, batch: int, kv: int) -> str:
    """A decode point's file stem: '<backend>__b<batch>_kv<kv>'."""
    return f"{backend}__b{batch}_kv{kv}"


def log(message: str) -> None:
    print(message, flush=True)


class Budget:
    """The time left to the whole run; a part that needs more than is left is skipped."""

    def __init__(self, seconds: float):
        self.started, self.seconds = time.perf_counter(), seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float:
        return self.seconds - self.elapsed()


# --- measuring one callable ------------------------------------------------------------------------

def gpu_busy_per_step(events: list[dict]) -> tuple[float, int]:
    """(union of the intervals of the GPU events launched inside the profiled steps, per step, in
    µs; the steps): the GPU's busy time per call."""
    # Kineto writes each step twice: on the CPU lane (user_annotation) and on the GPU lane
    # (gpu_user_annotation); count it once
    steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") != "gpu_user_annotation"]
    # a GPU event counts for the step whose call launched it (its correlation id), not for when it
    # ran: where the GPU runs behind the CPU, the warm-up step's kernel runs inside the recorded
    # window (an H100's cuDNN at batch 64, KV 32,768: four 10.7 ms kernels in three steps, 2026-12-07)
    spans_of = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in steps]
    launched = {e["args"]["correlation"] for e in events
                if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "correlation" in e.get("args", {})
                and any(a <= float(e["ts"]) <= b for a, b in spans_of)}
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))) for e in events
                   if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                   and e.get("args", {}).get("correlation") in launched)
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b > end:
            total += b - max(a, end)
            end = b
    return total / max(len(steps), 1), len(steps)


def measure(name: str, fn, folder: Path, facts: dict, *, loop: bool = True, record_shapes: bool = True) -> dict:
    """Warm `fn` up, profile it (schedule wait=1, warmup=1, active=3: one call per step), save the
    trace (checked by tools/validate_recordings.py), and time it with the caller's loop."""
    import torch
    from torch.profiler import ProfilerActivity

    from helpers.core.profile import Profile, Provenance
    from helpers.sources.capture import profile_steps
    from helpers.sources.provenance import device_facts, now
    from helpers.sources.timers import caller_loop
    from validate_recordings import refuse_invalid

    started = time.perf_counter()
    smoke = SMOKE["on"]
    sync = (lambda: None) if smoke else torch.cuda.synchronize
    for _ in range(3):
        fn()
    sync()
    activities = [ProfilerActivity.CPU] if smoke else [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    document = profile_steps(fn, PROFILED, activities, sync, record_shapes=record_shapes)
    events = document["traceEvents"]
    record = {"name": name, **facts}
    if loop:
        timed = smoke_loop(fn) if smoke else caller_loop(fn, repeats=LOOP_REPEATS)
        record |= {"loop_us": timed["loop_us"], "loop_calls": timed["loop_calls"]}
    busy, steps = gpu_busy_per_step(events)
    record |= {"busy_us": busy, "steps": steps}
    fields = dict(stage=f"decode:{name}", shape={}, **device_facts(), date=now(),
                  command="python tools/record_decode.py", loop_us=record.get("loop_us"),
                  loop_calls=record.get("loop_calls"), loop_busy_us=busy, timers="live",
                  extra={"decode": record}, source="code")
    prof = Profile(events, Provenance(**fields), annotation=None)
    path = folder / "traces" / f"{name}.json.gz"
    prof.save(path)
    if not smoke:
        refuse_invalid(path, prof)
    record["trace"] = f"traces/{path.name}"
    kernels = [e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    loop_us = sorted(record.get("loop_us") or [float("nan")])[len(record.get("loop_us") or [0]) // 2]
    log(f"  {name:36s} {len(kernels) / max(steps, 1):5.1f} kernels/step  busy {busy:9.1f} us  "
        f"loop {loop_us:9.1f} us/call  ({time.perf_counter() - started:.1f} s)")
    return record


def smoke_loop(fn, calls: int = 5) -> dict:
    """--cpu-smoke's stand-in for the caller's timer (no CUDA events on a CPU)."""
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return {"loop_us": [(time.perf_counter() - started) * 1e6 / calls], "loop_calls": calls}


def device() -> str:
    return "cpu" if SMOKE["on"] else "cuda"


def free_cuda() -> None:
    import gc

    import torch
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# --- the parts ------------------------------------------------------------------------------------

def part_sweep(doc: dict, folder: Path, budget: Budget, quick: bool, backends=SWEEP_BACKENDS,
               points=None, loop: bool = True, key: str = "sweep", cap: float | None = None) -> None:
    from helpers.decode import sources
    points = points or [(b, kv) for kv in KV_LENS for b in BATCHES]
    if quick:
        points = [p for p in points if p[0] <= 8 and p[1] <= 4096][:3]
    started = time.perf_counter()
    for batch, kv in points:
        if budget.left() < 5 or (cap is not None and time.perf_counter() - started > cap):
            doc["skipped"].append(f"{key}: b{batch} kv{kv} and after (time budget)")
            log(f"  {key}: out of time at b{batch} kv{kv}")
            return
        try:
            x = sources.kv_cache(batch, kv, device=device())
        except Exception as err:  # noqa: BLE001 - out of memory: the next point may fit
            doc["failed"][f"{key} b{batch} kv{kv}"] = repr(err)[:300]
            log(f"  FAILED inputs b{batch} kv{kv}: {err!r}"[:300])
            free_cuda()
            continue
        right = None
        if 2 * x["k"].numel() * x["k"].element_size() <= REFERENCE_BYTES:
            try:   # the math backend in float32: every backend's answer is compared with it
                right = sources.reference(x)
            except Exception as err:  # noqa: BLE001
                log(f"  no reference at b{batch} kv{kv}: {type(err).__name__}")
                free_cuda()
        for backend in backends:
            name = point_name(backend, batch, kv)
            facts = {"backend": backend, "batch": batch, "kv": kv, "heads": sources.HEADS,
                     "head_dim": sources.HEAD_DIM, "dtype": "bfloat16", "is_causal": False,
                     "kv_bytes": 2 * x["k"].numel() * x["k"].element_size()}
            try:
                with sources.backend_context(backend):
                    fn = sources.attention_call(backend, x)
                    record = measure(name, fn, folder, facts, loop=loop, record_shapes=False)
                    out = fn()
                record["max_abs_error"] = None if right is None else float((out.float() - right).abs().max())
                doc[key].append(record)
            except Exception as err:  # noqa: BLE001 - one backend refusing must not lose the others
                doc["failed"][name] = (type(err).__name__ + ": " + str(err))[:400]
                log(f"  FAILED {name}: {type(err).__name__}: {str(err)[:200]}")
            free_cuda()
        del x, right
        free_cuda()


def part_sweep_capped(doc: dict, folder: Path, budget: Budget, quick: bool) -> None:
    part_sweep(doc, folder, budget, quick, cap=SWEEP_SECONDS)


def part_split(doc: dict, folder: Path, budget: Budget, quick: bool) -> None:
    points = [(b, kv) for kv in SPLIT_KV for b in SPLIT_BATCHES if b not in BATCHES]
    part_sweep(doc, folder, budget, quick, backends=PINNED_FUSED,
               points=points[:2] if quick else points, loop=False, key="split")


def part_flex(doc: dict, folder: Path, budget: Budget, quick: bool) -> None:
    started = time.perf_counter()
    points = FLEX_POINTS[:1] if quick else FLEX_POINTS
    part_sweep(doc, folder, budget, quick, backends=COMPILED_BACKENDS, points=list(points), key="flex", cap=FLEX_SECONDS)
    points = FLEX_BLOCKMASK_POINTS[:1] if quick else FLEX_BLOCKMASK_POINTS
    part_sweep(doc, folder, budget, quick, backends=(FLEX_BLOCKMASK,), points=list(points), key="flex",
               cap=max(FLEX_SECONDS + 10 - (time.perf_counter() - started), 5))
    doc["flex_seconds"] = time.perf_counter() - started


def part_trap(doc: dict, folder: Path, budget: Budget, quick: bool) -> None:
    """is_causal=True with one query against a longer KV: which backend runs, and how wrong."""
    from helpers.decode import sources
    for batch, kv in TRAP_POINTS[:1] if quick else TRAP_POINTS:
        x = sources.kv_cache(batch, kv, device=device())
        right, upper_left = sources.reference(x, False), sources.reference(x, True)
        for backend in SDPA_CALLS:
            name = point_name(backend, batch, kv).replace("__", "__causal_", 1)
            facts = {"backend": backend, "batch": batch, "kv": kv, "heads": sources.HEADS,
                     "head_dim": sources.HEAD_DIM, "dtype": "bfloat16", "is_causal": True}
            try:
                with sources.backend_context(backend):
                    fn = sources.attention_call(backend, x, is_causal=True)
                    out = fn().float()
                    record = measure(name, fn, folder, facts, loop=False, record_shapes=False)
                record |= {"ran": True, "max_abs_error": float((out - right).abs().max()),
                           "max_abs_error_vs_upper_left": float((out - upper_left).abs().max())}
            except Exception as err:  # noqa: BLE001 - a pinned backend refusing is the finding
                record = {"name": name, **facts, "ran": False, "error": (type(err).__name__ + ": " + str(err))[:400]}
                log(f"  {name}: refused: {record['error'][:160]}")
            doc["trap"].append(record)
            free_cuda()
        del x, right, upper_left
        free_cuda()


def part_step(doc: dict, folder: Path, budget: Budget, quick: bool, modes=("eager", "graph")) -> None:
    import torch

    from helpers.decode import sources
    for mode in modes:
        started = time.perf_counter()
        name = f"step__{mode}"
        try:
            fn, facts = sources.decode_step(mode, layers=2 if quick else STEP_LAYERS, cache_len=STEP_CACHE,
                                            device=device())
            fn()   # the compile, for "compiled"; a plain call otherwise
            if not SMOKE["on"]:
                torch.cuda.synchronize()
            facts["first_call_seconds"] = time.perf_counter() - started
            doc["step"].append(measure(name, fn, folder, facts))
        except Exception as err:  # noqa: BLE001
            traceback.print_exc()
            doc["failed"][name] = (type(err).__name__ + ": " + str(err))[:400]
        fn = None
        free_cuda()


def part_compiled(doc: dict, folder: Path, budget: Budget, quick: bool) -> None:
    part_step(doc, folder, budget, quick, modes=("compiled",))


# --- Nsight Compute --------------------------------------------------------------------------------

def ncu_jobs(quick: bool) -> list[dict]:
    points = NCU_POINTS[:1] if quick else NCU_POINTS
    backends = NCU_BACKENDS[:2] if quick else NCU_BACKENDS
    jobs = [{"name": point_name(b, batch, kv), "backend": b, "batch": batch, "kv": kv}
            for batch, kv in points for b in backends]
    # flex compiles in the profiled process (from the caches this run filled): last, so that the others are in
    return sorted(jobs, key=lambda j: get_stage(j["backend"]).compiled)


def ncu_child(jobs_file: str) -> int:
    """Run in the process ncu profiles: each job warmed up, then one call between
    cudaProfilerStart/Stop inside an NVTX range named for it; a line per job for the parent."""
    import torch

    from helpers.decode import sources
    cudart = torch.cuda.cudart()
    torch.set_grad_enabled(False)
    plan = json.loads(Path(jobs_file).read_text())
    for job in plan["jobs"]:
        if time.time() > plan["deadline"]:
            print(f"job skipped {job['name']}: out of time", flush=True)
            continue
        try:
            x = sources.kv_cache(job["batch"], job["kv"])
            with sources.backend_context(job["backend"]):
                fn = sources.attention_call(job["backend"], x)
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
                cudart.cudaProfilerStart()
                torch.cuda.nvtx.range_push(job["name"])
                fn()
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
                cudart.cudaProfilerStop()
            print(f"{JOB_DONE}{job['name']}", flush=True)
        except Exception as err:  # noqa: BLE001
            print(f"job failed {job['name']}: {type(err).__name__}: {str(err)[:200]}", flush=True)
        x = fn = None
        free_cuda()
    return 0


def ranges_present(renamed: str, names: list[str]) -> list[str]:
    """The jobs that have at least one kernel in ncu's export renamed by NVTX range (a job whose
    call failed in the child has none, and split_by_range refuses a job without rows)."""
    import csv
    import io
    rows = [r for r in csv.reader(io.StringIO(renamed)) if r]
    start = next((i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r), None)
    if start is None:
        return []
    col = rows[start].index("Kernel Name")
    labels = {r[col] for r in rows[start + 2:] if len(r) > col}
    return [n for n in names if any(label == n or label.startswith(n + "/") for label in labels)]


def part_ncu(doc: dict, folder: Path, budget: Budget, quick: bool) -> None:
    from helpers.sources import ncu as ncu_source
    exe = ncu_source.find_ncu()
    if exe is None:
        doc["failed"]["ncu"] = "ncu is not on PATH"
        log("  ncu is not on PATH: skipped")
        return
    out = folder / "ncu"
    out.mkdir(parents=True, exist_ok=True)
    jobs = ncu_jobs(quick)
    compiled = {r["backend"] for r in doc["flex"]}   # a compiled stage that did not compile in this process is left out
    jobs = [j for j in jobs if not get_stage(j["backend"]).compiled or j["backend"] in compiled]
    jobs_file = out / "jobs.json"
    timeout = min(NCU_SECONDS, max(20.0, budget.left() - 5))
    # the child starts no job past its own limit, so that ncu still writes its report in time
    jobs_file.write_text(json.dumps({"jobs": jobs, "deadline": time.time() + timeout - 12}))
    rep = out / "decode_ncu"
    command = [exe, "--nvtx", "--target-processes", "application-only", "--profile-from-start", "off",
               "--clock-control", "none", "--metrics", ",".join(NCU_METRICS), "-f", "-o", str(rep),
               sys.executable, str(TOOLS / "record_decode.py"), "--ncu-child", str(jobs_file)]
    done: list[str] = []
    said: list[str] = []
    # its own process group: at the time limit, ncu and the process it profiles are stopped together
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True, env=os.environ | {"TORCHINDUCTOR_COMPILE_THREADS": "1"})
    try:
        output, _ = run.communicate(timeout=timeout)
        returncode = run.returncode
    except subprocess.TimeoutExpired:
        import signal
        os.killpg(run.pid, signal.SIGKILL)
        output, _ = run.communicate()
        said.append(f"ncu ran past {timeout:.0f} s and was stopped")
        returncode = -1
    for line in (output or "").splitlines():
        if line.startswith(JOB_DONE):
            done.append(line[len(JOB_DONE):])
        else:
            said.append(line)
    report = rep.with_suffix(".ncu-rep")
    doc["ncu"] = {"command": shlex.join(command), "ncu": ncu_source.version(exe), "metrics": list(NCU_METRICS), "returncode": returncode,
                  "jobs": [j["name"] for j in jobs], "done": done, "tables": {},
                  "said": [line for line in said if "==ERROR==" in line or "==WARNING==" in line or "failed" in line or "skipped" in line][-20:]}
    if not report.exists():
        doc["failed"]["ncu"] = "\n".join(said[-15:])[-1500:]
        log(f"  ncu wrote no report (exit {returncode}): " + " | ".join(said[-5:]))
        return
    exports = []
    for extra in ([], ["--print-nvtx-rename", "kernel"]):
        exported = subprocess.run([exe, "--import", str(report), "--csv", "--page", "raw", *extra],
                                  capture_output=True, text=True, check=False)
        exports.append(exported.stdout)
    (out / "decode_ncu.raw.csv").write_text(exports[0])
    names = ranges_present(exports[1], [j["name"] for j in jobs])
    try:
        parts = ncu_source.split_by_range(exports[0], exports[1], names)
    except Exception as err:  # noqa: BLE001 - the raw export stays for a reader of the log
        doc["failed"]["ncu split"] = str(err)[:500]
        log(f"  ncu split failed: {err}")
        return
    for name, text in parts.items():
        (out / f"{name}.csv").write_text(text)
        doc["ncu"]["tables"][name] = f"ncu/{name}.csv"
    (out / "decode_ncu.raw.csv").unlink()
    report.unlink()   # a report embeds every kernel's module (MBs); the CSVs keep the counters
    jobs_file.unlink()
    log(f"  ncu: {len(parts)} of {len(jobs)} jobs recorded")


# --- main -----------------------------------------------------------------------------------------

def ceilings_copy_roof(root: Path) -> dict | None:
    """The set's measured copy roof (ceilings.json beside decode/), where it is there already."""
    try:
        rows = json.loads((root / "ceilings.json").read_text())["ceilings"]
        return next(r for r in rows if "copy" in r["ceiling"])
    except (OSError, ValueError, KeyError, StopIteration):
        return None


def recount(folder: Path) -> int:
    """Recompute `busy_us` and `steps` of every record of DECODE_DIR/decode.json from its saved trace
    with `gpu_busy_per_step` as it is now, in decode.json and in each trace's provenance: a set
    recorded before a fix of that count is corrected without a GPU (the H100's of 2026-12-07: each
    step counted twice, its CPU-lane and GPU-lane rows; a warm-up call's kernel counted in the window)."""
    doc_path = folder / "decode.json"
    doc = json.loads(doc_path.read_text())
    changed = 0
    for part, records in doc.items():
        if not isinstance(records, list):
            continue
        for rec in records:
            if not isinstance(rec, dict) or not rec.get("trace") or "busy_us" not in rec:
                continue
            path = folder / rec["trace"]
            with gzip.open(path, "rt") as f:
                trace = json.load(f)
            busy, steps = gpu_busy_per_step(trace["traceEvents"])
            if (rec["busy_us"], rec.get("steps")) != (busy, steps):
                changed += 1
            rec |= {"busy_us": busy, "steps": steps}
            trace["provenance"]["loop_busy_us"] = busy
            if isinstance(trace["provenance"].get("extra", {}).get("decode"), dict):
                trace["provenance"]["extra"]["decode"] |= {"busy_us": busy, "steps": steps}
            with gzip.open(path, "wt") as f:
                json.dump(trace, f)
    doc.setdefault("provenance", {})["recounted"] = (
        f"busy_us and steps recomputed from the saved traces by `python tools/record_decode.py --recount` "
        f"({changed} records changed)")
    doc_path.write_text(json.dumps(doc, indent=1, default=str))
    log(f"recounted {doc_path}: {changed} records changed")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=None,
                        help="the replay set's folder (default notebooks/traces/<gpu_slug>)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few points, 2 layers")
    parser.add_argument("--budget", type=float, default=235.0, help="seconds for the whole run")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--ncu-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cpu-smoke", action="store_true", help="the structure on a CPU (needs --out; no recording)")
    parser.add_argument("--recount", type=Path, default=None, metavar="DECODE_DIR",
                        help="recompute each record's busy time and steps from its saved trace (no GPU)")
    args = parser.parse_args(argv)
    if args.ncu_child:
        return ncu_child(args.ncu_child)
    if args.recount:
        return recount(args.recount)

    budget = Budget(60.0 if args.quick and args.budget == 235.0 else args.budget)
    import torch
    SMOKE["on"] = args.cpu_smoke
    if args.cpu_smoke and args.out is None:
        parser.error("--cpu-smoke writes only where --out says")
    if not torch.cuda.is_available() and not args.cpu_smoke:
        print("tools/record_decode.py profiles live and needs a CUDA GPU; this machine has none.", file=sys.stderr)
        return 2
    from helpers.core.replay_set import ReplaySet, gpu_slug
    from helpers.sources.provenance import device_facts, now
    torch.set_grad_enabled(False)
    slug = "cpu-smoke" if args.cpu_smoke else gpu_slug(torch.cuda.get_device_name(0))
    root = args.out or ReplaySet(slug).folder
    folder = root / DECODE_DIR
    (folder / "traces").mkdir(parents=True, exist_ok=True)
    facts = device_facts()
    try:
        import triton
        facts["triton"] = triton.__version__
    except ImportError:
        facts["triton"] = None
    doc = {"provenance": facts | {"date": now(), "gpu_slug": slug,
                                  "command": "python tools/record_decode.py " + " ".join(argv if argv is not None else sys.argv[1:])},
           "method": {"loop": "helpers.sources.timers.caller_loop: N back-to-back calls between two CUDA events / N",
                      "loop_repeats": LOOP_REPEATS, "profiled": PROFILED,
                      "busy": "union of the GPU events' intervals in the profiled steps, per step",
                      "ncu": "ncu --clock-control none (caches flushed between kernels: ncu's default)"},
           "config": {"batches": BATCHES, "kv_lens": KV_LENS, "backends": SWEEP_BACKENDS, "split_batches": SPLIT_BATCHES,
                      "split_kv": SPLIT_KV, "step_layers": 2 if args.quick else STEP_LAYERS, "step_cache": STEP_CACHE,
                      "quick": args.quick},
           "copy_roof": ceilings_copy_roof(root),
           "sweep": [], "split": [], "flex": [], "trap": [], "step": [], "ncu": {},
           "failed": {}, "skipped": [], "seconds": {}}

    def save() -> None:
        (folder / "decode.json").write_text(json.dumps(doc, indent=1))

    runners = {"sweep": part_sweep_capped, "trap": part_trap, "step": part_step, "split": part_split,
               "flex": part_flex, "ncu": part_ncu, "compiled": part_compiled}
    for part in args.parts:
        if budget.left() < (5 if args.quick else MIN_SECONDS[part]):
            doc["skipped"].append(f"{part} (time budget: {budget.left():.0f} s left)")
            log(f"== {part}: skipped, {budget.left():.0f} s left")
            continue
        started = time.perf_counter()
        log(f"== {part} (at {budget.elapsed():.0f} s)")
        try:
            runners[part](doc, folder, budget, args.quick)
        except Exception as err:  # noqa: BLE001 - one part failing must not lose the others
            traceback.print_exc()
            doc["failed"][part] = (type(err).__name__ + ": " + str(err))[:500]
        doc["seconds"][part] = round(time.perf_counter() - started, 1)
        log(f"== {part}: {doc['seconds'][part]} s")
        save()
    save()
    log(f"wrote {folder}: {len(doc['sweep'])} sweep, {len(doc['split'])} split, {len(doc['flex'])} flex, "
        f"{len(doc['trap'])} trap, {len(doc['step'])} step records, {len(doc['ncu'].get('tables', {}))} ncu tables, "
        f"{len(doc['failed'])} failed, in {budget.elapsed():.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
