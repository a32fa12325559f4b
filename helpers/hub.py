"""FlashAttention-2 from the Hugging Face Hub, through the `kernels` library.

    from helpers import hub
    flash_attn = hub.load_flash_attn2()        # get_kernel("kernels-community/flash-attn2", version=3)
    out = flash_attn.flash_attn_func(q, k, v, causal=True)   # q, k, v: [batch, seq, heads, head_dim]

Three jobs:

- load the kernel the way a reader's code would, with the pinned version, and when that fails say
  why in one message: the real exception from `kernels` / `huggingface_hub` (walked down to its
  root cause, since `kernels` wraps a dropped connection in a "could not verify publisher trust"
  ValueError), and the ways out (network, HF_HUB_OFFLINE and the cache, a local kernel through
  LOCAL_KERNELS or `kernels.get_local_kernel`). The message travels as StageUnavailable, so
  `profile_stage("hub_flash")` falls back to the replay and prints it;
- build, on a machine with nvcc and no network, a *local* kernel in the layout `kernels` loads
  (`<root>/build/<variant>/flash_attn2/...`, `metadata.json`): the one forward kernel the stage
  runs, compiled from the flash-attn 2.8.3 sdist. It is labelled as exactly that everywhere,
  never as the Hub's build (`python -m helpers.hub build ...`);
- compare a hub_flash trace with SDPA's vendored FlashAttention-2 (sdpa_flash): same algorithm,
  different binary, no layout transposes, the launch, registers, shared memory, occupancy, time.
"""
from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pandas as pd

from .stages import DEFAULT_SHAPE, Shape, StageUnavailable

HUB_REPO = "kernels-community/flash-attn2"
HUB_VERSION = 3            # get_kernel(HUB_REPO, version=HUB_VERSION): the Hub branch "v3"
KERNELS_VERSION = "0.17.2"  # pinned in requirements.txt; get_kernel needs version= or revision=
STAGE = "hub_flash"
FIX = ("To run it live, give this machine access to the Hugging Face Hub and leave HF_HUB_OFFLINE "
       "unset; offline, load the kernel once while online so that it is in the Hugging Face cache, "
       "then HF_HUB_OFFLINE=1 reads it from there; or use a local build of the kernel: "
       f"LOCAL_KERNELS={HUB_REPO}=/path/to/kernel (a folder holding build/<variant>/) makes "
       "get_kernel load it, as does kernels.get_local_kernel(Path('/path/to/kernel')), or "
       "helpers.hub.load_flash_attn2(local='/path/to/kernel').")


# --- loading ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Loaded:
    """Where the module came from, as `kernels` resolved it."""

    how: str                 # "Hub", "local kernel (LOCAL_KERNELS)" or "local kernel (get_local_kernel)"
    repo: str
    revision: str | None     # the Hub commit, for a Hub kernel
    variant: str             # the build variant folder, e.g. torch211-cxx11-cu130-x86_64-linux
    path: str
    build: dict = field(default_factory=dict)  # build-info.json of a local build

    @property
    def via(self) -> str:
        if self.how == "Hub":
            return f"kernels.get_kernel({self.repo!r}, version={HUB_VERSION})"
        if "LOCAL_KERNELS" in self.how:
            return f"kernels.get_kernel({HUB_REPO!r}, version={HUB_VERSION}) with LOCAL_KERNELS"
        return "kernels.get_local_kernel"

    @property
    def label(self) -> str:
        if self.build.get("built"):
            return f"{self.build['built']}, loaded via {self.via} (variant {self.variant})"
        if self.how == "Hub":
            return f"{self.repo} from the Hugging Face Hub, revision {self.revision}, variant {self.variant}"
        return f"{self.repo}, {self.how}, variant {self.variant} ({self.path})"


_modules: dict[tuple, tuple[ModuleType, Loaded]] = {}


def load_flash_attn2(version: int | None = HUB_VERSION, *, revision: str | None = None,
                     local: str | Path | None = None) -> ModuleType:
    """The FlashAttention-2 kernel module, through `kernels`; StageUnavailable says why not.

    `local`: a local kernel folder, loaded with kernels.get_local_kernel. Otherwise
    get_kernel(HUB_REPO, version=...) (or revision=...), which honours LOCAL_KERNELS."""
    return _load(version, revision, local)[0]


def loaded_from(version: int | None = HUB_VERSION, *, revision: str | None = None,
                local: str | Path | None = None) -> Loaded:
    """Where load_flash_attn2 (same arguments) got its module from."""
    return _load(version, revision, local)[1]


