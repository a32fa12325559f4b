"""06b's reading of Inductor's `prepare_softmax_online`, held to the generated code the recordings
keep (provenance extra.generated_code of naive_compiled, both sets), read with gzip + json.

In the recorded persistent kernel (`triton_per_…`) the row is loaded once, its max taken with one
reduction and its sum of exponentials with another, and nothing is rescaled: no "one pass". The
page's words for the op (compiled.OP_MEANINGS, shown in the decoded-name table) and 06b's prose
must not say it computes both in one pass.
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETS = ("h200", "h100-80gb-hbm3")
SHAPE = "b8_h16_s1024_d64_bfloat16_causal"


def fused_kernel_source(gpu: str) -> str:
    with gzip.open(ROOT / "notebooks" / "traces" / gpu / f"naive_compiled__{SHAPE}.json.gz", "rt") as f:
        code = json.load(f)["provenance"]["extra"]["generated_code"]
    code = code if isinstance(code, str) else json.dumps(code)
    code = code.replace("\\n", "\n")
    start = code.index("def triton_per_fused")
    return code[start:code.index("''', device_str", start)]


@pytest.mark.parametrize("gpu", SETS)
def test_the_recorded_kernel_takes_max_then_a_separate_sum(gpu):
    src = fused_kernel_source(gpu)
    assert "prepare_softmax_online" in src.splitlines()[0]
    loads = re.findall(r"tl\.load\(in_out_ptr0", src)
    maxes = [m.start() for m in re.finditer(r"max2\(", src)]
    sums = [m.start() for m in re.finditer(r"tl\.sum\(", src)]
    assert len(loads) == 1 and len(maxes) == 1 and len(sums) == 1, src
    assert maxes[0] < sums[0]
    # the sum is of exp(x - max) with the final max: no running rescale of a partial sum
    assert "online_softmax" not in src and "rescale" not in src


def test_the_words_say_no_single_pass():
    from helpers.chapters.compiled import OP_MEANINGS
    words = OP_MEANINGS["prepare_softmax_online"]
    assert "one pass" not in words and "then the sum" in words
    nb = json.loads((ROOT / "notebooks" / "06b_naive_compiled.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    said = text[text.index("`prepare_softmax_online`"):][:600]
    assert "in one pass" not in said and "two reductions" in said
