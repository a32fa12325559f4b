"""The timeline's hover as a reader reads it: each bar hovered in headless Chromium (plotly.js
draws the figure, Plotly.Fx.hover hovers a bar), its duration read from the label and held to the
raw trace event's `dur` (raw.py reads the json.gz; nothing of helpers computes the expected value).

Plotly shows %{x} of a bar drawn from a `base` as where the bar ends, not its length: a hover
built on it read an 84.7 µs gemm as "2141.2 µs"."""
from __future__ import annotations

import json
import re

import pytest

from . import raw

pytestmark = pytest.mark.browser

STAGES = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "naive_compiled", "flex"]
HOVER_JS = """([i, n]) => {
  const gd = document.getElementById('fig');
  const out = [];
  for (let p = 0; p < n; p++) {
    Plotly.Fx.hover(gd, [{curveNumber: i, pointNumber: p}]);
    const lines = [...document.querySelectorAll('.hoverlayer .hovertext text tspan.line')].map(t => t.textContent);
    const text = lines.length ? lines : [...document.querySelectorAll('.hoverlayer .hovertext text')].map(t => t.textContent);
    out.push(text);
    Plotly.Fx.unhover(gd);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def page(browser):
    import plotly.offline
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_content(f'<html><body><div id="fig" style="width:1300px;height:700px"></div>'
                   f'<script>{plotly.offline.get_plotlyjs()}</script></body></html>')
    yield pg, errors
    ctx.close()


def hovered(page, fig) -> dict[str, list[str]]:
    """Every bar trace's hover labels, by trace name, in point order."""
    pg, errors = page
    pg.evaluate("(f) => Plotly.newPlot('fig', f.data, f.layout)", json.loads(fig.to_json()))
    out = {}
    for i, t in enumerate(fig.data):
        if t.type == "bar":
            out[t.name] = [" ".join(x) for x in pg.evaluate(HOVER_JS, [i, len(t.x)])]
    assert not errors, errors
    return out


def first_us(label: str) -> float:
    """The first 'N µs' of a label after its first line break (the name may hold digits)."""
    m = re.search(r"([\d,]+\.\d) µs", label)
    assert m, label
    return float(m.group(1).replace(",", ""))


def check(labels: dict[str, list[str]], f: raw.Forward, durations_of_calls: list[float]) -> None:
    gpu = labels["GPU events"]
    assert len(gpu) == len(f.gpu)
    for label, e in zip(gpu, f.gpu):
        assert first_us(label) == pytest.approx(e["dur"], abs=0.051), (label, e["name"], e["dur"])
    ops = sorted([f.root] + f.ops, key=lambda o: o["dur"])
    cpu = sorted(first_us(x) for x in labels["CPU ops"])
    assert cpu == pytest.approx(sorted(o["dur"] for o in ops), abs=0.051)
    calls = sorted(first_us(x) for x in labels["runtime / driver calls"])
    assert calls == pytest.approx(sorted(durations_of_calls), abs=0.051)


@pytest.mark.parametrize("stage", STAGES)
def test_each_bar_hovers_its_raw_duration(stage, page):
    from helpers import charts, profile_stage
    path = raw.stage_path(stage)
    f = raw.forward(path)
    corr = {g["call"]["args"]["correlation"] for g in f.gpu}
    calls = [e["dur"] for e in raw.events(path) if e.get("ph") == "X" and e.get("cat") in raw.CALL_CATS
             and f.lo <= e["ts"] <= f.hi and e["args"].get("correlation") in corr]
    check(hovered(page, charts.timeline(profile_stage(stage, mode="replay", quiet=True))), f, calls)


def test_chapter_10s_forward_hovers_its_raw_durations(page):
    from helpers import Session, charts
    name = "encoder_forward"
    path = raw.TRACES / "own_model" / f"{name}.json.gz"
    f = raw.forward(path, None, name)
    labels = hovered(page, charts.timeline(Session(mode="replay").own_model(name)))
    gpu = labels["GPU events"]
    assert len(gpu) == len(f.gpu)
    for label, e in zip(gpu, f.gpu):
        assert first_us(label) == pytest.approx(e["dur"], abs=0.051), (label, e["name"], e["dur"])