def _load(version, revision, local) -> tuple[ModuleType, Loaded]:
    if revision is not None:
        version = None
    key = (version, revision, str(local) if local else None, os.environ.get("LOCAL_KERNELS"))
    if key in _modules:
        return _modules[key]
    try:
        import kernels
    except ImportError as err:
        raise StageUnavailable(
            f"Stage {STAGE!r} can't load FlashAttention-2 from the Hub: the `kernels` library is not "
            f"installed ({type(err).__name__}: {err}). Install it with `pip install "
            f"kernels=={KERNELS_VERSION}` (pinned in requirements.txt), or replay the recorded "
            f"trace (mode='replay').") from err
    call = (f"kernels.get_local_kernel(Path({str(local)!r}))" if local else
            f"kernels.get_kernel({HUB_REPO!r}, " +
            (f"revision={revision!r})" if revision else f"version={version})"))
    try:
        if local:
            module = kernels.get_local_kernel(Path(local))
        elif revision:
            module = kernels.get_kernel(HUB_REPO, revision=revision)
        else:
            module = kernels.get_kernel(HUB_REPO, version=version)
    except Exception as err:  # every failure of the library becomes one message with the fix
        raise StageUnavailable(explain(err, call)) from err
    if not hasattr(module, "flash_attn_func"):
        raise StageUnavailable(f"Stage {STAGE!r}: {call} loaded {module.__name__}, which has no "
                               f"flash_attn_func; is it the FlashAttention-2 kernel?")
    _modules[key] = module, _describe(module, local)
    return _modules[key]


def _describe(module: ModuleType, local) -> Loaded:
    import kernels
    entry = next((k for k in kernels.get_loaded_kernels() if k.module is module), None)
    init = Path(module.__file__ or ".").resolve()
    variant = init.parent if (init.parent / "metadata.json").exists() else init.parent.parent
    build_info = variant / "build-info.json"
    build = json.loads(build_info.read_text()) if build_info.exists() else {}
    if entry is not None and entry.repo_info is not None:
        return Loaded("Hub", entry.repo_info.repo_id, entry.repo_info.revision, variant.name,
                      str(variant), build)
    how = "local kernel (get_local_kernel)" if local else "local kernel (LOCAL_KERNELS)"
    return Loaded(how, str(local) if local else HUB_REPO, None, variant.name, str(variant), build)


def _chain(err: BaseException) -> list[BaseException]:
    seen, out = set(), []
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        out.append(err)
        err = err.__cause__ or err.__context__
    return out


def _named(err: BaseException) -> str:
    mod = type(err).__module__
    name = type(err).__name__ if mod in ("builtins", "__main__") else f"{mod}.{type(err).__name__}"
    return f"{name}: {err}"


def _is_network(err: BaseException) -> bool:
    mod = type(err).__module__.split(".")[0]
    return (mod in ("httpx", "httpx2", "httpcore", "httpcore2", "requests", "urllib3", "socket", "ssl")
            or isinstance(err, (ConnectionError, TimeoutError))
            or type(err).__name__ in ("ConnectError", "ConnectTimeout", "ReadTimeout", "ProxyError",
                                      "gaierror", "OfflineModeIsEnabled"))


def explain(err: BaseException, call: str = f"get_kernel({HUB_REPO!r}, version={HUB_VERSION})") -> str:
    """One message: what failed, its real cause (the root of the exception chain), the fix."""
    chain = _chain(err)
    top, root = chain[0], chain[-1]
    text = " ".join(str(e) for e in chain)
    said = _named(top) + (f" (caused by {_named(root)})" if root is not top else "")
    try:
        from huggingface_hub import constants
        offline = bool(constants.HF_HUB_OFFLINE)
    except ImportError:
        offline = False
    network = [e for e in chain if _is_network(e)]
    if network:
        first = network[0]
        cause = f"the Hugging Face Hub could not be reached from this machine ({_named(first)}"
        if root is not first:
            cause += f", at the root {_named(root)}"
        if first is not top:
            cause += f"; `kernels` reports it as: {top}"
        cause += ")"
    elif offline and ("local cache" in text or "offline" in text.lower()):
        cause = (f"HF_HUB_OFFLINE is set, so `kernels` looks only in the local Hugging Face cache, "
                 f"and {HUB_REPO} (version {HUB_VERSION}) is not there ({said})")
    elif "Cannot find a build variant" in text:
        cause = (f"the kernel has no build for this machine's torch / CUDA / platform "
                 f"(torch {_torch_version()}, {platform.machine()}-{platform.system().lower()}); "
                 f"`kernels` listed the variants it rejected: {said}")
    elif "does not support the current device" in text:
        cause = f"the kernel's build does not include this GPU's architecture ({said})"
    elif "Version" in text and "not found" in text:
        cause = f"the Hub has no version {HUB_VERSION} of {HUB_REPO} ({said})"
    else:
        cause = said
    return (f"Stage {STAGE!r} can't load FlashAttention-2 through `kernels`: {call} failed because "
            f"{cause}. {FIX} Until then, replay the recorded trace (mode='replay').")


