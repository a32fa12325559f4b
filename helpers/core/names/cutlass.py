"""CUTLASS: xformers' memory-efficient attention (fmha_cutlassF/B, PyTorch's EFFICIENT_ATTENTION) and CUTLASS gemms."""
from __future__ import annotations

import re

from ._common import FFMA, TENSOR_CORES, _NAME_DTYPES, _args_after, _bool, _cpp_dtype, _int


# --- xformers' CUTLASS memory-efficient attention (PyTorch's EFFICIENT_ATTENTION) -----------

# Names come from mem_eff_attention/kernels/generate_kernels.py:
#   forward:  fmha_cutlassF_{dtype}_{aligned|notaligned}_{q}x{k}_{rf|gmem}_sm{sm}
#             where "rf" means max_k <= k: the output tile stays in the register file across
#             key blocks (kSingleValueIteration); "gmem" accumulates it in global memory.
#   backward: fmha_cutlassB_{dtype}_{aligned}_{block_i}x{block_j}_k{max_k}[_dropout][_seqaligned]_sm{sm}
# The parameter list names the class: AttentionKernel<scalar_t, ArchTag, isAligned,
#   kQueriesPerBlock, kKeysPerBlock, kMaxK, kSupportsDropout, kSupportsBias, ...> (kernel_forward.h)
#   AttentionBackwardKernel<ArchTag, scalar_t, isAligned, kApplyDropout, kPreload_MMAs,
#   kBlockSizeI, kBlockSizeJ, kMaxK[, kKeysQueriesAlignedToBlockSize]> (kernel_backward.h)
_FMHA = re.compile(r"fmha_cutlass(?P<dir>[FB])(?P<rest>\w*)")
_FWD_CLASS = ("scalar_t", "arch_tag", "is_aligned", "kQueriesPerBlock", "kKeysPerBlock", "kMaxK",
              "kSupportsDropout", "kSupportsBias")
_BWD_CLASS = ("arch_tag", "scalar_t", "is_aligned", "kApplyDropout", "kPreload_MMAs",
              "kBlockSizeI", "kBlockSizeJ", "kMaxK", "kKeysQueriesAlignedToBlockSize")


def _cutlass_fmha(text: str) -> dict | None:
    m = _FMHA.search(text)
    if not m:
        return None
    forward = m.group("dir") == "F"
    d: dict = {"algorithm": "memory-efficient attention " + ("forward (cutlassF)" if forward
                                                             else "backward (cutlassB)"),
               "direction": "forward" if forward else "backward"}
    dtype = arch = tile = None
    for tok in m.group("rest").split("_"):
        if tok in ("bf16", "f16", "f32"):
            dtype = _NAME_DTYPES[tok]
        elif tok in ("aligned", "notaligned"):
            d["alignment"] = tok
        elif re.fullmatch(r"\d+x\d+", tok):
            tile = tok
            q, k = tok.split("x")
            if forward:
                d["queries_per_block"], d["keys_per_block"] = int(q), int(k)
            else:
                d["block_i"], d["block_j"] = int(q), int(k)
        elif tok == "rf":
            d["output_accumulator"] = "register file (kSingleValueIteration: max_k <= keys per block)"
        elif tok == "gmem":
            d["output_accumulator"] = "global memory (max_k > keys per block)"
        elif re.fullmatch(r"k\d+", tok):
            d["max_k"] = int(tok[1:])
        elif tok == "dropout":
            d["dropout"] = True
        elif tok == "seqaligned":
            d["keys_queries_aligned_to_blocksizes"] = True
        elif re.fullmatch(r"sm\d+", tok):
            arch = tok
    cls = _args_after(text, r"AttentionKernel") if forward else _args_after(text, r"AttentionBackwardKernel")
    if cls:
        args, closed = cls
        names = _FWD_CLASS if forward else _BWD_CLASS
        template = {}
        for key, value in zip(names, args):
            if key == "scalar_t":
                template[key] = value
                dtype = dtype or _cpp_dtype(value)
            elif key == "arch_tag":
                template[key] = value
                am = re.search(r"Sm(\d+)", value)
                arch = arch or (f"sm{am.group(1)}" if am else None)
            elif key.startswith(("is_", "kSupports", "kApply", "kPreload", "kKeysQueries")):
                template[key] = _bool(value)
            else:
                template[key] = _int(value)
        if not closed:
            template["truncated"] = True
        d["template"] = template
    parts = [d["algorithm"]]
    parts += [x for x in (dtype, f"{tile} tiles" if tile else None) if x]
    if "output_accumulator" in d:
        parts.append("output in registers" if d["output_accumulator"].startswith("register")
                     else "output in global memory")
    if arch:
        parts.append(arch)
    return {"kind": "attention", "library": "CUTLASS (xformers mem-efficient)",
            "op": "attention " + d["direction"], "dtype": dtype, "math": TENSOR_CORES if dtype
            in ("bf16", "fp16") else None, "arch": arch, "tile": tile, "details": d,
            "summary": ", ".join(parts)}


