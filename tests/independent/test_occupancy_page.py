"""Chapter 07: the kernels' launch figures, the occupancy arithmetic, the tables and the glue,
from the raw trace events (the launch's threads, registers, shared memory, CUPTI's estimate),
CUDA's occupancy rules written out in `raw.occupancy`, and ncu's raw CSV (its theoretical and
achieved occupancy: a second, independent oracle for the arithmetic).

Units: `smem` bytes, `_kib` KiB (bytes / 1024); `%` per cent of the SM's 64 warp slots; `µs` raw
`dur`; ncu's time converted from the unit its CSV names; TFLOP/s = causal attention FLOPs
(2 matmuls × 2·B·H·S²·D, halved by the mask) / (µs × 1e6)."""
import pytest

from helpers import Session, occupancy_lessons as lessons
from helpers import occupancy_truth as truth

from . import raw
from helpers.core.stages import stages_where  # the stage lists: queries of the registry

NCU = raw.TRACES / "ncu"


@pytest.fixture(scope="module")
def profiles():
    return Session(mode="replay").load_stages(lessons.STAGES)


@pytest.fixture(scope="module")
def hw():
    return Session(mode="replay").counters(lessons.STAGES)


def kernels(stage):
    return [e for e in raw.forward(raw.stage_path(stage)).gpu if e["kind_cat"] == "kernel"]


def launch(e):
    a = e["args"]
    threads = a["block"][0] * a["block"][1] * a["block"][2]
    return threads, a["registers per thread"], a["shared memory"]


def occ(e, stage=None):
    """The limits with the shared memory the driver configured for the stage's kernel (ncu's raw
    CSV), the pool chapter 7 divides; without a stage, the SM's largest."""
    return raw.occupancy(*launch(e), pool=None if stage is None else raw.ncu_pool(stage))


def attention_flops(stage):
    s = raw.provenance(raw.stage_path(stage))["shape"]
    return 2 * 2 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"] / 2


LIMITER = {("registers",): "registers", ("shared memory",): "shared memory", ("warp slots",): "warp slots",
           ("block slots",): "block slots", ("registers", "shared memory"): "registers + shared memory"}


@pytest.mark.parametrize("name,stage", [("flash", "sdpa_flash"), ("cudnn", "sdpa_cudnn")])
def test_glue_kernel(name, stage, profiles, hw):
    g = lessons.glue_kernel(name, profiles[stage], hw)
    (e,) = kernels(stage)
    threads, regs, smem = launch(e)
    o = occ(e, stage)
    assert int(g["smem_per_sm"].replace(",", "")) == o["pool"] < 233472 or stage == "sdpa_cudnn"
    clause = {("registers",): "the registers decide",
              ("registers", "shared memory"): "the registers and the shared memory tie"}
    assert g["decides"] == clause[tuple(o["limiters"])]
    blocks = f"{o['blocks_by_smem']} block" + ("" if o["blocks_by_smem"] == 1 else "s")
    assert g["smem_clause"].startswith((f"{o['pool']:,} B (the configured size recorded", f"the SM's largest, {o['pool']:,} B"))
    assert f"room for {blocks} of {o['smem_given']:,} B" in g["smem_clause"]
    num = lambda v: float(str(v).replace(",", ""))  # noqa: E731
    assert (g["threads"], g["registers"], num(g["smem"])) == (threads, regs, smem)
    assert num(g["smem_kib"]) == pytest.approx(smem / 1024, abs=0.51)
    assert g["warps_per_block"] == o["warps_per_block"]
    assert num(g["regs_per_warp"]) == o["regs_per_warp"]
    assert (g["warps_per_sub"], g["warps_by_regs"], g["blocks_by_regs"]) == (o["warps_per_sub"], o["warps_by_regs"], o["blocks_by_regs"])
    assert (g["blocks_by_smem"], g["blocks_by_warps"]) == (o["blocks_by_smem"], o["blocks_by_warps"])
    assert (g["active_blocks"], g["active_warps"], g["max_warps"]) == (o["active_blocks"], o["active_warps"], 64)
    assert num(g["occupancy_pct"]) == pytest.approx(o["pct"], abs=0.051)
    assert g["limiter"] == LIMITER[tuple(o["limiters"])]
    assert g["cupti_pct"] == e["args"]["est. achieved occupancy %"]
    assert g["launched_by"] == e["call"]["name"]
    assert num(g["dur_us"]) == pytest.approx(e["dur"], abs=0.051)
    assert num(g["tflops"]) == pytest.approx(attention_flops(stage) / (e["dur"] * 1e6), abs=0.51)
    in_use = o["active_warps"] * o["regs_per_warp"]
    assert num(g["regs_in_use"]) == in_use
    assert num(g["regs_in_use_pct"]) == pytest.approx(100 * in_use / 65536, abs=0.51)
    assert num(g["smem_in_use_pct"]) == pytest.approx(100 * o["active_blocks"] * o["smem_given"] / o["pool"], abs=0.51)


