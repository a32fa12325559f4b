"""Chapter 10: every figure `own_model.glue_step` glues for the four experiments, from the raw
events of their recordings (notebooks/traces/h200/own_model/). The step tables, top kernels,
kernels per op, idle by op, the comparison and its chart are held to the raw events by
tests/test_own_traces.py (plain loops of its own); this file adds the glued prose.

Units: `_us` µs (raw `dur`); `_pct` per cent of the step's GPU span (first GPU event's start to
the last one's end); the bound: by the GPU where span ≤ 1.1 × busy, else by the larger wait."""
import statistics

import pytest

from helpers import Session, own_model

from . import raw

EXPERIMENTS = {"encoder_forward": "fwd", "encoder_forward_slow": "slow", "encoder_train_step": "train",
               "encoder_train_step_big": "big"}


@pytest.fixture(scope="module")
def profiles():
    s = Session(mode="replay")
    return {name: s.own_model(name) for name in EXPERIMENTS}


def step_of(name):
    path = raw.TRACES / "own_model" / f"{name}.json.gz"
    return raw.forward(path, None, name)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_glue_step(name, profiles):
    prof = profiles[name]
    g = own_model.glue_step(prof, EXPERIMENTS[name])
    f = step_of(name)
    span, busy, host, other = f.idle_split()
    assert g["step"] == f.step
    assert (g["gpu_events"], g["kernels"]) == (f.count(), f.count("kernel"))
    assert g["gpu_us"] == pytest.approx(f.gpu_us, abs=0.051)
    assert g["cpu_us"] == pytest.approx(f.cpu_us, abs=0.051)
    assert g["busy_us"] == pytest.approx(busy, abs=0.051)
    assert g["span_us"] == pytest.approx(span, abs=0.051)
    assert g["busy_pct"] == pytest.approx(100 * busy / span, abs=0.051)
    assert g["idle_pct"] == pytest.approx(100 * (span - busy) / span, abs=0.051)
    assert g["host_wait_pct"] == pytest.approx(100 * host / span, abs=0.051)
    assert g["other_wait_pct"] == pytest.approx(100 * other / span, abs=0.051)
    bound = "GPU" if span <= 1.1 * busy else ("CPU" if host >= other else "other GPU work")
    assert g["bound"] == bound
    assert g["aten_ops"] == f.aten_ops
    assert g["median_kernel_us"] == pytest.approx(statistics.median(e["dur"] for e in f.gpu if e["kind_cat"] == "kernel"), abs=0.051)
    # the op that launched the most GPU time: the outermost op holding each launch
    per_op = {}
    for e in f.gpu:
        per_op[e["top_op"]] = per_op.get(e["top_op"], 0.0) + e["dur"]
    assert g["launching_ops"] == len(per_op)
    assert g["top_op"] == max(per_op, key=per_op.get)
    assert g["threads"] == len({f.root["tid"]} | {o["tid"] for o in f.ops_all})
    # the kind of each kernel is the decoder's (tests/test_kernel_names.py holds it to the names)
    # top_kernels ranks kernels by name (calls summed); its first row's kind and share of GPU time
    kinds = dict(zip(prof.kernels()["name"], prof.kernels()["kind"]))
    by_name = {}
    for e in f.gpu:
        by_name[e["name"]] = by_name.get(e["name"], 0.0) + e["dur"]
    first = max(by_name, key=by_name.get)
    assert g["top_kind"] == kinds[first]
    assert g["top_pct"] == pytest.approx(100 * by_name[first] / f.gpu_us, abs=0.051)
    # the verdict sentence carries the same numbers: busy of span, and the wait in µs and in per
    # cent of the span
    assert f"{busy:,.1f} µs of {span:,.1f} µs ({100 * busy / span:.0f}%" in g["verdict"]
    if bound == "CPU":
        assert f"it waits {host:,.1f} µs ({100 * host / span:.0f}%) for the host" in g["verdict"]


def test_kernel_durations_of_a_training_step_are_the_top_kernels_by_time(profiles):
    """Chapter 10 draws a training step's kernel durations as its 25 kernels with the most GPU
    time over every profiled step, one bar per kernel and step: y = that kernel's summed dur in
    that step (µs), the bars in rank order."""
    from helpers import charts
    name = "encoder_train_step"
    path = raw.TRACES / "own_model" / f"{name}.json.gz"
    steps = [n for n, _, _ in raw.steps(raw.events(path))]
    per_step = {n: raw.forward(path, n, name).gpu for n in steps}
    totals = {}
    for evs in per_step.values():
        for e in evs:
            totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    ranked = sorted(totals, key=totals.get, reverse=True)[:25]
    fig = charts.kernel_durations(profiles[name])
    by = {t.name: t for t in fig.data}
    for n in steps:
        bars = by[f"ProfilerStep#{n}"]
        want = {}
        for e in per_step[n]:
            if e["name"] in ranked:
                want[e["name"]] = want.get(e["name"], 0.0) + e["dur"]
        order = [k for k in ranked if k in want]
        assert [int(x.split(".")[0]) for x in bars.x] == [ranked.index(k) + 1 for k in order]
        assert list(bars.y) == pytest.approx([want[k] for k in order], abs=1e-3)


def test_stage_occupancy_of_the_big_step_is_its_top_launches(profiles):
    """Chapter 10's occupancy chart of the big training step: its 12 launch configurations with
    the most GPU time in the last step, in launch order, each with its calls, CUPTI's estimate and
    the occupancy CUDA's rules give."""
    from helpers import occupancy_charts
    name = "encoder_train_step_big"
    f = step_of(name)
    groups = {}
    for e in f.gpu:
        if e["kind_cat"] != "kernel" or "registers per thread" not in e["args"]:
            continue
        a = e["args"]
        key = (e["name"], a["registers per thread"], a["block"][0] * a["block"][1] * a["block"][2], a["shared memory"])
        g = groups.setdefault(key, {"first": e, "total": 0.0, "calls": 0})
        g["total"] += e["dur"]
        g["calls"] += 1
    top = sorted(groups, key=lambda k: groups[k]["total"], reverse=True)[:12]
    top = sorted(top, key=lambda k: groups[k]["first"]["ts"])
    fig = occupancy_charts.stage_occupancy(profiles[name], top=12)
    by = {t.name: t for t in fig.data}
    labels = list(by["CUPTI est. achieved %"].x)
    assert [int(x.split(".")[0]) for x in labels] == list(range(1, len(top) + 1))
    assert [int(x.rsplit("×", 1)[1]) for x in labels] == [groups[k]["calls"] for k in top]
    assert list(by["CUPTI est. achieved %"].y) == [groups[k]["first"]["args"]["est. achieved occupancy %"] for k in top]
    assert list(by["theoretical (smem opt-in)"].y) == pytest.approx([raw.occupancy(k[2], k[1], k[3])["pct"] for k in top], abs=0.01)
