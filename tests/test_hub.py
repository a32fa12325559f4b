"""hub_flash: FlashAttention-2 through `kernels`, loaded from a local kernel where one is made here,
the real library's errors where the Hub can't be reached, and the recorded trace where one exists."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from conftest import BOOK_GROUP, ROOT, executed_notebook, require

import helpers
from helpers import StageUnavailable, get_stage
from helpers.chapters import hub_flash as page
from helpers.core import hub_kernel as hub
from helpers.sources.replay import trace_path
from helpers.core.stages import DEFAULT_SHAPE, Shape

kernels = require("kernels", "kernels (pinned in requirements.txt)")

SMALL = Shape(batch=2, heads=4, seq=64, head_dim=64, dtype="float32")
RECORDED = trace_path("hub_flash", DEFAULT_SHAPE)

# A CPU kernel in the layout `kernels` loads (build/<variant>/metadata.json + package): the same
# entry point as the Hub's flash-attn2, flash_attn_func on [batch, seq, heads, dim], as a torch op.
CPU_KERNEL = '''
import torch
import torch.nn.functional as F

@torch.library.custom_op("{ns}::fwd", mutates_args=(), device_types="cpu")
def fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=causal)
    return out.transpose(1, 2).contiguous()

def flash_attn_func(q, k, v, causal=False):
    return torch.ops.{ns}.fwd(q, k, v, causal)
'''


def make_cpu_kernel(root: Path, ns: str) -> Path:
    variant = root / "build" / "torch-cpu"
    (variant / "flash_attn2").mkdir(parents=True)
    (variant / "flash_attn2" / "__init__.py").write_text(CPU_KERNEL.format(ns=ns))
    metadata = {"id": ns, "name": "flash-attn2", "version": 1, "license": "BSD-3-Clause",
                "python-depends": [], "backend": {"type": "cpu"}}
    (variant / "metadata.json").write_text(json.dumps(metadata))
    (variant / "build-info.json").write_text(json.dumps({"built": "a CPU test kernel made by tests/test_hub.py"}))
    return root


@pytest.fixture
def local_kernel(tmp_path, monkeypatch, request):
    ns = f"_hub_test_{request.node.name.split('[')[0][-20:]}_{os.getpid()}"
    root = make_cpu_kernel(tmp_path / "flash-attn2-local", ns)
    monkeypatch.setenv("LOCAL_KERNELS", f"{hub.HUB_REPO}={root}")
    hub._modules.clear()
    yield root
    hub._modules.clear()


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_KERNELS", "HF_HUB_OFFLINE")}
    full_env.update(env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=180, cwd=ROOT, env=full_env, check=False)


# --- the loading path, with a kernel made here ----------------------------------------------

def test_get_kernel_with_the_pinned_version_loads_a_local_kernel_through_LOCAL_KERNELS(local_kernel):
    module = hub.load_flash_attn2()
    where = hub.loaded_from()
    assert where.how == "local kernel (LOCAL_KERNELS)" and where.variant == "torch-cpu"
    assert Path(where.path) == local_kernel / "build" / "torch-cpu"
    assert "CPU test kernel" in where.label and "LOCAL_KERNELS" in where.label
    assert any(k.module is module for k in kernels.get_loaded_kernels())
    q, k, v = (torch.randn(2, 16, 4, 8) for _ in range(3))
    ref = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=True).transpose(1, 2)
    torch.testing.assert_close(module.flash_attn_func(q, k, v, causal=True), ref)


def test_get_local_kernel_path(local_kernel, monkeypatch):
    monkeypatch.delenv("LOCAL_KERNELS")
    module = hub.load_flash_attn2(local=local_kernel)
    assert hub.loaded_from(local=local_kernel).how == "local kernel (get_local_kernel)"
    # the module loaded is the kernel made here: it computes attention on [batch, seq, heads, dim]
    q, k, v = (torch.randn(2, 16, 4, 8) for _ in range(3))
    ref = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=True).transpose(1, 2)
    torch.testing.assert_close(module.flash_attn_func(q, k, v, causal=True), ref)


def test_the_stage_runs_the_kernel_on_bshd_inputs_with_no_transpose_inside_the_forward(local_kernel):
    stage = get_stage("hub_flash")
    inputs = stage.make_inputs(SMALL, "cpu")
    for name in "qkv":
        bshd = inputs[f"{name}_bshd"]
        assert bshd.shape == (SMALL.batch, SMALL.seq, SMALL.heads, SMALL.head_dim) and bshd.is_contiguous()
        torch.testing.assert_close(bshd, inputs[name].transpose(1, 2))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = stage.run(inputs)
    ref = F.scaled_dot_product_attention(inputs["q"], inputs["k"], inputs["v"], is_causal=True)
    torch.testing.assert_close(out, ref.transpose(1, 2))
    events = prof.events()
    assert any(e.name == "attn_fwd" for e in events)

    def ancestors(e):
        while e.cpu_parent is not None:
            e = e.cpu_parent
            yield e.name
    # the only layout ops are the test kernel's own, inside its op; the forward adds none
    for e in events:
        if e.name in ("aten::transpose", "aten::permute", "aten::contiguous"):
            assert any(a.endswith("::fwd") for a in ancestors(e)), list(ancestors(e))


def test_a_kernel_without_flash_attn_func_is_refused(local_kernel):
    init = local_kernel / "build" / "torch-cpu" / "flash_attn2" / "__init__.py"
    init.write_text("x = 1\n")
    meta = json.loads((init.parent.parent / "metadata.json").read_text())
    meta["id"] += "_empty"
    (init.parent.parent / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(StageUnavailable, match="no flash_attn_func"):
        hub.load_flash_attn2()


# --- where the Hub can't be reached: the real library's errors, translated -------------------

def test_offline_without_a_cache_names_the_cause_and_the_fix(tmp_path):
    result = run_python("""
        from helpers import StageUnavailable
        from helpers.core import hub_kernel as hub
        try:
            hub.load_flash_attn2()
        except StageUnavailable as err:
            print("MSG", err)
            print("CAUSE", type(err.__cause__).__name__, err.__cause__)
    """, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"), HF_HUB_CACHE=str(tmp_path / "hf" / "hub"))
    assert result.returncode == 0, result.stderr[-3000:]
    msg = result.stdout
    assert "MSG Stage 'hub_flash' can't load FlashAttention-2 through `kernels`" in msg
    assert f"get_kernel('{hub.HUB_REPO}', version={hub.HUB_VERSION})" in msg
    assert "HF_HUB_OFFLINE is set" in msg and "not available in the local cache" in msg  # the library's words
    for fix in ("HF_HUB_OFFLINE", "LOCAL_KERNELS=kernels-community/flash-attn2=", "get_local_kernel",
                "mode='replay'"):
        assert fix in msg
    assert "CAUSE ValueError" in msg


def test_an_unreachable_hub_names_the_network_error_under_the_libraries_words(tmp_path):
    # a closed local port stands in for a firewall: the connection is refused, deterministically
    result = run_python("""
        from helpers import StageUnavailable
        from helpers.core import hub_kernel as hub
        try:
            hub.load_flash_attn2()
        except StageUnavailable as err:
            print("MSG", err)
    """, HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf"), HF_HUB_ETAG_TIMEOUT="5",
        HF_HUB_DOWNLOAD_TIMEOUT="5")
    assert result.returncode == 0, result.stderr[-3000:]
    msg = result.stdout
    assert "the Hugging Face Hub could not be reached from this machine" in msg
    assert "ConnectError" in msg and "Connection refused" in msg  # httpx's error and its root, not just kernels' ValueError
    assert "LOCAL_KERNELS" in msg and "HF_HUB_OFFLINE" in msg


def test_explain_reads_other_failures_of_the_library():
    no_variant = FileNotFoundError("Cannot find a build variant for this system in kernels-community/flash-attn2")
    assert "no build for this machine's torch / CUDA / platform" in hub.explain(no_variant)
    arch = RuntimeError("Kernel 'flash-attn2' variant 'x' does not support the current device: CUDA capability 7.5")
    assert "does not include this GPU's architecture" in hub.explain(arch)


def test_missing_kernels_library_says_how_to_install_it(monkeypatch):
    hub._modules.clear()
    monkeypatch.setitem(sys.modules, "kernels", None)
    with pytest.raises(StageUnavailable, match=r"pip install kernels==0\.17\.2"):
        hub.load_flash_attn2()


def test_a_t4_is_told_it_needs_ampere():
    stage = get_stage("hub_flash")
    with mock.patch("torch.cuda.get_device_capability", return_value=(7, 5)), \
         mock.patch("torch.cuda.get_device_name", return_value="Tesla T4"), \
         pytest.raises(StageUnavailable) as err:
        stage.check(DEFAULT_SHAPE, torch.device("cuda"))
    assert "compute capability 7.5" in str(err.value) and "8.0 or newer" in str(err.value)


def test_kernels_is_pinned():
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    assert f"kernels=={hub.KERNELS_VERSION}" in pins
    assert kernels.__version__ == hub.KERNELS_VERSION


# --- the recorded trace, where one exists ---------------------------------------------------

recorded = pytest.mark.skipif(not RECORDED.exists(), reason="no hub_flash recording in the replay set")


@recorded
def test_the_recording_says_what_its_kernel_is():
    from helpers import profile_stage
    prof = profile_stage("hub_flash", mode="replay", quiet=True)
    source = prof.provenance.extra["source"]
    assert "local build of flash-attn 2.8.3 sdist" in source and "from the Hub" not in source
    assert prof.provenance.extra["relative_error_vs_sdpa_math_fp32"] < 1e-2


@recorded
def test_the_recording_is_flash_attention_2_in_a_different_namespace():
    from helpers import profile_stage
    h = profile_stage("hub_flash", mode="replay", quiet=True)
    s = profile_stage("sdpa_flash", mode="replay", quiet=True)
    table = page.binaries({"hub_flash": h, "sdpa_flash": s})
    assert table.loc["namespace", "hub_flash"] == "flash" and table.loc["namespace", "sdpa_flash"] == "pytorch_flash"
    assert table.loc["library", "hub_flash"] == "FlashAttention-2"
    assert page.transposes(h) == 0 < page.transposes(s)
    # every claim of the page has its verdict (the verdicts themselves: tests/test_page_verdicts_raw.py)
    verdicts = page.verdicts(h, s)
    assert list(verdicts["this page claims"]) == [v.claim for v in page.verdict_list(h, s)]
    assert verdicts["verdict"].str.match(r"^(holds|differs: .+)$").all()


def test_without_a_hub_flash_trace_the_page_says_so_and_shows_nothing_in_its_place(monkeypatch, capsys):
    from helpers.sources import replay
    real = replay.trace_path
    monkeypatch.setattr(replay, "trace_path", lambda stage, *a, **k: (
        real(stage, *a, **k).with_name("missing.json.gz") if stage == "hub_flash" else real(stage, *a, **k)))
    from helpers.sources import hub as hub_source
    monkeypatch.setattr(hub_source, "loading", lambda: (True, "status line"))
    hf = helpers.hub.page(*helpers.Session(mode="replay").hub_flash())
    assert hf.stand_in and hf.prof is None
    assert "No trace of the Hub's FlashAttention-2 here" in hf.note and "compares nothing" in hf.note
    out = capsys.readouterr().out
    assert "status line" in out and "sdpa_flash" not in out


def test_a_kernel_that_cannot_load_is_told_in_a_readers_terms():
    # the chain kernels raises when the Hub is unreachable: no exception text reaches the reader
    from helpers.core import hub_kernel
    from helpers.core.errors import StageUnavailable

    class ConnectError(Exception):
        pass

    try:
        try:
            raise ConnectError("[SSL] certificate verify failed: unable to get local issuer certificate")
        except ConnectError as root:
            raise ValueError("Could not verify publisher trust status for kernels-community/flash-attn2") from root
    except ValueError as top:
        err = StageUnavailable(hub_kernel.explain(top))
        err.__cause__ = top
    reason = hub_kernel.reader_reason(err)
    assert "Hugging Face Hub" in reason
    for raw in ("ConnectError", "SSL", "trust", "Traceback", "ValueError"):
        assert raw not in reason
    note = page.not_live("what", reason, hub_kernel.FIX).data
    assert note.startswith("<details") and "Why not live?" in note


@recorded
@BOOK_GROUP
def test_the_notebook_runs_in_replay(book_build):
    # the book build's execution of the page (the book is built in replay, where there is no GPU)
    nb = executed_notebook(book_build, "05b_hub_flash")
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "Replaying hub_flash" in text and "Traceback" not in text
