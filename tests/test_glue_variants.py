"""Every glued sentence holds for any recording: the pages' glue functions run over variants of
each real replay set, made in memory from its recordings (no copy on disk, so the test takes
seconds): as recorded, a stage missing, the winner changed, a tie, another GPU (its SM count and
memory). No glued value may read "none", "nan", "[]", nothing at all, or compare a stage with
itself ("sdpa_flash ... than sdpa_flash").

The glue is caught where myst-nb's `glue` would be called; the words checked are spelled here."""
from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest

from helpers.core.stages import STAGES
from helpers.sources.modes import profile_stage

ROOT = Path(__file__).resolve().parent.parent
SETS = [p.name for p in sorted((ROOT / "notebooks" / "traces").iterdir())
        if p.is_dir() and not p.name.startswith("synthetic")]
GPU_EVENTS = ("kernel", "gpu_memcpy", "gpu_memset")
FORWARDS = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_auto",
            "naive_compiled", "flex", "flex_sliding"]


# --- what no glued value may say ------------------------------------------------------------------

def fault(value) -> str | None:
    """Why `value` cannot stand in a sentence, or None."""
    if value is None:
        return "None"
    if isinstance(getattr(value, "data", None), str):   # a sentence glued as Markdown ({glue:md})
        value = value.data
    if isinstance(value, float) and value != value:
        return "nan"
    text = str(value)
    if not text.strip():
        return "empty"
    if re.search(r"\bnone\b", text, re.I):
        return "none"
    if re.search(r"\bnan\b", text, re.I):
        return "nan"
    if "[]" in text:
        return "an empty list"
    for stage in STAGES:
        # "X ... than X" / "X against X" in one clause
        if re.search(rf"(?<![\w]){stage}(?![\w])[^.;:]*\b(?:than|against|vs)\s+(?:\w+\s+){{0,2}}{stage}(?![\w])", text):
            return f"{stage} compared with itself"
    return None


def test_the_checks_catch_what_they_name():
    assert fault("only none stays past a million tokens") == "none"
    assert fault("None") == "none" and fault(None) == "None" and fault(float("nan")) == "nan"
    assert fault("") == "empty" and fault("stages: []") == "an empty list"
    assert fault("Will one forward of sdpa_flash be faster than sdpa_flash?") == "sdpa_flash compared with itself"
    assert fault("sdpa_flash is faster than sdpa_cudnn") is None
    assert fault("naive_compiled is faster than naive") is None   # a name inside another is not the same stage


# --- the recordings, loaded once a set ----------------------------------------------------------

@pytest.fixture(scope="module", params=SETS)
def recorded(request):
    from helpers import Session, training
    s = Session(request.param)
    forwards = {st: profile_stage(st, mode="replay", quiet=True, gpu=request.param) for st in FORWARDS
                if st in s.replay_set.stages()}
    return {"gpu": request.param, "forwards": forwards, "training": s.training(training.STAGES),
            "memory": s.memory(), "counters": s.training_counters()}


def _scaled(prof, factor: float):
    """The same recording with every GPU event `factor` times as long."""
    from helpers.core.profile import Profile
    events = copy.deepcopy(prof.events)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_EVENTS:
            e["dur"] = float(e["dur"]) * factor
    return Profile(events, prof.provenance, prof.trace_path)


def _gpu_us(prof) -> float:
    return float(prof.summary()["gpu_time_us"])


def _on_gpu(prof, name: str, sms: int):
    from helpers.core.profile import Profile
    return Profile(prof.events, dataclasses.replace(prof.provenance, gpu=name, sm_count=sms), prof.trace_path)


def _without(data: dict, stage: str) -> dict:
    out = copy.copy(data)
    out["forwards"] = {k: v for k, v in data["forwards"].items() if k != stage}
    out["training"] = {k: v for k, v in data["training"].items() if k != stage}
    out["memory"] = {**data["memory"], "ladder": [r for r in data["memory"]["ladder"] if r.get("stage") != stage]}
    c = dict(data["counters"])
    c["backward"] = {k: v for k, v in c["backward"].items() if k != stage}
    c["forward"] = {k: v for k, v in c["forward"].items() if k != stage}
    out["counters"] = c
    return out


