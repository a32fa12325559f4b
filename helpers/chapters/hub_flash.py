"""The hub_flash page: FlashAttention-2 from the Hub against SDPA's vendored FlashAttention-2
(sdpa_flash): same algorithm, different binary, no layout transposes; the launch, registers,
shared memory, occupancy and time, each computed from the two traces.

    from helpers import Session, hub
    prof, status, loaded, missing = Session().hub_flash()
    hf = hub.page(prof, status, loaded, missing)   # the trace, what it is, and why it is not live
    hf.binaries(sdpa_flash_profile)   # each view of the page; nothing where the trace is missing

Where neither a live run nor the selected replay set has the trace, the page shows one line
(what is missing, and why) and every view below it shows nothing: no stand-in, no table comparing
sdpa_flash with itself, no empty table.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from ..core import trace
from ..core.bound import ABOUT_THE_SAME, SAME_WITHIN, speed_words
from ..core.hub_kernel import FIX, STAGE, loaded_from
from ..core.measured_on import marks, mixed, sides
from ..core.profile import TraceError
from ..core.stages import DEFAULT_SHAPE, Shape
from ..views.notes import how_recorded, not_live
from ..views.tables import mark_gpus
from ..views.verdicts import Verdict, table, verdict


@dataclass
class HubFlash:
    """What the hub_flash notebook shows: the trace, and what it is; each view of the page, or
    None (no output) where the trace is missing."""

    prof: object            # helpers.profile.Profile, None where missing
    status: str             # the loading status line (where the kernel came from, or why not)
    missing: object = None  # helpers.sources.hub.Missing where no trace exists here: its .line says why

    @property
    def stand_in(self) -> bool:
        """True where no hub_flash trace exists here (the page then compares nothing)."""
        return bool(self.missing)

    @property
    def note(self) -> str:
        """What the trace is, in the reader's terms: the Hub's own download, or not."""
        if self.missing:
            return self.missing.line
        build = (getattr(self.prof.provenance, "extra", {}) or {}).get("build") or {}
        if build.get("not"):
            return (f"**This trace is not of the Hub's kernel.** The machine that recorded it could not reach the "
                    f"Hugging Face Hub, so it compiled FlashAttention-2 itself, from the same upstream source the "
                    f"Hub's build is made from ({build.get('sdist', 'flash-attn')}), and loaded it through the same "
                    f"`get_kernel` call. What this page compares is therefore upstream FlashAttention-2 built outside "
                    f"PyTorch against PyTorch's vendored copy; whether the Hub's own binary times the same is not "
                    f"measured here. Run live with network access and the page profiles the Hub's download itself.")
        if self.prof.mode == "live":
            return f"The kernel in this trace: {loaded_from().label}."
        extra = getattr(self.prof.provenance, "extra", {}) or {}
        if extra.get("source"):
            return f"The kernel in this trace: {extra['source']}."
        return "The trace's provenance does not say where its kernel came from."

    @property
    def recorded_how(self) -> list[str]:
        """The recording's own account (where the kernel came from, the build), for the folded note."""
        if self.missing:
            return []
        extra = getattr(self.prof.provenance, "extra", {}) or {}
        build = extra.get("build") or {}
        error = extra.get("relative_error_vs_sdpa_math_fp32")
        return [line for line in (
            f"where the kernel came from: {extra['source']}" if extra.get("source") else None,
            f"compiled from {build['sdist']} (sha256 {str(build.get('sdist_sha256', '?'))[:12]}…), "
            f"{build.get('kernel_file', '')} for {build.get('arch', '?')}" if build.get("sdist") else None,
            f"its output agrees with SDPA's math backend in fp32 to a relative error of {error:.1e}"
            if error else None,
            f"recorded on {self.prof.provenance.gpu} with torch {self.prof.provenance.torch} on "
            f"{str(self.prof.provenance.date)[:10]}") if line]

    def markdown(self):
        """The note, and (replayed) how the trace was recorded, folded; nothing where the trace is
        missing (`page` said so in its one line)."""
        if self.missing:
            return None
        from IPython.display import HTML, Markdown, display
        text = self.note if self.note.startswith("**") else f"**What this trace is.** {self.note}"
        display(Markdown(text))
        if self.prof.mode != "live" and self.recorded_how:
            return how_recorded(self.recorded_how, "How this trace was recorded")
        return HTML("")

    # each view of the page: None (no output) where the trace is missing
    def questions(self, sdpa):
        """The guess: its GPU events, and whether it is faster than sdpa_flash."""
        from ..views import guess
        return None if self.missing else guess.stage_questions(self.prof, sdpa)

    def kernel_table(self):
        from ..views import tables
        return None if self.missing else tables.kernel_table(self.prof)

    def op_tree(self):
        from ..views import tables
        return None if self.missing else tables.op_tree(self.prof)

    def binaries(self, sdpa):
        return None if self.missing else binaries({"hub_flash": self.prof, "sdpa_flash": sdpa})

    def cpu_lane(self, sdpa):
        return None if self.missing else cpu_lane({"hub_flash": self.prof, "sdpa_flash": sdpa})

    def runtime_calls(self, prof=None):
        """The launch path of this page's trace, or of `prof` (sdpa_flash's, beside it)."""
        return None if self.missing else runtime_calls(prof if prof is not None else self.prof)

    def verdicts(self, sdpa):
        return None if self.missing else verdicts(self.prof, sdpa)

    def summary_markdown(self, others: dict):
        return None if self.missing else summary_markdown(self.prof, others)

    def summary_table(self, others: dict):
        from ..views import tables
        return None if self.missing else tables.summary_table([self.prof, *others.values()])

    def time_chart(self, others: dict, anchor: str = "gpu-and-cpu-time"):
        from ..views import charts, guess
        return None if self.missing else guess.anchored(charts.gpu_and_cpu_time([self.prof, *others.values()]), anchor)

    def timeline(self):
        from ..views import charts
        return None if self.missing else charts.timeline(self.prof)

    def perfetto_note(self):
        from ..views import prose
        return None if self.missing else prose.perfetto_note(self.prof)


