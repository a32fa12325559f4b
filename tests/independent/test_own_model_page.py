"""Chapter 10: every figure `own_model.glue_step` glues for the four experiments, from the raw
events of their recordings (notebooks/traces/h200/own_model/). The step tables, top kernels,
kernels per op, idle by op, the comparison and its chart are held to the raw events by
tests/test_own_traces.py (plain loops of its own); this file adds the glued prose.

Units: `_us` µs (raw `dur`); `_pct` per cent of the step's GPU span (first GPU event's start to
the last one's end); the bound: by the GPU where span ≤ 1.1 × busy, else by the larger wait."""
import statistics

import pytest

from helpers import own_model

from . import raw

EXPERIMENTS = {"encoder_forward": "fwd", "encoder_forward_slow": "slow", "encoder_train_step": "train",
               "encoder_train_step_big": "big"}


@pytest.fixture(scope="module")
def profiles():
    return {name: own_model.profile(name) for name in EXPERIMENTS}


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
    # the verdict sentence carries the same numbers
    assert f"{busy:,.1f} µs of {span:,.1f} µs" in g["verdict"]
