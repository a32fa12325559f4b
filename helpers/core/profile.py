"""`Profile`: one trace plus where it came from. Live and replayed profiles are the same type.

A Profile holds a stage of the book (`profile_stage`), any callable profiled live
(`profile_code`) or any trace torch.profiler wrote (`load_trace`); nothing below the load step
knows which. Its tables are built from one parse of the event list (`trace.parse`)."""
from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from . import trace
from .errors import TraceError
from .stages import Shape


@dataclass(frozen=True)
class Provenance:
    """Where and how a trace was recorded."""

    stage: str
    shape: dict
    gpu: str
    capability: str
    sm_count: int
    driver: str
    torch: str
    cuda: str
    cudnn: str
    date: str
    command: str
    mode: str = "live"                    # "live" or "replay", as the reader got it
    cupti: bool = True                    # False: the profiler saw no GPU events
    cuda_event_time_us: float | None = None  # fallback / independent GPU time per forward
    do_bench_us: float | None = None      # triton.testing.do_bench median of the same forward (cold L2, one call at a time)
    # the caller's timer (helpers.sources.timers.caller_loop): µs per call of each repeat of N
    # back-to-back calls; live from the capture, in replay from the set's timers.json
    loop_us: list | None = None
    loop_calls: int | None = None         # N, the calls per repeat
    loop_busy_us: float | None = None     # the GPU's busy time per call beside the loop (timers.json)
    timers: str | None = None             # where the caller's timer came from: "live", "timers.json (<date>)"
    peak_memory_bytes: int | None = None  # torch.cuda.max_memory_allocated across one forward
    memory_before_bytes: int | None = None  # allocated just before it: the forward needed the difference
    first_call_seconds: float | None = None  # the first call on fresh inputs (compiles, for torch.compile)
    setup_seconds: float | None = None    # the stage's set-up outside the forward (a block mask, say)
    extra: dict = field(default_factory=dict)
    # "stage": one of the book's stages; "code": a callable through profile_code; "trace": a
    # trace file through load_trace (its facts from our provenance or the trace's own metadata)
    source: str = "stage"

    @property
    def description(self) -> str:
        """GPU, date and versions in words; a fact the trace does not hold is left out."""
        known = lambda v: v not in (None, "", "unknown")  # noqa: E731
        gpu = self.gpu if known(self.gpu) else "an unnamed GPU"
        if known(self.capability) and known(self.sm_count):
            gpu += f" (sm {self.capability}, {self.sm_count} SMs)"
        when = f" on {self.date[:10]}" if known(self.date) else ""
        versions = [f"{label} {value}" for label, value in (("torch", self.torch), ("CUDA", self.cuda),
                                                             ("cuDNN", self.cudnn), ("driver", self.driver))
                    if known(value)]
        return f"{gpu}{when}" + (f" with {', '.join(versions)}" if versions else "")


def _timer_fields(path: Path) -> dict:
    """The replay set's timers.json record of this trace, as provenance fields; a broken
    timers.json is named as such, not taken for a broken trace."""
    from .timers_file import FILE, fields
    try:
        return fields(path)
    except (OSError, ValueError, TypeError, AttributeError) as err:
        raise RuntimeError(f"The replay set's {FILE} beside {path} is not readable "
                           f"({type(err).__name__}: {err}). Record it again with "
                           f"`python tools/record_timers.py`, or remove it.") from err