# Without the trace every section of the page (from its first, "Guess first", on: the notebook's
# headings) would stand empty under its heading, its instructions pointing at nothing: in the
# book they are hidden, with the page's contents list, so the page reads as its one line.
HIDE_SECTIONS = ("<style>section#guess-first, section#guess-first ~ section, "
                 ".bd-sidebar-secondary { display: none !important; }</style>")


def page(prof, status: str, loaded: bool, missing=False) -> HubFlash:
    """The page's trace as a Session's `hub_flash()` hands it (the Profile or None, the Hub's
    status line, whether the kernel loaded here, `Missing` where there is no trace), as `HubFlash`.
    Where the trace is missing: one line saying what and why, the rest folded under it; where the
    kernel is not loaded here but its recording is: why the page is not live, folded likewise."""
    from IPython.display import HTML, display
    if missing:
        note = not_live(missing.line, missing.where_else, "" if loaded else f"{status} {FIX}").data
        display(HTML(note + HIDE_SECTIONS))
    elif not loaded:
        display(not_live("The Hub's FlashAttention-2 kernel is not loaded on this machine; the page "
                         "shows its recorded trace.", status, FIX))
    return HubFlash(prof, status, missing or None)


def summary_markdown(hub, others: dict):
    """One paragraph of figures, each from the traces: GPU and CPU time against the SDPA backends."""
    from IPython.display import Markdown
    h = hub.summary()
    # live, a stage this GPU cannot run (or the Hub's kernel, without Hub access) is another GPU's recording
    marked = marks({hub.stage: hub, **others})
    away = lambda name: f" ({marked[name]})" if name in marked else ""  # noqa: E731
    parts = [f"{name}: {p.summary()['gpu_time_us']:.1f} µs GPU, {p.summary()['cpu_time_us']:.1f} µs CPU{away(name)}"
             for name, p in others.items() if name != hub.stage]
    events = int(h["gpu_events"])
    return Markdown(f"One forward of **{hub.stage}**{away(hub.stage)}: {events} GPU event{'s' if events != 1 else ''}, "
                    f"{h['gpu_time_us']:.1f} µs on the GPU and {h['cpu_time_us']:.1f} µs of CPU inside "
                    f"`attn_fwd`. The SDPA backends, profiled the same way: {'; '.join(parts)}.")


# --- comparing the two binaries -----------------------------------------------------------------

