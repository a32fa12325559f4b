"""Tests of the occupancy views: the calculator widget, the explorer, the charts, the drawn SM and
the notebook helpers of "7. Occupancy math".

Every expected value is computed here, from helpers.occupancy or from the raw trace JSON; none
is typed in.
"""
from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, raw_document
from helpers import DEFAULT_SHAPE
from helpers.occupancy.calculator import UNLIMITED, occupancy
from helpers.occupancy.gpus import PRODUCTS, gpu_spec
from helpers import occupancy_charts as oc

GPUS = list(PRODUCTS)
DEFAULT_TRACES = sorted((ROOT / "notebooks" / "traces").glob(f"*/*__{DEFAULT_SHAPE.key}.json.gz"))


@pytest.fixture(scope="module")
def kernels():
    return oc.traced_kernels()


@pytest.fixture(scope="module")
def calc(kernels):
    from helpers.occupancy.widget import calculator
    return calculator(presets_from=kernels)


@pytest.fixture(scope="module")
def explorer_json(kernels):
    fig = oc.explorer(kernels=kernels)
    return json.loads(fig.to_json())


def _same(result, expected) -> bool:
    return (result.active_blocks == expected.active_blocks
            and result.active_warps == expected.active_warps
            and result.limiters == expected.limiters
            and result.block_limits == expected.block_limits
            and result.utilization == expected.utilization)


# ------------------------------------------------------------------------------------- widget

def _check_state(calc):
    """Every control inside the selected GPU's limits, and every readout that of occupancy()."""
    spec = gpu_spec(calc.gpu.value)
    v = calc.values
    assert 1 <= v["threads_per_block"] <= spec.max_threads_per_block
    assert 0 <= v["registers_per_thread"] <= spec.max_registers_per_thread
    assert 0 <= v["shared_memory_per_block"] <= spec.shared_memory_per_block_optin
    assert v["carveout"] is None or 0 <= v["carveout"] <= 100
    assert calc.threads.max == spec.max_threads_per_block
    assert calc.registers.max == spec.max_registers_per_thread
    assert calc.shared_memory.max == spec.shared_memory_per_block_optin
    expected = occupancy(v["gpu"], v["threads_per_block"], v["registers_per_thread"],
                         v["shared_memory_per_block"], carveout=v["carveout"],
                         shared_memory_limit=v["shared_memory_limit"])
    assert _same(calc.result, expected)
    text = re.sub(r"<[^>]+>", "", calc.readout.value)
    assert f"{expected.active_blocks} active blocks" in text
    assert f"{expected.active_warps} of {expected.max_warps} warps" in text
    assert f"occupancy {expected.occupancy_pct:.1f}%" in text
    assert f"limited by {oc.limiter_label(expected)}" in text
    # the charts and the drawing shown are those of the same configuration
    from helpers.occupancy.drawing import filled_fractions
    fractions = filled_fractions(calc.sm_figure)
    for resource in ("registers", "shared_memory", "warps", "blocks"):
        assert math.isclose(fractions[resource], expected.utilization[resource], abs_tol=1e-9)
    bars = calc.bars_figure.data[0]
    assert list(bars.x) == [round(100 * expected.utilization[r], 2)
                            for r in ("warps", "registers", "shared_memory", "blocks")]


def test_widget_starts_valid(calc):
    _check_state(calc)


def test_widget_extremes_and_gpu_switches_stay_valid(calc):
    sliders = [calc.threads, calc.registers, calc.shared_memory, calc.carveout]
    # each GPU after the one with the largest limits, and after the one with the smallest
    order = [g for pair in zip(GPUS, ["H200"] * len(GPUS), GPUS, ["T4"] * len(GPUS)) for g in pair]
    for i, gpu in enumerate(order):
        calc.gpu.value = gpu
        _check_state(calc)
        if i % 4:
            continue
        for slider in sliders:
            for value in (slider.max + 10_000, slider.min - 10_000):
                slider.value = value   # outside the bounds ipywidgets clamps it
                _check_state(calc)
        # every control at its maximum, then a GPU with smaller limits: re-clamped
        for slider in sliders:
            slider.value = slider.max
        _check_state(calc)


def test_widget_random_walk_stays_valid(calc):
    rng = random.Random(7)
    for _ in range(80):
        action = rng.randrange(7)
        if action == 0:
            calc.gpu.value = rng.choice(GPUS)
        elif action == 1:
            calc.threads.value = rng.randint(-5, 1100)
        elif action == 2:
            calc.registers.value = rng.randint(-5, 300)
        elif action == 3:
            calc.shared_memory.value = rng.randint(-5, 240_000)
        elif action == 4:
            calc.carveout_auto.value = not calc.carveout_auto.value
            calc.carveout.value = rng.randint(-5, 120)
        elif action == 5:
            calc.shared_memory_limit.value = rng.choice(["opt-in", "default"])
        else:
            rng.choice(calc.preset_buttons).click()
        _check_state(calc)


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


