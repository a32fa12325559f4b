"""What this GPU can do at most, measured: a bf16 matmul's FLOP/s and a device-to-device copy's
bytes per second, each timed with triton.testing.do_bench (the book's independent timer).

    from helpers.sources import ceilings
    table = ceilings.measure()          # live, on any CUDA GPU
    table = ceilings.load()             # the recording of the replay set

These are the roofs a stage's forward is placed under: a measured ceiling, not the datasheet's.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..core.errors import TraceError
from ..core import config, replay_set

COLUMNS = ["ceiling", "what was timed", "work", "unit", "median ms", "value", "value unit"]
RECORD_COMMAND = "python tools/record_ceilings.py"


def recording_path(gpu: str | None = None) -> Path:
    return replay_set.recording_path("ceilings", "ceilings", gpu)


def _do_bench_ms(fn) -> float:
    from triton.testing import do_bench
    return float(do_bench(fn, warmup=50, rep=300, return_mode="median"))


def matmul(n: int = 8192, dtype: str = "bfloat16") -> dict:
    """n×n×n matmul: 2·n³ FLOPs over do_bench's median time."""
    import torch
    a = torch.randn(n, n, device="cuda", dtype=getattr(torch, dtype))
    b = torch.randn(n, n, device="cuda", dtype=getattr(torch, dtype))
    ms = _do_bench_ms(lambda: a @ b)
    flops = 2 * n**3
    return {"ceiling": f"{dtype} matmul", "what was timed": f"torch.matmul, {n}×{n} @ {n}×{n}",
            "work": flops, "unit": "FLOP", "median ms": ms, "value": flops / (ms / 1e3) / 1e12,
            "value unit": "TFLOP/s"}


def copy(nbytes: int = 2**30) -> dict:
    """Device-to-device copy of `nbytes`: bytes read plus bytes written over the median time."""
    import torch
    src = torch.empty(nbytes, device="cuda", dtype=torch.uint8).fill_(1)
    dst = torch.empty_like(src)
    ms = _do_bench_ms(lambda: dst.copy_(src))
    moved = 2 * nbytes
    return {"ceiling": "device-to-device copy", "what was timed": f"Tensor.copy_ of {nbytes / 2**30:g} GiB",
            "work": moved, "unit": "byte", "median ms": ms, "value": moved / (ms / 1e3) / 1e12,
            "value unit": "TB/s"}


def measure() -> pd.DataFrame:
    """Both ceilings on this process's GPU."""
    return pd.DataFrame([matmul(), copy()], columns=COLUMNS)


def measure_cached() -> pd.DataFrame:
    """Both ceilings on this process's GPU, measured once per session: kept in the session's
    cache (config.cache_dir) for the next page or run on the same GPU and torch."""
    import torch
    path = config.cache_dir(torch.cuda.get_device_name(), torch.__version__) / "ceilings.json"
    if path.exists():
        try:
            return load(path=path)
        except TraceError:
            pass   # a broken cache entry is measured again
    table = measure()
    save(table, {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}, path)
    return table


def save(table: pd.DataFrame, provenance: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": provenance, "ceilings": table.to_dict(orient="records")}, indent=2))
    return path


def load(gpu: str | None = None, path: Path | None = None) -> pd.DataFrame:
    """The recorded ceilings; `attrs["provenance"]` says where and when they were measured."""
    path = path or recording_path(gpu)
    try:
        document = json.loads(Path(path).read_text())
        table = pd.DataFrame(document["ceilings"], columns=COLUMNS)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise TraceError(f"The recorded ceilings {path} are missing or unreadable ({type(err).__name__}: {err}). "
                         f"Record them on a GPU with `{RECORD_COMMAND}`.") from err
    table.attrs["provenance"] = document.get("provenance", {})
    return table


def fetch_live(mode: str = "auto") -> tuple[pd.DataFrame, str] | None:
    """This GPU's ceilings and its name where the decision is live (measured once per session),
    else None: what roofline.load_ceilings is handed (a Session's ceilings())."""
    from .modes import resolve_mode
    if resolve_mode(mode) != "live":
        return None
    import torch
    return measure_cached(), torch.cuda.get_device_name()