def _memory_total(data: dict, factor: float) -> dict:
    out = copy.copy(data)
    prov = dict(data["memory"].get("provenance", {}))
    prov["total_memory_bytes"] = float(prov["total_memory_bytes"]) * factor
    out["memory"] = {**data["memory"], "provenance": prov}
    return out


def _copy_roof(data: dict, factor: float) -> dict:
    out = copy.copy(data)
    c = dict(data["counters"])
    c["copy TB/s"] = float(c["copy TB/s"]) * factor
    out["counters"] = c
    return out


def variant(data: dict, name: str) -> dict:
    if name == "as recorded":
        return data
    if name == "a stage missing":
        return _without(data, "sdpa_cudnn")
    if name == "the winner changed":
        out = copy.copy(data)
        f = data["forwards"]
        out["forwards"] = {**f, "sdpa_flash": _scaled(f["sdpa_flash"], 3.0), "sdpa_cudnn": _scaled(f["sdpa_cudnn"], 0.4)}
        return _copy_roof(_memory_total(out, 4.0), 3.0)     # every fused backward right of the ridge, past 1 M
    if name == "a tie":
        out = copy.copy(data)
        f = data["forwards"]
        out["forwards"] = {**f, "sdpa_cudnn": _scaled(f["sdpa_cudnn"], _gpu_us(f["sdpa_flash"]) / _gpu_us(f["sdpa_cudnn"]))}
        c = dict(data["counters"])
        c["backward"] = {**c["backward"], "sdpa_flash": c["backward"]["sdpa_cudnn"].copy(),
                         "sdpa_efficient": c["backward"]["sdpa_cudnn"].copy()}
        out["counters"] = c
        return out
    if name == "another GPU":
        out = copy.copy(data)
        out["forwards"] = {k: _on_gpu(p, "SYNTHETIC GPU", 108) for k, p in data["forwards"].items()}
        out["training"] = {k: _on_gpu(p, "SYNTHETIC GPU", 108) for k, p in data["training"].items()}
        return _copy_roof(_memory_total(out, 0.25), 0.4)    # far less memory, every backward left of the ridge
    raise KeyError(name)


VARIANTS = ["as recorded", "a stage missing", "the winner changed", "a tie", "another GPU"]


# --- each page's glue, as its notebook calls it ------------------------------------------------

def stage_pages(d):
    from helpers.views import prose
    for prof in d["forwards"].values():
        prose.glue_summary(prof)
        prose.glue_async(prof)
    prose.glue_profiles(d["forwards"])


def at_a_glance(d):
    from helpers.views import prose
    prose.glue_timer(d["forwards"])


def claims_pages(d):
    from helpers.chapters import claims
    f = d["forwards"]
    if {"sdpa_cudnn", "sdpa_flash"} <= f.keys():
        claims.glue_cpu_split(f["sdpa_cudnn"], f["sdpa_flash"])
    claims.glue_memory(f["inplace"], f["naive"])


def compiled_page(d):
    from helpers.chapters import compiled
    f = d["forwards"]
    compiled.glue_first_call(f["naive_compiled"], f["naive"])
    compiled.glue_page(f["naive_compiled"], f["naive"])


def flex_page(d):
    from helpers.chapters import flex
    f = d["forwards"]
    flex.glue_page(f["flex"], f["sdpa_flash"], f.get("flex_sliding"))


def training_page(d):
    from helpers import training
    training.glue_training(d["training"], d["memory"], {k: d["forwards"][k] for k in ("naive", "sdpa_flash")})
    work = training.ncu_work(d["counters"])
    training.glue_work(work, training.backward_limits(d["counters"]))


PAGES = {"stage pages": stage_pages, "08 timer": at_a_glance, "claims (02, 06)": claims_pages,
         "06b": compiled_page, "06c": flex_page, "11": training_page}


def assert_sentences(caught: dict, page: str, where: str) -> None:
    """The page glued something, and every glued value reads as a sentence (no `fault`)."""
    assert caught, f"{page} glued nothing"
    bad = {k: (v, fault(v)) for k, v in caught.items() if fault(v)}
    assert not bad, f"{where}: {bad}"


@pytest.fixture
def caught(monkeypatch):
    import myst_nb
    values: dict = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: values.__setitem__(name, value))
    return values


