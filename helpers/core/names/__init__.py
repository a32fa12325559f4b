"""Read a GPU kernel name like a fingerprint.

CUPTI (and so Kineto, and so the PyTorch profiler) reports each kernel by its name: a demangled
C++ signature (``void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, ...``) or
a name a library generated (``nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT``). Those names
carry the library, the data type, the tile sizes, the warp counts and the template flags the
kernel was compiled with. ``decode`` splits one name into named fields; ``decode_frame`` does a
column of them.

Rules kept throughout:
- only label what the name (or the source that generates it) justifies; a token whose meaning
  is not documented stays literal in ``details`` under a neutral key;
- names can be truncated anywhere (Kineto and some viewers cut long signatures), so every
  family decodes what it can and leaves the rest None;
- ``decode`` never raises: an unrecognised name is kind "unknown", library "unknown".

One module per family of names, each with its own rules: runtime (memcpy, memset), flash
(FlashAttention-2), cutlass (xformers' fmha and CUTLASS gemms), cudnn, triton, cublas (nvjet,
xmma, legacy), aten, and fallback; _common holds what they share.

No torch import: this runs on recorded traces, on machines with no GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ._common import FFMA, KINDS, TENSOR_CORES
from .aten import _aten
from .cublas import _cublas_legacy, _cublas_other, _nvjet, _xmma
from .cudnn import _cudnn, layout_against_launch
from .cutlass import _cutlass_fmha, _cutlass_gemm
from .fallback import _fallback
from .flash import _flash
from .runtime import _runtime
from .triton import _triton

__all__ = ["COLUMNS", "FFMA", "KINDS", "TENSOR_CORES", "KernelName", "decode", "decode_frame",
           "layout_against_launch"]



@dataclass(frozen=True)
class KernelName:
    name: str            # the name, literally
    kind: str            # one of KINDS
    library: str         # "cuBLAS (nvjet)", "cuBLAS", "CUTLASS", "CUTLASS (xformers mem-efficient)",
                         # "FlashAttention-2", "cuDNN", "ATen", "Triton", "CUDA runtime", "unknown"
    op: str | None       # what it computes, short: "mul", "masked_fill", "softmax", "direct copy", ...
    dtype: str | None    # "bf16", "fp16", "fp32", "bool", ... or "16-bit" where the name says no more
    math: str | None     # "tensor cores" or "CUDA cores (FFMA)" for gemm/attention kernels
    arch: str | None     # target arch as written: "sm80", "sm90", "ampere"
    tile: str | None     # tile as written: "64x64", "256x128", "64x128x64"
    details: dict = field(default_factory=dict)  # family-specific named fields
    summary: str = ""    # one readable line for a table


COLUMNS = ["name", "kind", "library", "op", "dtype", "math", "arch", "tile", "summary", "details"]


def decode(name) -> KernelName:
    """The fields of one kernel name. Never raises."""
    text = "" if name is None else name if isinstance(name, str) else str(name)
    try:
        for family in _FAMILIES:
            fields = family(text)
            if fields is not None:
                return _make(text, fields)
    except Exception as err:  # a decoder bug must not break a notebook: report it, don't raise
        return _make(text, {"details": {"decode_error": repr(err)}})
    return _make(text, {})


def decode_frame(names) -> pd.DataFrame:
    """One row per name: name, kind, library, op, dtype, math, arch, tile, summary, details."""
    rows, seen = [], {}
    for name in names:
        # a training step launches the same few hundred kernels thousands of times: decode each once
        fields = seen.get(name) if isinstance(name, str) else None
        if fields is None:
            k = decode(name)
            fields = {c: getattr(k, c) for c in COLUMNS}
            if isinstance(name, str):
                seen[name] = fields
        rows.append(fields | {"details": dict(fields["details"])})
    return pd.DataFrame(rows, columns=COLUMNS)


def _make(text: str, f: dict) -> KernelName:
    kind = f.get("kind", "unknown")
    if kind not in KINDS:
        kind = "unknown"
    library = f.get("library") or "unknown"
    summary = f.get("summary") or ("unrecognised kernel name" if kind == "unknown" else
                                   " ".join(x for x in (library, kind, f.get("op") or "") if x))
    return KernelName(name=text, kind=kind, library=library, op=f.get("op"), dtype=f.get("dtype"),
                      math=f.get("math"), arch=f.get("arch"), tile=f.get("tile"),
                      details=dict(f.get("details") or {}), summary=summary)


# the families, tried in order: the first that recognises a name decodes it (cuBLAS's helpers before
# ATen's: ATen would read cublasLt::splitKreduce_kernel as one of its own reductions)
_FAMILIES = (_runtime, _flash, _cutlass_fmha, _cudnn, _triton, _nvjet, _xmma, _cutlass_gemm,
             _cublas_legacy, _cublas_other, _aten, _fallback)
