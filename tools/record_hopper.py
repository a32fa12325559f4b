"""Record what Hopper adds, per kernel (on a GPU with ncu):  python tools/record_hopper.py --out DIR

For every stage the registry marks `has_ncu`, one forward at the article's shape, and the backward
of every stage it marks `training_ncu`, under Nsight Compute with the per-opcode instruction
counters: how many warp instructions of each SASS opcode each kernel executed
(`sass__inst_executed_per_opcode`, and with its modifiers), the tensor pipe's warp-level (HMMA)
and warpgroup (GMMA) instructions, and the launch (registers, threads, shared memory). From the
same reports, the kernels' static SASS listing (`--page source --print-source sass`): the census
of what the binary holds, `USETMAXREG`'s register counts among it.

Writes under DIR/hopper/ (it lands as notebooks/traces/<gpu_slug>/hopper/):
- <part>.raw.csv.gz: ncu's raw page, every opcode instance spelled out
  (`--print-metric-instances details`), one row per kernel; <part>.ranges.csv.gz: the same with
  each kernel renamed by its job (the stage's NVTX range; forward parts only);
- <part>.opcodes.csv.gz: the per-opcode counters read through ncu's Python report interface
  (kernel id, kernel, metric, opcode, value), where that interface imports;
- <part>.sass.csv.gz: the static SASS listing of every kernel (kernel id, address, instruction);
- <part>.ncu-rep where the report is small; provenance.json (GPU, versions, commands, parts, times).
Parts: forward_<group> (the registry's stages grouped as fused / unfused / compiled, one ncu process
each) and backward. Each part runs in its own try; `--quick` records only the fused group.
Needs only torch, pandas and ncu: no plotly, no Jupyter.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from helpers.core.replay_set import gpu_slug  # noqa: E402
from helpers.core.stages import DEFAULT_SHAPE, STAGES, stages_where  # noqa: E402

# the instanced counters: one value per SASS opcode (InstructionStats' source of its chart)
OPCODE_METRICS = ("sass__inst_executed_per_opcode", "sass__inst_executed_per_opcode_with_modifier_all")
# scalar counters, kept where this GPU's ncu lists them (Hopper: all of them)
PIPE_PATTERNS = (
    r"sm__inst_executed_pipe_tensor(_op_(hmma|gmma|imma|dmma))?",
    r"smsp__inst_executed",
    r"smsp__inst_executed_pipe_(fma|fmaheavy|alu|xu|lsu|uniform|adu|cbu)",
    r"smsp__sass_thread_inst_executed_op_(ffma|fadd|fmul)_pred_on",
    r"l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld",
)
MAX_REPORT_BYTES = 2 * 2**20
# the most one part's ncu run may take (s): a part that hangs leaves time for the others
PART_CAP_S = {"fused": 70, "unfused": 90, "compiled": 110, "backward": 100}
PART_FLOOR_S = 25          # a part is not started with less time than this left
SOURCE_HEAD_LINES = 60     # the first lines of ncu's source page, verbatim (its format, for the reader)


def log(msg: str) -> None:
    print(f"[record_hopper {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def write_gz(path: Path, text: str) -> int:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return path.stat().st_size


def groups(quick: bool) -> dict[str, list[str]]:
    """The registry's ncu stages in three ncu processes: a failure in one loses only its group,
    and the fused kernels' report stays small enough to keep."""
    stages = stages_where(has_ncu=True)
    out = {
        "fused": [s for s in stages if STAGES[s].fused and not STAGES[s].compiled],
        "unfused": [s for s in stages if not STAGES[s].fused and not STAGES[s].compiled],
        "compiled": [s for s in stages if STAGES[s].compiled],
    }
    if quick:
        return {"fused": out["fused"]}
    return {k: v for k, v in out.items() if v}