@dataclass
class Profile:
    """The chrome-trace events of one profile, with tables derived from them.

    `annotation` is the `record_function` region the CPU tables look inside (the stages'
    `attn_fwd`); None: every host op of each step. `metadata` keeps the trace's other top-level
    keys (`deviceProperties`, ...), written back by `save`."""

    events: list[dict]
    provenance: Provenance
    trace_path: Path | None = None
    annotation: str | None = trace.ANNOTATION
    metadata: dict = field(default_factory=dict)

    @property
    def stage(self) -> str:
        """The stage's name; for your own code or trace, the name it was given."""
        return self.provenance.stage

    @property
    def shape(self) -> Shape | None:
        """The stage's shape; None for a profile of your own code or trace."""
        return Shape(**self.provenance.shape) if self.provenance.shape else None

    @property
    def mode(self) -> str:
        return self.provenance.mode

    @property
    def reused(self) -> bool:
        """A live measurement loaded from the session's cache (an earlier page profiled it)."""
        return self.mode == "live" and self.trace_path is not None and self.provenance.source != "trace"

    @property
    def profiler_steps(self) -> bool:
        """False when the trace has no ProfilerStep# rows and counts as one step, the whole trace."""
        return self._parsed.profiler_steps

    @property
    def threads(self) -> dict:
        """Thread names by tid, as the trace's metadata gives them."""
        return self._parsed.threads

    @property
    def forward_memory_bytes(self) -> int | None:
        """What one forward allocated beyond what it started with: the peak during the forward
        minus the memory allocated just before it (in the provenance, live and in replay)."""
        p = self.provenance
        peak, before = getattr(p, "peak_memory_bytes", None), getattr(p, "memory_before_bytes", None)
        return None if peak is None or before is None else int(peak) - int(before)

    def banner(self) -> str:
        if self.provenance.source == "trace":
            where = self.trace_path.name if self.trace_path else self.stage
            return f"Loaded {where} ({self.stage}): recorded on {self.provenance.description}."
        if self.mode == "replay":
            return f"Replaying {self.stage}: recorded on {self.provenance.description}."
        reused = " (measured earlier this session and reused; fresh=True profiles again)" if self.reused else ""
        return f"Profiled {self.stage} live on {self.provenance.description}{reused}."

    # --- tables -------------------------------------------------------------------------------
    @cached_property
    def _parsed(self) -> trace.Parsed:
        try:
            return trace.parse(self.events)
        except trace.MalformedEvent as err:
            where = self.trace_path or f"the trace of {self.stage}"
            raise TraceError(f"{where} is not a usable trace: {err}.") from err

    @cached_property
    def _gpu(self) -> pd.DataFrame:
        with trace.paused_gc():
            return trace.gpu_events(self._parsed, self._launches)

    @cached_property
    def _cpu(self) -> pd.DataFrame:
        with trace.paused_gc():
            return trace.cpu_ops(self._parsed, self.annotation)

    @cached_property
    def _launches(self) -> pd.DataFrame:
        with trace.paused_gc():
            return trace.launches(self._parsed)

    @cached_property
    def per_step(self) -> pd.DataFrame:
        """One row per active profiler step (one forward each)."""
        table = trace.per_step(self._parsed, self.annotation, gpu=self._gpu, ops=self._cpu)
        if not self.provenance.cupti and self.provenance.cuda_event_time_us is not None:
            table["gpu_time_us"] = self.provenance.cuda_event_time_us
        return table

    @property
    def steps(self) -> list[int]:
        return [int(s) for s in self.per_step["step"]]

    @property
    def forward_step(self) -> int:
        """The step shown as "one forward": the last active one, past any first-step effects."""
        if not self.steps:
            raise TraceError(f"The trace of {self.stage} holds no profiler step.")
        return self.steps[-1]

    def _pick(self, table: pd.DataFrame, step: int | None | str) -> pd.DataFrame:
        if step == "all":
            return table.copy()
        step = self.forward_step if step is None else step
        return table[table["step"] == step].reset_index(drop=True)

    def gpu_events(self, step: int | None | str = None) -> pd.DataFrame:
        """Kernels, memcpys and memsets launched in `step` (default: one forward; "all": every one)."""
        return self._pick(self._gpu, step)

    def kernels(self, step: int | None | str = None) -> pd.DataFrame:
        """GPU events of one forward with each name decoded."""
        from .names import decode_frame
        events = self.gpu_events(step)
        with trace.paused_gc():
            decoded = decode_frame(events["name"]).drop(columns=["name"])
        return pd.concat([events, decoded.set_index(events.index)], axis=1)

    def cpu_ops(self, step: int | None | str = None) -> pd.DataFrame:
        """Host ops inside the annotation (attn_fwd for a stage) with their depth and parent."""
        return self._pick(self._cpu, step)

    def launches(self, step: int | None | str = None) -> pd.DataFrame:
        """Runtime/driver calls that launched GPU work."""
        return self._pick(self._launches, step)

    def summary(self) -> pd.Series:
        """Per-forward figures of the forward every table shows (`forward_step`, the last profiled
        step): one statistic for a page's tables, charts and prose alike."""
        shown = self.per_step.set_index("step").loc[self.forward_step]
        counts = ("gpu_events", "kernels", "memcpys", "memsets", "aten_ops")
        row = {k: int(round(v)) if k in counts else float(v) for k, v in shown.items()
               if isinstance(v, (int, float)) or hasattr(v, "dtype")}
        p = self.provenance
        row |= {"stage": self.stage, "do_bench_us": p.do_bench_us,
                "loop_us": getattr(p, "loop_us", None), "loop_busy_us": getattr(p, "loop_busy_us", None)}
        return pd.Series(row, dtype=object)

    # --- files --------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write a gzipped chrome trace (Perfetto opens it) with the provenance inside."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        provenance = asdict(self.provenance) | {"mode": "live"}
        if self.annotation != trace.ANNOTATION:  # load_trace reads it back
            provenance["extra"] = provenance["extra"] | {"annotation": self.annotation}
        document = {**self.metadata, "traceEvents": self.events, "provenance": provenance,
                    "displayTimeUnit": "ms"}
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(document, f, separators=(",", ":"))
        return path

    def trace_bytes(self) -> bytes:
        """The gzipped Kineto trace: in replay the recorded file as it is, live the trace just
        taken (written the way `save` writes it, provenance inside)."""
        if self.mode == "replay" and self.trace_path is not None and Path(self.trace_path).is_file():
            return Path(self.trace_path).read_bytes()
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            return self.save(Path(tmp) / "trace.json.gz").read_bytes()

    @classmethod
    def load(cls, path: str | Path, mode: str = "replay") -> "Profile":
        path = Path(path)
        if not path.exists():
            raise TraceError(f"No recorded trace at {path}. Record one on a GPU with "
                             f"`python tools/record.py`, or check out the replay set again.")
        try:
            from .tracefile import read_document
            document = read_document(path, show_progress=False)
            fields = document["provenance"] | {"mode": mode}
            if mode == "replay":  # the set's caller's timer, where it has one (core/timers_file.py)
                fields |= _timer_fields(path)
            provenance = Provenance(**fields)
            events = document["traceEvents"]
        except (TraceError, OSError, EOFError, ValueError, KeyError, TypeError) as err:
            raise TraceError(f"The recorded trace {path} is corrupt or not one of ours "
                             f"({type(err).__name__}: {err}). Restore it with "
                             f"`git checkout -- {path}` or record it again with "
                             f"`python tools/record.py`.") from err
        return cls(events, provenance, path)
