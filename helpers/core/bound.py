"""What bounds a call or a step: the book's one definition of "bound by the GPU" / "bound by the CPU".

Every page that says a stage, a forward or a step is bound by one or the other says it through
`bound()` (glossary: *bound by the CPU / by the GPU*):

* the **wall time** of one call: the **caller's timer** (`helpers.sources.timers.caller_loop`:
  N back-to-back calls between two CUDA events, no flush, divided by N, repeated 7 times; the
  median of the repeats), what a loop pays per call; or of one profiled step, its GPU span (first
  GPU event to last), against
* the GPU's **busy time** in it (the union of its GPU events). For a call this is the busy time
  measured in the same process as the caller's loop where the recording has it (timers.json's
  `busy_us`: 10 back-to-back calls under the profiler, same kernels, same clocks, same day), else
  the trace's own GPU time of one forward (live, the trace is taken in the same process as the
  loop). A trace recorded on another day in another process can differ by a few % from the loop's
  process, and a few % is what decides the close calls.

A call or step is **bound by the GPU** when the wall time is at most `LINE` (10 %) longer than the
GPU's busy time: the GPU is the bottleneck, running work nearly all the time. Otherwise the GPU sits
idle for a clear share of the wall time and the call is bound by what it waits for: **bound by the
CPU** when the host (launches not yet issued) is the larger share of that wait, **waiting on other
GPU work** when queued work waits on another stream, an event or a synchronization.

**About even**: the caller's timer has a spread of its own (its 7 repeats). Where the line,
(1 + LINE) × busy, falls inside the repeats' range [min, max], the timer cannot tell the two sides
apart, and the verdict says so instead of picking one: neither side bounds the call clearly.

For the caller's loop every idle µs is a wait for the host (one stream, back-to-back calls), so
the wait is `wall - busy`. A profiled step splits its idle time by cause (`helpers.breakdown.core`).

triton's `do_bench` decides nothing here: it zeroes a 256 MB buffer before every timed call, so each
call starts with a cold L2 and the CPU's launch work is hidden behind the flush. It is the GPU-side
time of one cold call, not what a loop pays, and a CPU-bound call can read as bound by the GPU.

The CPU time a profiled step records is *not* the wall time either: the profiler records every op
on the CPU and that costs time, so the profiled CPU time of a call is longer than unprofiled.
"""
from __future__ import annotations

from dataclasses import dataclass

LINE = 0.10  # bound by the GPU when the wall time is at most 10% longer than the GPU's busy time

GPU, CPU, OTHER, EVEN = "GPU", "CPU", "other GPU work", "even"
WORDS = {GPU: "bound by the GPU", CPU: "bound by the CPU", OTHER: "waiting on other GPU work",
         EVEN: "about even"}
LOOP = "the caller's loop per call"
STEP_SPAN = "the step's GPU span"
# where the busy time of a call came from (Bound.busy_from)
BUSY_TIMERS = "the GPU's busy time beside the loop"
BUSY_TRACE = "the profiler's GPU time of one forward"
# one reader-facing line where a recording has no caller's timer: no verdict is drawn
NO_TIMER = ("this recording has no caller's timer; do_bench's figure (one cold call) is shown "
            "but decides nothing")


@dataclass(frozen=True)
class Bound:
    by: str               # GPU, CPU, OTHER or EVEN
    wall_us: float        # the caller's loop per call (median of its repeats), or the step's GPU span
    busy_us: float        # the GPU's busy time within it
    host_wait_us: float   # of the idle time, waiting for the host
    other_wait_us: float  # of the idle time, waiting on other GPU work
    timed_by: str         # LOOP or STEP_SPAN: which wall time the line was drawn on
    spread: tuple[float, float] | None = None  # the loop repeats' [min, max]; None for a step
    busy_from: str = BUSY_TRACE                # which busy time: BUSY_TIMERS or BUSY_TRACE

    @property
    def line_us(self) -> float:
        """The line: the wall time a call bound by the GPU stays within, (1 + LINE) × busy."""
        return (1 + LINE) * self.busy_us

    @property
    def spread_text(self) -> str:
        """The loop's spread in words ("96.0–98.5 µs over its repeats"); "" for a step."""
        if self.spread is None:
            return ""
        return f"{self.spread[0]:,.1f}–{self.spread[1]:,.1f} µs over its repeats"

    @property
    def words(self) -> str:
        return WORDS[self.by]

    @property
    def busy_pct(self) -> float:
        """The share of the wall time the GPU is busy, at most 100: the loop and the busy time come
        from separate runs, and a busy time a little over the wall time means busy all of it."""
        return min(100.0, 100 * self.busy_us / self.wall_us) if self.wall_us > 0 else float("nan")

    @property
    def host_wait_pct(self) -> float:
        return 100 * self.host_wait_us / self.wall_us if self.wall_us > 0 else float("nan")

    @property
    def cpu_bound(self) -> bool:
        return self.by == CPU

    def sentence(self) -> str:
        """The verdict with the numbers it was drawn from, in the page's words."""
        spread = f", {self.spread_text}" if self.spread else ""
        busy = (f"the GPU is busy {self.busy_us:,.1f} µs of {self.wall_us:,.1f} µs "
                f"({self.busy_pct:.0f}%; wall time: {self.timed_by}{spread})")
        if self.by == EVEN:
            return (f"{self.words}: {busy}; the line, {self.line_us:,.1f} µs ({LINE:.0%} over the busy "
                    f"time), falls inside the loop's own spread, so neither side bounds it clearly")
        if self.by == GPU:
            return f"{self.words}: {busy}, within {LINE:.0%} of the wall time"
        if self.by == CPU:
            return (f"{self.words}: {busy}; it waits {self.host_wait_us:,.1f} µs "
                    f"({self.host_wait_pct:.0f}%) for the host to issue work")
        return (f"{self.words}: {busy}; it waits {self.other_wait_us:,.1f} µs with the next "
                f"launch already queued (another stream, an event, a synchronization)")


