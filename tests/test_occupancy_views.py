"""Tests of the occupancy views: the calculator's presets and links, the charts, the drawn SM and
the notebook helpers of "7. Occupancy math". (The browser calculator itself is tested in Chromium
by tests/test_calculator_js.py.)

Every expected value is computed here, from helpers.occupancy or from the raw trace JSON; none
is typed in.
"""
from __future__ import annotations

import json
import math
import random
import re
import pandas as pd
import pytest

from conftest import ROOT, raw_document
from helpers import DEFAULT_SHAPE
from helpers.occupancy.calculator import UNLIMITED, occupancy
from helpers.occupancy.gpus import PRODUCTS, gpu_spec
from helpers import Session, occupancy_charts as oc

GPUS = list(PRODUCTS)
DEFAULT_TRACES = sorted((ROOT / "notebooks" / "traces").glob(f"*/*__{DEFAULT_SHAPE.key}.json.gz"))


@pytest.fixture(scope="module")
def kernels():
    return oc.traced_kernels(Session(mode="replay").recorded())


def _raw_kernels() -> dict[tuple, str]:
    """(name, registers, threads, shared memory) of every kernel event of the default-shape
    traces, straight from the JSON, with the GPU the trace records."""
    out = {}
    for path in DEFAULT_TRACES:
        doc = raw_document(path)
        for e in doc["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") == "kernel":
                a = e["args"]
                key = (e["name"], a["registers per thread"], math.prod(a["block"]),
                       a["shared memory"])
                out[key] = doc["provenance"]["gpu"]
    return out


def test_presets_are_the_traced_values_exactly(kernels):
    from helpers.occupancy.browser import calculator_data
    data = calculator_data(kernels)
    raw = _raw_kernels()
    presets = data["presets"]
    assert len(presets) == len(kernels) > 0
    loaded = set()
    for p in presets:
        key = (p["name"], p["registers"], p["threads"], p["sharedMemory"])
        assert key in raw, f"preset {p['label']} does not match the trace's args"
        assert p["gpu"] == gpu_spec(raw[key]).product and p["tracedOn"] == raw[key]
        loaded.add(key)
    # every kernel of the forward steps is a preset, and every kernel name of the traces is one
    forward = {(r.name, r.registers, r.threads, r.shared_memory) for r in kernels.itertuples()}
    assert loaded == forward
    assert {k[0] for k in raw} == {k[0] for k in forward}
    # the calculator starts on FlashAttention-2's kernel as traced (sdpa_flash)
    flash = next(p for p in presets if "sdpa_flash" in p["stages"].split(", "))
    assert data["initial"] == {"gpu": flash["gpu"], "threads": flash["threads"],
                               "registers": flash["registers"], "smem": flash["sharedMemory"],
                               "carveout": None, "limit": "opt-in"}


def test_calculator_data_is_the_python_tables():
    """What the browser calculator is handed is helpers.occupancy's, field by field."""
    from helpers.occupancy import calculator as calc_module, gpus
    from helpers.occupancy.browser import calculator_data, carveout_percentages
    data = calculator_data(pd.DataFrame(columns=["label"]), source="")
    assert [a["capability"] for a in data["architectures"]] == [
        f"{a}.{b}" for a, b in gpus.ARCHITECTURES]
    for arch in data["architectures"]:
        spec = gpu_spec(arch["capability"])
        assert arch["sharedMemoryCarveouts"] == list(spec.shared_memory_carveouts)
        assert arch["sharedMemoryPerBlockOptin"] == spec.shared_memory_per_block_optin
        assert arch["maxWarpsPerSm"] == spec.max_warps_per_sm
        # each carveout percentage gives its size, and is the largest that does
        for c in carveout_percentages(spec):
            assert occupancy(spec, 32, 0, 0, carveout=c["percent"]).shared_memory_per_sm == max(
                c["bytes"], occupancy(spec, 32, 0, 0, carveout=0).shared_memory_per_sm)
            if c["percent"] < 100:
                assert calc_module._preferred_shared_memory(spec, c["percent"] + 1) > c["bytes"]
        axes = oc.impact_axes(spec)
        assert arch["impact"] == {k: {"range": list(v["range"]), "extra": list(v["extra"])}
                                  for k, v in axes.items()}
    assert [p["name"] for p in data["products"]] == list(PRODUCTS)
    assert data["messages"] == {**calc_module.MESSAGES, **gpus.MESSAGES}
    assert data["knownGpus"] == gpus.known_gpus()
    assert data["presets"] == []
    start = data["initial"]   # with no presets, still a configuration occupancy() takes, and one that runs
    first = occupancy(start["gpu"], start["threads"], start["registers"], start["smem"],
                      carveout=start["carveout"], shared_memory_limit=start["limit"])
    assert first.active_blocks >= 1
    assert start["gpu"] in (first.gpu.product, ".".join(map(str, first.gpu.capability)))