@pytest.mark.parametrize("page", list(PAGES))
@pytest.mark.parametrize("name", VARIANTS)
def test_every_glued_value_reads_as_a_sentence(recorded, name, page, caught):
    PAGES[page](variant(recorded, name))
    assert_sentences(caught, page, f"{recorded['gpu']}, {name}")


# --- the variants are what they say (else the test above checks less than it claims) -----------

def test_the_variants_change_what_they_name(recorded):
    tie = variant(recorded, "a tie")["forwards"]
    assert _gpu_us(tie["sdpa_cudnn"]) == pytest.approx(_gpu_us(tie["sdpa_flash"]))
    won = variant(recorded, "the winner changed")["forwards"]
    assert _gpu_us(won["sdpa_cudnn"]) < _gpu_us(won["sdpa_flash"])
    assert "sdpa_cudnn" not in variant(recorded, "a stage missing")["training"]
    assert all(p.provenance.sm_count == 108 for p in variant(recorded, "another GPU")["forwards"].values())
    from helpers import training
    places = {v: training.glue_work(training.ncu_work(variant(recorded, v)["counters"]))["tr_ridge_sentence"]
              for v in ("the winner changed", "another GPU")}
    assert "left of" not in places["the winner changed"] and "right of" not in places["another GPU"]


def test_a_missing_hub_trace_is_one_line_and_no_comparison(recorded):
    from helpers.chapters import hub_flash
    from helpers.sources.hub import Missing
    hf = hub_flash.HubFlash(None, "status", Missing("SYNTHETIC GPU", (), False))
    assert fault(hf.note) is None and "SYNTHETIC GPU" in hf.note
    assert hf.binaries(recorded["forwards"]["sdpa_flash"]) is None
    if "hub_flash" in STAGES and recorded["gpu"] == "h200":
        hub = profile_stage("hub_flash", mode="replay", quiet=True, gpu="h200")
        text = hub_flash.summary_markdown(hub, recorded["forwards"]).data
        assert fault(text) is None


# --- 05, 07, 09 and 10: the pages of counters, occupancy, the roofline and your own model ---------
#
# Their glue reads Nsight Compute's counters, the ceilings and the own-model steps besides the
# forwards; each variant changes those too: a stage missing (cuDNN's counters and forwards gone),
# the winner changed (flash 100× slower on the GPU and moving 1000× the bytes, every point right of
# the ridge, the big training step GPU-bound), a tie (naive and flash equally long, every point
# left of the ridge, the big step the small one again), another GPU (its name and SM count).

OWN = ("encoder_forward", "encoder_forward_slow", "encoder_train_step", "encoder_train_step_big")


@pytest.fixture(scope="module", params=SETS)
def hardware(request):
    from helpers import Session, roofline, stages_where
    from helpers.chapters import occupancy_lessons as lessons
    s = Session(request.param)
    stages = stages_where(has_ncu=True, variant_of=None, dispatched=False)
    c = s.counters(stages, sweep=s.ncu_shapes("sdpa_flash"), sweep_stages=roofline.SWEEP_STAGES)
    return {"gpu": request.param, "c": c, "ceilings": s.ceilings(), "timed": s.timed(c, quiet=True),
            "hw": s.counters(lessons.STAGES), "forwards": s.load_stages(lessons.STAGES),
            "own": {n: s.own_model(n) for n in OWN}, "cliff": lessons.smem_cliff(*s.smem_cliff()[:2])}


def _counters_without(c, stage: str):
    return dataclasses.replace(c, kernels={k: v for k, v in c.kernels.items() if k[0] != stage})


def _counters_scaled(c, stage: str, factor: float):
    """The counters with one stage's DRAM bytes `factor` times as many."""
    kernels = {}
    for key, table in c.kernels.items():
        if key[0] == stage:
            table = table.copy()
            for column in ("dram_bytes", "dram_read_bytes", "dram_write_bytes"):
                table[column] = table[column] * factor
        kernels[key] = table
    return dataclasses.replace(c, kernels=kernels)


def _counters_on(c, name: str, sms: int):
    return dataclasses.replace(c, gpu=name, provenance={**c.provenance, "gpu": name, "sm_count": sms})