def scalar_metrics(available: list[str]) -> list[str]:
    from helpers.sources import ncu
    names = [f"{n}.sum" for n in available if any(re.fullmatch(p, n) for p in PIPE_PATTERNS)]
    return list(dict.fromkeys([*ncu.BASE_METRICS, "launch__thread_count", "launch__registers_per_thread_allocated",
                               *sorted(names)]))


# --- one ncu process --------------------------------------------------------------------------

def run_ncu(exe: str, target: list[str], rep: Path, metrics: list[str], timeout: float, nvtx: bool,
            use_section: bool) -> subprocess.CompletedProcess:
    from helpers.sources import ncu
    collect = ["--metrics", ",".join(metrics)]
    if use_section:   # ncu refused the opcode metrics by name: the section that reads them
        collect = ["--section", "InstructionStats", "--metrics", ",".join(m for m in metrics if m not in OPCODE_METRICS)]
    command = [exe, *(["--nvtx"] if nvtx else []), *ncu.PROCESSES, "--profile-from-start", "off",
               "--clock-control", "none", *collect, "-f", "-o", str(rep.with_suffix("")), *target]
    log("ncu: " + shlex.join([*command[:8], "<metrics>", *command[-3:]])[:400])
    # its own process group: a run past its time is ended with the process it profiles
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ncu._env(),
                          start_new_session=True) as run:
        try:
            stdout, stderr = run.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            stdout, stderr = run.communicate()
            stderr += f"\n==ERROR== record_hopper: ncu ran past {timeout:.0f} s and was ended"
    return subprocess.CompletedProcess(command, run.returncode, stdout, stderr)