def test_presets_load_the_traced_values_exactly(calc, kernels):
    raw = _raw_kernels()
    assert len(calc.preset_buttons) == len(kernels) > 0
    loaded = set()
    for button, row in zip(calc.preset_buttons, kernels.itertuples()):
        button.click()
        key = (row.name, calc.registers.value, calc.threads.value, calc.shared_memory.value)
        assert key in raw, f"preset {button.description} does not match the trace's args"
        assert calc.gpu.value == gpu_spec(raw[key]).product
        assert calc.values["carveout"] is None and calc.values["shared_memory_limit"] == "opt-in"
        _check_state(calc)
        loaded.add(key)
    # and every kernel of the forward steps is among the presets
    forward = {(r.name, r.registers, r.threads, r.shared_memory) for r in kernels.itertuples()}
    assert loaded == forward
    assert {k[0] for k in raw} == {k[0] for k in forward}


# ----------------------------------------------------------------------------------- explorer

def _decode(value):
    return oc.decode_array(value)


def _gpu_traces(doc: dict, gpu_index: int) -> list[int]:
    args = doc["layout"]["updatemenus"][0]["buttons"][gpu_index]["args"][0]
    return [i for i, a in enumerate(args["xaxis"]) if a == "x"]


def test_explorer_is_small(explorer_json):
    size = len(json.dumps(explorer_json, separators=(",", ":")).encode())
    assert size < 300_000, f"the explorer's figure JSON is {size / 1024:.0f} KB"


def test_explorer_controls(explorer_json):
    doc = explorer_json
    buttons = doc["layout"]["updatemenus"][0]["buttons"]
    assert [b["label"] for b in buttons] == [gpu_spec(g).name for g in GPUS]
    steps = doc["layout"]["sliders"][0]["steps"]
    levels = list(oc.EXPLORER_SMEM_LEVELS)
    assert len(steps) == len(levels)
    data = doc["data"]
    for li, step in enumerate(steps):
        update, indices = step["args"]
        for i, visible in zip(indices, update["visible"]):
            trace = data[i]
            if trace["type"] in ("heatmap", "bar"):
                assert visible == (trace["meta"][0] == levels[li])
    for gi, gpu in enumerate(GPUS):
        spec = gpu_spec(gpu)
        mine = _gpu_traces(doc, gi)
        heat = [data[i] for i in mine if data[i]["type"] == "heatmap"]
        valid = [lv for lv in levels if lv <= spec.shared_memory_per_block_optin]
        assert sorted(t["meta"][0] for t in heat) == valid
        assert all(t["meta"][1] == spec.max_warps_per_sm for t in heat)


def test_explorer_hover_numbers_agree_with_occupancy(explorer_json):
    doc, data = explorer_json, explorer_json["data"]
    rng = random.Random(3)
    checked = 0
    for gi, gpu in enumerate(GPUS):
        spec = gpu_spec(gpu)
        mine = _gpu_traces(doc, gi)
        for i in mine:
            heat = data[i]
            if heat["type"] != "heatmap":
                continue
            level = heat["meta"][0]
            xs, ys = _decode(heat["x"]), _decode(heat["y"])
            z, cd = _decode(heat["z"]), _decode(heat["customdata"])
            bars = [data[j] for j in mine if data[j]["type"] == "bar"
                    and data[j]["meta"][0] == level]
            for _ in range(40):
                a, b = rng.randrange(len(ys)), rng.randrange(len(xs))
                threads, regs = int(ys[a]), int(xs[b])
                res = occupancy(spec, threads, regs, level)
                assert z[a, b] == math.floor(res.occupancy_pct + 0.5)
                assert (cd[a, b, 0], cd[a, b, 1]) == (res.active_blocks, res.active_warps)
                # a bar covers the cell exactly when the limiter is not registers alone; its
                # hover numbers are the cell's
                covering = []
                for bar in bars:
                    by, base, length = _decode(bar["y"]), _decode(bar["base"]), _decode(bar["x"])
                    bcd = _decode(bar["customdata"])
                    for k in range(len(by)):
                        if by[k] == threads and base[k] <= regs <= base[k] + length[k]:
                            covering.append((bar["text"][k], tuple(int(v) for v in bcd[k][:3])))
                label = oc.limiter_label(res)
                if label == "registers":
                    assert covering == []
                else:
                    assert covering == [(label, (z[a, b], res.active_blocks, res.active_warps))]
                checked += 1
    assert checked > 1000


