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
    def capture(stage, shape=helpers.DEFAULT_SHAPE, step=capturing.FORWARD, **_):
        if stage == "sdpa_flash":
            raise StageUnavailable("FlashAttention-2 needs an Ampere-or-newer GPU and fp16/bf16.")
        if step.name == "training":   # the training step's recording, as the T4's
            from helpers.training.sources_modes import load_step
            recorded = load_step(stage, shape)
        else:
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


# --- the chapters' tables and charts: the same mark, through tables.mark_gpus ---------------------

def _table_marks(table, stages_of_rows=True):
    """The mark each way a chapter's table can carry it: the fallen-back stage's row of a "measured
    on" column, or a column of its own whose label names it. Returns the texts that carry the mark
    and those that must not."""
    if "measured on" in table.columns:
        by_stage = table["measured on"].copy()
        if "stage" in table.columns:
            by_stage.index = table["stage"]
        return [by_stage[FALLEN]], [v for k, v in by_stage.items() if k != FALLEN]
    own = [str(c) for c in table.columns if FALLEN in str(c)]
    return own, [str(c) for c in table.columns if FALLEN not in str(c)]


def _chapter_tables(forwards, trainings):
    from helpers.chapters import claims, compiled, flex, occupancy_lessons
    from helpers import training
    two = {k: forwards[k] for k in (FALLEN, "flex")}
    return {"05 hbm_traffic": claims.hbm_traffic(forwards),
            "06 cpu_time_split": claims.cpu_time_split({k: forwards[k] for k in (FALLEN, "sdpa_cudnn")}),
            "06b forward_memory": compiled.forward_memory(forwards),
            "06b cpu_compare": compiled.cpu_compare(forwards),
            "06c first_call": compiled.first_call(forwards["flex"], forwards[FALLEN]),
            "06c against_flash": flex.against_flash(forwards["flex"], forwards[FALLEN]),
            "06c call_gap": flex.call_gap(two),
            # the T4 is faked from the H200's recordings: only naive's kernels fit an sm 7.5 SM
            "07 low_occupancy": occupancy_lessons.low_occupancy(forwards, stages=("naive", FALLEN)),
            "11 phases": training.phases_table(trainings),
            "11 held": training.held_table(trainings),
            "11 timer": training.timer_table(trainings)}


def _forwards_and_trainings(session):
    forwards = session.stages(["naive", FALLEN, "sdpa_cudnn", "flex"])
    trainings = session.training(["naive", FALLEN, "sdpa_cudnn"])
    return forwards, trainings


def test_every_chapter_table_marks_the_fallen_back_stage(t4):
    forwards, trainings = _forwards_and_trainings(helpers.Session())
    assert trainings[FALLEN].provenance.gpu == "NVIDIA H200" and trainings["naive"].provenance.gpu == T4
    for name, table in _chapter_tables(forwards, trainings).items():
        carries, others = _table_marks(table)
        assert carries and all(MARK in c for c in carries), (name, carries)
        assert not any("not on" in str(o) for o in others), (name, others)
        assert "Two GPUs" in table.attrs.get("caption", ""), name
    replayed = _forwards_and_trainings(helpers.Session(mode="replay"))
    for name, table in _chapter_tables(*replayed).items():
        assert "measured on" not in table.columns and not any("not on" in str(c) for c in table.columns), name
        assert "Two GPUs" not in table.attrs.get("caption", ""), name


def _hatched(trace, i):
    shape = trace.marker.pattern.shape if trace.marker.pattern is not None else None
    return (shape[i] if isinstance(shape, (list, tuple)) else shape) == "/"


def test_the_chapters_charts_hatch_the_fallen_back_stage(t4):
    from helpers import occupancy_charts, training
    forwards, trainings = _forwards_and_trainings(helpers.Session())
    kinds = training.kind_chart(trainings)
    # the faked T4's kernels are the H200's (their shared memory fits no sm 7.5 SM): the occupancy
    # chart gets naive named as the T4's, its capability left at the recording's
    naive = helpers.Profile(forwards["naive"].events, dataclasses.replace(
        helpers.Session(mode="replay").stage("naive", quiet=True).provenance, gpu=T4, mode="live"), None)
    occupancy = occupancy_charts.stage_occupancy([naive, forwards[FALLEN]])
    for fig, label_of in ((kinds, lambda t, i: t.y[i]), (occupancy, lambda t, i: t.x[i])):
        bars = [t for t in fig.data if t.type == "bar"]
        assert bars
        for trace in bars:
            for i in range(len(trace.x)):
                assert _hatched(trace, i) == str(label_of(trace, i)).startswith(FALLEN), (trace.name, label_of(trace, i))
                if str(label_of(trace, i)).startswith(FALLEN):
                    assert MARK in str(trace.customdata[i][-1] if isinstance(trace.customdata[i], (list, tuple))
                                       else trace.customdata[i])
        assert MARK in fig.layout.title.text.replace("<br>", " ").replace("<sup>", "").replace("</sup>", "")
    f, tr = _forwards_and_trainings(helpers.Session(mode="replay"))
    for fig in (training.kind_chart(tr), occupancy_charts.stage_occupancy([f[s] for s in ("naive", FALLEN)])):
        assert not any(t.type == "bar" and t.marker.pattern is not None and t.marker.pattern.shape for t in fig.data)
        assert "not on" not in fig.layout.title.text