def test_arithmetic_table_of_flash(profiles, hw):
    t = lessons.arithmetic(profiles["sdpa_flash"], hw)
    (e,) = kernels("sdpa_flash")
    o = occ(e, "sdpa_flash")
    values = {step.split(" (")[0]: v for step, v in zip(t.index, t.iloc[:, -1])}
    assert values["warps per block"] == o["warps_per_block"]
    assert values["registers per warp"] == o["regs_per_warp"]
    assert values["→ blocks the registers allow"] == o["blocks_by_regs"]
    assert values["→ blocks the warp slots allow"] == o["blocks_by_warps"]
    assert values["shared memory a block is given"] == o["smem_given"]
    assert values["shared memory the SM is set up with for it"] == o["pool"]
    assert values["→ blocks the shared memory allows"] == o["blocks_by_smem"]
    assert values["limited by"] == LIMITER[tuple(o["limiters"])]
    assert values["active blocks"] == o["active_blocks"] and values["active warps"] == o["active_warps"]
    assert float(str(values["occupancy"]).rstrip("%")) == pytest.approx(o["pct"], abs=0.051)


def test_granularity():
    """40 registers a thread: 1,280 a warp; 16,384 per sub-partition hold ⌊16,384/1,280⌋ = 12
    warps, 48 on the SM, not the 51 the division of the whole file gives."""
    g = lessons.glue_granularity("NVIDIA H200")
    regs = g["regs"]
    per_warp = regs * 32
    assert int(g["raw"].replace(",", "")) == per_warp
    assert g["naive"] == 65536 // per_warp
    assert float(g["exact"]) == pytest.approx(65536 / per_warp, abs=0.051)
    assert g["per_sub"] == 16384 // raw.occupancy(128, regs, 0)["regs_per_warp"]
    assert g["warps"] == g["calc"] == raw.occupancy(128, regs, 0)["warps_by_regs"]
    assert int(g["left_over"].replace(",", "")) == 16384 - g["per_sub"] * raw.occupancy(128, regs, 0)["regs_per_warp"]
    t = lessons.granularity("NVIDIA H200")
    for regs, row in t.iterrows():
        o = raw.occupancy(128, regs, 0)
        assert row.iloc[0] == regs * 32 and row.iloc[1] == o["regs_per_warp"]
        assert row.iloc[-1] == min(o["warps_by_regs"], 64)


def test_low_occupancy(profiles):
    t = lessons.low_occupancy(profiles)
    for stage, row in t.iterrows():
        ks = kernels(stage)
        f = raw.forward(raw.stage_path(stage))
        longest = max(ks, key=lambda e: e["dur"])
        o = occ(longest)
        # one count, the one the time sums: the step's GPU events (naive: 5 kernels, 7 events)
        assert row["GPU events"] == len(f.gpu) and "kernels" not in t.columns
        assert row["GPU µs per forward"] == pytest.approx(sum(e["dur"] for e in f.gpu), abs=0.051)
        assert row["model TFLOP/s"] == pytest.approx(attention_flops(stage) / (f.gpu_us * 1e6), abs=0.051)
        assert row["its occupancy %"] == pytest.approx(o["pct"], abs=0.051)
        assert row["its warps per SM"] == o["active_warps"]
        assert row["regs/thread"] == launch(longest)[1]
        assert row["register file in use %"] == pytest.approx(100 * o["active_warps"] * o["regs_per_warp"] / 65536, abs=0.051)
    g = lessons.glue_low_occupancy(profiles)
    n, fl = raw.forward(raw.stage_path("naive")), raw.forward(raw.stage_path("sdpa_flash"))
    assert float(g["naive_gpu_us"]) == pytest.approx(n.gpu_us, abs=0.051)
    assert float(g["flash_gpu_us"]) == pytest.approx(fl.gpu_us, abs=0.051)
    assert float(g["speedup"]) == pytest.approx(n.gpu_us / fl.gpu_us, abs=0.051)
    assert float(g["naive_max_occ"]) == pytest.approx(max(occ(e)["pct"] for e in kernels("naive")), abs=0.51)
    assert g["naive_kernels"] == len(kernels("naive"))
    assert g["faster"].startswith("sdpa_flash" if fl.gpu_us < n.gpu_us else "naive")


