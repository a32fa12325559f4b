"""Record the book's two timers for a replay set (on a GPU):  python tools/record_timers.py

For every stage the registry records (hub_flash aside: it needs the Hub) at every shape its traces
were recorded at, and for one training step of every training stage at the article's shape:

* the caller's timer (`helpers.sources.timers.caller_loop`): N back-to-back calls between two
  CUDA events, divided by N, repeated 7 times: what a loop pays per call;
* triton's do_bench (20th, 50th, 80th percentile): one cold-L2 call at a time, its launch hidden
  behind do_bench's cache flush;
* the GPU's busy time per call in the same process: the union of the GPU events of 10 back-to-back
  calls under torch.profiler (CUDA activity only), divided by 10.

Writes notebooks/traces/<gpu>/timers.json (provenance, method, one record per forward and per
training step) and prints a line per record.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.core.replay_set import ReplaySet  # noqa: E402
from helpers.core.stages import DEFAULT_SHAPE, STAGES, Shape, StageUnavailable, get_stage, reset_compiled, stages_where  # noqa: E402
from helpers.sources import timers  # noqa: E402
from helpers.sources.provenance import device_facts, now  # noqa: E402

SWEEP = [DEFAULT_SHAPE] + [Shape(seq=s) for s in (512, 2048, 4096)] + [Shape(head_dim=128)]
BUSY_CALLS = 10
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def busy_per_call(fn, calls: int = BUSY_CALLS) -> float:
    """The union of GPU event intervals of `calls` back-to-back calls, per call (µs)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
                   for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS)
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total / calls


def one(label: str, fn) -> dict:
    started = time.perf_counter()
    rec = timers.both(fn)
    rec["busy_us"] = busy_per_call(fn)
    loop = sorted(rec["loop_us"])
    bench = rec["do_bench_us"] or [float("nan")] * 3
    print(f"{label:58s} loop {loop[len(loop) // 2]:9.1f} us [{loop[0]:.1f}-{loop[-1]:.1f}] x{rec['loop_calls']:<5d} "
          f"do_bench {bench[1]:9.1f} us  busy {rec['busy_us']:9.1f} us  ({time.perf_counter() - started:.1f} s)", flush=True)
    return rec


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", nargs="+", default=list(stages_where(hook=None)), choices=list(STAGES))
    parser.add_argument("--no-training", action="store_true")
    parser.add_argument("--gpu", default=None, help="replay-set folder (default: from the GPU's name)")
    args = parser.parse_args(argv)

    import torch
    if not torch.cuda.is_available():
        print("tools/record_timers.py times live and needs a CUDA GPU; this machine has none.", file=sys.stderr)
        return 2
    rs = ReplaySet(args.gpu) if args.gpu else ReplaySet.of_device(torch.cuda.get_device_name(0))
    out = rs.path("timers", "timers")
    facts = device_facts()
    try:
        import triton
        facts["triton"] = triton.__version__
    except ImportError:
        facts["triton"] = None
    doc = {"provenance": facts | {"date": now(), "command": "python tools/record_timers.py " + " ".join(argv if argv is not None else sys.argv[1:])},
           "method": {"loop": timers.caller_loop.__doc__.split("\n")[0], "loop_repeats": timers.LOOP_REPEATS,
                      "do_bench": "triton.testing.do_bench(fn, warmup=25, rep=200, quantiles=[0.2, 0.5, 0.8]), µs",
                      "busy": f"union of GPU events of {BUSY_CALLS} back-to-back calls under torch.profiler, per call"},
           "forwards": {}, "training_steps": {}, "failed": {}}

    def save() -> None:
        out.write_text(json.dumps(doc, indent=1))

    for name in args.stages:
        st = get_stage(name)
        for shape in (SWEEP if st.swept else [DEFAULT_SHAPE]):
            key = f"{name}__{shape.key}"
            try:
                st.check(shape, "cuda")
                if st.compiled:
                    reset_compiled()  # one static-shape graph per shape, as capture() compiles it
                inputs = st.make_inputs(shape, "cuda")
                doc["forwards"][key] = one(key, lambda: st.run(inputs))
            except StageUnavailable as err:
                doc["failed"][key] = str(err)
                print(f"skip {key}: {err}", flush=True)
            except Exception as err:  # noqa: BLE001 - one broken stage must not lose the others
                traceback.print_exc()
                doc["failed"][key] = repr(err)[:500]
            inputs = None
            torch.cuda.empty_cache()
            save()

    if not args.no_training:
        from helpers.training.sources_step import prepare, train_step
        for name in stages_where(has_training=True):
            if name not in args.stages:
                continue
            st = get_stage(name)
            key = f"{name}__{DEFAULT_SHAPE.key}"
            try:
                if st.compiled:
                    reset_compiled()
                inputs = prepare(st.make_inputs(DEFAULT_SHAPE, "cuda"))
                doc["training_steps"][key] = one("train " + key, lambda: train_step(st, inputs))
            except Exception as err:  # noqa: BLE001
                traceback.print_exc()
                doc["failed"]["train " + key] = repr(err)[:500]
            inputs = None
            torch.cuda.empty_cache()
            save()
    save()
    print(f"wrote {out}: {len(doc['forwards'])} forwards, {len(doc['training_steps'])} training steps, {len(doc['failed'])} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
