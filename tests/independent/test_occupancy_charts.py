"""The occupancy charts every stage chapter (and 07, 10) shows: each bar and curve point from
the raw launch arguments and CUDA's occupancy rules (`raw.occupancy`).

Units: `%` per cent (of the SM's warp slots, registers, shared memory or block slots); warps;
registers per thread as the trace's args hold them."""
import pytest

from helpers import Session, occupancy_charts, occupancy_lessons as lessons, profile_stage

from . import raw
from .test_stage_pages import PAGES


@pytest.fixture(scope="module")
def profs():
    return {s: profile_stage(s, mode="replay", quiet=True)
            for s in {s for stages, _ in PAGES.values() for s in stages} | {"flex"}}


def launch(e):
    a = e["args"]
    return a["block"][0] * a["block"][1] * a["block"][2], a["registers per thread"], a["shared memory"]


@pytest.mark.parametrize("page", [p for p in PAGES if p != "04d_hub_flash"])
def test_stage_occupancy_bars(page, profs):
    stages, _ = PAGES[page]
    fig = occupancy_charts.stage_occupancy([profs[s] for s in stages])
    want = []
    for s in stages:
        ks = [e for e in raw.forward(raw.stage_path(s)).gpu if e["kind_cat"] == "kernel"]
        want += [(s, i, e) for i, e in enumerate(ks, start=1)]
    by = {t.name: t for t in fig.data}
    labels = list(by["CUPTI est. achieved %"].x)
    assert len(labels) == len(want)
    for label, (s, i, e) in zip(labels, want):
        assert label.startswith(f"{s} · {i}. "), (label, s, i)
    assert list(by["CUPTI est. achieved %"].y) == [e["args"]["est. achieved occupancy %"] for _, _, e in want]
    assert list(by["theoretical (smem opt-in)"].y) == pytest.approx([raw.occupancy(*launch(e))["pct"] for _, _, e in want], abs=0.01)
    assert list(by["registers per thread"].y) == [e["args"]["registers per thread"] for _, _, e in want]
    assert list(by["resident warps (calculator)"].y) == [raw.occupancy(*launch(e))["active_warps"] for _, _, e in want]


def test_impact_curves_of_flash():
    flash = Session(mode="replay").load_stages(lessons.STAGES)["sdpa_flash"]
    (e,) = [e for e in raw.forward(raw.stage_path("sdpa_flash")).gpu if e["kind_cat"] == "kernel"]
    threads, regs, smem = launch(e)
    fig = occupancy_charts.impact_curves(**lessons.impact_args(flash))
    curves = {t.name: t for t in fig.data if t.name != "current"}
    vary = {"threads per block": lambda x: (x, regs, smem), "registers per thread": lambda x: (threads, x, smem),
            "shared memory per block (B)": lambda x: (threads, regs, x)}
    for name, args in vary.items():
        c = curves[name]
        for x, y in zip(c.x, c.y):
            assert y == pytest.approx(raw.occupancy(*args(int(x)))["pct"], abs=0.01), (name, x)
    currents = [t for t in fig.data if t.name == "current"]
    assert sorted(t.x[0] for t in currents) == sorted([threads, regs, smem])
    assert all(t.y[0] == pytest.approx(raw.occupancy(threads, regs, smem)["pct"], abs=0.01) for t in currents)


def test_utilization_bars_of_cudnn():
    cudnn = Session(mode="replay").load_stages(lessons.STAGES)["sdpa_cudnn"]
    (e,) = [e for e in raw.forward(raw.stage_path("sdpa_cudnn")).gpu if e["kind_cat"] == "kernel"]
    o = raw.occupancy(*launch(e), pool=raw.ncu_pool("sdpa_cudnn"))
    hw = Session(mode="replay").counters(lessons.STAGES)
    fig = occupancy_charts.utilization_bars(lessons.result_of(cudnn, hw))
    got = dict(zip(fig.data[0].y, fig.data[0].x))
    assert got["warp slots"] == pytest.approx(100 * o["active_warps"] / 64, abs=0.01)
    assert got["registers"] == pytest.approx(100 * o["active_warps"] * o["regs_per_warp"] / 65536, abs=0.01)
    assert got["shared memory"] == pytest.approx(100 * o["active_blocks"] * o["smem_given"] / o["pool"], abs=0.01)
    assert got["block slots"] == pytest.approx(100 * o["active_blocks"] / 32, abs=0.01)
