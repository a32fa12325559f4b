"""What bounds a call or a step: the book's one definition of "bound by the GPU" / "bound by the CPU".

Every page that says a stage, a forward or a step is bound by one or the other says it through
`bound()` (glossary: *bound by the CPU / by the GPU*):

* the **wall time** of one call (triton's `do_bench` timing back-to-back calls, no profiler) or
  of one profiled step (its GPU span, first GPU event to last), against
* the GPU's **busy time** in it (the union of its GPU events).

A call or step is **bound by the GPU** when the wall time is at most `LINE` (10 %) longer than the
GPU's busy time: the GPU is the bottleneck, running work nearly all the time. Otherwise the GPU sits
idle for a clear share of the wall time and the call is bound by what it waits for: **bound by the
CPU** when the host (launches not yet issued) is the larger share of that wait, **waiting on other
GPU work** when queued work waits on another stream, an event or a synchronization.

For `do_bench` every idle µs is a wait for the host (one stream, back-to-back calls), so the wait
is `wall - busy`. A profiled step splits its idle time by cause (`helpers.breakdown.core`).

The CPU time a profiled step records is *not* this wall time: the profiler records every op on the
CPU and that costs time, so the profiled CPU time of a call is longer than the same call's CPU time
unprofiled. The line uses the unprofiled time where it exists (do_bench) and says which it used.
"""
from __future__ import annotations

from dataclasses import dataclass

LINE = 0.10  # bound by the GPU when the wall time is at most 10% longer than the GPU's busy time

GPU, CPU, OTHER = "GPU", "CPU", "other GPU work"
WORDS = {GPU: "bound by the GPU", CPU: "bound by the CPU", OTHER: "waiting on other GPU work"}
DO_BENCH = "do_bench per call"
STEP_SPAN = "the step's GPU span"


@dataclass(frozen=True)
class Bound:
    by: str               # GPU, CPU or OTHER
    wall_us: float        # do_bench's time per call, or the step's GPU span
    busy_us: float        # the GPU's busy time within it
    host_wait_us: float   # of the idle time, waiting for the host
    other_wait_us: float  # of the idle time, waiting on other GPU work
    timed_by: str         # DO_BENCH or STEP_SPAN: which wall time the line was drawn on

    @property
    def words(self) -> str:
        return WORDS[self.by]

    @property
    def busy_pct(self) -> float:
        """The share of the wall time the GPU is busy, at most 100: do_bench and the profiler time
        separate runs, and a busy time a little over the wall time means busy all of it."""
        return min(100.0, 100 * self.busy_us / self.wall_us) if self.wall_us > 0 else float("nan")

    @property
    def host_wait_pct(self) -> float:
        return 100 * self.host_wait_us / self.wall_us if self.wall_us > 0 else float("nan")

    @property
    def cpu_bound(self) -> bool:
        return self.by == CPU

    def sentence(self) -> str:
        """The verdict with the numbers it was drawn from, in the page's words."""
        busy = (f"the GPU is busy {self.busy_us:,.1f} µs of {self.wall_us:,.1f} µs "
                f"({self.busy_pct:.0f}%; wall time: {self.timed_by})")
        if self.by == GPU:
            return f"{self.words}: {busy}, within {LINE:.0%} of the wall time"
        if self.by == CPU:
            return (f"{self.words}: {busy}; it waits {self.host_wait_us:,.1f} µs "
                    f"({self.host_wait_pct:.0f}%) for the host to issue work")
        return (f"{self.words}: {busy}; it waits {self.other_wait_us:,.1f} µs with the next "
                f"launch already queued (another stream, an event, a synchronization)")


def bound(wall_us: float, busy_us: float, host_wait_us: float | None = None,
          other_wait_us: float = 0.0, timed_by: str = DO_BENCH) -> Bound:
    """The one verdict: bound by the GPU when `wall_us <= (1 + LINE) * busy_us`, else by the larger
    of the two waits (the host's when `host_wait_us` is not given: do_bench's calls wait on nothing
    else)."""
    wall, busy = float(wall_us), float(busy_us)
    host = max(wall - busy, 0.0) if host_wait_us is None else float(host_wait_us)
    other = float(other_wait_us)
    if wall <= (1 + LINE) * busy:
        by = GPU
    else:
        by = CPU if host >= other else OTHER
    return Bound(by, wall, busy, host, other, timed_by)


def of_call(summary) -> Bound | None:
    """The bound of one call from a Profile's summary: do_bench's time per call against the GPU's
    busy time per forward (the last profiled step, the one the tables show); None where do_bench was not recorded."""
    bench = summary["do_bench_us"]
    if bench is None or bench != bench:
        return None
    return bound(float(bench), float(summary["gpu_time_us"]), timed_by=DO_BENCH)


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
