"""Live on a GPU that cannot run a stage (flash on a T4), that stage falls back to its recording,
made on another GPU. The page must not compare the reader's GPU with the recorded one as if they
were one: the banner says which stage is whose, and every verdict comparing it says where each
side ran.

The GPU is faked: the decision says live, the capture returns the repository's recordings with
the device renamed to a T4 (synthetic profiles), and raises StageUnavailable for sdpa_flash, as
its requirement does on sm 7.5. The expected words are spelled here."""
import dataclasses

import pytest

import helpers
from helpers.core.errors import StageUnavailable
from helpers.sources import capture as capturing
from helpers.sources import modes
from helpers.sources.replay import trace_path

T4 = "Tesla T4 (fake)"


@pytest.fixture
def t4(monkeypatch, tmp_path):
    def capture(stage, shape=helpers.DEFAULT_SHAPE, **_):
        if stage == "sdpa_flash":
            raise StageUnavailable("FlashAttention-2 needs an Ampere-or-newer GPU and fp16/bf16.")
        recorded = helpers.Profile.load(trace_path(stage), mode="live")
        prov = dataclasses.replace(recorded.provenance, gpu=T4, capability="7.5", sm_count=40, mode="live")
        return helpers.Profile(recorded.events, prov, None)

    monkeypatch.setattr(modes, "cuda_available", lambda: True)
    monkeypatch.setattr(capturing, "capture", capture)
    monkeypatch.setattr(capturing, "_device_key", lambda: (T4, "0.0"))
    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(tmp_path))


def test_the_banner_names_each_stages_gpu_and_the_fallback(t4, capsys):
    profiles = helpers.Session().stages(["naive", "sdpa_flash", "flex"])
    out = capsys.readouterr().out
    assert profiles["naive"].provenance.gpu == T4 and profiles["sdpa_flash"].provenance.gpu == "NVIDIA H200"
    assert profiles["sdpa_flash"].mode == "replay"
    assert "Profiled naive, flex live on Tesla T4 (fake)" in out
    assert "Replaying sdpa_flash: recorded on NVIDIA H200" in out
    assert "sdpa_flash could not run on this GPU: its figures are the NVIDIA H200's recording" in out
    assert "compares two GPUs" in out


def test_every_verdict_across_the_two_gpus_says_where_each_side_ran(t4, capsys):
    from helpers.chapters import claims
    profiles = helpers.Session().stages(["sdpa_flash", "flex"])
    rows = claims.check("flex", profiles)
    assert len(rows)
    for evidence in rows["this trace"]:
        assert evidence.startswith("Two GPUs: flex live on Tesla T4 (fake); sdpa_flash recorded on NVIDIA H200. ")


def test_one_gpu_verdicts_carry_no_note(t4, capsys):
    from helpers.chapters import claims
    profiles = helpers.Session().stages(["naive", "inplace"])       # both live on the T4
    assert not any(e.startswith("Two GPUs") for e in claims.check("inplace", profiles)["this trace"])
    replayed = helpers.Session(mode="replay").stages(["sdpa_flash", "flex"])   # both the H200's
    assert not any(e.startswith("Two GPUs") for e in claims.check("flex", replayed)["this trace"])


def test_load_stages_banner_does_not_name_one_gpu_for_all(t4, capsys):
    modes.load_stages(["naive", "sdpa_flash"], mode="auto")
    out = capsys.readouterr().out
    assert "live on Tesla T4 (fake)" in out and "recorded on NVIDIA H200" in out


# --- every view that sets stages side by side marks the one measured on another GPU --------------
#
# The mark is measured_on's, spelled here: "recorded on NVIDIA H200, not on Tesla T4 (fake)". A
# page of one GPU (all live on the T4, or all replayed from the H200's set) carries none of it.

MARK = f"recorded on NVIDIA H200, not on {T4}"
FALLEN = "sdpa_flash"


def _pages(t4):
    """(the mixed page's profiles, the all-live page's, the all-replay page's)."""
    mixed = helpers.Session().stages(["naive", FALLEN, "flex"])
    live = helpers.Session().stages(["naive", "flex"])
    replayed = helpers.Session(mode="replay").stages(["naive", FALLEN, "flex"])
    return mixed, live, replayed


