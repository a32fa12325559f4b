"""A live page shows no stderr box from torch.profiler's note on its schedule's cycles.

The book executed live on an H200 (benchmarks/results/gpu_live_30) printed, under the first cell
of 12 of its 15 pages, torch 2.11's "Warning: Profiler clears events at the end of each cycle ..."
(torch/profiler/profiler.py, `prepare_trace`): a capture keeps one cycle on purpose. The CPU's
torch here may not warn on one cycle, so the test raises the note where torch raises it."""
from __future__ import annotations

import warnings

import torch
from torch.profiler import ProfilerActivity

from helpers.sources.capture import profile_steps

# torch 2.11's words, as the live run's stderr output showed them
NOTE = ("Warning: Profiler clears events at the end of each cycle.Only events from the current "
        "cycle will be reported.To keep events across cycles, set acc_events=True.")


def test_the_profilers_cycle_note_is_not_shown_and_a_steps_own_warning_is(monkeypatch):
    real = torch.profiler.profile.prepare_trace

    def prepare_trace(self):
        warnings.warn(NOTE, UserWarning, stacklevel=2)
        return real(self)

    monkeypatch.setattr(torch.profiler.profile, "prepare_trace", prepare_trace)

    def step():
        warnings.warn("the profiled code's own warning", UserWarning)
        return torch.ones(4) + 1

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        document = profile_steps(step, dict(wait=1, warmup=1, active=1), [ProfilerActivity.CPU], lambda: None)
    messages = [str(w.message) for w in seen]
    assert not [m for m in messages if "clears events" in m], messages
    # only that note is hidden: what the profiled code warns still reaches the reader
    assert messages.count("the profiled code's own warning") == 3
    assert any(e.get("ph") == "X" for e in document["traceEvents"])


def test_a_plain_profile_under_the_books_filter_hides_the_note_only(monkeypatch):
    """The shared-memory experiment profiles with a plain `with profile():`, and torch 2.11 said the
    note there too (07, gpu_live_31): `quiet_profiler_notes` is what every capture runs in."""
    from helpers.sources.capture import quiet_profiler_notes
    real = torch.profiler.profile.__exit__

    def exit_(self, *args):
        warnings.warn(NOTE, UserWarning, stacklevel=2)
        return real(self, *args)

    monkeypatch.setattr(torch.profiler.profile, "__exit__", exit_)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_profiler_notes(), torch.profiler.profile(activities=[ProfilerActivity.CPU]):
            warnings.warn("the experiment's own warning", RuntimeWarning)
            torch.ones(4) + 1
    messages = [str(w.message) for w in seen]
    assert messages == ["the experiment's own warning"], messages


def test_the_inplace_experiments_first_backward_is_quiet(monkeypatch):
    """11's in-place table ran the process's first backward in a pooled kernel (gpu_live_31), and
    torch warned that cuBLAS found no current CUDA context: a stderr box on the page. The CPU has
    no cuBLAS, so a backward here raises torch's words where the GPU's did."""
    import dataclasses

    from helpers.core.stages import get_stage
    from helpers.training import sources_step

    class Warns(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            warnings.warn("Attempting to run cuBLAS, but there was no current CUDA context! Attempting to "
                          "set the primary context...", UserWarning)
            return g

    real = get_stage("naive")
    warns = dataclasses.replace(real, forward=lambda x: Warns.apply(real.forward(x)))
    monkeypatch.setattr(sources_step, "get_stage", lambda name: warns if name == "naive" else get_stage(name))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rows = sources_step.inplace_under_autograd()
    assert rows[0]["variant"] == "naive" and rows[0]["backward_ran"]
    assert not [w for w in seen if "cuBLAS" in str(w.message)], [str(w.message) for w in seen]
