"""Planted bugs against tests/independent/ (issue 28): each a one-line change of the kind the
suite let through (a swapped argument, a unit in one column, an inverted ratio, min/max or
first/last swapped, two numbers swapped). Each is applied to this checkout, the named test files
run, and the file restored; a bug is caught when the run fails. Not CI: run it by hand,

    PYTHONPATH=$PWD python benchmarks/independent_plants.py [name ...]

and it prints one line per bug: caught or SURVIVED, with the first failing test."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
T = "tests/independent/"

# (name, chapter, file, old, new, tests)
PLANTS = [
    ("glue gpu_us and cpu_us swapped", "01", "helpers/views/prose.py",
     '"gpu_us": round(float(s["gpu_time_us"]), 1), "cpu_us": round(float(s["cpu_time_us"]), 1),',
     '"gpu_us": round(float(s["cpu_time_us"]), 1), "cpu_us": round(float(s["gpu_time_us"]), 1),', [T + "test_stage_pages.py"]),
    ("async: last GPU end read with min", "01", "helpers/views/prose.py",
     '"async_gpu_done_us": round(float(gpu["end_us"].max()) - t0, 1)',
     '"async_gpu_done_us": round(float(gpu["end_us"].min()) - t0, 1)', [T + "test_stage_pages.py"]),
    ("forward memory in MB, labelled MiB", "02", "helpers/views/prose.py",
     'f"{needed / 2**20:,.0f}"', 'f"{needed / 1e6:,.0f}"', [T + "test_stage_pages.py"]),
    ("kernel table µs column in ms", "01-06", "helpers/views/tables.py",
     '"µs": k["dur_us"].round(1),', '"µs": (k["dur_us"] / 1e3).round(1),', [T + "test_stage_pages.py"]),
    ("GPU and CPU bars swapped", "01-06", "helpers/views/charts.py",
     'for label, column in (("GPU time", "gpu_time_us"), ("CPU time", "cpu_time_us")):',
     'for label, column in (("GPU time", "cpu_time_us"), ("CPU time", "gpu_time_us")):', [T + "test_stage_pages.py"]),
    ("04d: last depth-1 op shown as the first", "04d", "helpers/chapters/hub_flash.py",
     '"first op": top[0] if top else None,', '"first op": top[-1] if top else None,', [T + "test_hub_page.py"]),
    ("05: HBM ratio inverted", "05", "helpers/counters/chapter.py",
     '"ratio": f"{m[unfused] / m[fused]:.0f}"', '"ratio": f"{m[fused] / m[unfused]:.0f}"', [T + "test_counters_page.py"]),
    ("05: MB as MiB", "05", "helpers/counters/chapter.py", "MB = 1e6", "MB = 2**20", [T + "test_counters_page.py"]),
    ("06: a CUDA call's row keeps only its last call", "06", "helpers/chapters/claims.py",
     'parts[label] = parts.get(label, 0.0) + dur', 'parts[label] = dur', [T + "test_stage_pages.py"]),
    ("06b: unfused events read on the compiled profile", "06b", "helpers/chapters/compiled.py",
     '"naive_unfused_us": round(float(_between_gemms(naive)["dur_us"].sum()), 1),',
     '"naive_unfused_us": round(float(_between_gemms(compiled)["dur_us"].sum()), 1),', [T + "test_compiled_flex_pages.py"]),
    ("06b: first call over a later call inverted", "06b", "helpers/chapters/compiled.py",
     '"first call / later call": None if first is None or not call else round(first * 1e6 / call),',
     '"first call / later call": None if first is None or not call else round(call / (first * 1e6)),', [T + "test_compiled_flex_pages.py"]),
    ("06c: flex over flash inverted", "06c", "helpers/chapters/flex.py",
     '"flex_over_flash_gpu": f"{float(sf[\'gpu_time_us\']) / float(sa[\'gpu_time_us\']):.2f}",',
     '"flex_over_flash_gpu": f"{float(sa[\'gpu_time_us\']) / float(sf[\'gpu_time_us\']):.2f}",', [T + "test_compiled_flex_pages.py"]),
    ("06c: widest gap taken at the narrowest", "06c", "helpers/chapters/flex.py",
     'return int(rows.sort_values("loop / busy").iloc[-1]["seq"])',
     'return int(rows.sort_values("loop / busy").iloc[0]["seq"])', [T + "test_compiled_flex_pages.py", T + "test_timer_verdicts.py"]),
    ("07: speedup inverted", "07", "helpers/chapters/occupancy_lessons.py",
     '"speedup": f"{nv / fl:.1f}"', '"speedup": f"{fl / nv:.1f}"', [T + "test_occupancy_page.py"]),
    ("07: achieved / theoretical inverted", "07", "helpers/chapters/occupancy_truth.py",
     '"achieved / theoretical": round(float(r["achieved_occupancy_pct"]) / theo.occupancy_pct, 2)',
     '"achieved / theoretical": round(theo.occupancy_pct / float(r["achieved_occupancy_pct"]), 2)', [T + "test_occupancy_page.py"]),
    ("08: loop / busy inverted", "08", "helpers/views/tables.py",
     '"loop / busy": None if b is None else round(b.wall_us / b.busy_us, 3),',
     '"loop / busy": None if b is None else round(b.busy_us / b.wall_us, 3),', [T + "test_timer_verdicts.py"]),
    ("08: timer example at the smallest overhead", "08", "helpers/views/prose.py",
     "        name = max(over, key=over.get)", "        name = min(over, key=over.get)", [T + "test_timer_verdicts.py"]),
    ("10: host and other waits swapped", "10", "helpers/own_model/chapter.py",
     '"host_wait_pct": round(float(b["host_wait_pct"]), 1),', '"host_wait_pct": round(float(b["other_wait_pct"]), 1),',
     [T + "test_own_model_page.py"]),
    ("calculator: threads and registers swapped in a kernel's link", "calculator", "helpers/occupancy/browser.py",
     '"href": calculator_url(p["gpu"], p["threads"], p["registers"],',
     '"href": calculator_url(p["gpu"], p["registers"], p["threads"],', [T + "test_calculator_page.py"]),
    ("calculator: register allocation unit 512", "calculator", "helpers/occupancy/gpus.py",
     "    register_allocation_unit: int = 256", "    register_allocation_unit: int = 512", [T + "test_calculator_page.py"]),
    ("03: the aten op count counts every op", "03", "helpers/core/trace.py",
     '"aten_ops": int(is_aten[o].sum()),', '"aten_ops": int(len(o)),', [T + "test_stage_pages.py"]),
    ("01-08: the forward shown is the first profiled step", "01-08", "helpers/core/profile.py",
     "return self.steps[-1]", "return self.steps[0]", [T + "test_stage_pages.py"]),
    ("04: decoded fields in reverse launch order", "04", "helpers/views/tables.py",
     """for name in prof.gpu_events(step).query("category == 'kernel'")["name"]:""",
     """for name in prof.gpu_events(step).query("category == 'kernel'")["name"][::-1]:""", [T + "test_hub_page.py"]),
    ("10: a training step's top kernels by least time", "10", "helpers/views/charts.py",
     'totals = table.groupby("name")["dur_us"].sum().sort_values(ascending=False)',
     'totals = table.groupby("name")["dur_us"].sum().sort_values(ascending=True)', [T + "test_own_model_page.py"]),
    ("10: the occupancy chart's top launches by least time", "10", "helpers/occupancy/charts.py",
     'kept = first.sort_values("dur_us", ascending=False).head(top)',
     'kept = first.sort_values("dur_us", ascending=True).head(top)', [T + "test_own_model_page.py"]),
    ("10: the host's wait in per cent of the busy time", "10", "helpers/core/bound.py",
     "return 100 * self.host_wait_us / self.wall_us if self.wall_us > 0 else float(\"nan\")",
     "return 100 * self.host_wait_us / self.busy_us if self.wall_us > 0 else float(\"nan\")", [T + "test_own_model_page.py"]),
    ("04d: GPU and CPU time swapped in the paragraph", "04d", "helpers/chapters/hub_flash.py",
     "f\"{h['gpu_time_us']:.1f} µs on the GPU and {h['cpu_time_us']:.1f} µs of CPU inside \"",
     "f\"{h['cpu_time_us']:.1f} µs on the GPU and {h['gpu_time_us']:.1f} µs of CPU inside \"", [T + "test_hub_page.py"]),
    ("06b: the timed compile's cache entries kept to itself", "06b", "helpers/sources/capture.py",
     "                shutil.copytree(part, target, dirs_exist_ok=True)", "                pass",
     ["tests/test_fx_cache.py"]),
    ("06b: the timed compile reads the shared caches (a warm compile timed as cold)", "06b",
     "helpers/sources/capture.py", 'config.environment(TORCHINDUCTOR_CACHE_DIR=str(fresh),',
     'config.environment(TORCHINDUCTOR_CACHE_DIR=str(shared),', ["tests/test_fx_cache.py"]),
    ("05b: a stand-in headed as hub_flash", "05b", "helpers/chapters/hub_flash.py",
     "        stage = column(key, prof)\n        k = _kernel(prof)", "        stage = key\n        k = _kernel(prof)",
     ["tests/test_hub_stand_in.py"]),
    ("05b: verdicts judge sdpa_flash against itself", "05b", "helpers/chapters/hub_flash.py",
     "    if hub.stage == sdpa.stage:", "    if False:", ["tests/test_hub_stand_in.py"]),
]


def run(plant) -> tuple[bool, str]:
    name, _, file, old, new, tests = plant
    path = ROOT / file
    text = path.read_text()
    assert old is not None and text.count(old) == 1, f"{name}: the line to change is not found once in {file}"
    try:
        path.write_text(text.replace(old, new))
        r = subprocess.run([sys.executable, "-m", "pytest", *tests, "-n", "0", "-x", "-q", "-p", "no:cacheprovider"],
                           cwd=ROOT, capture_output=True, text=True)
        failed = next((l for l in r.stdout.splitlines() if l.startswith("FAILED")), "")
        return r.returncode != 0, failed
    finally:
        path.write_text(text)


if __name__ == "__main__":
    chosen = [p for p in PLANTS if (len(sys.argv) == 1 or p[0] in sys.argv[1:])]
    caught = 0
    for plant in chosen:
        ok, where = run(plant)
        caught += ok
        print(f"{'caught  ' if ok else 'SURVIVED'} [{plant[1]}] {plant[0]}  {where[:110]}", flush=True)
    print(f"{caught} of {len(chosen)} caught")
