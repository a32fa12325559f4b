"""A GPU is configuration: a copy of the H200's replay set under another GPU name, every device name
marked SYNTHETIC (tools/synthetic_replay_set.py), selected by ATTN_PROFILED_REPLAY_GPU alone, is
what every page then loads, and no page opens a file of the H200's set. Without building the book:
each page's loads are called through the public API, as its notebook calls them, while an audit
hook (sys.addaudithook) writes down every file this process opens.

Two GPUs on one page: profile_stage(..., gpu=...) reads each its own set, side by side."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

import helpers
from helpers.core import config
from helpers.core.replay_set import ReplaySet, gpu_slug, product_name

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "notebooks" / "traces" / "h200"
NAME = "synthetic_h200copy"
MARK = "SYNTHETIC copy of NVIDIA H200"

sys.path.insert(0, str(ROOT / "tools"))
from synthetic_replay_set import make_synthetic  # noqa: E402

OPENED: list[str] | None = None


def _audit(event, args):
    if event == "open" and OPENED is not None and args and isinstance(args[0], (str, bytes, Path)):
        OPENED.append(str(args[0] if not isinstance(args[0], bytes) else args[0].decode(errors="replace")))


sys.addaudithook(_audit)


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """A root holding the synthetic copy and, beside it, the real h200 set (a link)."""
    root = tmp_path_factory.mktemp("replay_sets")
    made = make_synthetic(ReplaySet("h200", H200.parent), NAME, root)
    (root / "h200").symlink_to(H200, target_is_directory=True)
    return root, made


@pytest.fixture
def synthetic(sets, monkeypatch):
    """The synthetic set selected by configuration alone (the two variables), in replay."""
    root, made = sets
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_DIR", str(root))
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_GPU", NAME)
    monkeypatch.setenv("ATTN_PROFILED_MODE", "replay")
    monkeypatch.setenv("ATTN_PROFILED_CACHE", str(root / "cache"))
    return made


def _raw_gpu(path: Path) -> str:
    """The device name a recording's own provenance holds, read with json alone."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["provenance"]["gpu"]


def test_the_copy_is_marked_everywhere_and_kept_out_of_the_repository(sets):
    _, made = sets
    copied = sorted(p.relative_to(made.folder) for p in made.folder.rglob("*") if p.is_file())
    source = sorted(p.relative_to(H200) for p in H200.rglob("*") if p.is_file())
    assert sorted(set(copied) - set(source)) == [Path("SYNTHETIC.md")] and set(source) <= set(copied)
    # no text file of the copy names the H200 unmarked (binary reports and snapshots aside)
    for path in made.folder.rglob("*"):
        if path.suffix in (".json", ".csv") or path.name.endswith(".json.gz"):
            text = (gzip.open(path, "rt") if path.name.endswith(".gz") else open(path)).read()
            assert text.count("NVIDIA H200") == text.count(MARK), path
    assert _raw_gpu(made.trace("naive")) == MARK and _raw_gpu(H200 / "ceilings.json") == "NVIDIA H200"
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "notebooks/traces/synthetic*/" in ignored


def test_identity_is_one_spelling(sets):
    _, made = sets
    real = ReplaySet("h200", H200.parent).identity
    assert (real.slug, real.device_name, real.product, real.synthetic) == ("h200", "NVIDIA H200", "H200", False)
    assert gpu_slug(real.device_name) == real.slug == H200.name
    assert gpu_slug("Tesla T4") == "t4" and product_name("NVIDIA A100-SXM4-80GB") == "A100-SXM4-80GB"
    ident = made.identity
    assert (ident.slug, ident.device_name, ident.product, ident.synthetic) == (NAME, MARK, "H200", True)


def test_the_configured_set_is_the_copy(synthetic):
    assert ReplaySet.configured() == ReplaySet(NAME)
    assert ReplaySet.configured().folder == synthetic.folder
    stages_here = sorted({p.name.split("__")[0] for p in synthetic.folder.glob("*__*.json.gz")})
    assert sorted(ReplaySet.configured().stages()) == sorted(
        s for s in stages_here if (synthetic.folder / f"{s}__{helpers.DEFAULT_SHAPE.key}.json.gz").exists())
    flex = sorted(p.name for p in synthetic.folder.glob("flex__*.json.gz"))
    assert sorted(f"flex__{s.key}.json.gz" for s in helpers.recorded_shapes("flex")) == flex