def _torch_version() -> str:
    try:
        import torch
        return f"{torch.__version__}, CUDA {torch.version.cuda}"
    except ImportError:
        return "not installed"


def status() -> str:
    """Can this process load the Hub kernel? One line: where it came from, or why not."""
    try:
        return f"FlashAttention-2 loaded through `kernels`: {loaded_from().label}."
    except StageUnavailable as err:
        return str(err)


# --- the stage ----------------------------------------------------------------------------------

STAGE_SOURCE = f"""flash_attn = get_kernel("{HUB_REPO}", version={HUB_VERSION})  # once, outside the forward
# q, k, v made as [batch, seq, heads, head_dim], the layout FlashAttention takes
out = flash_attn.flash_attn_func(q, k, v, causal=True)"""


def add_hub_kernel(inputs: dict) -> None:
    """Load the kernel, and lay q, k, v out as [batch, seq, heads, head_dim], once, outside the forward."""
    inputs["flash_attn_func"] = load_flash_attn2().flash_attn_func
    for name in ("q", "k", "v"):
        inputs[f"{name}_bshd"] = inputs[name].transpose(1, 2).contiguous()


def hub_flash_forward(x: dict):
    return x["flash_attn_func"](x["q_bshd"], x["k_bshd"], x["v_bshd"], causal=x["shape"].causal)


@dataclass
class HubFlash:
    """What the hub_flash notebook shows: the trace, and what it is."""

    prof: object            # helpers.profile.Profile
    status: str             # the loading status line (where the kernel came from, or why not)
    stand_in: bool = False  # True: no hub_flash trace exists here, prof is sdpa_flash's

    @property
    def note(self) -> str:
        if self.stand_in:
            return ("No hub_flash trace exists here, live or recorded, so the tables below show "
                    "sdpa_flash's trace (PyTorch's vendored FlashAttention-2), labelled as such.")
        extra = getattr(self.prof.provenance, "extra", {}) or {}
        if extra.get("source"):
            return f"The kernel in this trace: {extra['source']}."
        if self.prof.mode == "live":
            return f"The kernel in this trace: {loaded_from().label}."
        return "The trace's provenance does not say where its kernel came from."

    def markdown(self):
        from IPython.display import Markdown
        return Markdown(f"**What this trace is.** {self.note}")


def summary_markdown(hub, others: dict):
    """One paragraph of figures, each from the traces: GPU and CPU time against the SDPA backends."""
    from IPython.display import Markdown
    h = hub.summary()
    parts = [f"{name}: {p.summary()['gpu_time_us']:.1f} µs GPU, {p.summary()['cpu_time_us']:.1f} µs CPU"
             for name, p in others.items()]
    return Markdown(f"One forward of **{hub.stage}**: {int(h['gpu_events'])} GPU event, "
                    f"{h['gpu_time_us']:.1f} µs on the GPU and {h['cpu_time_us']:.1f} µs of CPU inside "
                    f"`attn_fwd`. The SDPA backends, profiled the same way: {'; '.join(parts)}.")


def profile_hub_flash(shape: Shape = DEFAULT_SHAPE, mode: str = "auto") -> HubFlash:
    """hub_flash live if `kernels` can load it here, else its replay, else sdpa_flash's, labelled.

    Prints the loading status first, on every machine (a CPU one too), so a reader sees the
    Hub's real answer before the replay banner."""
    from . import profile_stage
    from .profile import TraceError
    line = status()
    print(line)
    try:
        prof = profile_stage(STAGE, shape, mode)
        return HubFlash(prof, line)
    except TraceError as err:
        print(f"{err} Showing sdpa_flash's trace instead, labelled as sdpa_flash.")
        return HubFlash(profile_stage("sdpa_flash", shape, mode), line, stand_in=True)


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


