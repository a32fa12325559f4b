"""Every warp count a decoded kernel name claims, held to the launch: warps x 32 = the block's
threads, the block read from the raw trace event's `block` arg (both replay sets, every trace).

The decoder (helpers.core.names) is what is checked; the threads come from the recordings read
with gzip + json. A claim is a detail whose key names warps ("warps": 4, "warp_layout": "2x2x1")
or a summary's "N warps" / "warps AxBxC". cuDNN's `4x1x1` / `1x4x1` field is no such claim: both
kernels launch 384 threads, 12 warps, and decoding the field as warps would fail here.
"""
from __future__ import annotations

import gzip
import json
import math
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETS = ("h200", "h100-80gb-hbm3")
SUMMARY_WARPS = re.compile(r"\bwarps (\d+(?:x\d+)*)\b|\b(\d+(?:x\d+)*) warps\b")


@lru_cache(maxsize=None)
def launches() -> dict[str, set[int]]:
    """Each kernel name of every trace of both sets, with the block sizes (threads) it ran with."""
    out: dict[str, set[int]] = {}
    for gpu in SETS:
        for path in sorted((ROOT / "notebooks" / "traces" / gpu).rglob("*.json.gz")):
            with gzip.open(path, "rt") as f:
                evs = json.load(f).get("traceEvents", [])
            for e in evs:
                if e.get("cat") == "kernel" and "block" in e.get("args", {}):
                    out.setdefault(e["name"], set()).add(math.prod(e["args"]["block"]))
    return out


def _warps(value) -> int:
    return math.prod(int(x) for x in str(value).split("x"))


def claims(name: str) -> list[int]:
    from helpers.core.names import decode
    k = decode(name)
    said = [_warps(v) for key, v in k.details.items() if "warp" in key.lower()]
    said += [_warps(a or b) for a, b in SUMMARY_WARPS.findall(k.summary)]
    return said


def test_the_traces_hold_claims_and_cudnn_kernels():
    names = launches()
    assert len(names) > 50
    assert sum(bool(claims(n)) for n in names) >= 5
    cudnn = [n for n in names if n.startswith("cudnn_generated") and "sdpa" in n]
    # the sm90 wgmma kernels (prefill's fprop and bprop) launch three warpgroups whatever their
    # 4x1x1 / 1x4x1 field says; the sm80 wmma kernels cuDNN picks at decode (an H100's, 2026-12-07)
    # launch 128 threads
    hopper = [n for n in cudnn if "_sm90_" in n and "wgmma" in n]
    assert hopper and all(names[n] == {384} for n in hopper)
    assert all(len(names[n]) == 1 for n in cudnn)


def test_every_claimed_warp_count_is_the_launch():
    wrong = []
    for name, threads in launches().items():
        for warps in claims(name):
            if {warps * 32} != threads:
                wrong.append((name[:90], warps, sorted(threads)))
    assert not wrong, wrong
