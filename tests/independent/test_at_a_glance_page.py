"""Chapter 08: the closing table's measured columns, the timer table, its glued sentence, the
shape explorer's tables and the sweep chart, from the raw traces and their provenance.

Units: `µs` columns µs (raw `dur`; do_bench's per-call median as the provenance holds it, µs);
the timer table's verdicts, its caller's loop and its glued sentence are recomputed from timers.json
in test_timer_verdicts.py (on a fake timers.json, and on every real set that has one)."""
import pytest

from helpers import ARTICLE_STAGES, Session, charts, prose, shape_explorer, tables

from . import raw
from helpers.core.stages import stages_where  # the stage lists: queries of the registry


@pytest.fixture(scope="module")
def profiles():
    s = Session(mode="replay")
    return s.stages(s.closing_stages())


def fwd(stage, shape=raw.DEFAULT):
    return raw.forward(raw.stage_path(stage, shape))


def bench(stage, shape=raw.DEFAULT):
    return raw.provenance(raw.stage_path(stage, shape))["do_bench_us"]


def recorded_default():
    return sorted(p.name.split("__")[0] for p in raw.TRACES.glob(f"*__{raw.DEFAULT}.json.gz"))


def test_closing_stages_are_the_recorded_ones(profiles):
    assert sorted(profiles) == recorded_default()


def test_at_a_glance_measured_columns(profiles):
    # the verdict columns are claims.revealed's (tests/test_claims_raw.py holds them to the raw
    # events); the measured columns do not depend on them, and revealed costs 10 s here
    t = tables.at_a_glance(profiles, {})
    assert list(t.index) == list(profiles)
    for s in profiles:
        f = fwd(s)
        assert t.loc[s, "GPU events"] == f.count()
        assert t.loc[s, "GPU µs"] == pytest.approx(f.gpu_us, abs=0.051)
        assert t.loc[s, "CPU µs (profiled)"] == pytest.approx(f.cpu_us, abs=0.051)


def test_timer_agreement_every_column(profiles):
    """The columns read from the trace (the verdicts and the loop: test_timer_verdicts.py)."""
    t = tables.timer_agreement(profiles)
    assert list(t.index) == list(profiles)
    for s in profiles:
        f, b = fwd(s), bench(s)
        row = t.loc[s]
        assert row["profiler GPU µs"] == pytest.approx(f.gpu_us, abs=0.051)
        assert row["do_bench µs"] == pytest.approx(b, abs=0.051)
        assert row["CPU µs (profiled)"] == pytest.approx(f.cpu_us, abs=0.051)


def test_shape_explorer_tables():
    """Every recorded shape's table: GPU events, GPU µs, CPU µs and do_bench µs of each stage."""
    explorer = shape_explorer(Session(mode="replay"), list(ARTICLE_STAGES))
    assert explorer.tables
    for key, table in explorer.tables.items():
        for stage, row in table.iterrows():
            f = fwd(stage, key)
            assert row["gpu_events"] == f.count()
            assert row["gpu_time_us"] == pytest.approx(f.gpu_us, abs=1e-3)
            assert row["cpu_time_us"] == pytest.approx(f.cpu_us, abs=1e-3)
            assert row["do_bench_us"] == pytest.approx(bench(stage, key), abs=1e-3)


def test_sweep_lines_points():
    stages = list(stages_where(swept=True, repeats=None, dispatched=False))   # 08's sweep
    s = Session(mode="replay")
    shapes = sorted({sh for sh in s.shapes("sdpa_flash") if sh.head_dim == 64}, key=lambda sh: sh.seq)
    fig = charts.sweep_lines(s.sweep(stages, shapes))
    assert [t.name for t in fig.data] == stages
    for trace in fig.data:
        assert list(trace.x) == [s.seq for s in shapes]
        assert list(trace.y) == pytest.approx([fwd(trace.name, s.key).gpu_us for s in shapes], abs=1e-3)
    assert fig.layout.yaxis.type == "log" and "µs" in fig.layout.yaxis.title.text
