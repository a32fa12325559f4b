"""Record the "Your own model" traces on a GPU:  python tools/record_own_model.py

Kineto chrome traces, exactly as torch.profiler writes them, of code nobody here wrote:
torch.nn.TransformerEncoderLayer (and transformers' GPT-2 where transformers imports), each with
3 warm-up calls, then schedule(wait=1, warmup=1, active=3) with record_function(<name>) around
every step. A `provenance` dict (GPU, torch, date, command, the code) is added to each document;
everything else is torch's. Written to notebooks/traces/<gpu>/own_model/<name>.json.gz, and the
two large ones (a 12-layer training step; about 100,000 events) to benchmarks/data/.
"""
from __future__ import annotations

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

from helpers.profiling.capture import driver_version  # noqa: E402
from helpers.profiling.replay import REPLAY_DIR  # noqa: E402

D_MODEL, HEADS, FF = 512, 8, 2048


def encoder_layer(torch, layers: int = 1):
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, batch_first=True, device="cuda",
                                             dtype=torch.bfloat16)
    if layers == 1:
        return layer
    return torch.nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False).cuda()


def train_step(torch, model, batch: int, seq: int):
    x = torch.randn(batch, seq, D_MODEL, device="cuda", dtype=torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()

    def step():
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def forward(torch, model, batch: int, seq: int):
    x = torch.randn(batch, seq, D_MODEL, device="cuda", dtype=torch.bfloat16)
    model.eval()

    def step():
        with torch.no_grad():
            model(x)
    return step


def provenance(torch, name: str, code: str, annotation: str) -> dict:
    props = torch.cuda.get_device_properties(0)
    return {"name": name, "code": code, "annotation": annotation, "gpu": props.name,
            "capability": f"{props.major}.{props.minor}", "sm_count": props.multi_processor_count,
            "driver": driver_version(), "torch": torch.__version__, "cuda": str(torch.version.cuda),
            "cudnn": str(torch.backends.cudnn.version()),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "command": "python tools/record_own_model.py"}


def record(torch, name: str, fn, code: str, out: Path, steps: bool = True, active: int = 3) -> Path:
    from torch.profiler import ProfilerActivity, profile, record_function, schedule
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        if steps:
            with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=active),
                         record_shapes=True, on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as p:
                for _ in range(2 + active):
                    with record_function(name):
                        fn()
                    p.step()
                torch.cuda.synchronize()
        else:
            with profile(activities=activities, record_shapes=True) as p:
                with record_function(name):
                    fn()
                torch.cuda.synchronize()
            p.export_chrome_trace(str(path))
        document = json.loads(path.read_text())
    document["provenance"] = provenance(torch, name, code, name)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as f:
        json.dump(document, f, separators=(",", ":"))
    print(f"{name:26s} {len(document['traceEvents']):7d} events  {out.stat().st_size / 1024:8.1f} KB  -> {out}", flush=True)
    return out


def main() -> int:
    import torch

    from record import gpu_slug  # tools/record.py, beside this file
    if not torch.cuda.is_available():
        print("record_own_model needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    out = REPLAY_DIR / gpu_slug(torch.cuda.get_device_name(0)) / "own_model"
    layer = f"torch.nn.TransformerEncoderLayer({D_MODEL}, {HEADS}, {FF}, batch_first=True, dtype=torch.bfloat16)"
    jobs = [
        ("encoder_forward", lambda: forward(torch, encoder_layer(torch), 32, 256),
         f"layer = {layer}.eval(); with torch.no_grad(): layer(x)  # x: [32, 256, {D_MODEL}] bf16 (the fast path)", True),
        ("encoder_forward_slow", None,
         "the same as encoder_forward with torch.backends.mha.set_fastpath_enabled(False)", True),
        ("encoder_train_step", lambda: train_step(torch, encoder_layer(torch), 4, 128),
         f"layer = {layer}.train(); loss = layer(x).float().pow(2).mean(); loss.backward(); AdamW step  # x: [4, 128, {D_MODEL}]", True),
        ("encoder_train_step_big", lambda: train_step(torch, encoder_layer(torch), 64, 512),
         f"the same training step at x: [64, 512, {D_MODEL}]", True),
        ("encoder_forward_nosteps", lambda: forward(torch, encoder_layer(torch), 32, 256),
         "encoder_forward under a plain `with profile():` around one call: no schedule, no ProfilerStep# rows", False),
    ]
    failed = []
    for name, make, code, steps in jobs:
        started = time.perf_counter()
        try:
            if name == "encoder_forward_slow":
                torch.backends.mha.set_fastpath_enabled(False)
                try:
                    record(torch, name, forward(torch, encoder_layer(torch), 32, 256), code, out / f"{name}.json.gz")
                finally:
                    torch.backends.mha.set_fastpath_enabled(True)
            else:
                record(torch, name, make(), code, out / f"{name}.json.gz", steps=steps)
        except Exception as err:  # noqa: BLE001 - one failure must not lose the rest
            failed.append(name)
            print(f"FAILED {name}: {err!r}", flush=True)
        print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
    try:
        from transformers import GPT2Config, GPT2Model
        model = GPT2Model(GPT2Config()).to("cuda", torch.bfloat16).eval()
        ids = torch.randint(0, GPT2Config().vocab_size, (8, 256), device="cuda")

        def gpt2():
            with torch.no_grad():
                model(input_ids=ids)
        record(torch, "hf_gpt2_forward", gpt2,
               "transformers.GPT2Model(GPT2Config()) (random init, bf16, eval); with torch.no_grad(): model(input_ids)  # [8, 256]",
               out / "hf_gpt2_forward.json.gz")
    except Exception as err:  # noqa: BLE001 - transformers is optional
        failed.append("hf_gpt2_forward")
        print(f"FAILED hf_gpt2_forward: {err!r}", flush=True)
    data = ROOT / "benchmarks" / "data"
    try:
        record(torch, "encoder12_train", train_step(torch, encoder_layer(torch, 12), 16, 256),
               f"torch.nn.TransformerEncoder({layer}, num_layers=12): one training step (AdamW) at x: [16, 256, {D_MODEL}]",
               data / "encoder12_train.json.gz")
        record(torch, "encoder_100k", train_step(torch, encoder_layer(torch, 19), 8, 128),
               f"torch.nn.TransformerEncoder({layer}, num_layers=19): training steps at x: [8, 128, {D_MODEL}], 6 active steps",
               data / "encoder_100k.json.gz", active=6)
    except Exception as err:  # noqa: BLE001
        failed.append("benchmark traces")
        print(f"FAILED benchmark traces: {err!r}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