def test_explorer_kernel_points(explorer_json, kernels):
    doc, data = explorer_json, explorer_json["data"]
    for gi, gpu in enumerate(GPUS):
        spec = gpu_spec(gpu)
        points = [data[i] for i in _gpu_traces(doc, gi) if data[i]["type"] == "scatter"
                  and data[i].get("mode") == "markers"]
        assert len(points) == 1
        xs, ys = list(_decode(points[0]["x"])), list(_decode(points[0]["y"]))
        for r in kernels.itertuples():
            k = list(zip(xs, ys)).index((r.registers, r.threads))
            text = points[0]["text"][k]
            if r.shared_memory > spec.shared_memory_per_block_optin:
                assert f"cannot launch on {spec.name}" in text
            else:
                res = occupancy(spec, r.threads, r.registers, r.shared_memory)
                assert (f"{res.active_warps} of {res.max_warps} warps "
                        f"({res.occupancy_pct:.1f}%), limited by {oc.limiter_label(res)}") in text


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("google-chrome")),
                    reason="needs a headless chromium to drive the figure")
def test_explorer_hover_in_a_browser(tmp_path, explorer_json, kernels):
    """Plotly itself draws the figure, the controls' args are applied as clicks apply them, and
    the hover label shown at sampled cells says what occupancy() says."""
    browser = shutil.which("chromium") or shutil.which("google-chrome")
    import plotly
    shutil.copy(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", tmp_path)
    regs, threads = oc.explorer_axes()
    levels = list(oc.EXPLORER_SMEM_LEVELS)
    rng = random.Random(11)
    probes = []
    for gi, gpu in enumerate(GPUS):
        spec = gpu_spec(gpu)
        for li, level in enumerate(levels):
            if level > spec.shared_memory_per_block_optin:
                continue
            for _ in range(3):
                r, t = rng.choice(regs), rng.choice(threads)
                # a traced kernel's point nearby takes the hover, as it should
                if any(abs(r - kr) <= 16 and abs(t - kt) <= 64
                       for kr, kt in zip(kernels["registers"], kernels["threads"])):
                    continue
                res = occupancy(spec, t, r, level)
                probes.append({"g": gi, "l": li, "x": r, "y": t, "want": [
                    f"{t} threads", f"{level} B shared memory",
                    f"occupancy {math.floor(res.occupancy_pct + 0.5)}%",
                    f"blocks {res.active_blocks},", f"warps {res.active_warps} of",
                    f"limited by {oc.limiter_label(res)}"]})
    page = tmp_path / "explorer.html"
    page.write_text(f"""<html><head><script src="plotly.min.js"></script></head><body>
<div id="g"></div><pre id="out"></pre><script>
var fig = {json.dumps(explorer_json)}; var probes = {json.dumps(probes)};
var sleep = function (ms) {{ return new Promise(function (r) {{ setTimeout(r, ms); }}); }};
(async function () {{
  var gd = document.getElementById('g'), out = [], cur = [-1, -1];
  await Plotly.newPlot(gd, fig.data, Object.assign(fig.layout, {{width: 900, height: 640}}));
  for (var p of probes) {{
    if (cur[0] !== p.g) {{ var a = fig.layout.updatemenus[0].buttons[p.g].args;
                          await Plotly.update(gd, a[0], a[1]); cur[0] = p.g; }}
    if (cur[1] !== p.l) {{ var s = fig.layout.sliders[0].steps[p.l].args;
                          await Plotly.restyle(gd, s[0], s[1]); cur[1] = p.l; }}
    await sleep(120);
    Plotly.Fx.hover(gd, {{xval: p.x, yval: p.y}}, 'xy'); await sleep(40);
    var el = document.querySelector('.hoverlayer .hovertext');
    out.push(el ? el.textContent : '');
  }}
  document.getElementById('out').textContent = JSON.stringify(out);
}})();
</script></body></html>""")
    result = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                             "--virtual-time-budget=300000", "--dump-dom", page.as_uri()],
                            capture_output=True, text=True, timeout=300)
    import html
    body = result.stdout.split('<pre id="out">')[1].split("</pre>")[0]
    shown = json.loads(html.unescape(body))
    assert len(shown) == len(probes) > 100
    bad = [(p, s) for p, s in zip(probes, shown) if not all(w in s for w in p["want"])]
    assert not bad, bad[:3]


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
    return lessons.load_stages(mode="replay")


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
    events, prov, source = lessons.smem_cliff_events(mode="replay")
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
        if cell["cell_type"] == "code" and "lessons.ask(" in source:
            guessed = True
        if "hide-output" in cell.get("metadata", {}).get("tags", []):
            assert guessed, source[:80]
            guessed = False
            looks += 1
    assert looks >= 4