def test_cupti_zero(profiles):
    zero = lessons.cupti_zero(profiles)
    want, seen = [], set()  # each distinct launch once (name, registers, threads, smem, grid, call)
    for s in profiles:
        for e in kernels(s):
            a = e["args"]
            key = (e["name"], a["registers per thread"], tuple(a["block"]), a["shared memory"], tuple(a["grid"]), e["call"]["name"])
            if key not in seen:
                seen.add(key)
                want.append((s, e))
    assert len(zero) == len(want)
    for (_, row), (s, e) in zip(zero.iterrows(), want):
        assert row["stage"] == s
        assert row["launched by"] == e["call"]["name"]
        assert row["shared mem (B)"] == e["args"]["shared memory"]
        assert bool(row["> 48 KiB"]) == (e["args"]["shared memory"] > 48 * 1024)
        assert row["CUPTI est. %"] == e["args"]["est. achieved occupancy %"]
        assert row["grid blocks"] == e["args"]["grid"][0] * e["args"]["grid"][1] * e["args"]["grid"][2]
        assert row["true occupancy %"] == pytest.approx(occ(e)["pct"], abs=0.051)
    g = lessons.glue_cupti_zero(zero, lessons.spec_of(profiles["sdpa_cudnn"]))
    above = [e for _, e in want if e["args"]["shared memory"] > 49152]
    below = [e for _, e in want if e["args"]["shared memory"] <= 49152]
    assert (g["kernels"], g["above"], g["below"]) == (len(want), len(above), len(below))
    assert g["above_zero"] == sum(e["args"]["est. achieved occupancy %"] == 0 for e in above)
    assert g["below_nonzero"] == sum(e["args"]["est. achieved occupancy %"] > 0 for e in below)
    assert int(g["cap"].replace(",", "")) == 49152 and g["cap_kib"] == 48
    # the two sentences, from the raw launches: the kernels over the cap launched without Ex, and
    # those under it launched through an Ex call, with their counts, stages, calls and readings
    ex = lambda e: "Ex" in e["call"]["name"]  # noqa: E731
    plain_above = [(s, e) for s, e in want if e["args"]["shared memory"] > 49152 and not ex(e)]
    ex_below = [(s, e) for s, e in want if e["args"]["shared memory"] <= 49152 and ex(e)]
    pa, eb = g["plain_above_sentence"], g["ex_below_sentence"]
    for sentence in (pa, eb):
        assert "none" not in sentence and "nan" not in sentence
    if plain_above:
        zero = sum(e["args"]["est. achieved occupancy %"] == 0 for _, e in plain_above)
        assert pa.startswith(f"{len(plain_above)} of those kernels")
        assert (f"{zero} of the {len(plain_above)} still read zero" in pa if len(plain_above) > 1
                else pa.endswith("it still read zero." if zero else "it did not read zero."))
        assert all(s in pa and e["call"]["name"] in pa for s, e in plain_above)
    else:
        assert pa.startswith("No kernel over the cap")
    if ex_below:
        reads = [e["args"]["est. achieved occupancy %"] for _, e in ex_below]
        assert f"{len(ex_below)} kernel" in eb and all(f"{v}%" in eb for v in set(reads))
        assert eb.endswith("not zero.") == all(v > 0 for v in reads)
        assert all(s in eb and e["call"]["name"] in eb for s, e in ex_below)
    else:
        assert eb.startswith("No kernel under the cap")