def binaries(profiles: dict) -> pd.DataFrame:
    """The attention kernel of each stage, field by field, from its decoded name and its launch."""
    columns = {}
    for stage, prof in profiles.items():
        k = _kernel(prof)
        d = k["details"] if isinstance(k["details"], dict) else {}
        row = {"library": k["library"], "namespace": d.get("namespace"), "kernel from": origin(prof),
               "function": d.get("function")}
        row |= {f: d.get(f) for f in _TEMPLATE_FIELDS}
        row |= {"registers / thread": k["registers_per_thread"], "shared memory (B)": k["shared_memory_bytes"],
                "grid": k["grid"], "block": k["block"], "CUPTI est. occupancy %": k["est_occupancy_pct"],
                "launched by": k["launched_by"], "called from": k["aten_op"], "µs": round(float(k["dur_us"]), 1)}
        columns[stage] = {key: (str(v) if isinstance(v, tuple) else v) for key, v in row.items()}
    frame = pd.DataFrame(columns)
    frame.index.name = "field"
    if len(columns) == 2:
        a, b = frame.columns
        frame["same?"] = ["same" if str(x) == str(y) else "differs" for x, y in zip(frame[a], frame[b])]
    return frame


def origin(prof) -> str:
    """Where the trace's attention kernel came from: its provenance, not a guess from its name."""
    extra = getattr(prof.provenance, "extra", {}) or {}
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
    for stage, prof in profiles.items():
        ops = prof.cpu_ops()
        top = ops[ops["depth"] == 1]["name"].tolist()
        layout = ops[ops["name"].isin(["aten::transpose", "aten::permute", "aten::contiguous",
                                       "aten::clone", "aten::copy_"])]
        rows.append({"stage": stage, "ops under attn_fwd": len(ops) - 1,
                     "aten::transpose": transposes(prof), "layout ops (transpose, permute, copy)": len(layout),
                     "first op": top[0] if top else None,
                     "attn_fwd CPU µs": round(float(prof.summary()["cpu_time_us"]), 1)})
    return pd.DataFrame(rows).set_index("stage")


def runtime_calls(prof) -> pd.DataFrame:
    """Every CUDA runtime / driver call of one forward, in order: the launch path."""
    from . import trace
    step = prof.forward_step
    table = trace.steps(prof.events)
    span = table[table["step"] == step].iloc[0]
    rows = [{"call": e["name"], "µs": round(float(e["dur"]), 1), "correlation": e.get("args", {}).get("correlation")}
            for e in sorted(prof.events, key=lambda e: e.get("ts", 0))
            if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and span["start_us"] <= float(e["ts"]) <= span["end_us"]]
    return pd.DataFrame(rows, columns=["call", "µs", "correlation"])


def verdicts(hub, sdpa) -> pd.DataFrame:
    """What this page claims about hub_flash against sdpa_flash, each computed from the two traces."""
    from .claims import table
    return table(verdict_list(hub, sdpa)).rename(columns={"the article": "this page claims"})


def verdict_list(hub, sdpa) -> list:
    from .claims import Verdict
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
    out.append(Verdict("the same kernel takes about the same GPU time (within 10%)",
                       f"{hub.stage} {gh:.1f} µs, {sdpa.stage} {gs:.1f} µs per forward ({gh / gs:.2f}×)",
                       abs(gh / gs - 1) <= 0.10, f"{gh / gs:.2f}× the GPU time of {sdpa.stage}"))
    return out


# --- a local kernel, built from the flash-attn sdist --------------------------------------------

FLASH_ATTN_SDIST = "flash-attn==2.8.3"
FWD_SOURCE = "flash_fwd_hdim64_bf16_causal_sm80.cu"   # upstream's file name; built for the arch given
OP_NAMESPACE = "_flash_attn2_local"
# upstream's own build switches: they remove template instantiations this forward never uses
# (the kernel it runs, Is_dropout=Has_alibi=Is_local=Is_softcap=false, Is_even_K=true, is the same)
DISABLES = ("DROPOUT", "ALIBI", "SOFTCAP", "UNEVEN_K", "LOCAL")