def _under(paths, folder: Path) -> list[str]:
    return [p for p in paths if Path(p).resolve().is_relative_to(folder.resolve())]


def test_every_page_loads_the_configured_set(synthetic, capsys):
    """Each page's loads, as its notebook makes them; every file opened is the copy's, none the H200's."""
    global OPENED
    from helpers import (counters, hub as hub_page, occupancy_calculator, occupancy_charts, occupancy_lessons,
                         occupancy_truth, roofline)
    OPENED = []
    try:
        s = helpers.Session()   # the notebook's one session object: the configuration alone picks the set
        # every stage chapter and 08: the Profiles, the sweep's shapes, the hub page
        names = s.replay_set.stages()
        profiles = s.stages(names)
        hub = hub_page.page(*s.hub_flash())
        sweep = s.sweep(["flex"], s.shapes("flex"))
        # 05, 07, 09: the counters, their reports' links, the ceilings, the roofline's recorded traces
        c = counters.show(s.counters(["naive", "sdpa_flash", "sdpa_cudnn"], sweep=s.ncu_shapes("sdpa_flash")[:2],
                                     sweep_stages=["sdpa_flash"]))
        links = counters.report_links(c, ["sdpa_flash", "sdpa_cudnn", "calibration__bfloat16_4096x4096x4096"])
        roof = roofline.load_ceilings(c, *s.ceilings(), quiet=True)
        times = roofline.timings(s.timed(c))
        points = roofline.points(c, roof, times)
        # 07: the lessons' stages, the shared-memory experiment, the truth table, the calculator's presets
        lessons = s.load_stages(occupancy_lessons.STAGES)
        events, smem_provenance, smem_source = s.smem_cliff()
        truth = occupancy_truth.occupancy_truth(c, s.forwards(c))
        kernels = occupancy_charts.traced_kernels(s.recorded())
        occupancy_calculator.calculator(s.recorded())
        # 10: the own model's experiments; 11: training
        forward = s.own_model("encoder_forward")
        nosteps = s.own_model_trace("encoder_forward_nosteps")
        trainings = s.training(("naive", "sdpa_flash"))
        memory = s.memory()
        snaps = s.snapshots(("naive", "sdpa_flash"), memory=memory)
        backward = s.training_counters()
    finally:
        opened, OPENED = OPENED, None
    out = capsys.readouterr().out

    # nothing of the H200's set was opened, and the copy was (every kind of recording)
    assert not _under(opened, H200), sorted(set(_under(opened, H200)))[:5]
    read = {str(Path(p).resolve().relative_to(synthetic.folder.resolve())) for p in _under(opened, synthetic.folder)}
    for expected in ("naive__b8_h16_s1024_d64_bfloat16_causal.json.gz", "hub_flash__b8_h16_s1024_d64_bfloat16_causal.json.gz",
                     "ceilings.json", "ncu/provenance.json", "ncu/sdpa_flash__b8_h16_s1024_d64_bfloat16_causal.csv",
                     "experiments/smem_cliff.json.gz", "own_model/encoder_forward.json.gz", "training/memory.json",
                     "training/naive__b8_h16_s1024_d64_bfloat16_causal.json.gz"):
        assert expected in read, expected
    assert any(r.startswith("training/snapshot__naive__") for r in read)
    assert any(r.startswith("training/ncu/backward__") for r in read)

    # what each page shows says where it came from: the synthetic device, never the H200 unmarked
    assert {p.provenance.gpu for p in profiles.values()} == {MARK}
    assert all(Path(p.trace_path).parent == synthetic.folder for p in profiles.values())
    assert hub.prof.provenance.gpu == MARK and not hub.stand_in
    assert set(sweep["gpu"]) == {MARK} if "gpu" in sweep else len(sweep) == len(s.shapes("flex"))
    assert c.gpu == MARK and c.provenance["folder"].endswith(f"{NAME}/ncu")
    assert all(t.attrs["csv"].parent == synthetic.dir("ncu") for t in c.kernels.values())
    assert links.count("{download}") == 3 and "h200/" not in links and f"{NAME}/ncu/" in links
    assert roof["gpu"] == MARK and roof["mode"] == "replay"
    assert len(points) and {p.provenance.gpu for p in lessons.values()} == {MARK}
    assert smem_provenance["gpu"] == MARK if "gpu" in smem_provenance else MARK in json.dumps(smem_provenance)
    assert len(truth) and set(kernels["gpu"]) == {MARK}
    assert forward.provenance.gpu == MARK and nosteps.parent == synthetic.dir("own_model")
    assert {p.provenance.gpu for p in trainings.values()} == {MARK}
    assert memory["provenance"]["gpu"] == MARK and backward["gpu"] == NAME
    assert all(snap is not None for snap in snaps.values())
    assert MARK in out and "NVIDIA H200 " not in out.replace(MARK, "")