def test_05b_marks_the_hubs_kernel_recorded_on_another_gpu():
    """Live on an A10G without Hub access, 05b's hub_flash is the H200's recording while SDPA's
    flash runs here: its tables, its verdicts and its summary say which GPU each ran on."""
    from helpers.chapters import hub_flash
    from helpers.core.errors import TraceError
    replayed = helpers.Session(mode="replay")
    try:
        hub = replayed.stage("hub_flash", quiet=True)
    except TraceError:
        pytest.skip("this replay set has no hub_flash trace")
    a10g = "NVIDIA A10G (fake)"
    recorded = replayed.stage("sdpa_flash", quiet=True)
    sdpa = helpers.Profile(recorded.events, dataclasses.replace(recorded.provenance, gpu=a10g, mode="live"), None)
    mark = f"recorded on {hub.provenance.gpu}, not on {a10g}"
    pair = {"hub_flash": hub, "sdpa_flash": sdpa}
    fields = hub_flash.binaries(pair)
    assert [c for c in fields.columns if "hub_flash" in c] == [f"hub_flash ({mark})"]
    assert hub_flash.cpu_lane(pair).loc["hub_flash", "measured on"] == mark
    assert all(e.startswith(f"Two GPUs: hub_flash {where_hub} on") for e in hub_flash.verdicts(hub, sdpa)["this trace"]
               for where_hub in ("recorded",))
    assert f"**hub_flash** ({mark})" in hub_flash.summary_markdown(hub, {"sdpa_flash": sdpa}).data
    # one GPU: no mark anywhere
    same = {"hub_flash": hub, "sdpa_flash": recorded}
    assert not any("not on" in c for c in hub_flash.binaries(same).columns)
    assert "measured on" not in hub_flash.cpu_lane(same).columns
    assert not any(e.startswith("Two GPUs") for e in hub_flash.verdicts(hub, recorded)["this trace"])
    assert "not on" not in hub_flash.summary_markdown(hub, {"sdpa_flash": recorded}).data


def test_the_pages_glue_runs_on_two_gpus(t4, monkeypatch):
    """The glue that reads a marked table back by its column names still finds them (the CPU split
    of 06 reads "flash µs"), and glues no value that a mixed page cannot print."""
    import myst_nb

    from helpers.chapters import claims, flex
    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.__setitem__(name, value))
    p = helpers.Session().stages(["naive", "inplace", FALLEN, "sdpa_cudnn", "flex"])
    claims.glue_cpu_split(p["sdpa_cudnn"], p[FALLEN], others={"naive": p["naive"]})
    flex.glue_page(p["flex"], p[FALLEN])
    claims.glue_memory(p["inplace"], p["naive"])
    assert glued and not [k for k, v in glued.items() if v is None or str(v) in ("", "nan", "none")]


def test_the_counters_pages_never_mix_two_gpus(t4):
    """09's roofline points and 07's occupancy truth read one GPU's counters: live without Nsight
    Compute (or where a stage cannot run under it) every stage's counters are the recording's, and
    the forwards and timings set beside them come from that same GPU, never the T4's live ones."""
    from helpers import roofline, stages_where
    from helpers.core.measured_on import mixed
    s = helpers.Session()
    live = s.stages(["naive", FALLEN, "flex"])
    assert mixed(live)
    stages = stages_where(has_ncu=True, variant_of=None, dispatched=False)
    c = s.counters(stages)
    timed = s.timed(c, quiet=True)
    forwards = s.forwards(c, live)
    assert timed and {p.provenance.gpu for p in timed} == {c.gpu}
    assert forwards and {p.provenance.gpu for p in forwards.values()} == {c.gpu}
    assert not mixed({p.stage: p for p in timed}) and not mixed(forwards)
    # the roofs: the recording's (this fake cannot measure the T4's ceilings; the counters' GPU decides anyway)
    roof = roofline.load_ceilings(c, *helpers.Session(mode="replay").ceilings(), quiet=True)
    pts = roofline.points(c, roof, roofline.timings(timed),
                          shapes=[c.default_shape])
    assert set(pts["stage"]) <= {p.stage for p in timed}


def test_the_pinned_context_price_is_never_read_across_two_gpus(t4, monkeypatch):
    """08's price of entering sdpa_kernel(...) sets sdpa_auto's loop against sdpa_cudnn's: with
    sdpa_cudnn fallen back to the H200's recording, the page says it cannot, and prices nothing."""
    from helpers import prose
    live = capturing.capture

    def capture(stage, *args, **kwargs):
        if stage == "sdpa_cudnn":
            raise StageUnavailable("cuDNN attention needs an sm 8.0+ GPU.")
        return live(stage, *args, **kwargs)

    monkeypatch.setattr(capturing, "capture", capture)
    profiles = helpers.Session().stages(["sdpa_cudnn", "sdpa_auto"])
    text = prose.glue_pinned_cost(profiles)["pinned"]
    assert text == (f"Here sdpa_cudnn was {MARK}: two GPUs' loops cannot price entering sdpa_kernel(...) "
                    "on every call.")
    replayed = helpers.Session(mode="replay").stages(["sdpa_cudnn", "sdpa_auto"])
    assert "µs per call" in prose.glue_pinned_cost(replayed)["pinned"]
