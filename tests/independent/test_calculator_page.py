"""The calculator (its page, its presets, chapter 07's kernel links) against the recordings.

The JavaScript is held to `helpers.occupancy` by tests/test_calculator_js.py; this file holds
`helpers.occupancy` itself to what the recording GPU's own tools said: ncu's CSV gives, for every
kernel it profiled, the blocks per SM that each resource allows and the theoretical occupancy the
driver computed (`launch__occupancy_limit_*`, `sm__maximum_warps_per_active_cycle_pct`). That is
the replay counterpart of tests/test_occupancy.py's GPU-only test against the driver. The presets
and links are held to the trace's launch arguments, read raw.

Units: shared memory in bytes (ncu's Kbyte/block × 1e3, its byte/block as is); occupancy in per
cent of the SM's warp slots."""
import pytest
from urllib.parse import parse_qs, urlsplit

from helpers import Session, occupancy_calculator
from helpers.occupancy.charts import traced_kernels
from helpers.occupancy.calculator import occupancy

from . import raw

CSVS = sorted((raw.TRACES / "ncu").glob("*.csv")) + sorted((raw.TRACES / "training" / "ncu").glob("*.csv"))
LIMITS = {"warps": "launch__occupancy_limit_warps", "registers": "launch__occupancy_limit_registers",
          "shared_memory": "launch__occupancy_limit_shared_mem", "blocks": "launch__occupancy_limit_blocks"}


def ncu_launches():
    out = []
    for path in CSVS:
        rows, units = raw.ncu_table(path)
        for r in rows:
            smem = sum(raw.ncu_number(r, units, m) for m in ("launch__shared_mem_per_block_dynamic",
                                                              "launch__shared_mem_per_block_static"))
            config = int(round(raw.ncu_number(r, units, "launch__shared_mem_config_size")))
            out.append((path.name, r["Kernel Name"][:60], int(float(r["launch__block_size"].replace(",", ""))),
                        int(float(r["launch__registers_per_thread"])), int(round(smem)), config,
                        {k: int(float(r[m].replace(",", ""))) for k, m in LIMITS.items()},
                        float(r["sm__maximum_warps_per_active_cycle_pct"])))
    return out


def test_helpers_occupancy_agrees_with_the_driver_on_every_recorded_kernel():
    launches = ncu_launches()
    assert len(launches) >= 60, len(launches)
    seen = set()
    for where, name, threads, regs, smem, config, limits, pct in launches:
        if (threads, regs, smem, config) in seen:
            continue
        seen.add((threads, regs, smem, config))
        r = occupancy("H200", threads, regs, smem)
        assert 100 * r.occupancy == pytest.approx(pct, abs=0.01), (where, name, threads, regs, smem)
        if config < 233472:
            # the driver set this SM up with a smaller carveout (the kernel's preference): the
            # same preference, in per cent of the SM's shared memory, gives the same limit
            r = occupancy("H200", threads, regs, smem, carveout=config * 100 // 233472)
            assert r.shared_memory_per_sm == config, (where, name, r.shared_memory_per_sm, config)
        for k, v in limits.items():
            assert min(r.block_limits[k], 32) == min(v, 32), (where, name, k, r.block_limits, limits)
        # and the rules as written out in raw.py give the same
        assert raw.occupancy(threads, regs, smem)["pct"] == pytest.approx(pct, abs=0.01)
    assert len(seen) >= 15


def default_kernels():
    """Every distinct kernel launch of the replay set at the default shape, from the raw events:
    (name, registers, threads, shared memory) → the stages that launch it."""
    out = {}
    for path in sorted(raw.TRACES.glob(f"*__{raw.DEFAULT}.json.gz")):
        stage = path.name.split("__")[0]
        for e in raw.forward(path).gpu:
            a = e["args"]
            if e["kind_cat"] != "kernel" or "registers per thread" not in a:
                continue
            key = (e["name"], a["registers per thread"], a["block"][0] * a["block"][1] * a["block"][2], a["shared memory"])
            out.setdefault(key, [])
            if stage not in out[key]:
                out[key].append(stage)
    return out


def test_the_presets_are_the_traced_launches():
    data = occupancy_calculator.calculator_data(traced_kernels(Session(mode="replay").recorded()))
    want = default_kernels()
    got = {(p["name"], p["registers"], p["threads"], p["sharedMemory"]): sorted(p["stages"].split(", "))
           for p in data["presets"]}
    assert got == {k: sorted(v) for k, v in want.items()}
    assert all(p["gpu"] == "H200" for p in data["presets"])
    # the line under the presets says where they come from: every default-shape trace, replayed,
    # and the GPU its provenance names
    traces = sorted(raw.TRACES.glob(f"*__{raw.DEFAULT}.json.gz"))
    gpu = raw.provenance(traces[0])["gpu"]
    assert data["presetSource"].startswith(f"Replaying the recorded traces of {len(traces)} stages for the "
                                           f"kernels: recorded on {gpu} ")
    # it opens on FlashAttention-2's kernel as traced
    (flash,) = [e for e in raw.forward(raw.stage_path("sdpa_flash")).gpu if e["kind_cat"] == "kernel"]
    a = flash["args"]
    assert (data["initial"]["threads"], data["initial"]["registers"], data["initial"]["smem"]) == \
        (a["block"][0] * a["block"][1] * a["block"][2], a["registers per thread"], a["shared memory"])


def test_kernel_links_carry_the_traced_launch_and_its_occupancy():
    links = occupancy_calculator.kernel_links(Session(mode="replay").recorded())
    want = default_kernels()
    assert len(links.rows) == len(want)
    for r in links.rows:
        key = (r["name"], r["registers"], r["threads"], r["smem"])
        assert key in want
        q = {k: v[0] for k, v in parse_qs(urlsplit(r["href"]).query).items()}
        assert (int(q["threads"]), int(q["registers"]), int(q["smem"])) == (r["threads"], r["registers"], r["smem"])
        pct = raw.occupancy(r["threads"], r["registers"], r["smem"])["pct"]
        assert r["occupancy"].startswith(f"{pct:.1f}%"), (r["label"], r["occupancy"], pct)
