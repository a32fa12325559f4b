"""The source article's A100 figures: a labelled reference, never a stand-in for this run."""
from __future__ import annotations

import pandas as pd

ARTICLE_GPU = "the article's A100"

# per forward, as the article reports them for the three fused SDPA backends
A100_REFERENCE = {
    "sdpa_efficient": {"GPU µs": 277.9, "CPU µs": 117.0},
    "sdpa_flash": {"GPU µs": 146.8, "CPU µs": 138.0},
    "sdpa_cudnn": {"GPU µs": 186.3, "CPU µs": 214.0},
}
# the article's "the math backend is 3.7× slower than naive", on its A100
A100_MATH_OVER_NAIVE = 3.7


def reference_columns(stages) -> pd.DataFrame:
    """The article's A100 figures for `stages`, with columns labelled as the article's."""
    rows = {s: A100_REFERENCE.get(s, {}) for s in stages}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=["GPU µs", "CPU µs"])
    frame.columns = [f"{ARTICLE_GPU}: {c}" for c in frame.columns]
    return frame
