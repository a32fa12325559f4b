"""Nsight Compute's recordings and what the book reads from them, against the raw CSV files.

Every expectation is read here from the raw tables (`ncu --import <report> --csv --page raw`:
ncu's metric names as the header, a units row, one row per kernel) with the csv module and the
file's own units row, or from provenance.json; nothing is typed in."""
from __future__ import annotations

import csv
import json
import math
import shutil

import pytest

from conftest import ROOT, cuda_available
from helpers.core import config
from helpers import DEFAULT_SHAPE, Shape, TraceError
from helpers.occupancy import gpu_spec, occupancy
from helpers.sources import ncu

NCU_DIR = ROOT / "notebooks" / "traces" / "h200" / "ncu"
TABLES = sorted(NCU_DIR.glob("*.csv"))
PROVENANCE = json.loads((NCU_DIR / "provenance.json").read_text())
SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
TIME = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def raw(path):
    """(rows as dicts of strings, units by column) of one raw CSV, read with the csv module."""
    rows = list(csv.reader(path.open()))
    header, units = rows[0], rows[1]
    return [dict(zip(header, r)) for r in rows[2:]], dict(zip(header, units))


def number(text: str) -> float:
    return float(text.replace(",", ""))


def base(row, units, column) -> float:
    """A raw value in bytes or nanoseconds, by the prefix its units row names."""
    unit = units[column].split("/")[0]
    if unit in TIME:
        return number(row[column]) * TIME[unit]
    if unit.endswith("byte"):
        return number(row[column]) * SCALE[unit[:-len("byte")]]
    return number(row[column])


def test_the_recordings_are_all_there_with_their_provenance():
    assert TABLES, f"no Nsight Compute tables under {NCU_DIR}"
    for key in ("gpu", "capability", "sm_count", "driver", "ncu", "date", "command", "ncu_command", "metrics"):
        assert PROVENANCE.get(key), key
    recorded = {r["name"]: r for r in PROVENANCE["recorded"]}
    assert {p.stem for p in TABLES} == set(recorded)
    for name, r in recorded.items():
        rows, _ = raw(NCU_DIR / f"{name}.csv")
        assert len(rows) == r["kernels"], name
        # a report is kept where provenance says so, and nowhere else
        assert (NCU_DIR / f"{name}.ncu-rep").exists() == r.get("report_kept", True), name
    for metric in ncu.BASE_METRICS:
        assert metric in PROVENANCE["metrics"]


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.stem)
def test_kernels_are_the_raw_rows_in_base_units(path):
    rows, units = raw(path)
    table = ncu.kernels(ncu.read_csv(path))
    assert list(table["#"]) == list(range(1, len(rows) + 1))
    for got, r in zip(table.to_dict("records"), rows):
        assert got["kernel"] == r["Kernel Name"]
        assert got["threads"] == number(r["launch__block_size"])
        assert got["grid_blocks"] == number(r["launch__grid_size"])
        assert got["registers"] == number(r["launch__registers_per_thread"])
        smem = (base(r, units, "launch__shared_mem_per_block_static")
                + base(r, units, "launch__shared_mem_per_block_dynamic"))
        assert got["shared_memory"] == round(smem)
        dram = base(r, units, "dram__bytes_read.sum") + base(r, units, "dram__bytes_write.sum")
        assert math.isclose(got["dram_bytes"], dram, rel_tol=1e-9)
        assert math.isclose(got["time_ns"], base(r, units, "gpu__time_duration.sum"), rel_tol=1e-9)
        assert got["theoretical_occupancy_pct"] == number(r["sm__maximum_warps_per_active_cycle_pct"])
        assert got["achieved_occupancy_pct"] == number(r["sm__warps_active.avg.pct_of_peak_sustained_active"])