def test_calculator_links_carry_each_kernel(kernels):
    from urllib.parse import parse_qs, urlsplit
    from helpers.occupancy.browser import kernel_links
    links = kernel_links(kernels)
    assert len(links.rows) == len(kernels)
    for row, k in zip(links.rows, kernels.itertuples()):
        q = {key: v[0] for key, v in parse_qs(urlsplit(row["href"]).query).items()}
        assert urlsplit(row["href"]).path == "calculator.html"
        assert q == {"gpu": gpu_spec(k.gpu).product, "threads": str(k.threads),
                     "registers": str(k.registers), "smem": str(k.shared_memory),
                     "carveout": "default", "limit": "opt-in"}
        res = occupancy(k.gpu, k.threads, k.registers, k.shared_memory)
        assert row["occupancy"] == f"{res.occupancy_pct:.1f}% ({oc.limiter_label(res)})"
    html = links.to_html()
    assert html.count('class="apo-kernel-link"') == len(kernels)


# ------------------------------------------------------------------------------------- charts

def test_impact_curves_points_are_the_calculator(kernels):
    for r in kernels.head(6).itertuples():
        fig = oc.impact_curves("H200", r.threads, r.registers, r.shared_memory)
        curves = [t for t in fig.data if t.mode == "lines"]
        marks = [t for t in fig.data if t.mode == "markers"]
        assert len(curves) == 3 and len(marks) == 3
        current = occupancy("H200", r.threads, r.registers, r.shared_memory)
        for mark in marks:
            assert list(mark.y) == [round(current.occupancy_pct, 2)]
        for what, curve in zip(("threads", "registers", "shared_memory"), curves):
            assert len(curve.x) > 10
            for x, y in list(zip(curve.x, curve.y))[:: max(1, len(curve.x) // 25)]:
                args = {"threads": r.threads, "registers": r.registers,
                        "shared_memory": r.shared_memory, what: x}
                res = occupancy("H200", args["threads"], args["registers"], args["shared_memory"])
                assert y == round(res.occupancy_pct, 2)
        # the marked value is on its curve
        assert r.threads in curves[0].x and r.registers in curves[1].x
        assert r.shared_memory in curves[2].x


def test_utilization_bars_mark_the_limiter():
    rng = random.Random(5)
    for _ in range(40):
        gpu = rng.choice(GPUS)
        spec = gpu_spec(gpu)
        res = occupancy(gpu, rng.randint(1, spec.max_threads_per_block), rng.randint(0, 255),
                        rng.randint(0, spec.shared_memory_per_block_optin))
        bar = oc.utilization_bars(res).data[0]
        order = ("warps", "registers", "shared_memory", "blocks")
        assert list(bar.x) == [round(100 * res.utilization[k], 2) for k in order]
        marked = {k for k, t in zip(order, bar.text) if "limiter" in t}
        assert marked == set(res.limiters)
        for k, allowed in zip(order, bar.customdata):
            limit = res.block_limits[k]
            assert allowed == ("no limit" if limit == UNLIMITED else f"{limit} blocks")


def test_stage_occupancy_matches_the_traces():
    from helpers import profile_stage
    stages = ["naive", "sdpa_flash", "sdpa_cudnn"]
    profiles = [profile_stage(s, mode="replay", quiet=True) for s in stages]
    fig = oc.stage_occupancy(profiles)
    names = [t.name for t in fig.data]
    cupti = fig.data[names.index("CUPTI est. achieved %")]
    theo = fig.data[names.index("theoretical (smem opt-in)")]
    expected_cupti, expected_theo = [], []
    for prof in profiles:
        doc = raw_document(prof.trace_path)
        step = prof.forward_step
        corr = {e["args"]["correlation"] for e in doc["traceEvents"]
                if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and prof.launches(step)["correlation"].isin([e["args"].get("correlation")]).any()}
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel" and e["args"]["correlation"] in corr:
                a = e["args"]
                expected_cupti.append(a["est. achieved occupancy %"])
                expected_theo.append(round(occupancy(prof.provenance.capability,
                                                     math.prod(a["block"]),
                                                     a["registers per thread"],
                                                     a["shared memory"]).occupancy_pct, 2))
    assert list(cupti.y) == expected_cupti
    assert list(theo.y) == expected_theo
    regs = fig.data[2]
    assert len(regs.y) == len(expected_cupti) > 0


# -------------------------------------------------------------------------------- the SM drawn

def test_sm_drawing_fills_what_the_calculator_uses():
    from helpers.occupancy.drawing import draw_sm, filled_fractions, limiter_panels
    rng = random.Random(9)
    configs = [("H200", 128, 255, 49152), ("H200", 384, 168, 134144), ("T4", 1024, 64, 0)]
    for _ in range(30):
        gpu = rng.choice(GPUS)
        spec = gpu_spec(gpu)
        configs.append((gpu, rng.randint(1, spec.max_threads_per_block), rng.randint(0, 255),
                        rng.randint(0, spec.shared_memory_per_block_optin)))
    for config in configs:
        res = occupancy(*config)
        fig = draw_sm(*config)
        fractions = filled_fractions(fig)
        for resource in ("registers", "shared_memory", "warps", "blocks"):
            assert math.isclose(fractions[resource], res.utilization[resource], abs_tol=1e-9), \
                (config, resource)
        assert limiter_panels(fig) == set(res.limiters)
        assert fig.patch.get_alpha() == 0


# ---------------------------------------------------------------------- "7. Occupancy math"

@pytest.fixture(scope="module")
def profiles():
    from helpers import occupancy_lessons as lessons
    return Session(mode="replay").load_stages(lessons.STAGES)


def test_arithmetic_lands_on_the_calculator(profiles):
    from helpers import occupancy_lessons as lessons
    for stage in ("sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "flex"):
        prof = profiles[stage]
        table = lessons.arithmetic(prof)
        k = lessons.main_kernel(prof)
        res = occupancy(prof.provenance.capability, int(k["threads_per_block"]),
                        int(k["registers_per_thread"]), int(k["shared_memory_bytes"]))
        col = table.columns[-1]
        assert table.loc["active blocks", col] == res.active_blocks
        assert table.loc["active warps", col] == res.active_warps
        assert table.loc["occupancy", col] == f"{res.occupancy_pct:.1f}%"
        assert table.loc["limited by", col] == oc.limiter_label(res)
        assert table.loc["→ blocks the registers allow", col] == res.block_limits["registers"]


def test_granularity_counts_per_subpartition():
    from helpers import occupancy_lessons as lessons
    for gpu in GPUS:
        spec = gpu_spec(gpu)
        table = lessons.granularity(gpu)
        calc = table.columns[-1]
        per_sub = [c for c in table.columns if "sub-partition" in c][0]
        for regs, row in table.iterrows():
            rounded = -(-regs * spec.warp_size // spec.register_allocation_unit) \
                * spec.register_allocation_unit
            assert row[per_sub] == spec.sm_subpartitions * (
                spec.registers_per_sm // spec.sm_subpartitions // rounded)
            assert row[calc] == occupancy(gpu, 128, int(regs), 0).active_warps
            assert row[per_sub] <= row["⌊file / rounded warp⌋"] <= row["warps: ⌊file / warp⌋"]


def test_cupti_zero_table_reads_the_traces(profiles):
    """CUPTI's figure in the table is the trace's; Kineto's formula recomputed gives it; every
    block above the default cap reads 0 however it was launched."""
    from helpers import occupancy_lessons as lessons
    table = lessons.cupti_zero(profiles)
    assert (table["CUPTI est. %"] == table["Kineto recomputed %"]).all()
    raw = set()
    for prof in profiles.values():
        for e in raw_document(prof.trace_path)["traceEvents"]:
            if e.get("cat") == "kernel":
                a = e["args"]
                raw.add((e["name"], a["shared memory"], a["est. achieved occupancy %"]))
    for _, row in table.iterrows():
        spec = lessons.spec_of(profiles[row["stage"]])
        fits = occupancy(spec, 1, 0, row["shared mem (B)"], shared_memory_limit="default")
        if fits.active_blocks == 0:
            assert row["CUPTI est. %"] == 0
            assert row["true occupancy %"] > 0
        assert any(r[1] == row["shared mem (B)"] and r[2] == row["CUPTI est. %"] for r in raw)


def test_smem_cliff_table_is_the_recording():
    from helpers import occupancy_lessons as lessons
    events, prov, source = Session(mode="replay").smem_cliff()
    assert "Replaying" in source
    table = lessons.smem_cliff(events, prov)
    calls = {e["args"].get("correlation"): e["name"] for e in events
             if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    raw: dict[tuple, set] = {}
    for e in events:
        if e.get("cat") == "kernel":
            a = e["args"]
            raw.setdefault((calls[a["correlation"]], a["shared memory"]), set()).add(
                a["est. achieved occupancy %"])
    assert len(table) == len(raw)
    for _, row in table.iterrows():
        shown = {int(v) for v in row["CUPTI est. %"].split(", ")}
        assert shown == raw[(row["launched by"], row["shared mem (B)"])]
        res = occupancy(prov["capability"], row["threads"], row["registers"],
                        row["shared mem (B)"])
        assert row["true occupancy %"] == round(res.occupancy_pct, 1)


def test_notebook_prose_types_no_numbers():
    """Markdown of the two pages: every figure is a glue role or code, none typed in."""
    for name in ("07_occupancy", "calculator"):
        nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            text = "".join(cell["source"])
            text = re.sub(r"\{glue:text\}`[^`]+`", "", text)
            text = re.sub(r"\{doc\}`[^`]+`", "", text)
            text = re.sub(r"`[^`]*`", "", text)
            text = re.sub(r"^# \d+\.", "#", text)   # the chapter number in the title
            text = re.sub(r"(?m)^\s*\d+\. ", "", text)   # list numbers
            assert not re.search(r"(?<![\w-])\d", text), (name, text[:200])


def test_every_look_follows_a_guess():
    nb = json.loads((ROOT / "notebooks" / "07_occupancy.ipynb").read_text())
    guessed = False
    looks = 0
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and re.search(r"\bguess\.(number|choice|kernels)\(", source):
            guessed = True
        if "hide-output" in cell.get("metadata", {}).get("tags", []):
            assert guessed, source[:80]
            guessed = False
            looks += 1
    assert looks >= 4


def test_the_sm_drawing_is_vector_text_in_the_pages_colour():
    # issue 21: readable at 390 px and in dark mode: four SVG panels, text kept as text, the grey
    # of text and outlines replaced by the page's own colour; the caption states the limiter
    from helpers.occupancy.drawing import RESOURCES, TEXT, caption, panel_svgs, to_html
    r = occupancy("H200", 128, 255, 49152)
    svgs = panel_svgs(r)
    assert list(svgs) == list(RESOURCES)
    for resource, svg in svgs.items():
        assert svg.startswith("<svg") and "<text" in svg, resource
        assert TEXT.lower() not in svg.lower() and "currentColor" in svg, resource
    out = to_html(r).data
    assert out.count("<svg") == 4 and "<img" not in out
    assert "limited by register file" in caption(r)