API_CPP = r"""// Forward-only binding of FlashAttention-2 from the flash-attn 2.8.3 sdist, for the one
// configuration this build compiles: bf16, head_dim 64, causal, no dropout / ALiBi / softcap /
// local window, no split-KV. Fills Flash_fwd_params as upstream's mha_fwd (flash_api.cpp) does
// for that case and calls run_mha_fwd_<cutlass::bfloat16_t, 64, true>. Written for
// "Attention, Profiled" (helpers/hub.py); NOT the Hugging Face Hub's build.
#include <cmath>
#include <vector>

#include <torch/library.h>
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <cutlass/numeric_types.h>

#include "namespace_config.h"
#include "flash.h"

namespace {

constexpr const char* kBuild =
    "this local FlashAttention-2 build (flash-attn 2.8.3 sdist: head_dim 64, bf16, causal, forward only)";

int round_multiple(int x, int m) { return (x + m - 1) / m * m; }

std::vector<at::Tensor> mha_fwd(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const std::optional<at::Tensor>& out_,
                                const std::optional<at::Tensor>& alibi_slopes_,
                                double p_dropout, double softmax_scale, bool is_causal,
                                int64_t window_size_left, int64_t window_size_right, double softcap,
                                bool return_softmax, std::optional<at::Generator> gen_) {
  at::cuda::CUDAGuard device_guard{q.device()};
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(), "q, k and v must be CUDA tensors");
  TORCH_CHECK(q.scalar_type() == at::kBFloat16 && k.scalar_type() == at::kBFloat16 &&
              v.scalar_type() == at::kBFloat16, kBuild, " runs bfloat16 only");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "q, k, v must be [batch, seq, heads, head_dim]");
  TORCH_CHECK(q.stride(-1) == 1 && k.stride(-1) == 1 && v.stride(-1) == 1,
              "q, k, v must have a contiguous last dimension");
  const int batch = q.size(0), seqlen_q = q.size(1), heads = q.size(2), head_dim = q.size(3);
  const int seqlen_k = k.size(1), heads_k = k.size(2);
  TORCH_CHECK(head_dim == 64, kBuild, " has no kernel for head_dim ", head_dim);
  TORCH_CHECK(k.size(0) == batch && k.size(3) == head_dim && v.sizes() == k.sizes(),
              "k and v must be [batch, seq_k, heads_k, head_dim] like q");
  TORCH_CHECK(heads % heads_k == 0, "the heads of q must be a multiple of the heads of k and v");
  TORCH_CHECK(p_dropout == 0.0, kBuild, " has no dropout");
  TORCH_CHECK(!alibi_slopes_.has_value(), kBuild, " has no ALiBi");
  TORCH_CHECK(softcap <= 0.0, kBuild, " has no softcap");
  TORCH_CHECK(!return_softmax, kBuild, " does not return the softmax");
  TORCH_CHECK(!out_.has_value(), kBuild, " allocates its own output");
  if (window_size_left >= seqlen_k) { window_size_left = -1; }
  if (window_size_right >= seqlen_k) { window_size_right = -1; }
  TORCH_CHECK(is_causal && seqlen_q > 1, kBuild, " has only the causal kernel (seqlen_q > 1)");
  TORCH_CHECK(window_size_left < 0, kBuild, " has no local (sliding-window) attention");
  window_size_right = 0;

  // upstream's mha_fwd would take the split-KV kernels, which this build lacks, only when the
  // grid is too small to fill the GPU: num_splits_heuristic returns 1 above 80% of 2 x SMs
  int num_sm = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&num_sm, cudaDevAttrMultiProcessorCount, q.get_device()));
  const int num_m_blocks = (seqlen_q + 64 - 1) / 64;
  TORCH_CHECK(batch * heads * num_m_blocks >= 0.8f * num_sm * 2, kBuild,
              " has no split-KV kernel, which upstream would consider for a grid this small");

  at::Tensor out = at::empty_like(q);
  auto opts = q.options();
  at::Tensor softmax_lse = at::empty({batch, heads, seqlen_q}, opts.dtype(at::kFloat));
  at::Tensor p = at::empty({0}, opts);
  at::Tensor rng_state = at::empty({2}, opts.dtype(at::kLong));

  FLASH_NAMESPACE::Flash_fwd_params params = {};
  params.is_bf16 = true;
  params.q_ptr = q.data_ptr();
  params.k_ptr = k.data_ptr();
  params.v_ptr = v.data_ptr();
  params.q_row_stride = q.stride(-3);
  params.k_row_stride = k.stride(-3);
  params.v_row_stride = v.stride(-3);
  params.q_head_stride = q.stride(-2);
  params.k_head_stride = k.stride(-2);
  params.v_head_stride = v.stride(-2);
  params.o_ptr = out.data_ptr();
  params.o_row_stride = out.stride(-3);
  params.o_head_stride = out.stride(-2);
  params.q_batch_stride = q.stride(0);
  params.k_batch_stride = k.stride(0);
  params.v_batch_stride = v.stride(0);
  params.o_batch_stride = out.stride(0);
  params.cu_seqlens_q = nullptr;
  params.cu_seqlens_k = nullptr;
  params.seqused_k = nullptr;
  params.p_ptr = nullptr;
  params.softmax_lse_ptr = softmax_lse.data_ptr();
  params.b = batch;
  params.h = heads;
  params.h_k = heads_k;
  params.h_h_k_ratio = heads / heads_k;
  params.seqlen_q = seqlen_q;
  params.seqlen_k = seqlen_k;
  params.seqlen_q_rounded = round_multiple(seqlen_q, 128);
  params.seqlen_k_rounded = round_multiple(seqlen_k, 128);
  params.d = head_dim;
  params.d_rounded = round_multiple(head_dim, 32);
  params.softcap = 0.0f;
  params.scale_softmax = static_cast<float>(softmax_scale);
  params.scale_softmax_log2 = static_cast<float>(softmax_scale * M_LOG2E);
  params.p_dropout = 1.f;  // the probability of keeping, as upstream stores it
  params.p_dropout_in_uint8_t = uint8_t(std::floor(params.p_dropout * 255.0));
  params.rp_dropout = 1.f / params.p_dropout;
  params.scale_softmax_rp_dropout = params.rp_dropout * params.scale_softmax;
  params.is_causal = true;
  params.window_size_left = seqlen_k;  // causal: left unbounded, right 0 (set_params_fprop)
  params.window_size_right = 0;
  params.is_seqlens_k_cumulative = true;
  params.num_splits = 1;
  params.alibi_slopes_ptr = nullptr;
  params.rng_state = reinterpret_cast<uint64_t*>(rng_state.data_ptr());
  params.unpadded_lse = false;
  params.seqlenq_ngroups_swapped = false;

  auto stream = c10::cuda::getCurrentCUDAStream().stream();
  FLASH_NAMESPACE::run_mha_fwd_<cutlass::bfloat16_t, 64, true>(params, stream);
  return {out, softmax_lse, p, rng_state};
}

}  // namespace

TORCH_LIBRARY(@NS@, m) {
  m.def("fwd(Tensor q, Tensor k, Tensor v, Tensor? out_, Tensor? alibi_slopes_, float p_dropout, "
        "float softmax_scale, bool is_causal, int window_size_left, int window_size_right, "
        "float softcap, bool return_softmax, Generator? gen_) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(@NS@, CUDA, m) {
  m.impl("fwd", &mha_fwd);
}
"""

