"""Chapter 05's measured HBM traffic: every column of the table and every glued figure, from
ncu's raw CSV (read with the csv module, its units row applied) and the trace's memcpy/memset
bytes; the model's columns from the shape and the trace's event count.

Units: `MB` is 10**6 bytes (ncu's Mbyte; not MiB); ratios are unfused / fused and measured / model."""
import pytest

from helpers import Session, counters

from . import raw
from helpers.core.stages import stages_where  # the stage lists: queries of the registry

STAGES = list(stages_where(in_article=True))   # 05's counters: the article's stages
NCU = raw.TRACES / "ncu"


@pytest.fixture(scope="module")
def measured():
    s = Session(mode="replay")
    profiles = s.stages(["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash"])
    hbm = s.counters(STAGES)
    return counters.hbm_measured(hbm, s.forwards(hbm, profiles))


def dram(stage):
    rows, units = raw.ncu_table(NCU / f"{stage}__{raw.DEFAULT}.csv")
    read = sum(raw.ncu_number(r, units, "dram__bytes_read.sum") for r in rows)
    written = sum(raw.ncu_number(r, units, "dram__bytes_write.sum") for r in rows)
    return len(rows), read, written


def copies(stage):
    """A device-to-device memcpy reads and writes its bytes; a memset writes them."""
    f = raw.forward(raw.stage_path(stage))
    return sum(e["args"].get("bytes", 0) * (2 if e["kind_cat"] == "memcpy" and "DtoD" in e["name"] else 1)
               for e in f.gpu if e["kind_cat"] in ("memcpy", "memset"))


def model(stage):
    """Between the first and last matmul each GPU event (memsets aside) reads and writes the
    [B, H, S, S] scores once; the matmuls write and read them once more; q, k, v and out once each.
    The scores' element: 2 bytes (bf16) where every kernel between runs in bf16, 4 where one runs
    in fp32 (its name says float and no BFloat16: the math backend upcasts)."""
    f = raw.forward(raw.stage_path(stage))
    s = raw.provenance(raw.stage_path(stage))["shape"]
    qkvo = 4 * s["batch"] * s["heads"] * s["seq"] * s["head_dim"] * 2
    at = [i for i, e in enumerate(f.gpu) if e["kind_cat"] == "kernel" and e["op"] in ("aten::bmm", "aten::mm")]
    if len(at) < 2:
        return qkvo
    between = [e for e in f.gpu[at[0] + 1:at[-1]] if e["kind_cat"] != "memset"]
    fp32 = any(("float" in e["name"] or "f32" in e["name"]) and "BFloat16" not in e["name"] for e in between)
    return (2 * len(between) + 2) * s["batch"] * s["heads"] * s["seq"] ** 2 * (4 if fp32 else 2) + qkvo


def test_hbm_table_every_column(measured):
    assert list(measured.index) == STAGES
    for stage in STAGES:
        n, read, written = dram(stage)
        row = measured.loc[stage]
        assert row["kernels"] == n
        assert row["read MB"] == pytest.approx(read / 1e6, abs=0.051)
        assert row["written MB"] == pytest.approx(written / 1e6, abs=0.051)
        assert row[counters.COPIES] == pytest.approx(copies(stage) / 1e6, abs=0.051)
        forward = (read + written + copies(stage)) / 1e6
        assert row["forward MB"] == pytest.approx(forward, abs=0.051)
        assert row["model MB"] == pytest.approx(model(stage) / 1e6, abs=0.051)
        assert row["forward / model"] == pytest.approx(forward / (model(stage) / 1e6), abs=0.006)


def test_glue_hbm(measured):
    g = counters.glue_hbm(measured)
    fwd = {s: (dram(s)[1] + dram(s)[2] + copies(s)) / 1e6 for s in STAGES}
    mod = {s: model(s) / 1e6 for s in STAGES}
    num = lambda v: float(v.replace(",", ""))  # noqa: E731
    assert num(g["unfused_mb"]) == pytest.approx(fwd["naive"], abs=0.51)
    assert num(g["fused_mb"]) == pytest.approx(fwd["sdpa_flash"], abs=0.51)
    assert num(g["unfused_copy_mb"]) == pytest.approx(copies("naive") / 1e6, abs=0.51)
    assert num(g["ratio"]) == pytest.approx(fwd["naive"] / fwd["sdpa_flash"], abs=0.51)
    assert num(g["model_ratio"]) == pytest.approx(mod["naive"] / mod["sdpa_flash"], abs=0.51)
    assert num(g["fused_read_mb"]) == pytest.approx(dram("sdpa_flash")[1] / 1e6, abs=0.051)
    assert num(g["fused_written_mb"]) == pytest.approx(dram("sdpa_flash")[2] / 1e6, abs=0.051)
    s = raw.provenance(raw.stage_path("sdpa_flash"))["shape"]
    one = s["batch"] * s["heads"] * s["seq"] * s["head_dim"] * 2 / 1e6  # one [B, H, S, D] bf16 tensor, MB
    assert num(g["output_mb"]) == pytest.approx(one, abs=0.051)
    assert num(g["qkv_mb"]) == pytest.approx(3 * one, abs=0.051)
    over = [fwd[s] / mod[s] for s in STAGES]
    assert num(g["min_over_model"]) == pytest.approx(min(over), abs=0.006)
    assert num(g["max_over_model"]) == pytest.approx(max(over), abs=0.006)