def _kernel(prof) -> pd.Series:
    k = prof.kernels()
    k = k[k["category"] == "kernel"]
    if k.empty:
        raise ValueError(f"the {prof.stage} forward has no kernel")
    return k.iloc[-1] if len(k) == 1 else k.sort_values("dur_us").iloc[-1]


_TEMPLATE_FIELDS = ("head_dim", "block_m", "block_n", "warps", "Is_Q_in_regs", "Share_Q_K_smem",
                    "element", "Is_dropout", "Is_causal", "Is_local", "Has_alibi", "Is_even_MN",
                    "Is_even_K", "Is_softcap", "Return_softmax")


def column(key: str, prof) -> str:
    """A table's name for `prof` where the page asked for `key`: the key, or where another stage's
    trace stands in for it (no hub_flash trace here), that stage's name, saying so."""
    return key if prof.stage == key else f"{prof.stage} (in place of {key})"


def binaries(profiles: dict) -> pd.DataFrame:
    """The attention kernel of each stage, field by field, from its decoded name and its launch.
    Two columns get a "same?" column, unless both are one stage's trace (a stand-in)."""
    columns = {}
    for key, prof in profiles.items():
        stage = column(key, prof)
        k = _kernel(prof)
        d = k["details"] if isinstance(k["details"], dict) else {}
        row = {"library": k["library"], "namespace": d.get("namespace"), "kernel from": origin(prof),
               "function": d.get("function")}
        row |= {f: d.get(f) for f in _TEMPLATE_FIELDS}
        row |= {"registers / thread": k["registers_per_thread"], "shared memory (B)": k["shared_memory_bytes"],
                "grid": k["grid"], "block": k["block"], "CUPTI est. occupancy %": k["est_occupancy_pct"],
                "launched by": k["launched_by"], "called from": k["aten_op"], "µs": round(float(k["dur_us"]), 1)}
        columns[stage] = {field: (str(v) if isinstance(v, tuple) else v) for field, v in row.items()}
    frame = pd.DataFrame(columns)
    frame.index.name = "field"
    if len(columns) == 2 and len({prof.stage for prof in profiles.values()}) == 2:
        a, b = frame.columns
        frame["same?"] = ["same" if str(x) == str(y) else "differs" for x, y in zip(frame[a], frame[b])]
    return mark_gpus(frame, profiles)


def origin(prof) -> str:
    """Where the trace's attention kernel came from: its provenance, not a guess from its name."""
    extra = getattr(prof.provenance, "extra", {}) or {}
    build = extra.get("build") or {}
    if build.get("not"):
        return f"a build of {build.get('sdist', 'flash-attn')} from source, not the Hub's download"
    if extra.get("source"):
        return extra["source"]
    if prof.stage == STAGE and prof.mode == "live":
        return loaded_from().label
    if prof.stage.startswith("sdpa"):
        return f"PyTorch's own build, inside torch {prof.provenance.torch}"
    return "not recorded"


def transposes(prof) -> int:
    return int((prof.cpu_ops()["name"] == "aten::transpose").sum())


def cpu_lane(profiles: dict) -> pd.DataFrame:
    """Per forward on the CPU lane: the ops under attn_fwd, layout ops, and the CPU time."""
    rows = []
    for key, prof in profiles.items():
        stage = column(key, prof)
        ops = prof.cpu_ops()
        top = ops[ops["depth"] == 1]["name"].tolist()
        layout = ops[ops["name"].isin(["aten::transpose", "aten::permute", "aten::contiguous",
                                       "aten::clone", "aten::copy_"])]
        rows.append({"stage": stage, "ops under attn_fwd": len(ops) - 1,
                     "aten::transpose": transposes(prof), "layout ops (transpose, permute, copy)": len(layout),
                     "first op": top[0] if top else None,
                     "attn_fwd CPU µs": round(float(prof.summary()["cpu_time_us"]), 1)})
    return mark_gpus(pd.DataFrame(rows).set_index("stage"), {column(k, p): p for k, p in profiles.items()})


