"""Chapter 04d (hub_flash) and the decoded-fields tables of 04–06: the launch columns, CPU lane,
runtime calls and summary paragraph from the raw events.

Units: `µs` raw `dur` (µs); shared memory in bytes as the trace's args hold it."""
import re

import pytest

from helpers import Session, hub, profile_stage, tables

from . import raw

LAYOUT = {"aten::transpose", "aten::permute", "aten::contiguous", "aten::clone", "aten::copy_"}


@pytest.fixture(scope="module")
def profs():
    return {"hub_flash": hub.page(*Session(mode="replay").hub_flash()).prof,
            **{s: profile_stage(s, mode="replay", quiet=True) for s in ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn")}}


def fwd(stage):
    return raw.forward(raw.stage_path(stage))


def the_kernel(stage):
    return max((e for e in fwd(stage).gpu if e["kind_cat"] == "kernel"), key=lambda e: e["dur"])


def test_binaries_launch_rows(profs):
    t = hub.binaries({"hub_flash": profs["hub_flash"], "sdpa_flash": profs["sdpa_flash"]})
    for stage in ("hub_flash", "sdpa_flash"):
        e = the_kernel(stage)
        col = t[stage]
        assert col["registers / thread"] == e["args"]["registers per thread"]
        assert col["shared memory (B)"] == e["args"]["shared memory"]
        assert col["grid"] == str(tuple(e["args"]["grid"])) and col["block"] == str(tuple(e["args"]["block"]))
        assert col["CUPTI est. occupancy %"] == e["args"]["est. achieved occupancy %"]
        assert col["launched by"] == e["call"]["name"]
        assert col["called from"] == e["op"]
        assert col["µs"] == pytest.approx(e["dur"], abs=0.051)
    same = [str(a) == str(b) for a, b in zip(t["hub_flash"], t["sdpa_flash"])]
    assert list(t["same?"]) == ["same" if s else "differs" for s in same]


def test_cpu_lane(profs):
    # the page's two stages have one op under attn_fwd each; naive's several tell first from last
    names = ("hub_flash", "sdpa_flash", "naive")
    t = hub.cpu_lane({s: profs.get(s) or profile_stage(s, mode="replay", quiet=True) for s in names})
    for s in names:
        f = fwd(s)
        ops = raw.nested(f)
        assert t.loc[s, "ops under attn_fwd"] == len(f.ops)
        assert t.loc[s, "aten::transpose"] == sum(o["name"] == "aten::transpose" for o in f.ops)
        assert t.loc[s, "layout ops (transpose, permute, copy)"] == sum(o["name"] in LAYOUT for o in f.ops)
        first = [o["name"] for o in ops if o["depth"] == 1]
        assert t.loc[s, "first op"] == (first[0] if first else None)
        assert t.loc[s, "attn_fwd CPU µs"] == pytest.approx(f.cpu_us, abs=0.051)


@pytest.mark.parametrize("stage", ["hub_flash", "sdpa_flash"])
def test_runtime_calls(stage, profs):
    t = hub.runtime_calls(profs[stage])
    evs = raw.events(raw.stage_path(stage))
    _, lo, hi = raw.steps(evs)[-1]
    calls = sorted((e for e in evs if e.get("ph") == "X" and e.get("cat") in raw.CALL_CATS and lo <= e["ts"] <= hi),
                   key=lambda e: e["ts"])
    assert list(t["call"]) == [e["name"] for e in calls]
    assert list(t["µs"]) == pytest.approx([e["dur"] for e in calls], abs=0.051)
    assert list(t["correlation"]) == [e["args"].get("correlation") for e in calls]


def test_summary_paragraph(profs):
    others = {s: profs[s] for s in ("sdpa_efficient", "sdpa_flash", "sdpa_cudnn")}
    text = hub.summary_markdown(profs["hub_flash"], others).data
    f = fwd("hub_flash")
    assert f"{f.count()} GPU event" in text
    assert f"{f.gpu_us:.1f} µs on the GPU and {f.cpu_us:.1f} µs of CPU" in text
    for s in others:
        assert f"{s}: {fwd(s).gpu_us:.1f} µs GPU, {fwd(s).cpu_us:.1f} µs CPU" in text


# the pages' stages launch one kernel each; naive's five tell launch order from any other
@pytest.mark.parametrize("stage", ["sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "naive"])
def test_decoded_fields_read_each_kernel_of_the_forward(stage):
    """Every field is read from a kernel's name (tests/test_kernel_names.py holds the decoder to the
    names); here: one block per kernel of the forward, in launch order, each opening with the whole
    raw name, and every numeric field spelled in that name (a power of two may be spelled as
    its log2)."""
    t = tables.decoded_fields(profile_stage(stage, mode="replay", quiet=True)).reset_index()
    names = [e["name"] for e in fwd(stage).gpu if e["kind_cat"] == "kernel"]
    assert list(t.loc[t["field"] == "name", "value"]) == names
    block = None
    for _, row in t.iterrows():
        if row["field"] == "name":
            block = row["value"]
        elif re.fullmatch(r"\d+", row["value"]) and row["field"] not in ("dtype",):
            v = int(row["value"])
            # a number the name spells out, or (softmax's rows) as its log2 template argument
            assert row["value"] in block or (v & (v - 1) == 0 and f", {v.bit_length() - 1}," in block), \
                (row["field"], row["value"])