def test_two_gpus_on_one_page(synthetic, capsys):
    """profile_stage(..., gpu=) reads that GPU's set, whatever is configured: the same recording
    under two names, side by side, each with its own provenance."""
    here = helpers.profile_stages(["naive", "sdpa_flash"], gpu="h200")
    other = helpers.profile_stages(["naive", "sdpa_flash"], gpu=NAME)
    out = capsys.readouterr().out
    assert {p.provenance.gpu for p in here.values()} == {"NVIDIA H200"}
    assert {p.provenance.gpu for p in other.values()} == {MARK}
    assert "recorded on NVIDIA H200 (" in out and f"recorded on {MARK} (" in out
    for stage in ("naive", "sdpa_flash"):   # the copy is the same measurement, relabelled
        assert here[stage].summary()["gpu_time_us"] == other[stage].summary()["gpu_time_us"]
    assert helpers.profile_stage("naive", quiet=True).provenance.gpu == MARK   # the configured one
    with pytest.raises(helpers.TraceError, match="no_such_gpu"):
        helpers.profile_stage("naive", gpu="no_such_gpu")


def test_the_configuration_is_read_when_used(monkeypatch, tmp_path):
    # config reads the environment at each call: a notebook's kernel started with the variable set
    # reads that set, and nothing caches the default
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_GPU", "x")
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_DIR", str(tmp_path))
    assert ReplaySet.configured().folder == tmp_path / "x"
    assert ReplaySet.configured().path("ncu", "provenance.json") == tmp_path / "x" / "ncu" / "provenance.json"
    monkeypatch.delenv("ATTN_PROFILED_REPLAY_GPU")
    monkeypatch.delenv("ATTN_PROFILED_REPLAY_DIR")
    assert ReplaySet.configured().folder == config.REPLAY_DIR / config.DEFAULT_GPU


def test_the_registry_facts_are_what_was_recorded():
    """Every stage list is a query of the registry (stages_where); each fact matches the committed
    H200 set, read by file name alone."""
    from helpers.core.stages import STAGES, stages_where
    from helpers.training.core import TRAINING_STAGES

    def having(pattern: str) -> set[str]:
        return {p.name.split("__")[0] for p in H200.glob(pattern)}
    key, small = helpers.DEFAULT_SHAPE.key, helpers.Shape(seq=512).key
    assert set(stages_where(swept=True)) == having(f"*__{small}.json.gz")
    assert set(stages_where(has_ncu=True)) == having(f"ncu/*__{key}.csv") - {"calibration"}
    assert set(stages_where(ncu_swept=True)) == having(f"ncu/*__{small}.csv")
    assert set(stages_where(has_training=True)) == having(f"training/*__{key}.json.gz") == set(TRAINING_STAGES)
    order = json.loads((H200 / "training" / "ncu" / f"backward__{key}.json").read_text())  # the stages, in order
    assert list(stages_where(training_ncu=True)) == order
    assert stages_where(variant_of="flex") == ("flex_sliding",) and list(stages_where()) == list(STAGES)
    with pytest.raises(ValueError, match="no fact"):
        stages_where(recorded_on_tuesday=True)