def export(exe: str, rep: Path, *extra: str, timeout: float = 120) -> str:
    done = subprocess.run([exe, "--import", str(rep), *extra], capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ncu --import {' '.join(extra)} failed ({done.returncode}): {done.stderr[-800:]}")
    return done.stdout


def sass_listing(text: str) -> tuple[list[list[str]], str]:
    """ncu's source page (SASS, CSV) as rows (kernel_seq, address, instruction), whatever the metric
    columns. ncu 2025.3 prints a "Kernel Name" line before each kernel's table (PROBE.md): that line
    starts the next kernel and is kept as a marker row (kernel_seq, '#', the line); a header row naming
    'Source' and an Address column starts one too where no "Kernel Name" line came just before it.
    Returns the rows and the page's first lines (its format, kept for the reader)."""
    rows: list[list[str]] = []
    seq, src, addr, width, named = -1, None, None, 0, False
    lines = text.splitlines()
    for line in lines:
        try:
            cells = next(csv.reader([line]))
        except (StopIteration, csv.Error):
            cells = []
        if not cells:
            continue
        if cells[0].strip().startswith("Kernel Name"):
            seq, named = seq + 1, True
            rows.append([str(seq), "#", line[:400]])
            continue
        if "Source" in cells and any("Address" in c for c in cells):
            if not named:
                seq += 1
            named = False
            src = cells.index("Source")
            addr = next(i for i, c in enumerate(cells) if "Address" in c)
            width = len(cells)
            continue
        if src is not None and len(cells) == width:
            rows.append([str(seq), cells[addr], cells[src]])
        else:
            rows.append([str(max(seq, 0)), "#", line[:400]])
    return rows, "\n".join(lines[:SOURCE_HEAD_LINES])


def to_csv(header: list[str], rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


# --- ncu's Python report interface (in a subprocess: it is native code) -------------------------

def report_interface_dirs(exe: str) -> list[str]:
    real = Path(os.path.realpath(exe)).parent
    found = [real / "extras" / "python", real.parent / "extras" / "python"]
    for pattern in ("/usr/local/cuda*/nsight-compute*/extras/python", "/opt/nvidia/nsight-compute/*/extras/python",
                    "/usr/local/NVIDIA-Nsight-Compute*/extras/python"):
        import glob
        found += [Path(p) for p in sorted(glob.glob(pattern))]
    return [str(p) for p in found if (p / "ncu_report.py").exists()]


def read_opcodes(rep: str, out_csv: str, dirs: str) -> None:
    """Run as `record_hopper.py --read-opcodes REP OUT DIRS`: every instanced opcode metric of every
    kernel of the report, through ncu_report, as CSV rows (kernel_id, kernel, metric, opcode, value)."""
    sys.path[:0] = [d for d in dirs.split(os.pathsep) if d]
    import ncu_report  # noqa: PLC0415 - only on the GPU machine, from ncu's own folder
    report = ncu_report.load_report(rep)
    rows = []
    kid = 0
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            try:
                name = action.name(ncu_report.IAction.NameBase_DEMANGLED)
            except Exception:  # noqa: BLE001 - older interfaces take no argument
                name = action.name()
            names = action.metric_names() if hasattr(action, "metric_names") else list(action)
            for metric_name in names:
                if "opcode" not in metric_name:
                    continue
                metric = action.metric_by_name(metric_name) if hasattr(action, "metric_by_name") else action[metric_name]
                n = metric.num_instances()
                if not n:
                    continue
                ids = metric.correlation_ids()
                for i in range(n):
                    opcode = ids.as_string(i) if hasattr(ids, "as_string") else ids.value(i)
                    value = metric.as_uint64(i) if hasattr(metric, "as_uint64") else metric.value(i)
                    rows.append([kid, name, metric_name, opcode, value])
            kid += 1
    write_gz(Path(out_csv), to_csv(["kernel_id", "kernel", "metric", "opcode", "value"], rows))
    print(f"read_opcodes: {kid} kernels, {len(rows)} rows", flush=True)


# --- one part: an ncu run, its exports, its SASS ----------------------------------------------

def record_part(part: str, target: list[str], jobs: list[str] | None, exe: str, metrics: list[str], out: Path,
                scratch: Path, timeout: float, facts: dict) -> dict:
    started = time.perf_counter()
    rep = scratch / f"{part}.ncu-rep"
    info: dict = {"part": part, "jobs": jobs}
    done = run_ncu(exe, target, rep, metrics, timeout, nvtx=jobs is not None, use_section=False)
    said = (done.stdout + done.stderr)
    if (done.returncode != 0 or not rep.exists()) and any(m in said for m in OPCODE_METRICS):
        log(f"{part}: ncu refused the opcode metrics by name; retrying with --section InstructionStats")
        info["refused_by_name"] = said[-1200:]
        done = run_ncu(exe, target, rep, metrics, timeout, nvtx=jobs is not None, use_section=True)
        said = (done.stdout + done.stderr)
        info["section"] = "InstructionStats"
    info["returncode"] = done.returncode
    info["tail"] = "\n".join(line for line in said.splitlines() if "==" in line or "Error" in line)[-1500:]
    if not rep.exists():
        raise RuntimeError(f"ncu wrote no report for {part} (exit {done.returncode}): {said[-1500:]}")
    info["ncu_s"] = round(time.perf_counter() - started, 1)
    log(f"{part}: ncu done in {info['ncu_s']} s (exit {done.returncode}), report {rep.stat().st_size / 1e6:.1f} MB")

    try:
        raw = export(exe, rep, "--csv", "--page", "raw", "--print-metric-instances", "details")
    except RuntimeError as err:   # an ncu without the option: the aggregate values still come back
        info["details_error"] = repr(err)[:500]
        raw = export(exe, rep, "--csv", "--page", "raw")
    info["raw_bytes"] = write_gz(out / f"{part}.raw.csv.gz", raw)
    info["kernels"] = max(0, sum(1 for _ in csv.reader(io.StringIO(raw))) - 2)
    if jobs is not None:
        try:
            renamed = export(exe, rep, "--csv", "--page", "raw", "--print-nvtx-rename", "kernel")
            write_gz(out / f"{part}.ranges.csv.gz", renamed)
        except Exception as err:  # noqa: BLE001
            info["ranges_error"] = repr(err)[:500]
    try:
        values = export(exe, rep, "--csv", "--page", "raw", "--print-metric-instances", "values")
        # only the opcode columns and the IDs: the rest is in .raw
        rows = list(csv.reader(io.StringIO(values)))
        start = next(i for i, r in enumerate(rows) if "ID" in r and "Kernel Name" in r)
        keep = [i for i, c in enumerate(rows[start]) if c in ("ID", "Kernel Name") or "opcode" in c]
        write_gz(out / f"{part}.values.csv.gz", to_csv([rows[start][i] for i in keep],
                                                       [[r[i] for i in keep] for r in rows[start + 1:] if len(r) > max(keep)]))
    except Exception as err:  # noqa: BLE001
        info["values_error"] = repr(err)[:500]
    log(f"{part}: raw page exported ({info['kernels']} kernels)")

    dirs = report_interface_dirs(exe)
    info["report_interface"] = dirs[:1]
    if dirs:
        try:
            pri = subprocess.run([sys.executable, __file__, "--read-opcodes", str(rep), str(out / f"{part}.opcodes.csv.gz"),
                                  os.pathsep.join(dirs)], capture_output=True, text=True, timeout=120, check=False)
            info["opcodes"] = (pri.stdout + pri.stderr).strip()[-800:]
        except Exception as err:  # noqa: BLE001
            info["opcodes"] = repr(err)[:500]
        log(f"{part}: report interface: {info['opcodes'][:200]}")

    try:
        source = export(exe, rep, "--csv", "--page", "source", "--print-source", "sass", timeout=90)
        rows, head = sass_listing(source)
        info["sass_rows"] = sum(1 for r in rows if r[1] != "#")
        info["sass_bytes"] = write_gz(out / f"{part}.sass.csv.gz", to_csv(["kernel_seq", "address", "instruction"], rows))
        (out / f"{part}.source_head.txt").write_text(head)
        log(f"{part}: SASS listing {info['sass_rows']} instructions")
    except Exception as err:  # noqa: BLE001
        info["sass_error"] = repr(err)[:800]
        log(f"{part}: no SASS listing: {info['sass_error'][:200]}")

    size = rep.stat().st_size
    info["report_mb"] = round(size / 1e6, 2)
    if size <= MAX_REPORT_BYTES:
        shutil.copy(rep, out / f"{part}.ncu-rep")
        info["report_kept"] = True
    info["seconds"] = round(time.perf_counter() - started, 1)
    return info


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--read-opcodes"]:
        read_opcodes(*argv[1:4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None,
                        help="the folder to write under (DIR/hopper/...); default: this GPU's replay set")
    parser.add_argument("--quick", action="store_true", help="the fused group only (a 20-s smoke run)")
    parser.add_argument("--budget", type=float, default=240.0, help="seconds for the whole run")
    parser.add_argument("--no-backward", action="store_true")
    parser.add_argument("--parts", nargs="*", default=None,
                        help="only these parts (fused unfused compiled backward): a second run for those that failed")
    args = parser.parse_args(argv)
    # ncu's raw page with every opcode instance spelled out holds fields past csv's default 128 KiB
    # (sdpa_math's 20 kernels, the backward's): read them whole
    csv.field_size_limit(2**31 - 1)
    t0 = time.perf_counter()
    left = lambda: args.budget - (time.perf_counter() - t0)  # noqa: E731

    if args.out is None:   # record_all: into this GPU's replay set, notebooks/traces/<gpu_slug>/hopper/
        import torch
        from helpers.core.replay_set import ReplaySet
        name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
        args.out = str(ReplaySet.of_device(name).folder)
    out = Path(args.out) / "hopper"
    out.mkdir(parents=True, exist_ok=True)
    provenance: dict = {"command": "python tools/record_hopper.py " + " ".join(argv), "shape": DEFAULT_SHAPE.key,
                        "parts": {}, "failed": {}}

    def save() -> None:
        provenance["elapsed_s"] = round(time.perf_counter() - t0, 1)
        (out / "provenance.json").write_text(json.dumps(provenance, indent=1, default=str))

    try:
        import torch
        from helpers.sources import ncu
        from helpers.sources.provenance import device_facts, now
        facts = device_facts()
        exe = ncu.find_ncu()
        provenance |= {**facts, "gpu_slug": gpu_slug(facts["gpu"]), "date": now(),
                       "ncu": ncu.version(exe) if exe else None, "ncu_path": exe}
        if exe is None or not torch.cuda.is_available():
            provenance["failed"]["setup"] = "record_hopper needs a CUDA GPU and ncu"
            save()
            log(provenance["failed"]["setup"])
            return 2
        available = ncu.query_metrics(exe)
        metrics = [*scalar_metrics(available), *OPCODE_METRICS]
        provenance["metrics"] = metrics
        provenance["listed"] = {p: [n for n in available if re.fullmatch(p, n)] for p in PIPE_PATTERNS}
        log(f"{facts['gpu']} ({provenance['gpu_slug']}), {provenance['ncu']}; {len(metrics)} metrics")
    except Exception:  # noqa: BLE001
        provenance["failed"]["setup"] = traceback.format_exc()[-2000:]
        save()
        log("setup failed:\n" + provenance["failed"]["setup"])
        return 2
    save()

    scratch = Path(tempfile.mkdtemp(prefix="record_hopper_"))
    parts: list[tuple[str, list[str], list[str] | None]] = []
    for group, stages in groups(args.quick).items():
        jobs = [ncu.stage_job(s, DEFAULT_SHAPE) for s in stages]
        call = f"profile_jobs({json.dumps(jobs)!r})"
        parts.append((f"forward_{group}__{DEFAULT_SHAPE.key}", ncu.target(call), [j["name"] for j in jobs]))
    if not args.quick and not args.no_backward:
        back = stages_where(training_ncu=True)
        stages_log = out / f"backward__{DEFAULT_SHAPE.key}.stages.json"
        call = (f"from helpers.training import sources_step as training; training.profile_backwards("
                f"{','.join(back)!r}, {DEFAULT_SHAPE.key!r}, {str(stages_log)!r})")
        parts.append((f"backward__{DEFAULT_SHAPE.key}", [sys.executable, "-c", call], None))

    def cap(part: str) -> float:
        return next((v for k, v in PART_CAP_S.items() if part.startswith(("forward_" + k, k))), 100.0)

    if args.parts is not None:
        parts = [p for p in parts if p[0].split("__")[0].removeprefix("forward_") in args.parts]
    for part, target, jobs in parts:
        if left() < PART_FLOOR_S:
            provenance["failed"][part] = f"skipped: {left():.0f} s of the budget left"
            log(f"{part}: skipped ({left():.0f} s left)")
            continue
        log(f"{part}: start ({left():.0f} s left)")
        try:
            provenance["parts"][part] = record_part(part, target, jobs, exe, metrics, out, scratch,
                                                    timeout=max(20.0, min(left() - 10, cap(part))), facts=facts)
            log(f"{part}: done in {provenance['parts'][part]['seconds']} s")
        except Exception:  # noqa: BLE001 - one part failing keeps the others
            provenance["failed"][part] = traceback.format_exc()[-2000:]
            log(f"{part}: FAILED\n{provenance['failed'][part]}")
        save()

    shutil.rmtree(scratch, ignore_errors=True)
    save()
    log(f"wrote {out}: {len(provenance['parts'])} parts, {len(provenance['failed'])} failed, "
        f"{time.perf_counter() - t0:.0f} s")
    return 0 if provenance["parts"] and not provenance["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