# --- CUTLASS gemms (cutlass_80_tensorop_..., cutlass3x_sm90_...) ----------------------------

# CUTLASS 2 profiler names: cutlass_{arch}_{tensorop|simt|wmma}_{type}_{s16816}gemm_{...}_{MxN}_{KxStages}_{layout}_align{N}
# (the KxStages reading confirmed by a CUTLASS maintainer in NVIDIA/cutlass#1025)
def _cutlass_gemm(text: str) -> dict | None:
    stem_m = re.search(r"\b(cutlass3?x?_(?:sm)?\d+\w*)", text)
    if not stem_m or "gemm" not in stem_m.group(1):
        return None
    stem = stem_m.group(1)
    tokens = stem.split("_")
    d: dict = {}
    arch_tok = tokens[1] if len(tokens) > 1 else ""
    arch = arch_tok if arch_tok.startswith("sm") else f"sm{arch_tok}" if arch_tok.isdigit() else None
    dtype = tile = math = None
    dims = []
    for tok in tokens[2:]:
        mm = re.fullmatch(r"([a-z]?)(\d{3,5})gemm", tok)
        if tok in ("tensorop", "wmma"):
            math = TENSOR_CORES
        elif tok == "simt":
            math = FFMA if dtype in (None, "fp32") else "CUDA cores"
        elif mm:
            d["mma_token"] = tok
            math = TENSOR_CORES
        elif tok in _NAME_DTYPES and dtype is None:
            dtype = _NAME_DTYPES[tok]
        elif re.fullmatch(r"\d+x\d+(?:x\d+)?", tok):
            dims.append(tok)
        elif re.fullmatch(r"[nt]{2,3}", tok):
            d["operand_layout"] = tok
        elif tok.startswith("align") and tok[5:].isdigit():
            d["alignment"] = int(tok[5:])
        elif tok and tok != "gemm":
            d.setdefault("other_tokens", []).append(tok)
    if dims:
        tile = dims[0]
    if len(dims) > 1:
        if stem.startswith("cutlass3x"):  # CUTLASS 3: {MxNxK}_{cluster MxNxK}
            d["cluster"] = dims[1]
        elif len(dims[1].split("x")) == 2:  # CUTLASS 2: {MxN}_{K-tile x stages}
            d["k_tile"], d["stages"] = (int(x) for x in dims[1].split("x"))
        else:
            d["other_dims"] = dims[1:]
    parts = ["CUTLASS gemm" + (f" ({arch})" if arch else ""), dtype,
             f"{tile} tile" if tile else None, d.get("operand_layout"), math]
    return {"kind": "gemm", "library": "CUTLASS", "op": "gemm", "dtype": dtype, "math": math,
            "arch": arch, "tile": tile, "details": d, "summary": ", ".join(p for p in parts if p)}
