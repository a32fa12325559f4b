"""09's chart says where its roofs come from, and it is where they come from: the compute roofs
are the ncu calibration matmuls' FLOPs over their ncu time (raw CSV), the copy roof do_bench's
(ceilings.json). Issue 38: the subtitle said "roofs: do_bench" over ncu's compute roofs."""
from __future__ import annotations

import math

import pytest

from . import _raw


def test_the_subtitle_names_the_roofs_sources():
    from helpers import Session, roofline
    s = Session(mode="replay")
    c = s.counters(["sdpa_flash", "naive"])
    roof = roofline.load_ceilings(c, *s.ceilings(), quiet=True)
    pts = roofline.points(c, roof, roofline.timings(s.timed(c, quiet=True)), shapes=[c.default_shape])
    fig = roofline.chart(pts, roof)
    title = fig.layout.title.text
    assert "compute roofs: ncu calibration matmuls" in title and "copy roof: do_bench" in title
    assert "roofs: do_bench" not in title
    # and the drawn compute roof is the raw calibration's, the copy roof the recorded do_bench copy
    cal = _raw.calibration()
    tensor = next(t for t in fig.data if (t.name or "").startswith("roof measured"))
    assert max(tensor.y) == pytest.approx(cal["bf16_tflops"], rel=1e-9)
    assert roof["copy TB/s"] == pytest.approx(_raw.copy_tbps(), rel=1e-12)
    assert not math.isclose(cal["bf16_tflops"], roof["do_bench matmul TFLOP/s"], rel_tol=1e-3)
