"""The occupancy limits of every kernel Nsight Compute recorded (both replay sets), recomputed from
ncu's raw launch columns in plain code, and the calculator held to ncu's own four limits.

The plain side reads the CSVs with the csv module (units from the units row) and works the
limits out with CUDA's rules written down here, not imported: warps = 64 slots / warps per block;
registers = 4 sub-partitions x floor(16,384 / (registers x 32 rounded up to 256)) / warps per
block; shared memory = the size the driver configured for the launch
(`launch__shared_mem_config_size`) / the block's allocation; blocks = 32 slots. These must equal
ncu's `launch__occupancy_limit_*` for every kernel: that is what makes the configured size, not
the SM's largest, the pool a page divides. Then `helpers.occupancy` must give the same four limits
when handed that size, and with no size handed (its model of the driver's pick) the same number
of active blocks and a pool no larger than the driver's.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETS = ("h200", "h100-80gb-hbm3")
# ncu writes bytes in byte, Kbyte (1,000) or Mbyte, per block or not ("Kbyte/block"), file by file
SCALE = {"byte": 1, "Kbyte": 1000, "Mbyte": 1_000_000}
LIMITS = {"warps": "launch__occupancy_limit_warps", "registers": "launch__occupancy_limit_registers",
          "shared_memory": "launch__occupancy_limit_shared_mem", "blocks": "launch__occupancy_limit_blocks"}


def _num(row: dict, units: dict, col: str) -> int:
    v = float(row[col].replace(",", ""))
    return round(v * SCALE.get(units[col].split("/")[0], 1))


def launches(gpu: str) -> list[dict]:
    """Every distinct kernel launch configuration ncu recorded in one replay set."""
    seen, out = set(), []
    for path in sorted((ROOT / "notebooks" / "traces" / gpu / "ncu").glob("*.csv")):
        rows = list(csv.reader(open(path, encoding="utf-8", errors="replace")))
        start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
        head, units = rows[start], dict(zip(rows[start], rows[start + 1]))
        for line in rows[start + 2:]:
            if len(line) != len(head):
                continue
            r = dict(zip(head, line))
            launch = {
                "file": path.name, "kernel": r["Kernel Name"][:60],
                "threads": _num(r, units, "launch__block_size"),
                "registers": _num(r, units, "launch__registers_per_thread"),
                "smem": _num(r, units, "launch__shared_mem_per_block_static")
                + _num(r, units, "launch__shared_mem_per_block_dynamic"),
                "allocated": _num(r, units, "launch__shared_mem_per_block_allocated"),
                "config": _num(r, units, "launch__shared_mem_config_size"),
                "cache": r["launch__func_cache_config"],
                "ncu": {k: _num(r, units, c) for k, c in LIMITS.items()}}
            key = tuple(v for k, v in launch.items() if k != "file" and k != "ncu") + tuple(launch["ncu"].values())
            if key not in seen:
                seen.add(key)
                out.append(launch)
    return out


def plain_limits(k: dict) -> dict:
    """sm 9.0's four limits, by hand (64 warp slots, 32 block slots, 65,536 registers in 4
    sub-partitions allocated per warp in units of 256, 1 KiB reserved a block, 128 B units)."""
    warps = -(-k["threads"] // 32)
    per_warp = -(-(k["registers"] * 32) // 256) * 256
    regs = 4 * (16384 // per_warp) // warps if per_warp else 2**31 - 1
    allocated = -(-(k["smem"] + 1024) // 128) * 128
    assert allocated == k["allocated"], k   # ncu's own allocation agrees with the rule
    return {"warps": 64 // warps, "registers": regs, "shared_memory": k["config"] // allocated,
            "blocks": 32}


ALL = [(gpu, k) for gpu in SETS for k in launches(gpu)]
IDS = [f"{gpu}:{k['file'].split('__')[0]}:{k['kernel'][:30]}" for gpu, k in ALL]


def test_every_recorded_kernel_is_read():
    for gpu in SETS:
        assert len(launches(gpu)) >= 20, gpu


@pytest.mark.parametrize("gpu,k", ALL, ids=IDS)
def test_plain_limits_from_the_configured_size_are_ncus(gpu, k):
    assert plain_limits(k) == k["ncu"], k


@pytest.mark.parametrize("gpu,k", ALL, ids=IDS)
def test_calculator_with_the_configured_size_gives_ncus_limits(gpu, k):
    from helpers.occupancy.calculator import occupancy
    r = occupancy("9.0", k["threads"], k["registers"], k["smem"], shared_memory_config=k["config"])
    assert r.block_limits == k["ncu"], k
    assert r.shared_memory_per_sm == k["config"]
    assert r.active_blocks == min(k["ncu"].values())
    assert set(r.limiters) == {n for n, v in k["ncu"].items() if v == min(k["ncu"].values())}


@pytest.mark.parametrize("gpu,k", ALL, ids=IDS)
def test_calculator_model_of_the_drivers_pick(gpu, k):
    """With no size handed the calculator models the driver's pick: never more than the driver
    configured, and the same number of resident blocks ncu's limits give."""
    from helpers.occupancy.calculator import occupancy
    r = occupancy("9.0", k["threads"], k["registers"], k["smem"])
    assert r.active_blocks == min(k["ncu"].values()), k
    if k["cache"] == "CachePreferNone":
        assert r.shared_memory_per_sm <= k["config"], k