def _roof_scaled(ceilings, factor: float):
    """The recorded ceilings with the copy roof `factor` times as fast (the ridge 1/factor as far)."""
    recorded, measured = ceilings
    table = recorded.copy()
    bandwidth = table["value unit"].astype(str).str.endswith("B/s")
    table.loc[bandwidth, "value"] = table.loc[bandwidth, "value"] * factor
    return table, measured


def hw_variant(h: dict, name: str) -> dict:
    out = copy.copy(h)
    f = h["forwards"]
    if name == "as recorded":
        return h
    if name == "a stage missing":
        out["c"], out["hw"] = _counters_without(h["c"], "sdpa_cudnn"), _counters_without(h["hw"], "sdpa_cudnn")
        out["forwards"] = {k: v for k, v in f.items() if k != "sdpa_cudnn"}
        out["timed"] = [p for p in h["timed"] if p.stage != "sdpa_cudnn"]
        # the shared-memory experiment without its cuLaunchKernelEx control (it could not run)
        out["cliff"] = h["cliff"][~h["cliff"]["launched by"].fillna("").str.contains("Ex")]
        return out
    if name == "the winner changed":
        out["forwards"] = {**f, "sdpa_flash": _scaled(f["sdpa_flash"], 100.0)}
        out["c"] = _counters_scaled(h["c"], "sdpa_flash", 1000.0)
        out["hw"] = _counters_scaled(h["hw"], "sdpa_flash", 1000.0)     # flash moves more bytes than naive
        out["ceilings"] = _roof_scaled(h["ceilings"], 1000.0)          # every point right of the ridge
        out["own"] = {**h["own"], "encoder_train_step_big": _scaled(h["own"]["encoder_train_step_big"], 50.0)}
        return out
    if name == "a tie":
        out["forwards"] = {**f, "sdpa_flash": _scaled(f["sdpa_flash"], _gpu_us(f["naive"]) / _gpu_us(f["sdpa_flash"]))}
        out["ceilings"] = _roof_scaled(h["ceilings"], 1e-3)            # every point left of the ridge
        out["own"] = {**h["own"], "encoder_train_step_big": h["own"]["encoder_train_step"]}
        out["tie"] = True       # and the roofline's closest stage tied by another (see roofline_page)
        return out
    if name == "another GPU":
        out["forwards"] = {k: _on_gpu(p, "SYNTHETIC GPU", 108) for k, p in f.items()}
        out["own"] = {k: _on_gpu(p, "SYNTHETIC GPU", 108) for k, p in h["own"].items()}
        out["c"], out["hw"] = _counters_on(h["c"], "SYNTHETIC GPU", 108), _counters_on(h["hw"], "SYNTHETIC GPU", 108)
        out["timed"] = [_on_gpu(p, "SYNTHETIC GPU", 108) for p in h["timed"]]
        return out
    raise KeyError(name)


def counters_page(h):   # 05, and the reports 07 and 09 link
    from helpers import counters, stages_where
    measured = counters.hbm_measured(h["hw"], {k: v for k, v in h["forwards"].items() if (k, v.shape.key) in h["hw"].kernels})
    counters.glue_hbm(measured)
    counters.glue_reports(h["hw"], stages_where(fused=True, in_article=True))
    counters.glue_reports(h["hw"], ["sdpa_cudnn"], key="cudnn_report")


def occupancy_page(h):  # 07
    from helpers.chapters import occupancy_lessons as lessons, occupancy_truth as truth
    f = h["forwards"]
    fl = lessons.glue_kernel("flash", f["sdpa_flash"], h["hw"])
    if "sdpa_cudnn" in f:
        lessons.glue_kernel("cudnn", f["sdpa_cudnn"], h["hw"])
    lessons.glue_article()
    lessons.glue_granularity(fl["gpu"])
    lessons.glue_low_occupancy(f)
    spec = lessons.spec_of(f.get("sdpa_cudnn", f["sdpa_flash"]))
    lessons.glue_cupti_zero(lessons.cupti_zero(f), spec)
    truth.glue_truth(truth.occupancy_truth(h["hw"], f))
    truth.glue_executed(h["hw"])
    lessons.glue_smem_cliff(h["cliff"])


