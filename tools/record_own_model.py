"""Record the "Your own model" traces on a GPU:  python tools/record_own_model.py [--only NAME ...]

Kineto chrome traces of code nobody here wrote, each exactly as torch.profiler wrote it, with a
`provenance` dict added (GPU, torch, date, command, the code):

* the chapter's experiments (helpers/own_model/sources.py: TransformerEncoderLayer forward
  with the fast path on and off, a training step at a small and a big batch, and transformers'
  GPT-2 where transformers imports), through `profile_code`: the very code chapter 10 runs live;
  3 warm-up calls, then schedule(wait=1, warmup=1, active=3), record_function(<name>) around
  every step. Written to notebooks/traces/<gpu>/own_model/<name>.json.gz;
* `encoder_forward_nosteps`: a plain `with profile():` around one forward, no schedule, so no
  ProfilerStep# rows (what load_trace must also read), in the same folder;
* the two large traces of benchmarks/own_trace_benchmarks.py, to benchmarks/data/: a 12-layer
  TransformerEncoder training step, and about 100,000 events (19 layers, 6 active steps).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# run as a file: the repository root first on sys.path, so `helpers` is this checkout's
sys.path.insert(0, str(ROOT))

from helpers.sources.provenance import device_facts, now  # noqa: E402
from helpers.own_model.sources import D_MODEL, EXPERIMENTS, FF, HEADS, LAYER, make_step  # noqa: E402
from helpers.core.replay_set import ReplaySet  # noqa: E402
sys.path.insert(0, str(ROOT / "tools"))
from validate_recordings import refuse_invalid  # noqa: E402 - the raw checks of a saved trace

COMMAND = "python tools/record_own_model.py"


def save(prof, path: Path, code: str) -> Path:
    """The Profile's trace with the code it ran in its provenance (load_trace reads it back)."""
    prof.provenance = dataclasses.replace(prof.provenance, command=COMMAND,
                                          extra=prof.provenance.extra | {"code": code})
    refuse_invalid(prof.save(path), prof)  # a trace failing the raw checks is moved aside
    print(f"{prof.stage:26s} {len(prof.events):7d} events  {path.stat().st_size / 1024:8.1f} KB  -> {path}", flush=True)
    return path


def encoder_train_step(torch, layers: int, batch: int, seq: int):
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, batch_first=True, device="cuda",
                                             dtype=torch.bfloat16)
    model = torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False).cuda().train()
    x = torch.randn(batch, seq, D_MODEL, device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def record_without_steps(torch, path: Path) -> Path:
    """One forward under a plain `with profile():`: no schedule, no ProfilerStep# rows."""
    from torch.profiler import ProfilerActivity, profile, record_function
    name = "encoder_forward_nosteps"
    forward = make_step("encoder_forward")
    for _ in range(3):
        forward()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace.json"
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
            with record_function(name):
                forward()
            torch.cuda.synchronize()
        p.export_chrome_trace(str(out))
        document = json.loads(out.read_text())
    document["provenance"] = {
        "name": name, "annotation": name, **device_facts(), "date": now(), "command": COMMAND,
        "code": "encoder_forward under a plain `with profile():` around one call: no schedule, no ProfilerStep# rows"}
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(document, f, separators=(",", ":"))
    refuse_invalid(path)
    print(f"{name:26s} {len(document['traceEvents']):7d} events  {path.stat().st_size / 1024:8.1f} KB  -> {path}", flush=True)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    jobs = [*EXPERIMENTS, "encoder_forward_nosteps", "encoder12_train", "encoder_100k"]
    parser.add_argument("--only", nargs="+", choices=jobs, default=jobs)
    args = parser.parse_args(argv)
    import torch

    from helpers.sources.own_code import profile_code
    if not torch.cuda.is_available():
        print("record_own_model needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    out = ReplaySet.of_device(torch.cuda.get_device_name(0)).dir("own_model")
    data = ROOT / "benchmarks" / "data"
    failed = []
    for name in args.only:
        started = time.perf_counter()
        try:
            if name in EXPERIMENTS:
                prof = profile_code(make_step(name), annotation=name, progress=False, quiet=True)
                save(prof, out / f"{name}.json.gz", EXPERIMENTS[name].code)
            elif name == "encoder_forward_nosteps":
                record_without_steps(torch, out / f"{name}.json.gz")
            elif name == "encoder12_train":
                prof = profile_code(encoder_train_step(torch, 12, 16, 256), annotation=name, progress=False, quiet=True)
                save(prof, data / f"{name}.json.gz",
                     f"torch.nn.TransformerEncoder({LAYER}, num_layers=12): one training step (AdamW) at x: [16, 256, {D_MODEL}]")
            else:
                prof = profile_code(encoder_train_step(torch, 19, 8, 128), annotation=name, steps=6,
                                    progress=False, quiet=True)
                save(prof, data / f"{name}.json.gz",
                     f"torch.nn.TransformerEncoder({LAYER}, num_layers=19): training steps at x: [8, 128, {D_MODEL}], 6 active steps")
        except Exception as err:  # noqa: BLE001 - one failure (transformers missing, say) must not lose the rest
            failed.append(name)
            print(f"FAILED {name}: {err!r}", flush=True)
        print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
        torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