def test_cupti_zero_sentences_have_a_form_for_none_and_for_a_zero(profiles):
    """A set whose kernels all went one way (another GPU's libraries): no 'none', no 'not zero' of a zero."""
    zero = lessons.cupti_zero(profiles)
    spec = lessons.spec_of(profiles["sdpa_cudnn"])
    only_plain = zero.assign(**{"launch path": "cuLaunchKernel path", "launched by": "cudaLaunchKernel"})
    g = lessons.glue_cupti_zero(only_plain, spec)
    assert g["ex_below_sentence"].startswith("No kernel under the cap")
    only_ex = zero.assign(**{"launch path": "cuLaunchKernelEx path", "launched by": "cuLaunchKernelEx"})
    g = lessons.glue_cupti_zero(only_ex, spec)
    assert g["plain_above_sentence"].startswith("No kernel over the cap")
    below = ~only_ex["> 48 KiB"]
    assert below.any()
    g = lessons.glue_cupti_zero(only_ex.assign(**{"CUPTI est. %": only_ex["CUPTI est. %"].where(~below, 0)}), spec)
    assert "not zero" not in g["ex_below_sentence"] and "read above zero" in g["ex_below_sentence"]


def ncu_rows(stage):
    rows, units = raw.ncu_table(NCU / f"{stage}__{raw.DEFAULT}.csv")
    return rows, units


def test_truth_table_against_ncu_and_the_rules(profiles):
    """Per kernel: CUPTI's estimate (trace), the calculator's (the rules), ncu's theoretical and
    achieved occupancy and ncu µs (ncu's CSV, its unit converted): every kernel's rules-based
    occupancy equals ncu's own theoretical one."""
    s = Session(mode="replay")
    hw = s.counters(lessons.STAGES)
    t = truth.occupancy_truth(hw, s.forwards(hw, profiles))
    for stage, rows in t.groupby("stage", sort=False):
        ks = kernels(stage)
        nrows, units = ncu_rows(stage)
        assert len(rows) == len(ks) == len(nrows), stage
        for (_, row), e, n in zip(rows.iterrows(), ks, nrows):
            theoretical = float(n["sm__maximum_warps_per_active_cycle_pct"])
            achieved = float(n["sm__warps_active.avg.pct_of_peak_sustained_active"])
            assert row["CUPTI est. %"] == e["args"]["est. achieved occupancy %"]
            assert row["calculator %"] == pytest.approx(occ(e)["pct"], abs=0.01)
            assert occ(e)["pct"] == pytest.approx(theoretical, abs=0.01), (stage, e["name"][:50])
            assert row["ncu theoretical %"] == pytest.approx(theoretical, abs=0.01)
            assert row["ncu achieved %"] == pytest.approx(achieved, abs=0.01)
            assert row["achieved / theoretical"] == pytest.approx(achieved / theoretical, abs=0.006)
            assert row["ncu µs"] == pytest.approx(raw.ncu_us(n, units), abs=0.051)
            assert (row["threads"], row["registers"], row["shared memory (B)"]) == launch(e)
    g = truth.glue_truth(t)
    flash = t[t["stage"] == "sdpa_flash"].iloc[0]
    n, _ = ncu_rows("sdpa_flash")
    assert float(g["flash_achieved"]) == pytest.approx(float(n[0]["sm__warps_active.avg.pct_of_peak_sustained_active"]), abs=0.051)
    assert float(g["flash_theoretical"]) == pytest.approx(occ(kernels("sdpa_flash")[0])["pct"], abs=0.051)
    c, _ = ncu_rows("sdpa_cudnn")
    ach, th = (float(c[0][m]) for m in ("sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct"))
    assert float(g["cudnn_achieved"]) == pytest.approx(ach, abs=0.051)
    assert float(g["cudnn_ncu_theoretical"]) == pytest.approx(th, abs=0.051)
    assert float(g["cudnn_achieved_share"]) == pytest.approx(100 * ach / th, abs=0.51)
    # the page's counts are over the rows it shows: each kernel and launch configuration once
    # (name, threads, registers, shared memory, grid blocks), first stage's launch kept
    distinct = {}
    for s in profiles:
        for e in kernels(s):
            g3 = e["args"]["grid"]
            distinct.setdefault((e["name"], *launch(e), g3[0] * g3[1] * g3[2]), e)
    assert g["kernels"] == len(distinct) and g["stages"] == len(profiles)
    assert g["cupti_zero"] == sum(e["args"]["est. achieved occupancy %"] == 0 for e in distinct.values())
    # the chart: bars at ncu's achieved, the rules' theoretical and CUPTI's estimate, per label
    fig = truth.chart(t, ["naive", *stages_where(fused=True, variant_of=None, dispatched=False)])   # 07's
    by = {tr.name: tr for tr in fig.data}
    labels = list(by["achieved (ncu, measured)"].y)
    lookup = {r["label"]: r for _, r in t.iterrows()} | {r["stage"]: r for _, r in t.iterrows()}
    for label, x in zip(labels, by["achieved (ncu, measured)"].x):
        assert x == pytest.approx(lookup[label]["ncu achieved %"], abs=0.01)
    for label, x in zip(by["theoretical (helpers.occupancy)"].y, by["theoretical (helpers.occupancy)"].x):
        assert x == pytest.approx(lookup[label]["ncu theoretical %"], abs=0.01)


