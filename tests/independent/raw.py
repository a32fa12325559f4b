"""The recordings read raw, with plain loops: the independent side of every check in this folder.

Nothing here imports `helpers`. A chrome trace is gzip + json; its `ts`/`dur` are in µs (Kineto
writes them with nanosecond decimals), so a column in µs equals the raw `dur` and a column in ms
the raw `dur` / 1e3. ncu's CSV is read with the csv module. Each definition below is the book's
own, written out in words first:

* a profiler step is a `ProfilerStep#<n>` event; the forward a page shows is the step with the
  largest n;
* a GPU event (kernel, memcpy, memset) belongs to the step in which the runtime or driver call
  with the same correlation id started;
* a forward's CPU time is its `attn_fwd` annotation's duration; its aten ops are the `aten::` ops
  inside that annotation, on its thread;
* the op that launched a GPU event is the innermost cpu_op of the call's thread holding the call,
  the top op the outermost one.
"""
from __future__ import annotations

import csv
import gzip
import json
import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "notebooks" / "traces" / "h200"
DEFAULT = "b8_h16_s1024_d64_bfloat16_causal"
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
CALL_CATS = ("cuda_runtime", "cuda_driver")
MIB = 2 ** 20


def stage_path(stage: str, shape: str = DEFAULT) -> Path:
    return TRACES / f"{stage}__{shape}.json.gz"


