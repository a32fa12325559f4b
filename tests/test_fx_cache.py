"""06b and 06c time one compile each (the first call of naive_compiled, flex and flex_sliding at the
article's shape) and show its generated code. That compile must be cold: it runs in empty PT2
caches (`capture.cold_compile_caches`), or a cache hit would skip what is timed. And it must not be
paid twice: what it compiled joins the machine's caches, so the same graph compiled again (ncu's
profiled process, a later page) is a cache hit. Every other compile (06c's gap sweep, 08's sweep,
another shape) uses the shared caches as they are.

Checked on the CPU with a real Inductor compile (C++ instead of Triton) in child processes that
share one cache folder, as a page and ncu's process do: Dynamo's counters say hit or miss."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch._inductor.config as inductor_config

from helpers import DEFAULT_SHAPE, Shape
from helpers.sources import capture as capturing

ROOT = Path(__file__).resolve().parent.parent

# one process: compile a small function, timed as a page times it or plainly (a sweep, ncu's child)
_CHILD = textwrap.dedent("""
    import json, sys
    import torch
    from torch._dynamo.utils import counters
    torch.cuda.synchronize = lambda *a: None            # no GPU here
    from helpers.sources import capture
    def f(x):
        return (x.sin() * 2 + 1).relu()
    x = torch.randn(64)
    compiled = torch.compile(f)
    if sys.argv[1] == "timed":
        seconds, code = capture._first_call(lambda: compiled(x), compiled=True, timed_compile=True)
    else:
        compiled(x)
        code = []
    print(json.dumps({"hit": counters["inductor"]["fxgraph_cache_hit"] + counters["aot_autograd"]["autograd_cache_hit"],
                      "miss": counters["inductor"]["fxgraph_cache_miss"], "code": len(code)}))
""")


def _compile(how: str, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_CACHE_DIR",)}
    env |= {"TORCHINDUCTOR_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", _CHILD, how], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def sequence(tmp_path_factory) -> dict:
    """In one empty shared cache: a page's timed compile, then the same graph compiled plainly
    (as ncu's process does), then timed again (as the next run of the page)."""
    cache = tmp_path_factory.mktemp("inductor_cache")
    out = {"timed": _compile("timed", cache)}
    out["fxgraph entries"] = sorted(p.name for p in (cache / "fxgraph").rglob("*") if p.is_file())
    out["plain after"] = _compile("plain", cache)
    out["timed again"] = _compile("timed", cache)
    return out


def test_the_timed_compile_compiles_and_keeps_its_code(sequence):
    assert sequence["timed"]["miss"] >= 1 and sequence["timed"]["hit"] == 0
    assert sequence["timed"]["code"] >= 1


def test_what_the_timed_compile_compiled_joins_the_shared_cache(sequence):
    assert sequence["fxgraph entries"], "the timed compile left nothing in the shared FX graph cache"
    assert sequence["plain after"]["hit"] >= 1 and sequence["plain after"]["miss"] == 0


def test_the_timed_compile_stays_cold_where_the_graph_is_cached(sequence):
    # the shared cache holds this graph now: the page's compile must still pay in full
    assert sequence["timed again"]["miss"] >= 1 and sequence["timed again"]["hit"] == 0
    assert sequence["timed again"]["code"] >= 1


def test_the_cold_caches_leave_the_environment_as_it_was(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    with capturing.cold_compile_caches():
        inside = os.environ["TORCHINDUCTOR_CACHE_DIR"]
        assert inside != str(tmp_path / "shared")
        (Path(inside) / "fxgraph" / "ab").mkdir(parents=True)
        (Path(inside) / "fxgraph" / "ab" / "entry").write_text("x")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "shared")
    assert "TRITON_CACHE_DIR" not in os.environ
    assert (tmp_path / "shared" / "fxgraph" / "ab" / "entry").read_text() == "x"


def test_a_sweeps_compile_uses_the_shared_caches(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    seen = []
    with inductor_config.patch(fx_graph_cache=True):
        seconds, code = capturing._first_call(
            lambda: seen.append((os.environ["TORCHINDUCTOR_CACHE_DIR"], inductor_config.fx_graph_cache)),
            compiled=True, timed_compile=False)
    assert seen == [(str(tmp_path), True)] and code == [] and seconds >= 0


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