INIT_PY = '''"""FlashAttention-2, forward only: head_dim 64, bf16, causal.

A LOCAL build for "Attention, Profiled", made by `python -m helpers.hub build` from the
flash-attn 2.8.3 sdist (one kernel file, @ARCH@), laid out as a `kernels` local kernel.
It is NOT the Hugging Face Hub's kernels-community/flash-attn2 build. The Python side follows
the Hub kernel's call path: flash_attn_func -> FlashAttnFunc -> the custom op
_flash_attn_forward -> the C++ op fwd.
"""
import os
from typing import Optional

import torch

torch.ops.load_library(os.path.join(os.path.dirname(__file__), "@LIB@"))
ops = torch.ops.@NS@


@torch.library.custom_op("@NS@::_flash_attn_forward", mutates_args=(), device_types="cuda")
def _flash_attn_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float,
                        softmax_scale: float, causal: bool, window_size_left: int,
                        window_size_right: int, softcap: float, alibi_slopes: Optional[torch.Tensor],
                        return_softmax: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    q, k, v = [x.contiguous() if x.stride(-1) != 1 else x for x in (q, k, v)]
    out, lse, p, rng_state = ops.fwd(q, k, v, None, alibi_slopes, dropout_p, softmax_scale, causal,
                                     window_size_left, window_size_right, softcap, return_softmax, None)
    return out, lse, p, rng_state


@_flash_attn_forward.register_fake
def _(q, k, v, dropout_p, softmax_scale, causal, window_size_left, window_size_right, softcap,
      alibi_slopes, return_softmax):
    b, s, h, _ = q.shape
    return (torch.empty_like(q), q.new_empty((b, h, s), dtype=torch.float32), q.new_empty((0,)),
            q.new_empty((2,), dtype=torch.int64))


class FlashAttnFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                deterministic, return_softmax, is_grad_enabled):
        if softmax_scale is None:
            softmax_scale = q.shape[-1] ** (-0.5)
        head_size = q.size(3)
        out_padded, lse, s_dmask, _ = torch.ops.@NS@._flash_attn_forward(
            q, k, v, dropout_p, softmax_scale, causal, window_size[0], window_size[1], softcap,
            alibi_slopes, return_softmax and dropout_p > 0)
        out = out_padded[..., :head_size]
        return out if not return_softmax else (out, lse, s_dmask)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("this local FlashAttention-2 build is forward-only")


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                    softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q, k, v: [batch, seq, heads, head_dim]; returns out, [batch, seq, heads, head_dim]."""
    return FlashAttnFunc.apply(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap,
                               alibi_slopes, deterministic, return_attn_probs, torch.is_grad_enabled())


__all__ = ["flash_attn_func"]
'''


