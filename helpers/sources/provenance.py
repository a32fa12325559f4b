"""The one provenance builder: where, when and with what a live measurement was taken. Every
live source (a stage's capture, profile_code, ncu's counters, the shared-memory experiment) and
the recording tools take their GPU, driver and library facts from here."""
from __future__ import annotations

import datetime as dt
import functools
import subprocess


@functools.lru_cache(maxsize=1)
def driver_version() -> str:
    """The NVIDIA driver's version (nvidia-smi, asked once per process)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def now() -> str:
    """This moment in UTC, to the second, as every provenance writes it."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def device_facts() -> dict:
    """This process's GPU (the first), driver, torch, CUDA and cuDNN; "no GPU (CPU only)" without one."""
    import torch
    if not torch.cuda.is_available():
        return dict(gpu="no GPU (CPU only)", capability="unknown", sm_count="unknown", driver="unknown",
                    torch=torch.__version__, cuda="unknown", cudnn="unknown")
    props = torch.cuda.get_device_properties(0)
    return dict(gpu=props.name, capability=f"{props.major}.{props.minor}", sm_count=props.multi_processor_count,
                driver=driver_version(), torch=torch.__version__, cuda=str(torch.version.cuda),
                cudnn=str(torch.backends.cudnn.version()))
