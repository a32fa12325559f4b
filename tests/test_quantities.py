"""The ledger (helpers/core/quantities.py) and the glossary say the same: every quantity's name
and definition appear in book/glossary.md, once, in the same words; and the ledger's small
functions against hand-worked figures (not the code's own output)."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from conftest import ROOT
from helpers.core import quantities as q
from helpers.core.stages import Shape


def _glossary() -> str:
    return re.sub(r"\s+", " ", (ROOT / "book" / "glossary.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", list(q.LEDGER))
def test_every_quantity_has_its_definition_in_the_glossary(name):
    unit, words = q.LEDGER[name]
    text = _glossary()
    body = words[1:] if words[0].islower() else words   # the glossary capitalises a sentence's first letter
    assert body in text, f"{name}: its definition is not in the glossary"
    assert text.count(body) == 1, f"{name}: its definition is in the glossary more than once"


def test_the_functions_against_hand_worked_figures():
    s = Shape(batch=1, heads=2, seq=4, head_dim=8, causal=True)
    assert q.model_flops(s) == 4 * 1 * 2 * 16 * 8 / 2
    assert q.inputs_bytes(s) == 4 * 1 * 2 * 4 * 8 * 2
    table = pd.DataFrame({"sm__ops_path_tensor_src_bf16_dst_fp32.sum": [100.0, 0.0, 10.0],
                          q.FFMA: [0.0, 50.0, 10.0], "dram_bytes": [10.0, 20.0, 0.0], "time_ns": [1e3, 2e3, 3e3]})
    factors = {"sm__ops_path_tensor_src_bf16_dst_fp32.sum": 1.0, q.FFMA: 2.0}
    assert list(q.executed_flops(table, factors)) == [100.0, 100.0, 30.0]
    # FADD and FMUL: one FLOP per thread-instruction, on the fp32 side
    more = table.assign(**{q.FADD: [0.0, 4.0, 0.0], q.FMUL: [0.0, 0.0, 30.0]})
    assert list(q.executed_flops(more, factors)) == [100.0, 104.0, 60.0]
    assert list(q.pipe_of(more, factors)) == [q.TENSOR_PIPE, q.FFMA_PIPE, q.FFMA_PIPE]
    assert list(q.pipe_of(table, factors)) == [q.TENSOR_PIPE, q.FFMA_PIPE, q.FFMA_PIPE]
    assert q.forward_dram_bytes(table, 5.0) == 35.0 and q.ncu_seconds(table, 1e-6) == pytest.approx(7e-6)
    # 100 TFLOP/s and 1 TB/s against roofs of 200 and 4: half the compute roof, a quarter of the copy's
    lim = q.limit(100e12, 1e12, 1.0, 200.0, 4.0)
    assert lim["% of compute roof"] == pytest.approx(50) and lim["% of copy roof"] == pytest.approx(25)
    assert lim["side"] == "compute" and lim["bound"] == "neither roof"     # 100 FLOP/B > ridge 50
    assert q.limit(100e12, 3.5e12, 1.0, 200.0, 4.0)["bound"] == "memory"
    assert q.limit(150e12, 1e12, 1.0, 200.0, 4.0)["bound"] == "compute"
    # a·S² + b·S = total: a = 2·1·1, b = 3·1·1·1 -> 2S² + 3S = 35 at S = 3.5
    assert q.wall_seq(2, 3, 1, 1, 1, 35.0) == pytest.approx(3.5)
    assert q.wall_seq(0, 2, 1, 1, 4, 80.0) == pytest.approx(10.0)