def runtime_calls(prof) -> pd.DataFrame:
    """Every CUDA runtime / driver call of one forward, in order: the launch path."""
    step = prof.forward_step
    table = trace.steps(prof.events)
    span = table[table["step"] == step].iloc[0]
    rows = [{"call": e["name"], "µs": round(float(e["dur"]), 1), "correlation": e.get("args", {}).get("correlation")}
            for e in sorted(prof.events, key=lambda e: e.get("ts", 0))
            if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and span["start_us"] <= float(e["ts"]) <= span["end_us"]]
    return pd.DataFrame(rows, columns=["call", "µs", "correlation"])


def verdicts(hub, sdpa) -> pd.DataFrame:
    """What this page claims about hub_flash against sdpa_flash, each computed from the two traces
    (a trace against itself is refused: it shows nothing)."""
    if hub.stage == sdpa.stage:
        raise ValueError(f"{hub.stage} against itself: a trace compared with itself shows nothing")
    rows = verdict_list(hub, sdpa)
    used = {hub.stage: hub, sdpa.stage: sdpa}
    if mixed(used):   # as the verdict registry does: each side's GPU named, never one silently for both
        rows = [replace(v, evidence=f"Two GPUs: {sides(used)}. {v.evidence}") for v in rows]
    return table(rows).rename(columns={"the article": "this page claims"})


@verdict("hub_flash", needs=("sdpa_flash",))
def verdict_list(hub, sdpa) -> list:
    kh, ks = _kernel(hub), _kernel(sdpa)
    dh = kh["details"] if isinstance(kh["details"], dict) else {}
    ds = ks["details"] if isinstance(ks["details"], dict) else {}
    same_args = [f for f in _TEMPLATE_FIELDS if dh.get(f) is not None and dh.get(f) == ds.get(f)]
    diff_args = [f"{f}: {dh.get(f)} vs {ds.get(f)}" for f in _TEMPLATE_FIELDS if dh.get(f) != ds.get(f)]
    out = [
        Verdict("same algorithm family: both are FlashAttention-2 forward kernels with the same template arguments",
                f"{hub.stage}: {kh['summary']}; {sdpa.stage}: {ks['summary']}; "
                f"{len(same_args)} template arguments equal" + (f", differing: {'; '.join(diff_args)}" if diff_args else ""),
                kh["library"] == ks["library"] == "FlashAttention-2" and not diff_args,
                "; ".join(diff_args) or f"{kh['library']} vs {ks['library']}"),
        Verdict("a different binary: the kernel's C++ namespace differs",
                f"{hub.stage}: {dh.get('namespace')}:: ({origin(hub)}); "
                f"{sdpa.stage}: {ds.get('namespace')}:: ({origin(sdpa)})",
                dh.get("namespace") is not None and dh.get("namespace") != ds.get("namespace"),
                "the same namespace: the same build?"),
        Verdict("no layout transposes on the CPU lane: q, k, v come in FlashAttention's [batch, seq, heads, dim]",
                f"aten::transpose per forward: {hub.stage}: {transposes(hub)}; {sdpa.stage}: {transposes(sdpa)}",
                transposes(hub) == 0 and transposes(sdpa) > 0,
                f"{transposes(hub)} transposes in {hub.stage}"),
        Verdict("launched the same way, with the same registers and shared memory",
                f"{hub.stage}: {kh['launched_by']}, {kh['registers_per_thread']} registers/thread, "
                f"{kh['shared_memory_bytes']} B shared; {sdpa.stage}: {ks['launched_by']}, "
                f"{ks['registers_per_thread']} registers/thread, {ks['shared_memory_bytes']} B shared",
                kh["launched_by"] == ks["launched_by"] and kh["registers_per_thread"] == ks["registers_per_thread"]
                and kh["shared_memory_bytes"] == ks["shared_memory_bytes"], "they differ"),
    ]
    gh, gs = hub.summary()["gpu_time_us"], sdpa.summary()["gpu_time_us"]
    words = speed_words(gh, gs)   # the book's one definition, the page's speed question's too
    out.append(Verdict(f"the same kernel takes about the same GPU time (within {SAME_WITHIN:.0%})",
                       f"{hub.stage} {gh:.1f} µs, {sdpa.stage} {gs:.1f} µs per forward ({gh / gs:.2f}×): {words}",
                       words == ABOUT_THE_SAME, f"{gh / gs:.2f}× the GPU time of {sdpa.stage}: {words}"))
    return out