def kineto_pct(threads, regs, smem, grid, sms=132):
    """Kineto's estimate as it computes it: blocks per SM from the occupancy rules with shared
    memory capped at the 48 KiB default (0 blocks above it: it leaves the opt-in out), at most the
    grid's blocks per SM, times the block's threads over the SM's 2,048, rounded to a whole per cent."""
    blocks = 0 if smem > 48 * 1024 else raw.occupancy(threads, regs, smem)["active_blocks"]
    return int(0.5 + min(blocks, grid / sms) * threads / 2048 * 100)


def test_smem_cliff_from_the_experiments_raw_events():
    """07's shared-memory experiment: per user_annotation range, the kernels launched in it, their
    launch call, shared memory, CUPTI's figure, Kineto's recomputed and the true occupancy."""
    path = raw.TRACES / "experiments" / "smem_cliff.json.gz"
    evs = raw.events(path)
    events, provenance, _ = Session(mode="replay").smem_cliff()
    cliff = lessons.smem_cliff(events, provenance)
    ranges = [e for e in evs if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in evs if e.get("cat") in raw.CALL_CATS and e.get("ph") == "X"}
    kernels = [e for e in evs if e.get("cat") == "kernel" and e.get("ph") == "X"]
    names = list(dict.fromkeys(r["name"] for r in ranges))
    assert list(cliff.index) == names
    for name in names:
        mine = [k for k in kernels if any(r["name"] == name and r["ts"] <= calls[k["args"]["correlation"]]["ts"] <= r["ts"] + r["dur"]
                                          for r in ranges)]
        a = mine[0]["args"]
        threads, grid = a["block"][0] * a["block"][1] * a["block"][2], a["grid"][0] * a["grid"][1] * a["grid"][2]
        row = cliff.loc[name]
        assert row["launches"] == len(mine)
        assert row["launched by"] == calls[mine[0]["args"]["correlation"]]["name"]
        assert (row["shared mem (B)"], row["registers"], row["threads"], row["grid blocks"]) == \
            (a["shared memory"], a["registers per thread"], threads, grid)
        assert str(row["CUPTI est. %"]) == str(a["est. achieved occupancy %"])
        assert str(row["Kineto recomputed %"]) == str(kineto_pct(threads, a["registers per thread"], a["shared memory"], grid))
        assert row["true occupancy %"] == pytest.approx(raw.occupancy(threads, a["registers per thread"], a["shared memory"])["pct"], abs=0.051)
    g = lessons.glue_smem_cliff(cliff)
    at, over = cliff.loc["smem=49152"], cliff.loc["smem=49153"]
    assert (int(g["at_smem"].replace(",", "")), int(g["over_smem"].replace(",", ""))) == (at["shared mem (B)"], over["shared mem (B)"])
    assert (g["at_pct"], g["over_pct"]) == (str(at["CUPTI est. %"]), str(over["CUPTI est. %"]))


@pytest.mark.parametrize("stage", ["sdpa_flash", "sdpa_cudnn"])
def test_the_sm_drawing_holds_the_resident_blocks_and_warps(stage, profiles):
    """07's drawing of one SM (an SVG whose groups are named by what they draw): one warp slot
    filled per resident warp, a block slot and a shared-memory share per resident block, from 64
    warp and 32 block slots; the counts from CUDA's rules on the raw launch."""
    import collections
    import re as _re
    svg = lessons.draw_kernel_sm(profiles[stage], stage).data
    ids = collections.Counter(_re.findall(r'<g id="([^"]+)"', svg))
    (e,) = kernels(stage)
    o = occ(e)
    fills = lambda what: {k: n for k, n in ids.items() if k.startswith(f"fill:{what}:")}  # noqa: E731
    assert (ids["capacity:warps"], ids["capacity:blocks"]) == (64, 32)
    assert sum(fills("warps").values()) == o["active_warps"]
    assert len(fills("warps")) == len(fills("blocks")) == len(fills("shared_memory")) == o["active_blocks"]
    assert all(n == o["warps_per_block"] for n in fills("warps").values())