def variant_name(torch_version: str, cuda: str, cxx11_abi: bool = True) -> str:
    """The build-variant folder `kernels` looks for: torch211-cxx11-cu130-x86_64-linux."""
    major, minor = torch_version.split("+")[0].split(".")[:2]
    cmaj, cmin = cuda.split(".")[:2]
    abi = "cxx11" if cxx11_abi else "cxx98"
    return f"torch{major}{minor}-{abi}-cu{cmaj}{cmin}-{platform.machine()}-{platform.system().lower()}"


def build_local_kernel(flash_src: Path, out: Path, *, arch: str = "90", torch_include: list[Path] | None = None,
                       torch_lib: Path | None = None, torch_version: str | None = None,
                       cuda: str | None = None, nvcc: str = "nvcc", sdist_sha256: str = "") -> Path:
    """Compile the one forward kernel and its binding into a `kernels` local kernel under `out`.

    flash_src: the sdist's csrc/ (holding flash_attn/src and cutlass/include). Without
    torch_include / torch_lib / torch_version / cuda it builds against the installed torch."""
    flash_src, out = Path(flash_src).resolve(), Path(out).resolve()
    if torch_include is None or torch_lib is None or torch_version is None or cuda is None:
        import torch
        from torch.utils.cpp_extension import include_paths, library_paths
        torch_include = torch_include or [Path(p) for p in include_paths()]
        torch_lib = torch_lib or Path(library_paths()[0])
        torch_version = torch_version or torch.__version__
        cuda = cuda or str(torch.version.cuda)
    variant = out / "build" / variant_name(torch_version, cuda)
    package = variant / "flash_attn2"
    work = out / "obj"
    package.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    lib_name = f"{OP_NAMESPACE}.so"
    (work / "flash_api_local.cpp").write_text(API_CPP.replace("@NS@", OP_NAMESPACE))
    includes = [flash_src / "flash_attn", flash_src / "flash_attn" / "src", flash_src / "cutlass" / "include",
                *torch_include]
    cuda_home = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    inc = [f"-I{p}" for p in includes] + [f"-I{cuda_home / 'include'}"]
    defines = [f"-DFLASHATTENTION_DISABLE_{d}" for d in DISABLES] + ["-D_GLIBCXX_USE_CXX11_ABI=1"]
    nvcc_flags = ["-std=c++17", "-O3", "--use_fast_math", "-Xcompiler", "-fPIC",
                  "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
                  "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
                  "--expt-relaxed-constexpr", "--expt-extended-lambda",
                  f"-gencode=arch=compute_{arch},code=sm_{arch}", "--resource-usage"]
    kernel_obj, api_obj, lib = work / "flash_fwd.o", work / "flash_api_local.o", package / lib_name
    commands = [
        [nvcc, "-c", str(flash_src / "flash_attn" / "src" / FWD_SOURCE), "-o", str(kernel_obj),
         *inc, *defines, *nvcc_flags],
        ["g++", "-c", str(work / "flash_api_local.cpp"), "-o", str(api_obj), "-std=c++17", "-O2", "-fPIC",
         *inc, *defines],
        ["g++", "-shared", "-o", str(lib), str(kernel_obj), str(api_obj), f"-L{torch_lib}",
         f"-L{cuda_home / 'lib64'}", "-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch",
         "-lcudart", f"-Wl,-rpath,{torch_lib}"],
    ]
    started, logs = time.perf_counter(), []
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in commands[:2]]  # the kernel and the binding compile in parallel
    for command, proc in zip(commands[:2], procs):
        output, _ = proc.communicate()
        logs.append(f"$ {shlex.join(command)}\n{output}")
        if proc.returncode:
            raise RuntimeError(f"build failed ({proc.returncode}):\n{logs[-1][-6000:]}")
    result = subprocess.run(commands[2], capture_output=True, text=True, check=False)
    logs.append(f"$ {shlex.join(commands[2])}\n{result.stdout}{result.stderr}")
    if result.returncode:
        raise RuntimeError(f"link failed:\n{logs[-1][-6000:]}")
    (work / "build.log").write_text("\n".join(logs))
    arch_label = f"sm{arch} code"
    (package / "__init__.py").write_text(INIT_PY.replace("@NS@", OP_NAMESPACE).replace("@LIB@", lib_name)
                                         .replace("@ARCH@", arch_label))
    metadata = {"id": f"{OP_NAMESPACE}_fa283_hdim64_bf16_causal_sm{arch}", "name": "flash-attn2", "version": 0,
                "license": "BSD-3-Clause", "upstream": "https://github.com/Dao-AILab/flash-attention",
                "python-depends": [], "kernel-depends": [],
                "backend": {"type": "cuda", "archs": [f"{arch[0]}.{arch[1:]}"]}}
    (variant / "metadata.json").write_text(json.dumps(metadata, indent=2))
    build = {
        "built": f"local build of flash-attn 2.8.3 sdist, sm{arch} code, hdim64 bf16 causal fwd",
        "not": "not the Hugging Face Hub's kernels-community/flash-attn2 build",
        "sdist": FLASH_ATTN_SDIST, "sdist_sha256": sdist_sha256, "kernel_file": FWD_SOURCE,
        "kernel_namespace": "flash", "op_namespace": OP_NAMESPACE,
        "defines": [d for d in defines], "nvcc_flags": nvcc_flags, "arch": f"sm_{arch}",
        "built_against": {"torch": torch_version, "cuda": cuda},
        "nvcc": subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout.strip().splitlines()[-1:],
        "host": platform.node(), "build_seconds": round(time.perf_counter() - started, 1),
        "ptxas": [line for line in logs[0].splitlines() if "registers" in line or "Function properties" in line],
    }
    (variant / "build-info.json").write_text(json.dumps(build, indent=2))
    return out


