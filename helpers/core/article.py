"""The source article's A100 figures: a labelled reference, never a stand-in for this run."""
from __future__ import annotations

import pandas as pd

from .stages import ARTICLE_STAGES

ARTICLE_GPU = "the article's A100"
# what a cell says where the article gives no figure for a stage (its closing table's stages) or
# never profiled it (the stages this book adds)
NOT_GIVEN = "not given"
NOT_IN_ARTICLE = "not in the article"

# per forward, as the article reports them: the fused SDPA backends' "CUDA avg time" and "CPU avg
# time" (its cuDNN section), and the in-place and math stages' "*_fwd CUDA time avg" (its math
# section: 1.955 ms and 7.239 ms). It gives no time for the out-of-place naive forward, and no CPU
# time for in-place or math.
A100_REFERENCE = {
    "inplace": {"GPU µs": 1955.0},
    "sdpa_math": {"GPU µs": 7239.0},
    "sdpa_efficient": {"GPU µs": 277.9, "CPU µs": 117.0},
    "sdpa_flash": {"GPU µs": 146.8, "CPU µs": 138.0},
    "sdpa_cudnn": {"GPU µs": 186.3, "CPU µs": 214.0},
}
# the article's "the one liner is 3.7x slower": math against the in-place three lines, 7.239 / 1.955 ms
A100_MATH_OVER_INPLACE = round(A100_REFERENCE["sdpa_math"]["GPU µs"] / A100_REFERENCE["inplace"]["GPU µs"], 1)


def reference_columns(stages) -> pd.DataFrame:
    """The article's A100 figures for `stages`, with columns labelled as the article's; a cell the
    article has no figure for says so in words ("not given", or "not in the article" for a stage
    it never profiled)."""
    rows = {}
    for s in stages:
        given = A100_REFERENCE.get(s, {})
        blank = NOT_GIVEN if s in ARTICLE_STAGES else NOT_IN_ARTICLE
        rows[s] = {c: given.get(c, blank) for c in ("GPU µs", "CPU µs")}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["GPU µs", "CPU µs"]).astype(object)
    frame.columns = [f"{ARTICLE_GPU}: {c}" for c in frame.columns]
    return frame