def bound(wall_us: float, busy_us: float, host_wait_us: float | None = None,
          other_wait_us: float = 0.0, timed_by: str = LOOP,
          spread: tuple[float, float] | None = None, busy_from: str = BUSY_TRACE) -> Bound:
    """The one verdict: about even when the line `(1 + LINE) * busy_us` falls inside `spread` (the
    wall timer's own [min, max]); else bound by the GPU when `wall_us <= (1 + LINE) * busy_us`,
    else by the larger of the two waits (the host's when `host_wait_us` is not given: a loop's
    calls on one stream wait on nothing else)."""
    wall, busy = float(wall_us), float(busy_us)
    host = max(wall - busy, 0.0) if host_wait_us is None else float(host_wait_us)
    other = float(other_wait_us)
    line = (1 + LINE) * busy
    if spread is not None and spread[0] <= line <= spread[1]:
        by = EVEN
    elif wall <= line:
        by = GPU
    else:
        by = CPU if host >= other else OTHER
    return Bound(by, wall, busy, host, other, timed_by, spread, busy_from)


def median(values) -> float:
    """The middle repeat (the mean of the two middle ones for an even count)."""
    v = sorted(float(x) for x in values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def _known(x) -> bool:
    return x is not None and not (isinstance(x, float) and x != x)


def of_call(summary) -> Bound | None:
    """The bound of one call from a Profile's summary (or any mapping with its keys): the caller's
    loop per call (`loop_us`: one figure per repeat; the median is the wall time, the min and max
    its spread) against the GPU's busy time per call: `loop_busy_us` (measured beside the loop,
    the same process) where recorded, else the trace's `gpu_time_us` (the last profiled step).
    None where the recording has no caller's timer: no verdict (the page says `NO_TIMER`)."""
    loop = summary.get("loop_us") if hasattr(summary, "get") else None
    if not _known(loop) or not len(loop):
        return None
    busy_beside = summary.get("loop_busy_us")
    busy, source = ((float(busy_beside), BUSY_TIMERS) if _known(busy_beside)
                    else (float(summary["gpu_time_us"]), BUSY_TRACE))
    loop = [float(x) for x in loop]
    return bound(median(loop), busy, timed_by=LOOP, spread=(min(loop), max(loop)), busy_from=source)


NO_TIMER_WORDS = "no caller's timer recorded"


def words(b: Bound | None) -> str:
    """The verdict's word for a table cell: `b.words`, or the no-timer line's short form."""
    return NO_TIMER_WORDS if b is None else b.words


def of_step(row) -> Bound:
    """The bound of one profiled step from its breakdown row (`breakdown.step_breakdown`): the
    step's GPU span against its busy time, the idle time split by cause."""
    return bound(float(row["span_us"]), float(row["busy_us"]), float(row["host_wait_us"]),
                 float(row["other_wait_us"]), timed_by=STEP_SPAN)


# --- the book's one definition of "faster", "slower" and "about the same" ---------------------
# Two GPU times per forward are about the same when the first is within SAME_WITHIN (10 %) of the
# second; else the first is faster or slower. The stage pages' speed question (`guess.speed_key`)
# and every verdict that compares two stages' speed say it through `speed_words`.
SAME_WITHIN = 0.10
FASTER, SLOWER = "faster", "slower"
ABOUT_THE_SAME = f"about the same (within {SAME_WITHIN:.0%})"
SPEED_WORDS = (FASTER, ABOUT_THE_SAME, SLOWER)


def speed_words(now_us: float, before_us: float) -> str:
    """"faster", "slower" or "about the same (within 10%)": `now_us` against `before_us`."""
    ratio = now_us / before_us
    if abs(ratio - 1) <= SAME_WITHIN:
        return ABOUT_THE_SAME
    return FASTER if ratio < 1 else SLOWER


# --- what a later call costs ------------------------------------------------------------------
LATER_BY_LOOP, LATER_BY_BENCH = "the caller's loop", "do_bench (cold call)"


def later_calls(*summaries) -> tuple[list[float | None], str]:
    """What a later call costs, for each of `summaries` (Profile summaries), timed alike: the
    caller's loop per call (median) where every one has it, else do_bench's median (a cold call,
    its launch work hidden: the nearest figure a recording without the caller's timer holds), with
    the timer's name. Two figures set against each other always come from the same timer."""
    loops = [s.get("loop_us") for s in summaries]
    if all(_known(x) and len(x) for x in loops):
        return [median(x) for x in loops], LATER_BY_LOOP
    benches = [s.get("do_bench_us") for s in summaries]
    return [float(b) if _known(b) else None for b in benches], LATER_BY_BENCH