def check_local(ref_tol: float = 1e-2, shape: Shape = DEFAULT_SHAPE) -> dict:
    """Load the kernel through get_kernel (LOCAL_KERNELS) and check it against SDPA math in fp32."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from .stages import get_stage
    stage = get_stage(STAGE)
    inputs = stage.make_inputs(shape, "cuda")
    out = stage.run(inputs)                                   # [b, s, h, d]
    with sdpa_kernel(SDPBackend.MATH):
        ref = F.scaled_dot_product_attention(inputs["q"].float(), inputs["k"].float(), inputs["v"].float(),
                                             is_causal=shape.causal).transpose(1, 2)
    rel = float((out.float() - ref).norm() / ref.norm())
    where = loaded_from()
    result = {"relative_error_vs_sdpa_math_fp32": rel, "tolerance": ref_tol, "ok": rel < ref_tol,
              "out_shape": list(out.shape), "loaded": where.label, "how": where.how, "variant": where.variant,
              "build": where.build, "kernels": _kernels_version()}
    return result


def _kernels_version() -> str | None:
    try:
        import kernels
        return kernels.__version__
    except ImportError:
        return None


def label_trace(path: Path, extra: dict) -> Path:
    """Write `extra` into a recorded trace's provenance (what the kernel in it is)."""
    import gzip
    path = Path(path)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        document = json.load(f)
    document["provenance"]["extra"] = {**document["provenance"].get("extra", {}), **extra}
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(document, f, separators=(",", ":"))
    return path


def main(argv=None) -> int:
    import argparse
    parser = argparse.ArgumentParser(description="FlashAttention-2 through `kernels`: status, local build, check, label")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="can this process load the kernel, and from where")
    b = sub.add_parser("build", help="build the local kernel from the flash-attn sdist's csrc/")
    b.add_argument("--flash-src", type=Path, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--arch", default="90")
    b.add_argument("--sdist-sha256", default="")
    b.add_argument("--torch-root", type=Path, default=None,
                   help="an unpacked torch wheel's torch/ folder, to build without importing it")
    b.add_argument("--torch-version", default=None)
    b.add_argument("--cuda", default=None)
    c = sub.add_parser("check", help="load through get_kernel and compare with SDPA math (fp32)")
    c.add_argument("--json", type=Path, default=None)
    lab = sub.add_parser("label", help="write where the kernel came from into a trace's provenance")
    lab.add_argument("trace", type=Path)
    lab.add_argument("--check-json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.command == "status":
        print(status())
        return 0
    if args.command == "build":
        kw = {}
        if args.torch_root:
            kw = {"torch_include": [args.torch_root / "include",
                                    args.torch_root / "include" / "torch" / "csrc" / "api" / "include"],
                  "torch_lib": args.torch_root / "lib", "torch_version": args.torch_version, "cuda": args.cuda}
        out = build_local_kernel(args.flash_src, args.out, arch=args.arch, sdist_sha256=args.sdist_sha256, **kw)
        print(f"built {out}")
        return 0
    if args.command == "check":
        result = check_local()
        print(json.dumps(result, indent=2, default=str))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str))
        return 0 if result["ok"] else 1
    if args.command == "label":
        checked = json.loads(args.check_json.read_text()) if args.check_json else check_local()
        extra = {"source": checked["loaded"], "loaded_how": checked["how"], "variant": checked["variant"],
                 "relative_error_vs_sdpa_math_fp32": checked["relative_error_vs_sdpa_math_fp32"],
                 "build": checked["build"], "kernels": checked.get("kernels")}
        label_trace(args.trace, extra)
        print(f"labelled {args.trace}: {extra['source']}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