def test_a_session_per_gpu(synthetic, capsys):
    """Session(gpu): every kind of recording a page asks for, from that GPU's set, two side by side."""
    global OPENED
    sessions = {"NVIDIA H200": helpers.Session("h200"), MARK: helpers.Session(NAME)}
    for device, s in sessions.items():
        assert not s.live and s.gpu in s.reason and s.replay_set.identity.device_name == device
        OPENED = []
        try:
            got = {"stages": s.stages(["naive", "sdpa_cudnn"]), "hub": s.hub_flash()[0],
                   "training": s.training(["naive"]), "own": s.own_model("encoder_forward"),
                   "counters": s.counters(["naive"], quiet=True), "ceilings": s.ceilings()[0],
                   "smem": s.smem_cliff()[1], "memory": s.memory(), "snapshots": s.snapshots(["naive"]),
                   "backward": s.training_counters()}
        finally:
            opened, OPENED = OPENED, None
        other = (synthetic.folder if s.gpu == "h200" else H200)
        assert _under(opened, s.replay_set.folder) and not _under(opened, other), s
        assert {p.provenance.gpu for p in got["stages"].values()} == {device}
        assert got["hub"].provenance.gpu == got["own"].provenance.gpu == device
        assert {p.provenance.gpu for p in got["training"].values()} == {device}
        assert got["counters"].gpu == got["ceilings"].attrs["provenance"]["gpu"] == got["smem"]["gpu"] == device
        assert got["memory"]["provenance"]["gpu"] == device and got["backward"]["gpu"] == s.gpu
        assert got["snapshots"]["naive"][2].startswith(f"recorded on {device} ")
    assert helpers.Session().replay_set == ReplaySet(NAME)   # no GPU named: the configured set


def test_a_new_stage_is_one_register_call(sets, monkeypatch, tmp_path, capsys):
    """The stage recipe on a temporary copy: register a stage (naive under another name, with its
    facts) and give its recording to a replay set; the registry's queries, the closing table's
    stages, the recorded shapes and the Profile take it up, with no other file touched."""
    import dataclasses

    from helpers.core import stages as registry
    naive = registry.STAGES["naive"]
    new = dataclasses.replace(naive, name="naive_again", title="Naive attention, again", short="again",
                              has_training=False, ncu_swept=False)
    monkeypatch.setitem(registry.STAGES, "naive_again", new)
    root = tmp_path / "sets"
    made = make_synthetic(ReplaySet("h200", H200.parent), NAME, root)
    with gzip.open(made.trace("naive"), "rt") as f:
        document = json.load(f)
    document["provenance"]["stage"] = "naive_again"
    with gzip.open(made.trace("naive_again"), "wt") as f:
        json.dump(document, f)
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_DIR", str(root))
    monkeypatch.setenv("ATTN_PROFILED_REPLAY_GPU", NAME)
    monkeypatch.setenv("ATTN_PROFILED_MODE", "replay")
    assert "naive_again" in registry.stages_where(swept=True, has_ncu=True)
    assert "naive_again" not in registry.stages_where(has_training=True)
    assert "naive_again" in helpers.closing_stages() and "naive_again" in ReplaySet.configured().stages()
    assert helpers.recorded_shapes("naive_again") == [helpers.DEFAULT_SHAPE]
    prof = helpers.profile_stage("naive_again")
    assert prof.stage == "naive_again" and prof.provenance.gpu == MARK
    assert prof.summary()["gpu_time_us"] == helpers.profile_stage("naive").summary()["gpu_time_us"]


def _prose_substitutions() -> dict:
    """What book/_ext/replay_gpu.py gives the Markdown pages, as Sphinx's config-inited would."""
    from types import SimpleNamespace
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import replay_gpu
    config = SimpleNamespace(myst_substitutions={"kept": "as it was"})
    replay_gpu.fill(SimpleNamespace(srcdir=str(ROOT)), config)
    return config.myst_substitutions


def test_the_prose_names_the_configured_sets_gpu(synthetic):
    """The introduction and the kernel-names page name the GPU by `{{ replay_gpu }}`, filled from
    the configured set: the copy's marked name here, read from a trace's provenance with json."""
    subs = _prose_substitutions()
    trace = sorted(synthetic.folder.glob("*__*.json.gz"))[0]
    assert subs["replay_gpu"] == _raw_gpu(trace) == MARK
    assert subs["kept"] == "as it was"
    for page in ("book/intro.md", "book/kernel_names.md"):
        text = (ROOT / page).read_text()
        assert "{{ replay_gpu }}" in text, page


def test_the_prose_names_the_default_sets_gpu(monkeypatch):
    monkeypatch.delenv("ATTN_PROFILED_REPLAY_GPU", raising=False)
    monkeypatch.delenv("ATTN_PROFILED_REPLAY_DIR", raising=False)
    trace = sorted(H200.glob("*__*.json.gz"))[0]
    assert _prose_substitutions()["replay_gpu"] == _raw_gpu(trace)