def _stage_tables(profiles):
    from helpers.chapters import claims
    from helpers.views import tables
    return {"summary": tables.summary_table(list(profiles.values())),
            "at a glance": tables.at_a_glance(profiles, claims.revealed(profiles)),
            "timer": tables.timer_agreement(profiles)}


def test_every_table_row_of_the_fallen_back_stage_carries_the_mark(t4):
    mixed, live, replayed = _pages(t4)
    for name, table in _stage_tables(mixed).items():
        assert table.loc[FALLEN, "measured on"] == MARK, name
        for other in ("naive", "flex"):
            assert table.loc[other, "measured on"] == f"live on {T4}", name
        assert "Two GPUs" in table.attrs["caption"], name
    for page in (live, replayed):
        for name, table in _stage_tables(page).items():
            assert "measured on" not in table.columns, name
            assert "Two GPUs" not in table.attrs.get("caption", ""), name


def _bars(fig):
    """(stage, trace) for every bar or point a figure draws per stage."""
    return [(str(x), trace) for trace in fig.data if trace.x is not None for x in trace.x if x is not None]


def _charts(profiles):
    from helpers.views import charts
    listed = list(profiles.values())
    return {"GPU events": charts.gpu_events_per_forward(listed), "GPU and CPU time": charts.gpu_and_cpu_time(listed)}


def test_every_chart_bar_of_the_fallen_back_stage_is_hatched_and_named(t4):
    mixed, live, replayed = _pages(t4)
    for name, fig in _charts(mixed).items():
        drawn = _bars(fig)
        assert {s for s, _ in drawn} == {"naive", FALLEN, "flex"}, name
        for stage, trace in drawn:
            hatched = trace.marker.pattern is not None and trace.marker.pattern.shape == "/"
            if stage == FALLEN:
                assert hatched and MARK in trace.name and MARK in trace.hovertemplate, (name, trace.name)
                assert trace.showlegend is not False, name     # its legend entry says where
            else:
                assert not hatched and "recorded on" not in (trace.name or ""), (name, trace.name)
        assert "Two GPUs" in fig.layout.title.text or MARK.split(",")[0] in fig.layout.title.text.replace("<br>", " ")
    for page in (live, replayed):
        for name, fig in _charts(page).items():
            for stage, trace in _bars(fig):
                assert trace.marker.pattern is None or not trace.marker.pattern.shape, name
                assert "not on" not in (trace.name or "") and "not on" not in (trace.hovertemplate or ""), name


def test_the_sweep_lines_dash_the_fallen_back_stage(t4):
    from helpers.views import charts
    sweep = helpers.Session().sweep(["naive", FALLEN], [helpers.DEFAULT_SHAPE])
    assert list(sweep.loc[sweep["stage"] == FALLEN, "elsewhere"]) == [MARK]
    assert list(sweep.loc[sweep["stage"] == "naive", "elsewhere"]) == [""]
    fig = charts.sweep_lines(sweep)
    for trace in fig.data:
        if FALLEN in trace.name:
            assert MARK in trace.name and trace.line.dash == "dash" and MARK in trace.hovertemplate
        else:
            assert "not on" not in trace.name and trace.line.dash is None
    one = charts.sweep_lines(helpers.Session(mode="replay").sweep(["naive", FALLEN], [helpers.DEFAULT_SHAPE]))
    assert not any("not on" in t.name or t.line.dash for t in one.data)


def _speed(questions):
    (key,) = [q.key for q in questions.questions if q.key["type"] == "choice"]
    return key


def test_a_speed_guess_across_two_gpus_says_so_before_and_after(t4):
    from helpers.views import guess
    mixed, live, replayed = _pages(t4)
    for now, before in (("flex", FALLEN), (FALLEN, "naive")):
        key = _speed(guess.stage_questions(mixed[now], mixed[before]))
        assert MARK in key["question"] and "Two GPUs" in key["question"], key["question"]
        assert MARK in key["answerText"], key["answerText"]          # what the reveal shows
        shown = guess.stage_questions(mixed[now], mixed[before]).to_html()
        assert MARK in shown
    for page, (now, before) in ((live, ("flex", "naive")), (replayed, ("flex", FALLEN))):
        key = _speed(guess.stage_questions(page[now], page[before]))
        assert "Two GPUs" not in key["question"] and "not on" not in key["answerText"]