def _carveout_for(spec, config_bytes: int) -> int:
    # the carveout percentage that gives the SM the shared memory ncu says it was set up with
    return math.floor(config_bytes * 100 / spec.shared_memory_per_sm)


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.stem)
def test_the_calculator_gives_ncus_theoretical_occupancy(path):
    """helpers.occupancy, fed ncu's own launch columns, lands on ncu's theoretical occupancy and on
    each of its four limits, for every recorded kernel (the shared-memory limit at the shared
    memory ncu says the SM was set up with)."""
    spec = gpu_spec(PROVENANCE["capability"])
    rows, units = raw(path)
    for r in rows:
        threads, regs = int(number(r["launch__block_size"])), int(number(r["launch__registers_per_thread"]))
        smem = round(base(r, units, "launch__shared_mem_per_block_static")
                     + base(r, units, "launch__shared_mem_per_block_dynamic"))
        config = round(base(r, units, "launch__shared_mem_config_size"))
        result = occupancy(spec, threads, regs, smem)
        assert result.occupancy_pct == pytest.approx(number(r["sm__maximum_warps_per_active_cycle_pct"]), abs=1e-9)
        assert result.block_limits["registers"] == number(r["launch__occupancy_limit_registers"])
        assert result.block_limits["warps"] == number(r["launch__occupancy_limit_warps"])
        assert result.block_limits["blocks"] == number(r["launch__occupancy_limit_blocks"])
        at_config = occupancy(spec, threads, regs, smem, carveout=_carveout_for(spec, config))
        assert at_config.shared_memory_per_sm == config
        assert at_config.block_limits["shared_memory"] == number(r["launch__occupancy_limit_shared_mem"])
        # what the drawing shows a block taking: ncu's allocated registers (per thread, for every
        # thread of the block's whole warps) and shared memory (with the driver's reserve)
        warps = -(-threads // int(number(r["device__attribute_warp_size"])))
        assert result.registers_per_block == (number(r["launch__registers_per_thread_allocated"])
                                              * warps * number(r["device__attribute_warp_size"]))
        assert result.shared_memory_allocated_per_block == round(base(r, units, "launch__shared_mem_per_block_allocated"))
        # the share of each SM resource the drawing and the utilization bars show, from ncu's
        # columns: the resident blocks (the least of ncu's four limits) times what one block takes
        blocks = min(number(r[f"launch__occupancy_limit_{x}"]) for x in ("registers", "warps", "blocks", "shared_mem"))
        assert at_config.utilization["shared_memory"] == pytest.approx(
            blocks * base(r, units, "launch__shared_mem_per_block_allocated") / config, rel=1e-9)
        assert at_config.utilization["registers"] == pytest.approx(
            blocks * result.registers_per_block / number(r["device__attribute_max_registers_per_multiprocessor"]), rel=1e-9)
        # the driver counts blocks in whole numbers (an int; a float count would read "2.0 blocks")
        assert all(type(v) is int for v in (*result.block_limits.values(), result.active_blocks))


@pytest.mark.parametrize("path", TABLES[:1], ids=lambda p: p.stem)
def test_a_block_that_cannot_fit_leaves_the_sm_at_its_preferred_shared_memory(path):
    """A block above the per-block shared-memory cap fits zero times, and the SM keeps the shared
    memory the kernel prefers: with no preference, the most the SM has (ncu's device attribute),
    which the drawing shows the empty SM holding ("0 of N B")."""
    spec = gpu_spec(PROVENANCE["capability"])
    rows, units = raw(path)
    r = rows[0]
    cap = round(base(r, units, "device__attribute_max_shared_memory_per_block"))
    threads, regs = int(number(r["launch__block_size"])), int(number(r["launch__registers_per_thread"]))
    for carveout in (None, 0):
        result = occupancy(spec, threads, regs, cap + 1, carveout=carveout, shared_memory_limit="default")
        assert result.active_blocks == 0 and result.block_limits["shared_memory"] == 0
        # no block resident: no resource is in use, whatever the SM was set up with (0 B at carveout 0)
        assert result.utilization == dict.fromkeys(("warps", "registers", "shared_memory", "blocks"), 0.0)
        # the launch as given, which the drawing's caption and labels repeat
        assert (result.threads_per_block, result.registers_per_thread, result.shared_memory_per_block,
                result.carveout, result.shared_memory_limit) == (threads, regs, cap + 1, carveout, "default")
        assert result.warps_per_block == -(-threads // int(number(r["device__attribute_warp_size"])))
    result = occupancy(spec, threads, regs, cap + 1, shared_memory_limit="default")
    assert result.shared_memory_per_sm == round(base(r, units, "device__attribute_max_shared_memory_per_multiprocessor"))


def test_load_names_the_recording_and_carries_its_report():
    table = ncu.load("sdpa_flash", DEFAULT_SHAPE)
    assert table.attrs["csv"] == NCU_DIR / f"sdpa_flash__{DEFAULT_SHAPE.key}.csv"
    assert table.attrs["report"] == NCU_DIR / f"sdpa_flash__{DEFAULT_SHAPE.key}.ncu-rep"
    assert [s.seq for s in ncu.recorded_shapes("sdpa_flash")] == sorted(
        Shape.from_key(p.stem.split("__")[1]).seq for p in NCU_DIR.glob("sdpa_flash__*.csv"))


def test_a_missing_recording_names_the_file_and_the_command():
    with pytest.raises(TraceError) as err:
        ncu.load("sdpa_flash", Shape(seq=777))
    text = str(err.value)
    assert f"sdpa_flash__{Shape(seq=777).key}.csv" in text and "python tools/record_ncu.py --stages sdpa_flash" in text
    assert "Recorded shapes of sdpa_flash" in text


@pytest.mark.parametrize("damage", ["no-header", "header-only", "not-numbers", "missing-column"])
def test_a_corrupt_recording_names_the_file_and_the_command(tmp_path, monkeypatch, damage):
    folder = tmp_path / "h200" / "ncu"
    folder.mkdir(parents=True)
    source = NCU_DIR / f"sdpa_flash__{DEFAULT_SHAPE.key}.csv"
    target = folder / source.name
    lines = source.read_text().splitlines(True)
    if damage == "no-header":
        target.write_text("==PROF== nothing here\n")
    elif damage == "header-only":
        target.write_text("".join(lines[:2]))
    elif damage == "not-numbers":
        header = next(csv.reader([lines[0]]))
        row = next(csv.reader([lines[2]]))
        row[header.index("launch__registers_per_thread")] = "many"
        target.write_text(lines[0] + lines[1] + ",".join(f'"{v}"' for v in row) + "\n")
    else:
        header = next(csv.reader([lines[0]]))
        keep = [i for i, h in enumerate(header) if h != "dram__bytes_read.sum"]
        rows = [next(csv.reader([line])) for line in lines]
        target.write_text("".join(",".join(f'"{r[i]}"' for i in keep) + "\n" for r in rows))
    monkeypatch.setattr(config, "REPLAY_DIR", tmp_path)
    with pytest.raises(TraceError) as err:
        ncu.load("sdpa_flash", DEFAULT_SHAPE)
    assert source.name in str(err.value) and "python tools/record_ncu.py" in str(err.value)


def test_a_missing_provenance_names_the_file_and_the_command(tmp_path, monkeypatch):
    shutil.copytree(NCU_DIR, tmp_path / "h200" / "ncu", ignore=shutil.ignore_patterns("provenance.json", "*.ncu-rep"))
    monkeypatch.setattr(config, "REPLAY_DIR", tmp_path)
    with pytest.raises(TraceError, match=r"provenance\.json.*python tools/record_ncu\.py"):
        ncu.provenance()


def test_units_scale_to_bytes_and_nanoseconds():
    # every unit the recordings use, read from their units rows, scales to a base unit
    seen = set()
    for path in TABLES:
        seen |= set(raw(path)[1].values())
    for unit in seen:
        factor, base_unit = ncu.unit_scale(unit)
        if "byte" in unit:
            assert base_unit.startswith("byte") and factor == SCALE[unit.split("/")[0][:-len("byte")]]
        if unit in TIME:
            assert base_unit == "ns" and factor == TIME[unit]


# replay counterpart, run in CI: tests/independent/test_gpu_counterparts.py::test_recorded_ncu_reads_one_forward
@pytest.mark.gpu
def test_live_ncu_reads_one_forward(tmp_path):
    if ncu.unavailable_reason():
        pytest.skip(ncu.unavailable_reason())
    from helpers import profile_stage
    try:
        table = ncu.measure_stage("sdpa_flash", DEFAULT_SHAPE, tmp_path)
    except ncu.CountersUnavailable as err:
        pytest.skip(str(err))
    prof = profile_stage("sdpa_flash", mode="live", quiet=True)
    kernels = prof.kernels().query("category == 'kernel'")
    assert len(table) == len(kernels)
    assert list(table["registers"]) == [int(r) for r in kernels["registers_per_thread"]]
    assert table.attrs["report"].exists()


@pytest.mark.skipif(not cuda_available(), reason="needs a CUDA GPU")
def test_live_reason_is_none_only_with_ncu():
    assert (ncu.unavailable_reason() is None) == (ncu.find_ncu() is not None)