@lru_cache(maxsize=None)
def document(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def events(path: Path) -> list[dict]:
    return document(path)["traceEvents"]


def provenance(path: Path) -> dict:
    return document(path)["provenance"]


def steps(evs: list[dict]) -> list[tuple[int, float, float]]:
    """(n, start, end) of every ProfilerStep#n, by n."""
    out = [(int(e["name"].split("#")[1]), e["ts"], e["ts"] + e["dur"]) for e in evs
           if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    return sorted(out)


def step_of(evs: list[dict], t: float) -> int | None:
    for n, lo, hi in steps(evs):
        if lo <= t <= hi:
            return n
    return None


class Forward:
    """One profiler step of a stage trace, read raw: `gpu` (its GPU events in start order, each a
    dict with the raw event's fields plus `call`, `op`, `top_op`), `root` (attn_fwd), `ops`."""

    def __init__(self, evs: list[dict], step: int | None = None, annotation: str = "attn_fwd"):
        all_steps = steps(evs)
        n, lo, hi = all_steps[-1] if step is None else next(s for s in all_steps if s[0] == step)
        self.step, self.lo, self.hi = n, lo, hi
        complete = [e for e in evs if e.get("ph") == "X"]
        calls = {}
        for e in complete:
            if e.get("cat") in CALL_CATS and lo <= e["ts"] <= hi and "correlation" in e.get("args", {}):
                calls.setdefault(e["args"]["correlation"], e)
        cpu = [e for e in complete if e.get("cat") == "cpu_op"]
        self.gpu = []
        for e in sorted((e for e in complete if e.get("cat") in GPU_CATS), key=lambda e: e["ts"]):
            call = calls.get(e["args"].get("correlation"))
            if call is None:
                continue
            holders = sorted((o for o in cpu if o["tid"] == call["tid"] and o["ts"] <= call["ts"]
                              and o["ts"] + o["dur"] >= call["ts"] + call["dur"]),
                             key=lambda o: (o["ts"], -o["dur"]))
            self.gpu.append(e | {"kind_cat": GPU_CATS[e["cat"]], "call": call,
                                 "op": holders[-1]["name"] if holders else None,
                                 "top_op": holders[0]["name"] if holders else None})
        roots = [e for e in complete if e.get("cat") == "user_annotation" and e.get("name") == annotation
                 and lo <= e["ts"] <= hi]
        self.root = roots[0] if roots else None
        # inside the annotation: on its own thread (`ops`), and on every thread (`ops_all`: a
        # training step's backward runs on autograd's thread)
        self.ops_all = [] if self.root is None else [
            e for e in complete if e.get("cat") in ("cpu_op", "user_annotation") and e is not self.root
            and e["ts"] >= self.root["ts"] and e["ts"] + e["dur"] <= self.root["ts"] + self.root["dur"] + 1e-3]
        self.ops = [e for e in self.ops_all if e["tid"] == self.root["tid"]]

    def count(self, kind: str | None = None) -> int:
        return sum(1 for e in self.gpu if kind is None or e["kind_cat"] == kind)

    @property
    def gpu_us(self) -> float:
        """GPU time: the summed durations of the step's GPU events, µs."""
        return sum(e["dur"] for e in self.gpu)

    @property
    def cpu_us(self) -> float:
        """CPU time: the attn_fwd annotation's duration, µs."""
        return sum(e["dur"] for e in ([self.root] if self.root else []))

    @property
    def aten_ops(self) -> int:
        return sum(1 for e in self.ops_all if e["name"].startswith("aten::"))

    def idle_split(self) -> tuple[float, float, float, float]:
        """(span, busy, waiting for the host, waiting on other GPU work), µs: GPU events in start
        order; a gap before an event whose launch call started after the gap opened waited for
        the host, any other gap waited on other GPU work."""
        ivs = sorted(((e["ts"], e["ts"] + e["dur"], e["call"]["ts"]) for e in self.gpu), key=lambda x: (x[0], x[2]))
        busy = host = other = 0.0
        start, end = ivs[0][0], ivs[0][1]
        for a, b, launched in ivs[1:]:
            if a > end:
                busy += end - start
                if launched > end:
                    host += a - end
                else:
                    other += a - end
                start, end = a, b
            else:
                end = max(end, b)
        busy += end - start
        span = max(i[1] for i in ivs) - min(i[0] for i in ivs)
        return span, busy, host, other

    @property
    def busy_us(self) -> float:
        """The union of the step's GPU intervals, µs."""
        total, end = 0.0, None
        for e in sorted(self.gpu, key=lambda e: e["ts"]):
            a, b = e["ts"], e["ts"] + e["dur"]
            if end is None or a > end:
                total += b - a
                end = b
            elif b > end:
                total += b - end
                end = b
        return total


@lru_cache(maxsize=None)
def forward(path: Path, step: int | None = None, annotation: str = "attn_fwd") -> Forward:
    return Forward(events(path), step, annotation)


def nested(fwd: Forward) -> list[dict]:
    """The forward's host ops (attn_fwd at depth 0), each with its `depth` (how many ops of the
    same thread enclose it) and `self` (its duration less its direct children's), µs."""
    ops = [fwd.root] + fwd.ops if fwd.root else []
    ops = sorted(ops, key=lambda o: (o["ts"], -o["dur"]))
    out = []
    for o in ops:
        encl = [p for p in ops if p is not o and p["ts"] <= o["ts"] and o["ts"] + o["dur"] <= p["ts"] + p["dur"] + 1e-3
                and (p["dur"], -p["ts"]) > (o["dur"], -o["ts"])]
        out.append(o | {"depth": len(encl), "_id": id(o), "_encl": [id(p) for p in encl]})
    for o in out:
        children = [c for c in out if o["_id"] in c["_encl"] and c["depth"] == o["depth"] + 1]
        o["self"] = o["dur"] - sum(c["dur"] for c in children)
    return out


BYTE_UNITS = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
              "KB": 1e3, "MB": 1e6, "GB": 1e9}


def ncu_table(path: Path) -> tuple[list[dict], dict]:
    """ncu's raw CSV page: (rows, units); a row's values as text, the units row kept apart."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, units = rows[0], dict(zip(rows[0], rows[1]))
    body = [dict(zip(header, r)) for r in rows[2:] if r and r[0].strip().isdigit()]
    return body, units


def ncu_number(row: dict, units: dict, metric: str) -> float:
    """One metric of one row in base units (bytes for a byte metric)."""
    value = float(row[metric].replace(",", ""))
    unit = units.get(metric, "").split("/")[0]  # "Kbyte/block" is Kbyte a block
    if "byte" in unit or unit in BYTE_UNITS:
        return value * BYTE_UNITS[unit]
    return value


TIME_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}


def ncu_us(row: dict, units: dict, metric: str = "gpu__time_duration.sum") -> float:
    """A time metric of one row, in µs, whatever unit ncu printed it in."""
    return float(row[metric].replace(",", "")) * TIME_TO_US[units[metric]]


# --- occupancy, written out from CUDA's occupancy rules (the CUDA Occupancy Calculator's sheet) --
# Hopper (sm 9.0) per SM: 65,536 registers in 4 sub-partitions, registers given per warp in units
# of 256, 64 warp slots, 32 block slots, 233,472 B (228 KiB) of shared memory, each block given
# its shared memory plus 1 KiB the driver reserves, rounded up to 128 B.
SM90 = dict(regs=65536, subs=4, unit=256, warps=64, blocks=32, smem=233472, reserve=1024, smem_unit=128)


def ncu_pool(stage: str, shape: str = DEFAULT) -> int:
    """The per-SM shared memory the driver configured for the stage's one kernel, as ncu's raw
    CSV records it (`launch__shared_mem_config_size`, in the unit its units row names)."""
    rows = list(csv.reader(open(TRACES / "ncu" / f"{stage}__{shape}.csv", encoding="utf-8", errors="replace")))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    head, units = rows[start], dict(zip(rows[start], rows[start + 1]))
    col = "launch__shared_mem_config_size"
    sizes = {round(float(r[head.index(col)].replace(",", "")) * {"byte": 1, "Kbyte": 1000, "Mbyte": 10**6}[units[col]])
             for r in rows[start + 2:] if len(r) == len(head)}
    (size,) = sizes
    return size


def occupancy(threads: int, registers: int, smem: int, spec: dict = SM90, pool: int | None = None) -> dict:
    """CUDA's four limits; `pool`: the shared memory per SM the driver configured (ncu), else the
    SM's largest."""
    ceil = lambda a, b: -(-a // b)  # noqa: E731
    wpb = ceil(threads, 32)
    per_warp = ceil(registers * 32, spec["unit"]) * spec["unit"]
    per_sub = (spec["regs"] // spec["subs"]) // per_warp if per_warp else spec["warps"] // spec["subs"]
    by_regs = (per_sub * spec["subs"]) // wpb
    by_warps = spec["warps"] // wpb
    given = ceil(smem + spec["reserve"], spec["smem_unit"]) * spec["smem_unit"]
    pool = spec["smem"] if pool is None else pool
    by_smem = pool // given
    limits = {"warp slots": by_warps, "registers": by_regs, "shared memory": by_smem, "block slots": spec["blocks"]}
    blocks = min(limits.values())
    return {"warps_per_block": wpb, "regs_per_warp": per_warp, "warps_per_sub": per_sub,
            "warps_by_regs": per_sub * spec["subs"], "blocks_by_regs": by_regs, "blocks_by_warps": by_warps,
            "smem_given": given, "pool": pool, "blocks_by_smem": by_smem, "active_blocks": blocks,
            "active_warps": blocks * wpb, "pct": 100 * blocks * wpb / spec["warps"],
            "limiters": [k for k, v in limits.items() if v == blocks]}
