"""Record Nsight Compute's counters for the replay set (on a GPU with ncu):

    python tools/record_ncu.py [--stages ...] [--no-sweep]

For every stage at the article's shape, and at seq 512/2048/4096 for naive, the math backend and
the fused kernels, one forward under `ncu --profile-from-start off --clock-control none`:
notebooks/traces/<gpu>/ncu/<stage>__<shape>.ncu-rep (ncu's report, opens in Nsight Compute) and
.csv (its raw page, ncu's metric names), plus two calibration matmuls of known FLOPs
(calibration__<dtype>_<m>x<n>x<k>), the `--query-metrics` listing and provenance.json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import shlex
import sys
import time
from pathlib import Path

# run as a file: the repository root first on sys.path, so `helpers` is this checkout's
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.sources import ncu  # noqa: E402
from helpers.sources.provenance import device_facts, now  # noqa: E402
from helpers.core.replay_set import ReplaySet  # noqa: E402
from helpers.core.stages import DEFAULT_SHAPE, STAGES, Shape, stages_where  # noqa: E402,F401

# hub_flash needs the Hub (or a local build) and is left out; its kernel is FlashAttention-2 as in sdpa_flash
STAGES_AT_ARTICLE_SHAPE = list(stages_where(has_ncu=True))   # the registry's facts (Stage.has_ncu)
SWEEP_STAGES = stages_where(ncu_swept=True)
SWEEP_SEQS = (512, 2048, 4096)
MAX_REPORT_BYTES = 2 * 2**20  # reports over this are not kept (see below)
KEEP_REPORTS_FOR = "calibration__bfloat16"
CALIBRATION = (("bfloat16", 4096, 4096, 4096), ("float32", 2048, 2048, 2048))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", nargs="+", default=STAGES_AT_ARTICLE_SHAPE)
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--gpu", default=None, help="replay-set folder (default: from the GPU's name)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the jobs whose CSV is already there (a run stopped by a time limit goes on)")
    args = parser.parse_args(argv)

    import torch

    exe = ncu.find_ncu()
    if exe is None or not torch.cuda.is_available():
        print("record_ncu needs a CUDA GPU and Nsight Compute's ncu", file=sys.stderr)
        return 2
    out = (ReplaySet(args.gpu) if args.gpu else ReplaySet.of_device(torch.cuda.get_device_name(0))).dir("ncu")
    out.mkdir(parents=True, exist_ok=True)
    available = ncu.query_metrics(exe)
    with gzip.open(out / "query_metrics.txt.gz", "wt") as f:
        f.write("\n".join(available) + "\n")
    work = ncu.work_metrics(available)
    metrics = list(ncu.BASE_METRICS) + work
    print(f"{len(available)} metrics listed; recording {len(metrics)}: {', '.join(work)}", flush=True)

    jobs = [(f"calibration__{d}_{m}x{n}x{k}", f"profile_matmul({d!r}, {m}, {n}, {k})") for d, m, n, k in CALIBRATION]
    shapes = {s: [DEFAULT_SHAPE] for s in args.stages}
    if not args.no_sweep:
        for s in SWEEP_STAGES:
            if s in shapes:
                shapes[s] += [Shape(seq=q) for q in SWEEP_SEQS]
    jobs += [(f"{s}__{shape.key}", f"profile_one_forward({s!r}, {shape.key!r})") for s, shs in shapes.items() for shape in shs]

    facts = device_facts()

    def write_provenance() -> None:
        # after every job: a run stopped by a time limit keeps what it recorded (--resume goes on)
        provenance = {
            **{k: facts[k] for k in ("gpu", "capability", "sm_count", "driver")}, "ncu": ncu.version(exe),
            "torch": facts["torch"], "cuda": facts["cuda"], "date": now(),
            "command": "python tools/record_ncu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "ncu_command": shlex.join([exe, *ncu.PROCESSES, "--profile-from-start", "off", "--clock-control", "none", "--metrics",
                                       "<metrics>", "-o", "<name>", *ncu.target("profile_one_forward('<stage>', '<shape>')")]),
            "export_command": f"{exe} --import <name>.ncu-rep --csv --page raw",
            "metrics": metrics, "recorded": done, "failed": failed,
            "calibration": [{"name": f"calibration__{d}_{m}x{n}x{k}", "dtype": d, "m": m, "n": n, "k": k,
                             "flops": 2 * m * n * k} for d, m, n, k in CALIBRATION],
        }
        (out / "provenance.json").write_text(json.dumps(provenance, indent=2))

    done, failed = [], {}
    earlier = out / "provenance.json"
    if args.resume and earlier.exists():   # what an earlier, stopped run recorded
        done = [r for r in json.loads(earlier.read_text()).get("recorded", []) if (out / f"{r['name']}.csv").exists()]
    for name, call in jobs:
        if args.resume and (out / f"{name}.csv").exists():
            print(f"{name:58s} kept from an earlier run", flush=True)
            if not any(r["name"] == name for r in done):
                done.append({"name": name, "kernels": len(ncu.read_csv(out / f"{name}.csv")), "report_kb": None,
                             "report_kept": (out / f"{name}.ncu-rep").exists(), "seconds": None})
            continue
        started = time.perf_counter()
        try:
            rep, table = ncu.record(call, name, out, metrics, exe)
        except Exception as err:  # noqa: BLE001 - one failing stage must not lose the others
            failed[name] = str(err)[-1500:]
            print(f"FAILED {name}: {failed[name]}", flush=True)
            continue
        rows = len(ncu.read_csv(table))
        size = rep.stat().st_size
        # a report embeds the CUDA modules of its kernels (ATen's run to tens of MB): the replay
        # set keeps the small ones at the article's shape and one calibration; every CSV keeps
        # all the counters, and this command remakes any report
        kept = size <= MAX_REPORT_BYTES and (name.startswith(KEEP_REPORTS_FOR) or DEFAULT_SHAPE.key in name)
        if not kept:
            rep.unlink()
        done.append({"name": name, "kernels": rows, "report_kb": round(size / 1024, 1), "report_kept": kept,
                     "seconds": round(time.perf_counter() - started, 1)})
        print(f"{name:58s} {rows:3d} kernels  {done[-1]['report_kb']:8.1f} KB  {done[-1]['seconds']:6.1f} s", flush=True)
        write_provenance()

    write_provenance()
    print(f"wrote {out}: {len(done)} recorded, {len(failed)} failed")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
