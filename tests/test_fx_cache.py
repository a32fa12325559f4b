"""06b and 06c time one compile each (the first call of naive_compiled, flex and flex_sliding at the
article's shape) and show its generated code: that compile runs with Inductor's FX graph cache
off, or a cache hit would skip what is timed. Every other compile (06c's gap sweep, 08's sweep,
another shape) keeps the cache on, so a graph compiled before is not compiled again.

Checked on the CPU: what the FX graph cache setting is while the first call runs, for the shape a
page times and for a sweep's shape (the GPU's synchronize stood in for by nothing)."""
import pytest
import torch
import torch._inductor.config as inductor_config

from helpers import DEFAULT_SHAPE, Shape
from helpers.sources import capture as capturing


@pytest.fixture
def seen(monkeypatch):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    out = []
    with inductor_config.patch(fx_graph_cache=True):   # on, as a session's default
        yield out, (lambda: out.append(inductor_config.fx_graph_cache))


def test_the_timed_compile_runs_with_the_fx_graph_cache_off(seen):
    out, forward = seen
    capturing._first_call(forward, compiled=True, timed_compile=True)
    assert out == [False] and inductor_config.fx_graph_cache is True   # off for that call only


def test_a_sweeps_compile_keeps_the_fx_graph_cache_on(seen):
    out, forward = seen
    seconds, code = capturing._first_call(forward, compiled=True, timed_compile=False)
    assert out == [True] and code == [] and seconds >= 0


@pytest.mark.parametrize("shape, timed", [(DEFAULT_SHAPE, True), (Shape(seq=2048), False), (Shape(seq=512), False)])
def test_the_page_times_the_compile_at_the_articles_shape_only(monkeypatch, shape, timed):
    """capture's default: the compile a page shows is the article's shape's."""
    asked = []

    def first_call(forward, compiled, timed_compile=True):
        asked.append(timed_compile)
        raise RuntimeError("stop here")   # the rest of capture needs a GPU
    monkeypatch.setattr(capturing, "_first_call", first_call)
    monkeypatch.setattr(capturing, "get_stage", lambda name: _Stage())
    with pytest.raises(RuntimeError, match="stop here"):
        capturing.capture("naive_compiled", shape)
    assert asked == [timed]


class _Stage:
    name, compiled = "naive_compiled", False   # False: capture does not reset dynamo here

    def check(self, shape, device):
        pass

    def make_inputs(self, shape, device):
        return {}

    def run(self, inputs):
        pass