def roofline_page(h):   # 09
    from helpers import counters, roofline
    c = h["c"]
    roof = roofline.load_ceilings(c, *h["ceilings"], quiet=True)
    roofline.glue_ceilings(roof)
    counters.glue_calibration(c)
    times = roofline.timings(h["timed"])
    pts = roofline.points(c, roof, times, shapes=[c.default_shape])
    if h.get("tie"):   # sdpa_cudnn's point where the closest stage's is: two stages tie at the top
        top = pts.loc[pts["% of roof"].idxmax()].copy()
        pts = pts.copy()
        pts.loc[pts["stage"] == "sdpa_cudnn", ["% of roof", "TFLOP/s", "roof"]] = \
            [top["% of roof"], top["TFLOP/s"], top["roof"]]
    roofline.glue_roofline(pts, roof)
    roofline.glue_kernels(roofline.kernel_points(c, roof))
    roofline.glue_sweep(roofline.points(c, roof, times))


def own_model_page(h):  # 10
    from helpers import own_model
    o = h["own"]
    for name, prefix in zip(OWN, ("fwd", "slow", "train", "big")):
        own_model.glue_step(o[name], prefix)
    own_model.kernel_change(o["encoder_train_step"], o["encoder_train_step_big"], "change")


HW_PAGES = {"05 counters": counters_page, "07 occupancy": occupancy_page, "09 roofline": roofline_page,
            "10 own model": own_model_page}


@pytest.mark.parametrize("page", list(HW_PAGES))
@pytest.mark.parametrize("name", VARIANTS)
def test_every_glued_value_of_the_hardware_pages_reads_as_a_sentence(hardware, name, page, caught):
    HW_PAGES[page](hw_variant(hardware, name))
    assert_sentences(caught, page, f"{hardware['gpu']}, {name}")


def test_the_hardware_variants_change_what_they_name(hardware, caught):
    """Each variant reaches the sentence form it is meant to: no stage left of the ridge, none
    right of it, naive as fast as flash, the same kernels in both steps, flash moving more bytes."""
    from helpers import roofline
    said = {}
    for name in VARIANTS:
        caught.clear()
        for page in HW_PAGES.values():
            page(hw_variant(hardware, name))
        said[name] = dict(caught)
    assert said["the winner changed"]["roof_memory_sentence"].startswith("No stage sits under the memory roof")
    assert said["a tie"]["roof_compute_sentence"].startswith("No stage sits under a compute roof")
    assert said["as recorded"]["roof_memory_sentence"].startswith("Under the memory roof")
    assert said["a tie"]["low_comparison"].startswith("about as long as sdpa_flash's")
    assert said["a tie"]["change_same"] == "the same kernels"
    assert float(said["the winner changed"]["hbm_ratio"]) < 1
    assert said["the winner changed"]["hbm_ratio_sentence"].endswith("times fewer bytes than sdpa_flash moved")
    assert said["as recorded"]["hbm_ratio_sentence"] == f"That is {said['as recorded']['hbm_ratio']} times as many bytes"
    assert "sdpa_cudnn" not in said["a stage missing"]["roof_compute_sentence"]
    assert said["another GPU"]["fwd_gpu"] == "SYNTHETIC GPU"
    assert said["a stage missing"]["cliff_ex_sentence"].startswith("The small-shared-memory launch through "
                                                                     "cuLaunchKernelEx did not run here")
    assert said["as recorded"]["change_names_sentence"].startswith("For the bigger matrices cuBLAS picks other")
    assert said["a tie"]["change_names_sentence"] == "For the bigger matrices cuBLAS keeps the same kernels"
    assert said["as recorded"]["roof_closest_sentence"].startswith("The stage closest to its own roof is ")
    assert said["a tie"]["roof_closest_sentence"].startswith("The stages closest to their own roof are ")
    assert "sdpa_cudnn" in said["a tie"]["roof_closest_sentence"]
    # a tie's guess accepts either answer
    from helpers.chapters import occupancy_lessons as lessons
    tie = hw_variant(hardware, "a tie")["forwards"]
    assert lessons.glue_low_occupancy(tie)["faster_tied"] == ["naive (high occupancy)", "sdpa_flash (low occupancy)"]
    assert lessons.glue_low_occupancy(hardware["forwards"])["faster_tied"] == ["sdpa_flash (low occupancy)"]
